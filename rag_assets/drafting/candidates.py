"""Needles worth asking about, and which of them to ask about.

A candidate obeys the rules a written needle obeys (ground_truth.NeedleIndex: verbatim, found
exactly once in the corpus, never in a heading, from a document that extracted `ok`) and can
answer something: one sentence of prose, MIN_WORDS to MAX_WORDS words, ending as a sentence
ends, at least MIN_LETTER_SHARE of its non-space characters letters (a table row of numbers or
a line of code is not). These rules are not relaxed for a corpus that is mostly tables or code:
such a corpus gets fewer questions, and the counts by rule say why (docs/drafted-questions.md).

The sample is spread over the corpus in proportion to each document's text, and inside a
document over its sections in turn; every choice is ranked by a hash of (seed, needle), so a
new document takes its share without reshuffling the others: each keeps the head of its own
ranking (its quota shrinks by the new document's share of the text, and with it the set), and
an edited document changes only its own needles (and, by its change in length, the quotas).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator

import pandas as pd

from rag_assets.ingest.corpus import headings
from rag_assets.ingest.ground_truth import NeedleIndex
from rag_assets.ingest.language import language_of
from rag_assets.ingest.sentences import sentence_spans

MIN_WORDS, MAX_WORDS = 6, 60
MIN_LETTER_SHARE = 0.6
_SENTENCE_END = re.compile(r"""[.!?…]["'”’»)\]]*$""")
_PARAGRAPH = re.compile(r"[^\n](?:[^\n]|\n(?!\n))*")
CANDIDATE_COLUMNS = ["document_id", "path", "section", "start", "needle", "language", "rank"]


def _rank(seed: int, needle: str) -> str:
    return hashlib.sha256(f"{seed}:{needle}".encode()).hexdigest()


def _prose_problem(sentence: str) -> str | None:
    words = sentence.split()
    if len(words) < MIN_WORDS:
        return "too_short"
    if len(words) > MAX_WORDS:
        return "too_long"
    if not _SENTENCE_END.search(sentence):
        return "no_sentence_end"
    chars = [c for c in sentence if not c.isspace()]
    if "|" in sentence or sum(c.isalpha() for c in chars) < MIN_LETTER_SHARE * len(chars):
        return "not_prose"
    return None


def _sentences(text: str, language: str) -> Iterator[tuple[str, int, str]]:
    """(sentence, offset, section title) for every sentence outside heading lines."""
    marks = headings(text)
    for paragraph in _PARAGRAPH.finditer(text):
        if any(h.start <= paragraph.start() < h.end for h in marks):
            continue  # a heading line is never a needle
        section = next((h.title for h in reversed(marks) if h.start < paragraph.start()), "")
        for start, end in sentence_spans(paragraph.group(), language):
            yield paragraph.group()[start:end], paragraph.start() + start, section


def candidates(documents: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """(every usable needle of the `ok` documents, counts of sentences by the rule that dropped
    them, with `kept`). Each document's language is the snapshot's (identified once, or set in its
    front matter)."""
    ok = documents[documents["status"] == "ok"]
    rows, counts = [], {"sentences": 0}
    for doc in ok.itertuples():
        language = doc.language if isinstance(doc.language, str) else language_of(doc.text)
        for sentence, start, section in _sentences(doc.text, language):
            counts["sentences"] += 1
            problem = _prose_problem(sentence)
            if problem:
                counts[problem] = counts.get(problem, 0) + 1
                continue
            rows.append([doc.document_id, doc.path, section, start, sentence, language, _rank(seed, sentence)])
    found = pd.DataFrame(rows, columns=CANDIDATE_COLUMNS)
    index = NeedleIndex(documents, found["needle"])
    usable = []
    for row in found.itertuples():
        reason, where = index.locate(row.needle)
        if reason is None:
            reason = None if where == (row.document_id, row.start) else "not_located"
        else:
            reason = "not_unique" if "times" in reason else "in_heading"
        if reason:
            counts[reason] = counts.get(reason, 0) + 1
        usable.append(reason is None)
    kept = found[pd.Series(usable, index=found.index, dtype=bool)].reset_index(drop=True)  # a mask, even when empty
    counts["kept"] = len(kept)
    return kept, counts


def _quotas(weights: dict[str, int], available: dict[str, int], n: int) -> dict[str, int]:
    """Largest-remainder shares of n in proportion to weights, none above what is available;
    what a document cannot take goes to the others in the same proportion."""
    quota = dict.fromkeys(weights, 0)
    left = min(n, sum(available.values()))
    while left > 0:
        open_ = {d: w for d, w in weights.items() if quota[d] < available[d]}
        total = sum(open_.values()) or len(open_)
        exact = {d: left * (w or 1) / total for d, w in open_.items()}
        share = {d: min(math.floor(x), available[d] - quota[d]) for d, x in exact.items()}
        rest = left - sum(share.values())
        by_remainder = sorted(open_, key=lambda d: (-(exact[d] - math.floor(exact[d])), d))
        for d in by_remainder:
            if rest <= 0:
                break
            if quota[d] + share[d] < available[d]:
                share[d] += 1
                rest -= 1
        if not any(share.values()):
            break
        for d, s in share.items():
            quota[d] += s
        left = min(n, sum(available.values())) - sum(quota.values())
    return quota


def _by_section(frame: pd.DataFrame) -> pd.DataFrame:
    """A document's candidates in turn over its sections (each section by hash rank; sections
    in the order of their best-ranked candidate)."""
    frame = frame.sort_values("rank")
    turn = frame.groupby("section", sort=False).cumcount()
    first = frame.groupby("section", sort=False)["rank"].transform("min")
    return frame.assign(_turn=turn, _first=first).sort_values(["_turn", "_first"]).drop(columns=["_turn", "_first"])


def sample(found: pd.DataFrame, documents: pd.DataFrame, n: int) -> pd.DataFrame:
    """n needles (or all there are), each document's share in proportion to its characters."""
    ok = documents[documents["status"] == "ok"]
    weights = dict(zip(ok["document_id"], ok["text"].str.len()))
    available = found["document_id"].value_counts().to_dict()
    weights = {d: w for d, w in weights.items() if available.get(d)}
    quota = _quotas(weights, available, n)
    picked = [_by_section(group).head(quota[d]) for d, group in found.groupby("document_id") if quota.get(d)]
    if not picked:
        return found.iloc[:0]
    return pd.concat(picked).sort_values(["document_id", "start"]).reset_index(drop=True)
