"""The rules a drafted phrasing must pass, each with a name the asset counts it under.

In order: it is a question (not empty, not a preamble such as "Sure, here is…", not an answer
or a statement, not about "the sentence" the prompt showed); it is in its needle's language
(py3langid, `ingest.language`); it does not copy its needle (word overlap, stop words dropped
and stemmed, at most OVERLAP_CAP); it is not a duplicate or near-duplicate of a phrasing kept
before it. The judge that a needle answers its question is `Drafter.margins` (it needs the model).
"""

from __future__ import annotations

import re
import unicodedata

from rag_assets.ingest.language import language_of
from rag_assets.retrieval.lexical import Tokenizer

# The share of a question's words (Lucene's 33 stop words dropped, stemmed) that occur in its
# needle. 0.8 is the 90th percentile of the bundled corpus's written questions (docs/
# drafted-questions.md): a drafted question may copy its needle as much as nine in ten people's
# questions do, and no more, so that drafting does not hand BM25 an advantage people do not.
OVERLAP_CAP = 0.8
NEAR_DUPLICATE = 0.8  # Jaccard similarity of two phrasings' word sets at or above which one goes
_PREAMBLE = re.compile(
    r"^(sure|certainly|of course|okay|ok|here (is|are)|i (can|will|would)|as an ai|the answer|answer\b|"
    r"what is the answer|question\s*\d*\s*:)",
    re.IGNORECASE,
)
_ABOUT_PROMPT = re.compile(r"\b(this|the|given|above|following) (sentence|passage)\b", re.IGNORECASE)
_WORDS = re.compile(r"\w+")
_CONTENT = Tokenizer("snowball")  # 33 stop words dropped, Snowball stems: question words (what, which) stay
RULES = ("not_a_question", "wrong_language", "copies_needle", "duplicate")


def cleaned(raw: str, prefix: str) -> str:
    """The question in a model's reply: after the prefix it was started with, first line only,
    surrounding quotes dropped."""
    text = raw.strip()
    text = text[len(prefix) :] if prefix and text.startswith(prefix) else text
    text = text.strip().split("\n", 1)[0].strip()
    return text.strip("\"'“”«»„").strip()


def not_a_question(question: str) -> str | None:
    if not question:
        return "empty"
    if _PREAMBLE.match(question):
        return "preamble"
    if not question.endswith(("?", "？", ";")):  # ";" is the Greek question mark
        return "not a question (no question mark)"
    if len(_WORDS.findall(question)) < 3:
        return "too short to ask anything"
    if _ABOUT_PROMPT.search(question):
        return "asks about the prompt's sentence, not the subject"
    return None


def overlap(question: str, needle: str) -> float:
    """Share of the question's words (stop words dropped, stemmed) that occur in its needle (0 when it has none)."""
    asked = set(_CONTENT(question))
    return len(asked & set(_CONTENT(needle))) / len(asked) if asked else 0.0


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORDS.findall(unicodedata.normalize("NFKC", text).lower()))


class Duplicates:
    """Phrasings kept so far; a new one that repeats one of them (same words, or a Jaccard
    similarity of NEAR_DUPLICATE or more) is a duplicate."""

    def __init__(self):
        self.kept: list[frozenset[str]] = []

    def check(self, question: str) -> str | None:
        words = _words(question)
        for other in self.kept:
            similarity = len(words & other) / len(words | other) if words | other else 1.0
            if similarity >= NEAR_DUPLICATE:
                return "duplicate" if similarity == 1.0 else "near duplicate"
        self.kept.append(words)
        return None


def verdict(question: str, needle: str, language: str, duplicates: Duplicates) -> tuple[str | None, str | None]:
    """(rule, detail) of the first rule the phrasing fails, or (None, None); a phrasing that
    passes is remembered by `duplicates`."""
    detail = not_a_question(question)
    if detail:
        return "not_a_question", detail
    found = language_of(question)
    if found != language:
        return "wrong_language", f"{found}, needle is {language}"
    share = overlap(question, needle)
    if share > OVERLAP_CAP:
        return "copies_needle", f"overlap {share:.2f} > {OVERLAP_CAP}"
    detail = duplicates.check(question)
    if detail:
        return "duplicate", detail
    return None, None
