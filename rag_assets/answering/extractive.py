"""The extractive answerer: it writes nothing, it points.

The answer is one sentence of the sources that passed the gate, verbatim, cited as [1] with a
`#char` fragment that slices exactly that sentence out of its document. The document's own
reference marks (`[2]`, `[12][13]`, as an encyclopedia writes them) are left out of the answer's
text, where they would read as citations of other sources; the quote keeps them. It is supported by
construction, works in any language pysbd segments (others by its English rules), and costs
milliseconds (the default rule reads no model). How the sentence is chosen is measured, not assumed
(bench/extractive_scoring.py, docs/answering.md): SCORING names the rule that won on the bundled
corpus, and the other rules stay selectable for the comparison.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace

import numpy as np

from rag_assets.answering.citations import Citation, Context, build_context, fragment_range
from rag_assets.answering.generation import Generation
from rag_assets.ingest.language import language_of
from rag_assets.ingest.sentences import sentence_spans
from rag_assets.retrieval.fusion import rrf
from rag_assets.retrieval.lexical import Tokenizer

SCORINGS = ("dense", "lexical", "hybrid", "first")
SCORING = "lexical"  # the most answers on the bundled corpus (docs/answering.md)
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

    def ranked(self, question: str, candidates: list[tuple[Citation, int, int]]) -> list[int]:
        """Candidate positions, best first, by this answerer's scoring."""
        texts = [c.quote[a:b] for c, a, b in candidates]
        order = list(range(len(texts)))
        if self.scoring == "first":
            return order
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
        source, start, end = candidates[self.ranked(question, candidates)[0]]
        offset = fragment_range(source.fragment)[0]
        cited = replace(
            source,
            index=1,
            quote=source.quote[start:end],
            fragment=f"#char={offset + start},{offset + end}",
            truncated=False,
        )
        ms = (time.perf_counter() - t0) * 1000
        text = _MARKS.sub("", cited.quote)
        return Generation(f"{text} [1]", 0, 0, ms, sources=[cited])

    def write_many(self, questions: list[str], contexts: list[Context], batch_size: int = 1, progress=None):
        out = []
        for done, (question, context) in enumerate(zip(questions, contexts), start=1):
            out.append(self.answer(question, context))
            if progress:
                progress(done, len(contexts))
        return out
