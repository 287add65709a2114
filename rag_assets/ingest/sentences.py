"""Sentences of a text, with exact character offsets, by pysbd's rules for the text's language.

pysbd covers 22 languages (Bulgarian, German, Greek and Russian among them); any other
language is segmented by its English rules, which still split at `. ! ?` followed by a capital.
The offsets index the text given, so `text[start:end]` is the sentence, whatever the script."""

from __future__ import annotations

from functools import lru_cache

import pysbd
from pysbd.languages import LANGUAGE_CODES


@lru_cache(maxsize=32)
def _segmenter(language: str) -> pysbd.Segmenter:
    return pysbd.Segmenter(language=language if language in LANGUAGE_CODES else "en", clean=False, char_span=True)


def sentence_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """(start, end) of each sentence, without its surrounding white space; empty ones dropped.
    Remembered for the last CACHED texts: a service splits the same chunks again and again, and
    pysbd takes milliseconds a paragraph."""
    return list(_spans(text, language))


CACHED = 16384


@lru_cache(maxsize=CACHED)
def _spans(text: str, language: str) -> tuple[tuple[int, int], ...]:
    spans = []
    for span in _segmenter(language).segment(text):
        stripped = span.sent.strip()
        if stripped:
            start = span.start + span.sent.index(stripped)
            spans.append((start, start + len(stripped)))
    return tuple(spans)
