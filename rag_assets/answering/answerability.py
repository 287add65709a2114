"""Whether the kept sources can answer a question, read past the distance gate.

The distance gate says a chunk is near; it cannot say the chunk answers. The question is read
against the kept sources the way the support check reads an answer, and refused, with the reason,
when:
- **language**: it is written in a language the serving model was not trained on (and the sources
  are not in it either): the model's distances mean nothing there, so the model that reads it is named;
- **terms**: a name or number of the question is in no kept source and in no chunk of the corpus
  either: "the sources never mention "Zeppelin"" (a plain word may be a paraphrase, and refuses nothing);
- **kind**: it plainly asks for a date or a number (`when was`, `how many`) and no kept source holds
  one beside the question's own;
- **negation**: it says `not` (`never`, `don't`, per language) and the kept sentences that match it
  best say no such thing (SQuAD 2.0 makes a question unanswerable by adding a `not`).
A name is held where the sources spell it one letter off (`Sheeshanks`, `Colombia`), write it out
(`UMC` for United Methodist Church) or hold another part of it (`Twigg` for `Graham Twigg`).

The rules were chosen on public data the lab's figures are not reported on (XQuAD English, the
articles that are not in the bundled corpus), to refuse with the gate at most 5 % of its answerable
questions: `python bench/answers.py` prints the refusals by reading; docs/answering.md has the figures.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from rag_assets.answering.reading import Question, Term, held_terms, matches, words_of
from rag_assets.answering.short_answer import short_answer_of_kind
from rag_assets.answering.support import fold
from rag_assets.answering.support_words import NEGATIONS
from rag_assets.ingest.language import name_of, question_language
from rag_assets.ingest.sentences import sentence_spans

# the `not` of a question, per language; a sentence that answers it may deny in any way NEGATIONS knows
QUESTION_NEGATIONS = {
    "en": {"not", "never", "cannot"},
    "de": {"nicht", "nie", "niemals", "kein", "keine", "keinen", "keinem", "keiner", "keines"},
    "bg": {"не", "никога"},
    "ru": {"не", "никогда"},
    "el": {"δεν", "μην", "μη"},
}
SENTENCE_NEGATIONS = {
    "en": {"except", "exception", "exceptions", "only", "instead", "rather", "neither", "nor", "lacked", "unlike"},
    "de": {"ausser", "ausnahme", "nur", "statt", "anstatt"},
    "bg": {"освен", "само", "вместо"},
    "ru": {"кроме", "только", "вместо"},
    "el": {"εκτος", "μονο", "αντι"},
}
LANGUAGE_CONFIDENCE = 0.8  # langid's probability from which a question's language is taken as read (XQuAD: 0.1 % of
# English questions read as another language, 92 % of German ones read as German)
MIN_WORDS_FOR_LANGUAGE = 3  # XQuAD: 0.08 % of English questions of 3 words or more read as another language


@dataclass
class Reading:
    asked: str | None
    held: list[str]  # the question's terms some kept source holds
    missing: list[str]  # those none holds
    refused_by: str | None = None  # language, terms, kind or negation
    reason: str | None = None  # one line a user reads


def read_against(
    question: Question,
    texts: list[str],
    share: Callable[[str], float] | None,
    model: str = "",
    model_languages: tuple[str, ...] = (),
    reader: str = "",
) -> Reading:
    """The question read against the kept sources' `texts`. `share(term)`: the share of the corpus's
    chunks holding the term (None: unknown, and no term refuses); `model`,
    `model_languages`: the serving model and the languages it was trained on (empty: any);
    `reader`: the packaged model that reads any language, named in a refusal."""
    keys = {k for text in texts for k, _, _ in words_of(text, question.language)}
    held = held_terms(question, keys)
    held_keys = {t.key for t in held}
    missing = [t for t in question.terms if t.key not in held_keys]
    named_runs = {t.run for t in held if t.run >= 0}  # Graham Twigg: the sources may say Twigg alone
    rare = [
        t.text
        for t in missing
        if (t.name or t.number)
        and share is not None
        and t.run not in named_runs
        and share(t.text) == 0
        and not _spelled_otherwise(t, texts)
    ]
    reading = Reading(question.asked, [t.text for t in held], [t.text for t in missing])
    unread = unread_language(question.text, question.language, model, model_languages, reader)
    if unread:
        reading.refused_by, reading.reason = "language", unread
    elif rare:
        reading.refused_by = "terms"
        named = ", ".join(f'"{t}"' for t in rare)
        reading.reason = f"the sources never mention {named}"
    elif question.strict and not any(short_answer_of_kind(question, text) for text in texts):
        reading.refused_by = "kind"
        reading.reason = f"the question asks for a {question.asked} and no source kept holds one"
    else:
        said = _negation(question)
        if said and not any(_negation_in(s, question.language) for s in _best_sentences(question, texts)):
            reading.refused_by = "negation"
            reading.reason = f'the question says "{said}" and no source sentence that matches it does'
    return reading


def unread_language(
    text: str, sources_language: str, model: str, model_languages: tuple[str, ...], reader: str = ""
) -> str | None:
    """Why a question the serving model cannot read is refused (one line naming the model that
    reads it), or None: it is in a language the model was not trained on, and the sources are not in it."""
    spoken, confidence = question_language(text)
    if (
        not model_languages
        or spoken in model_languages
        or spoken == sources_language
        or confidence < LANGUAGE_CONFIDENCE
        or len(text.split()) < MIN_WORDS_FOR_LANGUAGE
    ):
        return None
    trained = ", ".join(name_of(code) for code in model_languages)
    return f"the question reads as {name_of(spoken)} and the serving model {model} was trained on {trained} only" + (
        f": {reader} reads {name_of(spoken)} (materialise it with run's --models {reader})" if reader else ""
    )


def _spelled_otherwise(term: Term, texts: list[str]) -> bool:
    """A name the sources write one letter off (a typo either side) or in full (its initials)."""
    words = {m.group() for text in texts for m in re.finditer(r"\w+", text)}
    if term.text.isupper() and 2 <= len(term.text) <= 6:
        initials = {
            "".join(w[0] for w in run.split() if w[0].isupper())
            for text in texts
            for run in re.findall(r"[A-Z]\w*(?:\s+(?:of|the|and|for|[A-Z]\w*))+", text)
        }
        if any(term.text in i for i in initials):  # the run may start before the name: The United ...
            return True
    if len(term.text) < 5 or term.number:
        return False
    wanted = fold(term.text)
    return any(
        abs(len(w) - len(wanted)) <= 1 and difflib.SequenceMatcher(None, wanted, fold(w)).ratio() >= 0.8 for w in words
    )


def _negation(question: Question) -> str | None:
    """The question's own `not` (`never`, `don't`; per language), if it says one: words that deny
    with a verb of their own (`fails`, `lacks`, `without`) ask about a fact, not its absence."""
    negations = QUESTION_NEGATIONS.get(question.language, set())
    for m in re.finditer(r"\w+(?:['’]\w+)?", question.text):
        word = fold(m.group())
        if word.endswith("n't") or word in negations:
            return m.group()
    return None


def _negation_in(sentence: str, language: str) -> bool:
    """Any way a sentence may deny: every negation word of the support check's, `n't`, an exception."""
    negations = NEGATIONS.get(language, set()) | SENTENCE_NEGATIONS.get(language, set())
    return any(fold(w).endswith("n't") or fold(w) in negations for w in re.findall(r"\w+(?:['’]\w+)?", sentence))


def _best_sentences(question: Question, texts: list[str]) -> list[str]:
    """The kept sentences that hold the most of the question's terms."""
    counted = []
    for text in texts:
        for a, b in sentence_spans(text, question.language):
            keys = {k for k, _, _ in words_of(text[a:b], question.language)}
            counted.append((sum(any(matches(t.key, k) for k in keys) for t in question.terms), text[a:b]))
    most = max((n for n, _ in counted), default=0)
    return [sentence for n, sentence in counted if n == most]
