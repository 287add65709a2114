"""A question read the way the support check reads an answer: the kind of answer it asks for (a
date, a number, a person, a place), the terms that carry it, and where a text holds them.

The extractive answerer chooses its sentence and its short answer by this reading, and the answerer
refuses a question whose names or numbers, or whose asked kind, no kept source holds (answerability).
Terms match through stems (Snowball, BulStem) and through compounds and derivations that share a
stem of at least COMPOUND_STEM letters (`pistonless` holds `pistons`, `Ordnungszahl` holds `Zahl`).
The kinds are read per language (en, de, bg, ru, el); a question in another language is read for
its terms only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rag_assets.answering.support import fold
from rag_assets.answering.support_words import MAGNITUDES, NUMBER_WORDS
from rag_assets.retrieval.lexical import Tokenizer, analysis_of, stop_words

NOUNS_CAPITALISED = {"de", "lb"}  # languages that capitalise every noun: there only an abbreviation reads as a name
COMPOUND_STEM = 5  # letters two words must share, one inside the other, to be one term
_WORD = re.compile(r"\w+(?:[-'’]\w+)*")

# the kind of answer a question asks for, over its folded text (accents stripped, lower case)
_ASKS = {
    "en": {
        "date": r"^when\b|\b(what|which) (year|century|decade|date|month|day|era|period)\b|\bsince when\b"
        r"|\bhow long ago\b|\bby when\b",
        "number": r"\bhow (many|much|long|far|large|big|old|high|tall|deep|wide|heavy|fast|often|hot|cold)\b"
        r"|\bwhat (percentage|percent|proportion|fraction|share|amount|number|quantity)\b",
        "person": r"^(who|whom|whose)\b|\bby whom\b|\b(what|which) (person|man|woman|scientist|king|queen|player|team"
        r"|company|organization|organisation|group|author|emperor|president|leader|band|university|agency|party)\b"
        r"|\b(what (is|was) the|last) name\b",
        "place": r"^where\b|\b(what|which) (country|city|town|region|place|continent|state|island|location)\b",
    },
    "de": {
        "date": r"\bwann\b|\bwelche[mnrs]? (jahr|jahrhundert|jahrzehnt|datum|monat|tag)\b|\bseit wann\b",
        "number": r"\bwie (viele?|lange?|weit|gross|hoch|alt|schwer|schnell|tief|breit|oft|heiss)\b"
        r"|\bwelche[mnrs]? (anzahl|anteil|prozentsatz|menge)\b",
        "person": r"^(wer|wem|wen|wessen)\b|\bvon wem\b",
        "place": r"^(wo|woher|wohin)\b|\bwelche[mnrs]? (land|stadt|region|ort|kontinent|insel)\b",
    },
    "bg": {
        "date": r"\bкога\b|\b(коя|кой) (година|век|месец|ден|десетилетие)\b",
        "number": r"\bколко\b",
        "person": r"^(кой|кого|чий) (е|са|бил|била|са били|е бил)\b",
        "place": r"^къде\b|\b(коя|кой|в коя|в кой) (страна|държава|град|регион|континент|остров)\b",
    },
    "ru": {
        "date": r"\bкогда\b|\bв? ?как(ом|ой|ого|ие) (году|год|веке|век|месяце|день)\b",
        "number": r"\bсколько\b",
        "person": r"^(кто|кем|кого|кому|чей|чья|чьи)\b",
        "place": r"^(где|куда|откуда)\b|\b(какой|какая|какие|в какой|в каком) (стране|страна|город|городе|регион)\b",
    },
    "el": {
        "date": r"\bποτε\b|\bποι(ο|α|ον) (ετος|χρονια|αιωνα|μηνα|ημερα|δεκαετια)\b",
        "number": r"\bποσ(α|οι|ες|ο|η|ους|ων)\b",
        "person": r"^ποιος (ηταν|ειναι|εγραψε|ιδρυσε|ανακαλυψε)\b",
        "place": r"^που\b|\bσε ποι(α|ο) (χωρα|πολη|περιοχη|ηπειρο|νησι)\b",
    },
}
# the asked kinds whose absence from every kept source refuses the question: only where the kind is
# unmistakable (`how long` may be answered "until the end of the term", `when is X correct?` asks a
# condition, a `when` clause asks nothing); past `when` in English, a year named in the other languages
_STRICT = {
    "en": {"date": r"^(when (was|were|did|had)|in what year|what year|in which year|which year)\b"
           r"(?!.*\b(what|which|who|how)\b)",
           "number": r"\bhow (many|much)\b"},
    "de": {"date": r"\bin welchem jahr\b", "number": r"\bwie viele?\b"},
    "bg": {"date": r"\b(в|през) коя година\b", "number": r"\bколко\b"},
    "ru": {"date": r"\bв каком году\b", "number": r"\bсколько\b"},
    "el": {"date": r"\b(ποιο ετος|ποια χρονια)\b", "number": r"\bποσ(α|οι|ες|ους|ων)\b"},
}  # fmt: skip
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
# words that ask rather than say: never a term the sources must hold
_ASKING = {
    "en": "what which who whom whose when where why how many much long far year years century centuries decade "
    "decades date month day era period kind type name named called refer refers referred term describe described "
    "example examples country countries city cities town towns region regions place places continent continents "
    "island islands location",
    "de": "was welche welcher welches welchen welchem wer wem wen wessen wann wo wie warum viele viel jahr jahre "
    "jahrhundert jahrzehnt datum monat tag art name namen genannt bezeichnet beispiel land lander stadt stadte "
    "region ort kontinent insel",
    "bg": "какво какъв каква какви кой коя кое кои кого кога къде защо колко година години век десетилетие дата "
    "месец ден вид име наричат нарича пример страна страни държава държави град градове регион място континент "
    "остров",
    "ru": "что какой какая какое какие каком кто кого кем когда где почему сколько году год лет век веке дата месяц "
    "день вид название называют называется пример страна стране страны город городе регион место континент "
    "остров",
    "el": "τι ποιος ποια ποιο ποιοι ποιες ποτε που πως γιατι ποσα ποσοι ποσες ετος χρονια αιωνα δεκαετια "
    "ημερομηνια μηνα ημερα ειδος ονομα ονομαζεται παραδειγμα χωρα χωρες πολη πολεις περιοχη ηπειρο νησι",
}
_MONTHS = {
    "en": "january february march april may june july august september october november december",
    "de": "januar februar marz april mai juni juli august september oktober november dezember",
    "bg": "януари февруари март април май юни юли август септември октомври ноември декември",
    "ru": "январ феврал март апрел мая май июн июл август сентябр октябр ноябр декабр",
    "el": "ιανουαρ φεβρουαρ μαρτ απριλ μαι ιουν ιουλ αυγουστ σεπτεμβρ οκτωβρ νοεμβρ δεκεμβρ",
}
_CENTURY = {
    "en": r"centur(y|ies)|\d0s\b|\bbc\b|\bad\b|\bbce\b|\bbp\b|\bago\b",
    "de": r"jahrhundert|\bv\. ?chr\b|\bn\. ?chr\b",
    "bg": r"\bвек|\bпр\. ?н\. ?е|\bсл\. ?н\. ?е",
    "ru": r"\bвек|\bдо н\. ?э|\bн\. ?э",
    "el": r"\bαιων|\bπ\. ?χ\b|\bμ\. ?χ\b",
}
_YEAR = re.compile(r"(?<![\d.,])(?:1\d{3}|20\d{2})(?:s|-е|-те)?(?![\d%]|[.,]\d)")
# a year of three digits only after a word that introduces one, and followed by no unit: in 911
_SHORT_YEAR = re.compile(
    r"\b(?:in|by|from|until|till|since|after|before|around|circa|year|im|seit|bis|през|в|от|до|το|στο|από)\s+"
    r"([1-9]\d{2})(?=\s*(?:$|[^\w\s%]|AD\b|BC\b|CE\b|n\. ?Chr|г\.|(?:and|und|и|και|under|when|by|the|as|with|at|"
    r"in|on|to|until|after|before|he|she|it|they|der|die|das|als|unter|bis|когато|при|от|когда|при|όταν|με)\b))",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d")
_ORDINAL = re.compile(r"\d+(st|nd|rd|th|\.|-?(та|ти|ви|ри|ия|я|й|го|ος|η|ο))", re.IGNORECASE)
# words that join the parts of one name: Duchy of Normandy, Ludwig van Beethoven
_NAME_JOINERS = {"of", "de", "da", "del", "der", "den", "van", "von", "the", "al", "bin", "ibn", "и", "на"}


def _folded_words(words: str) -> frozenset[str]:
    return frozenset(fold(w) for w in words.split())


@lru_cache(maxsize=16)
def _language(language: str):
    """(kind patterns, asking words, stop words, tokenizer, month stems, century pattern, number words)."""
    asks = {k: re.compile(p) for k, p in _ASKS.get(language, {}).items()}
    stops = _folded_words(" ".join(stop_words(language) | stop_words("en" if language == "und" else language)))
    numbers = {fold(w) for w in NUMBER_WORDS.get(language, {})} | {fold(w) for w in MAGNITUDES.get(language, {})}
    return (
        asks,
        _folded_words(_ASKING.get(language, "")),
        stops,
        Tokenizer(analysis_of("per-language", language)),
        tuple(_MONTHS.get(language, "").split()),
        re.compile(_CENTURY[language]) if language in _CENTURY else None,
        frozenset(w for w in numbers if " " not in w),
    )


@dataclass(frozen=True)
class Term:
    text: str  # as the question writes it
    key: str  # its stem, folded
    name: bool  # capitalised inside the question (in German: all capitals), a name the sources must hold
    number: bool  # digits, an ordinal (15th) aside
    run: int = -1  # which run of capitalised words of the question it is part of (Graham Twigg), -1: none


@dataclass(frozen=True)
class Question:
    text: str
    language: str
    asked: str | None  # date, number, person or place; None for what, which, how, why
    terms: tuple[Term, ...]
    strict: bool = False  # the asked kind is unmistakable: a source without it cannot answer


def _keys(words: list[str], tokenizer: Tokenizer) -> list[str]:
    stemmer = tokenizer.stemmer
    lowered = [fold(w) for w in words]
    return [fold(s) for s in stemmer.stemWords(lowered)] if stemmer else lowered


def read_question(text: str, language: str) -> Question:
    """What `text` asks for and the terms (stems) that carry it, stop and asking words left out."""
    asks, asking, stops, tokenizer, *_ = _language(language)
    folded = fold(text).strip()
    asked = next((kind for kind, pattern in asks.items() if pattern.search(folded)), None)
    strict = asked in _STRICT.get(language, {}) and bool(re.search(_STRICT[language][asked], folded))
    found = [(_POSSESSIVE.sub("", m.group()), m.start()) for m in _WORD.finditer(text)]
    kept = [(w, at) for w, at in found if fold(w) not in stops and fold(w) not in asking and len(w) > 1 or w.isdigit()]
    keys = _keys([w for w, _ in kept], tokenizer)
    runs = {m.start(): i for i, m in enumerate(re.finditer(r"\w+", text))}
    capital_run, run_of, previous = -1, {}, -2
    for m in re.finditer(r"\w+", text):
        if m.group()[:1].isupper():
            capital_run = capital_run if runs[m.start()] == previous + 1 else capital_run + 1
            run_of[m.start()], previous = capital_run, runs[m.start()]
    terms, seen = [], set()
    for (word, at), key in zip(kept, keys):
        if key in seen or not key:
            continue
        seen.add(key)
        number = bool(_DIGITS.search(word)) and not _ORDINAL.fullmatch(word)
        name = word[:1].isupper() and at > 0 and (language not in NOUNS_CAPITALISED or word.isupper())
        terms.append(Term(word, key, name, number, run_of.get(at, -1)))
    return Question(text, language, asked, tuple(terms), strict)


def stop_words_of(language: str) -> frozenset[str]:
    """The language's stop words, folded."""
    return _language(language)[2]


