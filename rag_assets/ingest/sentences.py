"""Sentences of a text, with exact character offsets, by pysbd's rules for the text's language.

pysbd covers 22 languages (Bulgarian, German, Greek and Russian among them); any other
language is segmented by its English rules, which still split at `. ! ?` followed by a capital.
The offsets index the text given, so `text[start:end]` is the sentence, whatever the script.
In Bulgarian, a split right after an abbreviation (pysbd's list, and the ones it lacks below) is
undone when the next part starts with a digit or a lowercase letter: "гл. 3", "ок. 1890"."""

from __future__ import annotations

import re
from functools import lru_cache

import pysbd
from pysbd.languages import LANGUAGE_CODES

# abbreviations pysbd's Bulgarian list lacks (глава, издание, около, английски, латински, тъй като, ...)
MORE_ABBREVIATIONS = {"bg": {"гл", "изд", "ок", "англ", "лат", "бълг", "т.к", "пр.н.е", "сл.н.е", "обл", "общ", "прил"}}
_LAST_WORD = re.compile(r"([\w.]+)\.$")


@lru_cache(maxsize=32)
def _segmenter(language: str) -> pysbd.Segmenter:
    return pysbd.Segmenter(language=language if language in LANGUAGE_CODES else "en", clean=False, char_span=True)


def sentence_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """(start, end) of each sentence, without its surrounding white space; empty ones dropped.
    Remembered for the last CACHED texts: a service splits the same chunks again and again, and
    pysbd takes milliseconds a paragraph."""
    return list(_spans(text, language))


CACHED = 16384


@lru_cache(maxsize=32)
def _abbreviations(language: str) -> frozenset[str]:
    found = _segmenter(language).language_module.Abbreviation.ABBREVIATIONS
    return frozenset(a.lower() for a in found) | MORE_ABBREVIATIONS.get(language, set())


@lru_cache(maxsize=CACHED)
def _spans(text: str, language: str) -> tuple[tuple[int, int], ...]:
    spans: list[tuple[int, int]] = []
    for span in _segmenter(language).segment(text):
        stripped = span.sent.strip()
        if not stripped:
            continue
        start = span.start + span.sent.index(stripped)
        if (
            spans
            and language in MORE_ABBREVIATIONS
            and _continues(text[spans[-1][0] : spans[-1][1]], stripped, language)
        ):
            spans[-1] = (spans[-1][0], start + len(stripped))
        else:
            spans.append((start, start + len(stripped)))
    return tuple(spans)


def _continues(before: str, after: str, language: str) -> bool:
    """Whether `after` goes on the sentence `before` ended with an abbreviation's dot."""
    last = _LAST_WORD.search(before)
    return (
        bool(last) and (after[0].isdigit() or after[0].islower()) and last.group(1).lower() in _abbreviations(language)
    )
