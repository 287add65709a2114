"""The extractive answerer: it writes nothing, it points.

The answer is one sentence of the sources that passed the gate (two adjacent ones when only the
second holds the kind of answer asked for), verbatim, cited as [1] with a `#char` fragment that
slices exactly that text out of its document, and a short answer inside it with its own fragment. The document's own
reference marks (`[2]`, `[12][13]`, as an encyclopedia writes them) are left out of the answer's
text, where they would read as citations of other sources; the quote keeps them. It is supported by
construction, works in any language pysbd segments (others by its English rules), and costs
milliseconds (the default rule reads no model). How the sentence is chosen is measured, not assumed
(bench/extractive_scoring.py, docs/answering.md): SCORING names the default, and the other rules
stay selectable for the comparison.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace

import numpy as np

from rag_assets.answering.citations import Citation, Context, build_context, fragment_range
from rag_assets.answering.generation import Generation
from rag_assets.answering.reading import Question, held_terms, read_question, words_of
from rag_assets.answering.short_answer import short_answer, short_answer_of_kind
from rag_assets.ingest.language import language_of
from rag_assets.ingest.sentences import sentence_spans
from rag_assets.retrieval.fusion import rrf
from rag_assets.retrieval.lexical import Tokenizer

SCORINGS = ("reading", "dense", "lexical", "hybrid", "first")
SCORING = "reading"  # ties lexical on answers contained, and reads the kind asked (docs/answering.md)
# the reading rule: a sentence's share of the question's terms (idf-weighted; a compound or
# derivation counts COMPOUND), plus SURFACE times its share of the question's words as written (stop
# words too: `of the`), plus KIND when it holds the kind of answer asked for (a year for "when"), less
# RANK per source rank (the retriever's order as a prior); chosen on XQuAD English
# (bench/extractive_scoring.py, bench/answers.py), not on the bundled set
KIND, RANK, SURFACE, COMPOUND = 0.3, 0.05, 0.2, 0.5
_SURFACE = re.compile(r"\w+")
MIN_LETTERS = 12  # a "sentence" with fewer letters (a heading, a table cell) is never the answer
_LETTER = re.compile(r"[^\W\d_]")
_MARKS = re.compile(r"(?:\[\d{1,4}\])+")  # a document's own reference marks


def sentences_of(sources: list[Citation]) -> list[tuple[Citation, int, int]]:
    """(source, start, end in its quote) of every sentence of the sources, in source order."""
    out = []
    for source in sources:
        for start, end in sentence_spans(source.quote, source.language or language_of(source.quote)):
            if len(_LETTER.findall(source.quote, start, end)) >= MIN_LETTERS:
                out.append((source, start, end))
    return out


def _lexical_scores(question: str, texts: list[str], tokenize: Tokenizer) -> np.ndarray:
    """Sum of the question terms' idf (over these sentences) that each sentence contains."""
    terms = set(tokenize(question))
    bags = [set(tokenize(t)) & terms for t in texts]
    idf = {t: np.log(1 + len(bags) / (1 + sum(t in b for b in bags))) for t in terms}
    # summed in term order: a set's own order changes with the process's hash seed, and so would the
    # last bit of a sum, and with it which of two tied sentences is the answer
    return np.array([sum(idf[t] for t in sorted(b)) for b in bags])


def _language(candidates: list[tuple[Citation, int, int]]) -> str:
    """The sources' language (the top source's, as its document was identified): the question is read in it."""
    source = candidates[0][0]
    return source.language or language_of(source.quote)


def _reading_scores(question: Question, candidates: list[tuple[Citation, int, int]]) -> list[float]:
    """Each sentence's share of the question's terms, idf-weighted over these sentences, with the
    asked kind's bonus and the source rank's prior (KIND, RANK)."""
    keyed = [{k for k, _, _ in words_of(c.quote[a:b], question.language)} for c, a, b in candidates]
    held = [{t.key for t in held_terms(question, keys)} for keys in keyed]
    idf = {t.key: np.log(1 + len(held) / (1 + sum(t.key in h for h in held))) for t in question.terms}
    total = sum(idf.values()) or 1.0
    asked = {w.casefold() for w in _SURFACE.findall(question.text)}
    scores = []
    for (source, a, b), h, keys in zip(candidates, held, keyed):
        # summed in key order (the same sum in every process); a compound or derivation counts half
        share = sum(idf[k] * (1.0 if k in keys else COMPOUND) for k in sorted(h)) / total
        said = {w.casefold() for w in _SURFACE.findall(source.quote, a, b)}
        share += SURFACE * len(asked & said) / max(1, len(asked))
        kind = KIND if question.asked and _holds_kind(question, source.quote[a:b]) else 0.0
        scores.append(share + kind - RANK * (source.index - 1))
    return scores


