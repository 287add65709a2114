"""Does each sentence of an answer say only what its sources say? A deterministic check, no model.

A sentence's claims are the tokens a reader would look up in a source:
- numbers, by their digits: `1,777`, `1 777` and `1777` are one number, and so are `3.5` and
  `3,5` (a number written in words, or `1.5 million` for `1,500,000`, is not recognised);
- names: a word with a capital that does not start the sentence, or with two capitals (in
  scripts without case, such as CJK, no word is a name);
- long words, LONG_WORD letters or more: rarity without a word list (long words are the rare
  ones in every language with spaces; short unit words such as `km` are not checked).

A sentence found verbatim (without its markers) in a quote it cites is supported as it stands.
Otherwise each claim is looked for in the quotes the sentence cites (`[n]`; a sentence that cites none, in
every source shown), and in the question and the answer prefix the project wrote: the asker's
words and the template's are not the answer's claims.
Text is compared after Unicode compatibility folding, without accents and case. Inflection: a word
is found when a source word starts with its first `max(STEM_MIN, len - STEM_SLACK)` letters, or it
starts with the source word's: `members`/`member`, `парламента`/`парламентът`. A compound
(German `Kraftwerk` for `Werk`) is not found. A sentence with a claim not found is unsupported,
and the claims not found are listed, with those another shown source holds (then the citation,
not the claim, is wrong). docs/answering.md measures the false alarms.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass

from rag_assets.ingest.sentences import sentence_spans

LONG_WORD = 9
STEM_MIN, STEM_SLACK = 4, 3
_MARKER = re.compile(r"\[(\d+)\]")
_NUMBER = re.compile(r"\d+(?:[.,\u00a0\u202f' ]\d+)*")
_WORD = re.compile(r"[^\W\d_]+")  # letters only: a number inside a word is read as a number


@dataclass(frozen=True)
class SentenceSupport:
    text: str
    start: int  # offsets in the answer
    end: int
    cites: list[int]  # the [n] this sentence (or the marker right after it) points at
    missing: list[str]  # claims, as written in the answer, found in none of its sources nor the question
    elsewhere: list[str]  # those of `missing` that another shown source holds: the citation, not the claim, is wrong

    @property
    def supported(self) -> bool:
        return not self.missing

    def as_dict(self) -> dict:
        return {**asdict(self), "supported": self.supported}


def fold(text: str) -> str:
    """Compatibility form, no accents, case-folded: what claims and sources are compared as."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _numbers(text: str) -> set[str]:
    return {re.sub(r"\D", "", m.group()) for m in _NUMBER.finditer(text)}


def claims(sentence: str, long_word: int = LONG_WORD) -> list[tuple[str, str]]:
    """(as written, kind) for each claim of one sentence, in order, once each."""
    text = _MARKER.sub(" ", sentence)
    out = [(m.group(), "number") for m in _NUMBER.finditer(text)]
    for position, m in enumerate(_WORD.finditer(text)):
        word = m.group()
        capitals = sum(c.isupper() for c in word)
        if capitals >= 2 or (capitals and word[0].isupper() and position > 0):
            out.append((word, "name"))
        elif len(word) >= long_word:
            out.append((word, "word"))
    return list(dict.fromkeys(out))


def _stem(word: str) -> str:
    return word[: max(STEM_MIN, len(word) - STEM_SLACK)]


class _Evidence:
    """The folded words and numbers of some texts, for looking claims up."""

    def __init__(self, texts: list[str]):
        joined = fold("\n".join(texts))
        self.words = set(_WORD.findall(joined))
        self.numbers = _numbers(joined)

    def holds(self, claim: str, kind: str) -> bool:
        if kind == "number":
            return re.sub(r"\D", "", claim) in self.numbers
        word = fold(claim)
        if word in self.words:
            return True
        stem = _stem(word)
        return any(w.startswith(stem) or (len(w) >= STEM_MIN and word.startswith(_stem(w))) for w in self.words)


def _with_markers(answer: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentences with a marker-only sentence (`[2]` after the full stop) joined to the one before."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and not _MARKER.sub("", answer[start:end]).strip(" .,;:"):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def check_support(
    answer: str, given: list[str], quotes: dict[int, str], language: str = "en", long_word: int = LONG_WORD
) -> list[SentenceSupport]:
    """Each sentence of `answer` against the quotes it cites (`quotes`: every source shown, by its
    number); a sentence that cites no shown source is checked against all of them. `given`: texts
    whose words are no claim of the answer's (the question, and the answer's prefix when the
    project started the answer)."""
    asked = _Evidence(given)
    everything = _Evidence(list(quotes.values()))
    out = []
    for start, end in _with_markers(answer, sentence_spans(answer, language)):
        sentence = answer[start:end]
        cites = list(dict.fromkeys(int(n) for n in _MARKER.findall(sentence)))
        cited = [quotes[n] for n in cites if n in quotes]
        words = _MARKER.sub("", sentence).strip()
        if cited and any(words in quote for quote in cited):  # verbatim from what it cites: nothing to look up
            out.append(SentenceSupport(sentence, start, end, cites, [], []))
            continue
        evidence = _Evidence(cited) if cited else everything
        missing = [
            (claim, kind)
            for claim, kind in claims(sentence, long_word)
            if not evidence.holds(claim, kind) and not asked.holds(claim, kind)
        ]
        elsewhere = [claim for claim, kind in missing if everything.holds(claim, kind)]
        out.append(SentenceSupport(sentence, start, end, cites, [claim for claim, _ in missing], elsewhere))
    return out