@lru_cache(maxsize=4096)
def written_words(question: str, language: str) -> frozenset[str]:
    """A question's words as written (folded, possessives cut), stop words aside."""
    return frozenset(fold(_POSSESSIVE.sub("", m.group())) for m in _WORD.finditer(question)) - stop_words_of(language)


def words_of(text: str, language: str) -> tuple[tuple[str, int, int], ...]:
    """(stem key, start, end) of every word of a text; remembered for the last CACHED texts (a
    service reads the same chunks' sentences again and again)."""
    return _words_of(text, language)


CACHED = 16384


@lru_cache(maxsize=CACHED)
def _words_of(text: str, language: str) -> tuple[tuple[str, int, int], ...]:
    found = list(_WORD.finditer(text))
    keys = _keys([m.group() for m in found], _language(language)[3])
    return tuple((k, m.start(), m.end()) for k, m in zip(keys, found))


def matches(key: str, held: str) -> bool:
    """One term: the same stem, or one inside the other with COMPOUND_STEM letters or more."""
    if key == held:
        return True
    short, long = sorted((key, held), key=len)
    return len(short) >= COMPOUND_STEM and short in long


def held_terms(question: Question, keys: set[str] | frozenset[str]) -> list[Term]:
    """The question's terms that a text with these word keys holds."""
    exact = [t for t in question.terms if t.key in keys]
    rest = [t for t in question.terms if t.key not in keys and any(matches(t.key, k) for k in keys)]
    return exact + rest


