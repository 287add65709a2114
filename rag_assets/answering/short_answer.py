"""The span that answers: the date, number, name or place a question asks for, inside the
sentence the extractive answerer chose, or for other questions the run of words beside the
question's own that is nearest to them.

A span made only of the question's words never answers it ("In what country is Normandy?" is
not answered by "Normandy"). Adjacent spans of one kind are one answer: `12 August 1942`,
`3 million`. The rule is measured by token F1 against reference answers
(bench/extractive_scoring.py, generation_eval), not assumed.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag_assets.answering.reading import Question, kind_spans, matches, stop_words_of, words_of, written_words
from rag_assets.answering.support import fold

_JOIN = re.compile(r"[\s,.]*(?:of|the|de|и)?[\s,.]*", re.IGNORECASE)  # between two parts of one date or number
_CLAUSE = re.compile(r"[,;:()\[\]—–\"“”«»]|\s-\s")  # a general answer never crosses these
MAX_WORDS = 8  # a general answer longer than this is cut to the words nearest the question's


def _merged(spans: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start >= out[-1][1] and _JOIN.fullmatch(text[out[-1][1] : start]) and start - out[-1][1] <= 6:
            out[-1] = (out[-1][0], end)
        elif not out or start >= out[-1][1]:
            out.append((start, end))
    return out


def _distance(span: tuple[int, int], anchors: list[tuple[int, int]]) -> float:
    if not anchors:
        return 0.0
    return min(max(a - span[1], span[0] - b, 0) for a, b in anchors)


def _run_key(c, anchors):
    """Nearest the question's words; of two as near, the one after them, then the shorter (the
    example that `such as` names)."""
    after = not anchors or c[0] >= max(b for _, b in anchors)
    return (_distance(c[:2], anchors), not after, c[2])


def _own(question: Question, text: str):
    """The text's words, and whether each is the question's: one of its terms, or a word it writes."""
    words = words_of(text, question.language)
    written = written_words(question.text, question.language)
    own = {k for k in {k for k, _, _ in words} if any(matches(t.key, k) for t in question.terms)}
    return words, [k in own or _folded(text[a:b]) in written for k, a, b in words]


@lru_cache(maxsize=65536)
def _folded(word: str) -> str:
    return fold(word)


def _foreign(span: tuple[int, int], words, own) -> bool:
    """The span holds no word of the question."""
    return not any(o and a < span[1] and b > span[0] for (_, a, b), o in zip(words, own))


def _of_kind(question: Question, text: str, words, own) -> tuple[int, int] | None:
    if not question.asked:
        return None
    anchors = [(a, b) for (_, a, b), o in zip(words, own) if o]
    spans = _merged(kind_spans(text, question.asked, question.language), text)
    spans = [s for s in spans if _foreign(s, words, own)]
    return min(spans, key=lambda s: (_distance(s, anchors), s[0])) if spans else None


def short_answer_of_kind(question: Question, text: str) -> tuple[int, int] | None:
    """(start, end) of the answer of the asked kind in `text`, or None (no kind asked, none there)."""
    if not question.asked:
        return None
    return _of_kind(question, text, *_own(question, text))


def short_answer(question: Question, text: str) -> tuple[int, int] | None:
    """(start, end) in `text` of the span that answers `question`, or None when nothing beside the
    question's own words is there."""
    stops = stop_words_of(question.language)
    words, own = _own(question, text)
    kind = _of_kind(question, text, words, own)
    if kind is not None:
        return kind
    anchors = [(a, b) for (_, a, b), o in zip(words, own) if o]
    runs, current = [], []
    for (_, a, b), o in zip(words, own):
        crossed = current and _CLAUSE.search(text, current[-1][2], a)
        if o or crossed:
            if current:
                runs.append(current)
            current = []
        if not o:
            current.append((fold(text[a:b]), a, b))
    if current:
        runs.append(current)
    candidates = []
    for run in runs:
        while run and run[0][0] in stops:
            run = run[1:]
        while run and run[-1][0] in stops:
            run = run[:-1]
        if run:
            candidates.append((run[0][1], run[-1][2], len(run)))
    if not candidates:
        return None
    start, end, n = min(candidates, key=lambda c: _run_key(c, anchors))
    if n > MAX_WORDS:  # keep the end nearest the question's words
        inside = [w for w in words if start <= w[1] and w[2] <= end]
        after = not anchors or min(a for a, _ in anchors) < start
        kept = inside[:MAX_WORDS] if after else inside[-MAX_WORDS:]
        start, end = kept[0][1], kept[-1][2]
    return start, end
