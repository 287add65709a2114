"""Whether the kept sources can answer a question, read past the distance gate.

The distance gate says a chunk is near; it cannot say the chunk answers. The question is read
against the kept sources the way the support check reads an answer, and refused, with the reason,
when:
- **language**: it is written in a language the serving model was not trained on (and the sources
  are not in it either): the model's distances mean nothing there, so the model that reads it is named;
- **terms**: a name or number of the question is in no kept source and in no chunk of the corpus
  either: "the sources never mention "Zeppelin"" (a plain word may be a paraphrase: on XQuAD, words
  the corpus never holds are in 9 % of answerable questions, and are not read as a refusal);
- **kind**: it asks for a date or a number and no kept source holds one beside the question's own.

The bounds are calibrated on public data the lab's figures are not reported on (XQuAD's articles that
are not in the bundled corpus), to refuse at most the stated share of answerable questions there:
`python bench/answerability.py --calibrate` prints them; docs/answering.md has the figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rag_assets.answering.reading import Question, held_terms, words_of
from rag_assets.answering.short_answer import short_answer_of_kind
from rag_assets.ingest.language import name_of, question_language

STRICT_KINDS = ("date", "number")  # asked kinds whose absence refuses (a person or place may be lower case)
LANGUAGE_CONFIDENCE = 0.8  # langid's probability from which a question's language is taken as read (XQuAD: 0.1 % of
# English questions read as another language, 92 % of German ones read as German)
MIN_WORDS_FOR_LANGUAGE = 4


@dataclass
class Reading:
    asked: str | None
    held: list[str]  # the question's terms some kept source holds
    missing: list[str]  # those none holds
    rare_missing: list[str]  # of those, the names and numbers no chunk of the corpus holds
    kind_found: bool | None  # a kept source holds the asked kind (None: no kind asked)
    language: tuple[str, float] = ("und", 0.0)  # the question's language as read, and how sure
    refused_by: str | None = None  # language, terms or kind
    reason: str | None = None  # one line a user reads
    shares: dict = field(default_factory=dict)  # term -> share of corpus chunks holding it


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
    shares = {t.text: share(t.text) for t in missing} if share else {}
    rare = [t.text for t in missing if (t.name or t.number) and share is not None and shares[t.text] == 0]
    kind_found = None
    if question.asked:
        kind_found = any(short_answer_of_kind(question, text) is not None for text in texts)
    reading = Reading(question.asked, [t.text for t in held], [t.text for t in missing], rare, kind_found)
    reading.shares = shares
    spoken, confidence = question_language(question.text)
    reading.language = (spoken, confidence)
    words = len(question.text.split())
    if (
        model_languages
        and spoken not in model_languages
        and spoken != question.language
        and confidence >= LANGUAGE_CONFIDENCE
        and words >= MIN_WORDS_FOR_LANGUAGE
    ):
        reading.refused_by = "language"
        trained = ", ".join(name_of(code) for code in model_languages)
        reading.reason = (
            f"the question reads as {name_of(spoken)} and the serving model {model} was trained on {trained} only"
            + (f": {reader} reads {name_of(spoken)} (rag-assets run --models {reader})" if reader else "")
        )
    elif rare:
        reading.refused_by = "terms"
        named = ", ".join(f'"{t}"' for t in rare)
        reading.reason = f"the sources never mention {named}"
    elif question.asked in STRICT_KINDS and not kind_found:
        reading.refused_by = "kind"
        reading.reason = f"the question asks for a {question.asked} and no source kept holds one"
    return reading