def kind_spans(text: str, kind: str, language: str) -> list[tuple[int, int]]:
    """Where `text` holds an answer of `kind`: years, centuries and months (date); digits and
    numbers in words (number); runs of capitalised words past a sentence's first word (person, place)."""
    _, _, _, _, months, century, number_words = _language(language)
    if kind == "date":
        spans = [m.span() for m in _YEAR.finditer(text)] + [m.span(1) for m in _SHORT_YEAR.finditer(text)]
        folded = fold(text)  # accents are single code points here, so offsets stay those of `text`
        if len(folded) == len(text):
            spans += [
                _with_day_and_year(text, m.span())
                for m in re.finditer(r"\w+", folded)
                if months and m.group().startswith(months)
            ]
            if century is not None:
                spans += [m.span() for m in century.finditer(folded)]
        return sorted(spans)
    if kind == "number":
        return [m.span() for m in _WORD.finditer(text) if _DIGITS.search(m.group()) or fold(m.group()) in number_words]
    return _name_spans(text)


def _with_day_and_year(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """A month's span with the day before it and the year after it: 12 August 911, 3. März 1921."""
    day = re.search(r"\b\d{1,2}\.?\s+$", text[: span[0]])
    year = re.match(r",?\s+\d{1,4}\b", text[span[1] :])
    return (day.start() if day else span[0], span[1] + year.end() if year else span[1])


def _name_spans(text: str) -> list[tuple[int, int]]:
    """Runs of capitalised words (joined by `of`, `von`, ...), the text's first word left out unless
    it starts a run of two or more."""
    found = list(_WORD.finditer(text))
    runs, current = [], []
    for i, m in enumerate(found):
        word = m.group()
        if word[:1].isupper() and not word.isdigit():
            current.append(m)
            continue
        if current and word in _NAME_JOINERS and i + 1 < len(found) and found[i + 1].group()[:1].isupper():
            current.append(m)
            continue
        if current:
            runs.append(current)
        current = []
    if current:
        runs.append(current)
    spans = []
    for run in runs:
        if run[0].start() == found[0].start() and len(run) == 1:
            continue
        spans.append((run[0].start(), run[-1].end()))
    return spans
