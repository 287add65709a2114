"""Which language a text is in, by py3langid (langid.py's model: 97 languages, offline).

A document is read in at most SAMPLES windows of SAMPLE_CHARS spread over its whole length (its
start alone would make an English preface the language of a Russian book), each identified on its
own; the document's language is the one whose windows hold the most letters. A question is
identified whole.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

SAMPLE_CHARS = 5000
SAMPLES = 5
# ISO 639-1 code -> English name, for prompts that ask a model to write in a language
NAMES = {
    "bg": "Bulgarian",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "it": "Italian",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ru": "Russian",
    "uk": "Ukrainian",
}


def language_of(text: str) -> str:
    """ISO 639-1 code of the text's most likely language ("und" for a text with no letters), read
    from samples across all of it (see the module's doc)."""
    if len(text) <= SAMPLE_CHARS * SAMPLES:
        starts = range(0, max(1, len(text)), SAMPLE_CHARS)
    else:
        step = (len(text) - SAMPLE_CHARS) / (SAMPLES - 1)
        starts = [round(i * step) for i in range(SAMPLES)]
    letters: Counter = Counter()
    for start in starts:
        window = text[start : start + SAMPLE_CHARS]
        code = _identified(window)
        if code != "und":
            letters[code] += sum(c.isalpha() for c in window)
    return letters.most_common(1)[0][0] if letters else "und"


@lru_cache(maxsize=16384)
def _identified(sample: str) -> str:
    """Remembered for the last samples asked about (a service sees the same chunks again and
    again), keyed by the sample only: a snapshot's documents are never kept alive here whole."""
    if not any(c.isalpha() for c in sample):
        return "und"
    import py3langid

    return py3langid.classify(sample)[0]


def question_language(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of a short text's language, from langid's normalised scores:
    a question is short, and a guess it is unsure of must read as one."""
    return _question_language(text)


@lru_cache(maxsize=4096)
def _question_language(text: str) -> tuple[str, float]:
    if not any(c.isalpha() for c in text):
        return "und", 0.0
    code, probability = _identifier().classify(text)
    return code, float(probability)


@lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import _load_identifier

    return _load_identifier(norm_probs=True)


def name_of(code: str) -> str:
    return NAMES.get(code, code)