def _holds_kind(question: Question, text: str) -> bool:
    """The text holds an answer of the asked kind that is not the question's own words."""
    return short_answer_of_kind(question, text) is not None


def _with_neighbour(question: Question, candidates: list[tuple[Citation, int, int]], best: int) -> tuple[int, int]:
    """The chosen sentence's span, taking in the next sentence of its source (else the one before)
    when only that neighbour holds the kind of answer asked for."""
    source, start, end = candidates[best]
    if not question.asked or _holds_kind(question, source.quote[start:end]):
        return start, end
    for other in (best + 1, best - 1):
        if 0 <= other < len(candidates) and candidates[other][0] is source:
            _, a, b = candidates[other]
            if _holds_kind(question, source.quote[a:b]):
                return min(start, a), max(end, b)
    return start, end


class Extractive:
    """Chooses the sentence by `scoring`: `dense` (cosine with the question, the query model),
    `lexical` (question terms' idf, the BM25 analyzer), `hybrid` (reciprocal rank fusion of the
    two) or `first` (the top source's first sentence)."""

    name = "extractive"
    answer_prefix = ""

    def __init__(self, embedder, scoring: str = SCORING):
        if scoring not in SCORINGS:
            raise ValueError(f"unknown extractive scoring {scoring!r}; choose from {', '.join(SCORINGS)}")
        self.embedder, self.scoring, self.tokenize = embedder, scoring, Tokenizer()

    @property
    def identity(self) -> str:
        return f"extractive ({self.scoring} sentence choice; {self.embedder.identity})"

    def load(self) -> None:
        """Nothing to load: a source's language is its document's, as the snapshot identified it."""

    def prepare(self, question: str, hits: list[dict]) -> Context:
        return build_context(question, hits)  # no budget: nothing is read by a model

    def rendered(self, prompt: str) -> str:
        return prompt

    def ranked(self, read: Question, candidates: list[tuple[Citation, int, int]]) -> list[int]:
        """Candidate positions, best first, by this answerer's scoring of the question as read."""
        order = list(range(len(candidates)))
        if self.scoring == "first":
            return order
        if self.scoring == "reading":
            scores = _reading_scores(read, candidates)
            return sorted(order, key=lambda i: (-scores[i], i))
        question, texts = read.text, [c.quote[a:b] for c, a, b in candidates]
        by_dense = by_lexical = order
        if self.scoring in ("dense", "hybrid"):
            similarity = self.embedder.encode(texts) @ self.embedder.encode([question], query=True)[0]
            by_dense = sorted(order, key=lambda i: (-float(similarity[i]), i))
        if self.scoring in ("lexical", "hybrid"):
            scores = _lexical_scores(question, texts, self.tokenize)
            by_lexical = sorted(order, key=lambda i: (-scores[i], i))
        if self.scoring == "dense":
            return by_dense
        if self.scoring == "lexical":
            return by_lexical
        return [int(i) for i, _ in rrf([[f"{i:06d}" for i in by_dense], [f"{i:06d}" for i in by_lexical]])]

    def answer(self, question: str, context: Context) -> Generation:
        t0 = time.perf_counter()
        candidates = sentences_of(context.citations)
        if not candidates:
            return Generation("", 0, 0, (time.perf_counter() - t0) * 1000, failure="no sentence in the sources")
        read = read_question(question, _language(candidates))
        best = self.ranked(read, candidates)[0]
        source, start, end = candidates[best]
        if self.scoring == "reading":
            start, end = _with_neighbour(read, candidates, best)
        offset = fragment_range(source.fragment)[0]
        cited = replace(
            source,
            index=1,
            quote=source.quote[start:end],
            fragment=f"#char={offset + start},{offset + end}",
            truncated=False,
        )
        short = short_answer(read, cited.quote)
        ms = (time.perf_counter() - t0) * 1000
        text = _MARKS.sub("", cited.quote)
        shown = None
        if short is not None:
            shown = {
                "text": cited.quote[short[0] : short[1]],
                "fragment": f"#char={offset + start + short[0]},{offset + start + short[1]}",
            }
        return Generation(f"{text} [1]", 0, 0, ms, sources=[cited], short=shown)

    def write_many(self, questions: list[str], contexts: list[Context], batch_size: int = 1, progress=None):
        out = []
        for done, (question, context) in enumerate(zip(questions, contexts), start=1):
            out.append(self.answer(question, context))
            if progress:
                progress(done, len(contexts))
        return out
