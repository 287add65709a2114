"""Does each sentence of an answer say only what its sources say? A deterministic check, no model.

Every word of a sentence is accounted for against the quotes it cites (`[n]`; a sentence that
cites none, against every source shown), in the language of the answer and its sources:
- numbers, by value (`1,777` = `1 777` = `1777`; `3,5` = `3.5`; `1.5 million`; numbers in words,
  `once`, `twice`; `daily` and `every year` are once a day and once a year), each with its unit,
  which a source must give the same value (`330 m` = `330 metres`; `300 days` is not `300 years`),
  and with a word near it in the source's sentence;
- closed classes, read only in their own language (`support_words`): a negation added or
  dropped, a quantifier the source's sentence does not use, an ordinal that differs or a
  superlative where the source gives an ordinal, a word of an exclusive class (antonyms,
  comparatives, frequency words, directions, seasons, materials, colours) where the source holds
  another member of that class and not this one;
- every other word that is no function word of the language (NLTK's lists where bm25s has them,
  stopwords-iso's otherwise): held whole, by stem (Snowball, BulStem), by lemma (simplemma), by
  a shared prefix of all but its last STEM_SLACK letters, as German compound parts, as an
  abbreviation of words the source writes (or back), or as a unit's name or symbol.
Two levels: a number, unit, name, negation, quantifier, ordinal or exclusive-class word where the
source states something else is a contradiction (UNSUPPORTED, with what it states); a word or
number the source does not hold is NOT IN SOURCE; a number worked out from two one source states
(`77 years = 1968 − 1891`) is supported, with the working. Words that speak of the sources
(`according`, `the source says that`, `в источнике сказано`), hedges on a number (`about`), a cited
document's title and headings, and the answer prefix the project wrote are no claims; the
question's words are claims like any, and a claim only the question holds is labelled so. A
sentence found verbatim in a quote it cites is supported as it stands. Text is compared after
Unicode compatibility folding, without accents and case. What this catches and misses is
measured by bench/support_realistic.py and bench/support_check.py (docs/answering.md, "The
support check").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from functools import cached_property, lru_cache

import bm25s

from rag_assets.answering import support_words as words
from rag_assets.ingest.language import language_of
from rag_assets.ingest.sentences import sentence_spans
from rag_assets.retrieval import lexical

STEM_MIN, STEM_SLACK = 4, 3
PREFIX_SHARE = 0.7
NEAR = 4
NEGATION_SCOPE = 3
_MARKER = re.compile(r"\[(\d+)\]")
_NUMBER = r"\d+(?:[.,\u00a0\u202f' ]\d+)*"  # digits with thousands or decimal separators
_TOKEN = re.compile(rf"{_NUMBER}|°[CcFf]|[^\W\d_]+|[%£€$₽]|[.,;:!?()\u2013\u2014]")
_CLAUSE_BREAK = set(".,;:!?()\u2013\u2014")
_CONTRACTION = re.compile(r"n['’]t\b", re.IGNORECASE)
_FUNCTION_WORDS = {"en": bm25s.stopwords.STOPWORDS_EN_PLUS, "de": bm25s.stopwords.STOPWORDS_GERMAN,
                   "ru": bm25s.stopwords.STOPWORDS_RUSSIAN}  # fmt: skip
_SUPERLATIVE_ENDINGS = ("est", "ste", "sten", "ster", "stes", "ший", "шая", "шее", "шие", "τατος", "τατη", "τερος")
_GERMAN_LINKS = ("es", "en", "s", "n", "e")
BULGARIAN_ARTICLES = ("ът", "ят", "та", "то", "те", "а", "я")
UNSUPPORTED, NOT_IN_SOURCE, SUPPORTED = "UNSUPPORTED", "NOT IN SOURCE", "SUPPORTED"


@dataclass(frozen=True)
class SentenceSupport:
    text: str
    start: int  # offsets in the answer
    end: int
    cites: list[int]  # the [n] this sentence (or the marker right after it) points at
    contradicted: list[
        str
    ]  # a number, unit, name, negation, quantifier, ordinal or antonym its sources state otherwise
    not_in_source: list[str]  # words its sources do not hold
    elsewhere: list[str] = field(default_factory=list)  # of those, what another shown source holds: a wrong citation
    from_question: list[str] = field(default_factory=list)  # of those, what only the question holds
    worked: list[str] = field(default_factory=list)  # numbers worked out from the sources: `77 = 1968 − 1891`
    matched: str = ""  # the source's sentence it was compared with (the one sharing the most words), whole

    @property
    def missing(self) -> list[str]:
        return self.contradicted + self.not_in_source

    @property
    def supported(self) -> bool:
        return not self.missing

    @property
    def verdict(self) -> str:
        return UNSUPPORTED if self.contradicted else NOT_IN_SOURCE if self.not_in_source else SUPPORTED

    def as_dict(self) -> dict:
        return {**asdict(self), "missing": self.missing, "supported": self.supported, "verdict": self.verdict}


def fold(text: str) -> str:
    """Compatibility form, no accents, case-folded: what claims and sources are compared as."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _of(table: dict, language: str):
    return table.get(language, table["en"])


@dataclass(frozen=True)
class _Rules:
    """One language's stemmer, lemmatiser and closed word classes (folded)."""

    language: str
    stem: Callable[[str], str]
    lemma: Callable[[str], str]  # folded lemma of a word as written
    function_words: frozenset
    short_function_words: frozenset  # Lucene's 33 English stop words (none for other languages)
    negations: frozenset
    quantifier: dict  # word -> class
    every: frozenset
    magnitudes: dict  # word -> power of ten
    numbers: dict  # word -> value
    number_and: frozenset  # the word inside a number in words: `two hundred and fifty`
    multiples: frozenset  # number words that never continue one: `twice`, `dozen`
    between: frozenset
    frequency: dict  # word -> unit it is once per
    units: dict  # form -> unit ids
    ordinals: dict  # stem -> value
    superlative: frozenset
    exclusive: dict  # folded word or stem -> {(class, pole)}
    poles: tuple  # class -> poles -> frozenset of folded words and stems
    no_claim: frozenset  # attribution, hedges and the words that tie claims (`although`)
    sources: frozenset  # the words of attribution alone: `source`, `text`, `article`, `статье`
    clause_words: frozenset
    light_verbs: frozenset  # lemmas
    dimensions: dict  # word -> the words of every other dimension
    noun_negations: frozenset  # negations of a noun, which reach the words right after them
    coordinators: frozenset  # `and`, `but`: a negation of the verb does not reach past them
    range_words: frozenset  # `to`, `bis`, `до`, `έως`, `and` between two numbers of one unit
    speech: frozenset  # verbs of saying, and their stems: no claim beside a word about the sources
    comparison: frozenset  # words that compare two things or say one changed: `than`, `als`, `чем`, `rose`
    rest: frozenset  # words of what is left of a whole: `other`, `remaining`, `остальным`, `apart from`
    aggregate: frozenset  # words of an average, a share each or a total: `on average`, `zusammen`, `средно`
    than: frozenset  # the word before what is compared against: `than`, `als`, `от`, `чем`, `από`
    excepting: frozenset  # `except`, `außer`, `кроме`: the other pole of what they except is stated too
    equative: frozenset  # `as`, `wie`: `(five times) as long as` says no pole of its own
    comparative_endings: tuple

    def forms(self, word: str) -> set[str]:
        """A word's stems with and without a Bulgarian definite article, which BulStem alone leaves
        apart (`парламента` -> парламен, `парламентът` -> парламент)."""
        out = {self.stem(word)}
        if self.language == "bg":
            out |= {
                self.stem(word[: -len(a)]) for a in BULGARIAN_ARTICLES if word.endswith(a) and len(word) > len(a) + 2
            }
        return out

    def keys(self, folded: str) -> set[str]:
        return {folded} | self.forms(folded)

    def classes(self, token: _Token) -> set[tuple[int, int]]:
        return set().union(*(self.exclusive.get(k, ()) for k in self.keys(token.folded)))

    def ordinal(self, token: _Token) -> int | None:
        return next((self.ordinals[k] for k in self.keys(token.folded) if k in self.ordinals), None)

    def content(self, token: _Token) -> bool:
        """A word that carries meaning: no function word, hedge or word about the sources."""
        return (
            token.kind == "word"
            and len(token.folded) > 1
            and token.folded not in self.function_words
            and token.folded not in self.no_claim
            and self.stem(token.folded) not in self.no_claim
        )

    def light(self, token: _Token) -> bool:
        """A verb that claims nothing of its own (`measures`, `beträgt`, `находится`), by its lemma."""
        return self.lemma(token.text.lower()).split("-")[0] in self.light_verbs  # bg lemmas: `намирам-(се)`

    def polar(self, token: _Token) -> bool:
        """A word whose polarity is read: any word of three letters or more but English's shortest
        function words (a verb such as `can` or Bulgarian `прави`, stop words, is negated as any
        other), no negation or quantifier."""
        return (
            (token.kind == "word" or (token.kind == "number" and token.folded.isalpha()))
            and len(token.folded) > 2
            and token.folded not in self.short_function_words
            and token.folded not in self.negations
            and token.folded not in self.quantifier
        )


@lru_cache(maxsize=64)
def _rules(language: str) -> _Rules:
    stemmer = lexical.Tokenizer(lexical.analysis_of(lexical.PER_LANGUAGE, language)).stemmer

    @lru_cache(maxsize=65536)
    def stem(word: str) -> str:
        return stemmer.stemWords([word])[0] or word if stemmer else word

    @lru_cache(maxsize=65536)
    def lemma(word: str) -> str:
        import simplemma  # its tables load on first use: only when a word is held by no stem

        try:
            return fold(simplemma.lemmatize(word, lang=language))
        except ValueError:  # a language simplemma has no tables for
            return ""

    def folded(table: dict) -> frozenset:
        return frozenset(fold(w) for w in _of(table, language))

    exclusive: dict[str, set] = {}
    poles = []
    for c, cls in enumerate(_of(words.EXCLUSIVE, language)):
        poles.append([])
        for p, pole in enumerate(cls):
            keys = {k for w in pole.split() for k in (fold(w), stem(fold(w)))}
            poles[-1].append(frozenset(keys))
            for k in keys:
                exclusive.setdefault(k, set()).add((c, p))
    units = {}
    for unit, forms in words.UNITS.items():
        for form in forms.split():
            units.setdefault(fold(form.replace("-", " ")), set()).add(unit)
    dimensions = [fold(pole).split() for pole in _of(words.DIMENSIONS, language)]
    function_words = _FUNCTION_WORDS.get(language) or lexical.stop_words(language)
    return _Rules(
        language,
        stem,
        lemma,
        frozenset(fold(w) for w in function_words),
        frozenset(bm25s.stopwords.STOPWORDS_EN if language == "en" else ()),
        folded(words.NEGATIONS),
        {fold(w): cls for cls, ws in _of(words.QUANTIFIERS, language).items() for w in ws},
        folded(words.EVERY),
        {fold(w): power for w, power in _of(words.MAGNITUDES, language).items()},
        {fold(w): Decimal(v) for w, v in _of(words.NUMBER_WORDS, language).items()},
        folded(words.NUMBER_AND),
        folded(words.MULTIPLES),
        folded(words.BETWEEN),
        {fold(w): unit for w, unit in _of(words.FREQUENCY, language).items()},
        {form: frozenset(ids) for form, ids in units.items()},
        {
            stem(fold(w)): i + 1
            for i, forms in enumerate(_of(words.ORDINALS, language).split())
            for w in forms.split("/")
        },
        folded(words.SUPERLATIVE),
        exclusive,
        tuple(tuple(cls) for cls in poles),
        folded(words.ATTRIBUTION)
        | {stem(w) for w in folded(words.ATTRIBUTION)}
        | folded(words.APPROXIMATE)
        | folded(words.DISCOURSE),
        folded(words.ATTRIBUTION),
        folded(words.CLAUSE_WORDS),
        folded(words.LIGHT_VERBS),
        {
            w: frozenset(v for other in dimensions if other is not pole for v in other)
            for pole in dimensions
            for w in pole
        },
        folded(words.NOUN_NEGATIONS),
        folded(words.COORDINATORS),
        folded(words.RANGE_WORDS),
        folded(words.SPEECH) | {stem(w) for w in folded(words.SPEECH)},
        folded(words.COMPARISON) | folded(words.CHANGE),
        folded(words.REST),
        folded(words.AGGREGATE),
        folded(words.THAN),
        folded(words.EXCEPT),
        folded(words.EQUATIVE),
        tuple(_of(words.COMPARATIVE_ENDINGS, language)),
    )


def _values(number: str) -> set[Decimal]:
    """Every value a written number can mean: a separator before exactly three digits groups
    thousands or marks decimals; any other `.` or `,` marks decimals."""
    groups = re.split(r"[.,\u00a0\u202f' ]", number)
    separators = re.findall(r"[.,\u00a0\u202f' ]", number)
    out = set()
    if all(len(g) == 3 for g in groups[1:]) and len(groups[0]) <= 3 and len(set(separators)) <= 1:
        out.add(Decimal("".join(groups)))
    if len(separators) == 1 and separators[0] in ".,":
        out.add(Decimal(f"{groups[0]}.{groups[1]}"))
    if not separators:
        out.add(Decimal(number))
    return out


@dataclass
class _Token:
    text: str  # as written
    folded: str
    kind: str  # number, word, punct
    values: frozenset = frozenset()
    unit: frozenset = frozenset()  # a number's unit when the word itself says it (`daily`)


def _plain(value: Decimal) -> str:
    return f"{value.normalize():f}"


def _place(value: Decimal) -> int:
    """The lowest place a number in words has filled: 20 -> 10, 2300 -> 100, 5 -> 1."""
    whole, place = int(value), 1
    while whole and whole % (place * 10) == 0:
        place *= 10
    return place


def _tokens(text: str, rules: _Rules) -> list[_Token]:
    """Words, numbers (digits, words, with their magnitude word folded in; `daily` and `every
    year` are once per day and year) and clause punctuation, in order. A run of digits and
    separators that is no one number (`2019 20`) is read as its parts; a run of numbers in words
    is one number (`twenty-four`, `two hundred thousand`, `two thousand three hundred and five`)."""
    text = _CONTRACTION.sub(" not", _MARKER.sub(" ", text))
    out: list[_Token] = []
    in_words: dict[int, tuple[Decimal, Decimal]] = {}  # out index -> (the groups done, the group open)
    matches = list(_TOKEN.finditer(text))
    written_all = [m.group() for m in matches]

    def joins(i: int, value: Decimal) -> int:
        """How many tokens back the number in words that word i (of `value`) continues ends; 0 for
        none, and for a word of a compound (`twenty one-hour lessons`), a multiple (`forty twice`)
        or a range (`between forty and two`)."""
        if text[matches[i].end() : matches[i].end() + 1] == "-" or fold(written_all[i]) in rules.multiples:
            return 0
        for back in (1, 2):
            at = len(out) - back
            if at < 0 or (back == 2 and out[-1].folded not in rules.number_and):
                return 0
            if at in in_words:
                whole = sum(in_words[at])
                between = at > 0 and out[at - 1].folded in rules.between and back == 2
                return back if whole >= 20 and value < _place(whole) and not between else 0
        return 0

    for i, written in enumerate(written_all):
        if written[0].isdecimal():
            values = _values(written)
            parts = [written] if values else re.split(r"[\u00a0\u202f' ]", written)
            for part in parts:  # a date such as 3.5.2020 is one value, its digits
                read = values or _values(part) or {Decimal(re.sub(r"\D", "", part))}
                out.append(_Token(part, part, "number", frozenset(read)))
            continue
        folded = fold(written)
        nxt = fold(written_all[i + 1]) if i + 1 < len(written_all) else ""
        power = rules.magnitudes.get(folded)
        last, at = (out[-1], len(out) - 1) if out and out[-1].kind == "number" else (None, None)
        if power and last and (power > 2 or at in in_words or max(last.values) < 100):  # not `2005 hundred`
            values = frozenset(v * 10**power for v in last.values)
            if at in in_words:  # `two hundred thousand`, `three billion four hundred million`
                done, group = in_words[at]
                if power == 2:
                    done, group = (done, group * 100) if group else (done * 100, group)
                else:
                    done, group = (done + group * 10**power, Decimal(0)) if group else (done * 10**power, group)
                in_words[at], values = (done, group), frozenset({done + group})
            out[-1] = _Token(f"{last.text} {written}", last.folded, "number", values)
        elif (
            len(out) > 1
            and out[-1].folded in _of(words.DECIMAL_POINT, rules.language)
            and out[-2].kind == "number"
            and not out[-2].text[:1].isdecimal()
            and rules.numbers.get(folded, 10) < 10
        ):  # `seven point nine`
            whole = out.pop(-2)
            point = out.pop()
            values = frozenset(v + rules.numbers[folded] / 10 for v in whole.values)
            out.append(_Token(f"{whole.text} {point.text} {written}", whole.folded, "number", values))
        elif (
            (
                value := rules.numbers.get(
                    folded, _compound_number(folded, rules, len(out) > 1 and out[-1].folded in rules.number_and)
                )
            )
            is not None  # `двадесет и осемте`, `elfeinhalb`
            and (out[-1].folded if out else "") != "τοις"
            and (folded != "one" or (nxt.isalpha() and nxt not in rules.function_words) or joins(i, Decimal(1)))
        ):
            back = joins(i, value)
            if back:
                run, folded_first = " ".join(t.text for t in out[-back:]), out[-back].folded
                done, group = in_words.pop(len(out) - back)
                del out[-back:]
                in_words[len(out)] = (done, group + value)
                out.append(_Token(f"{run} {written}", folded_first, "number", frozenset({done + group + value})))
            else:
                in_words[len(out)] = (Decimal(0), value)
                out.append(_Token(written, folded, "number", frozenset({value})))
        elif folded in rules.frequency:
            out.append(_Token(written, folded, "number", frozenset({Decimal(1)}), frozenset({rules.frequency[folded]})))
        else:
            out.append(_Token(written, folded, "punct" if written in _CLAUSE_BREAK else "word"))
            times = bool(out) and rules.units.get(out[-1].folded) == {"times"}  # `three times every week`: one
            if folded in rules.every and rules.units.get(nxt, set()) & words.TIME_UNITS and not times:
                out.append(_Token(written, folded, "number", frozenset({Decimal(1)})))  # every year: once a year
    return out


_GERMAN_ONES = {"ein": 1, "eins": 1, "zwei": 2, "drei": 3, "vier": 4, "funf": 5, "sechs": 6, "sieben": 7, "acht": 8,
                "neun": 9}  # fmt: skip
_GERMAN_TEENS = {"zehn": 10, "elf": 11, "zwolf": 12, "dreizehn": 13, "vierzehn": 14, "funfzehn": 15, "sechzehn": 16,
                 "siebzehn": 17, "achtzehn": 18, "neunzehn": 19}  # fmt: skip
_GERMAN_TENS = {"zwanzig": 20, "dreißig": 30, "dreissig": 30, "vierzig": 40, "funfzig": 50, "sechzig": 60,
                "siebzig": 70, "achtzig": 80, "neunzig": 90}  # fmt: skip


def _german(word: str) -> Decimal | None:
    """A German number written as one word (`hundertsiebenunddreißig`, `fünfzigtausend`,
    `elfeinhalb`), folded; None for any word that is not wholly one."""
    if word.endswith("einhalb") and len(word) > 7:
        whole = _german(word[:-7])
        return None if whole is None else whole + Decimal("0.5")
    for magnitude, size in (("tausend", 1000), ("hundert", 100)):
        if magnitude in word:
            left, _, right = word.partition(magnitude)
            many = _german(left) if left else 1
            rest = _german(right) if right else 0
            return None if many is None or rest is None or many >= size else many * size + rest
    if word in _GERMAN_ONES or word in _GERMAN_TEENS or word in _GERMAN_TENS:
        return Decimal({**_GERMAN_ONES, **_GERMAN_TEENS, **_GERMAN_TENS}[word])
    ones, _, tens = word.partition("und")
    if tens in _GERMAN_TENS and ones in _GERMAN_ONES:
        return Decimal(_GERMAN_TENS[tens] + _GERMAN_ONES[ones])
    return None


def _compound_number(folded: str, rules: _Rules, joining: bool = False) -> Decimal | None:
    """A number in one word the number words do not list: German's compounds, a Bulgarian number
    with its article ending a number in words (`двадесет и осемте`; `осемте` alone is `the eight`
    of something said before, no amount: `joining`)."""
    if folded in rules.numbers or len(folded) < 4:
        return None
    if rules.language == "de" and folded not in rules.magnitudes:
        return _german(folded)
    if rules.language == "bg" and joining and folded.endswith(("те", "та")) and folded[:-2] in rules.numbers:
        return rules.numbers[folded[:-2]]
    return None


@dataclass(frozen=True)
class _Number:
    values: frozenset
    unit: frozenset  # the ids of the unit right after it (empty: none)
    near: frozenset  # the stems of the NEAR nearest content words on each side
    sentence: frozenset = frozenset()  # in a source: the stems of its sentence's content words
    unit_at: int | None = None  # the unit word's token index
    written: str = ""  # as written, with its unit word
    after: frozenset = frozenset()  # a number without a unit: the stems of the two words after it, what it counts
    place: tuple = ()  # in a source: (which text, which sentence)
    per: Decimal | None = None  # how many times a second, where it says how often (`daily`, `twice a year`)
    per_at: int | None = None  # the index of the word of that period (`year` in `twice a year`)

    @property
    def rate(self) -> bool:
        return self.per is not None

    @cached_property
    def quantities(self) -> set[tuple[str, str, Decimal]]:
        """(dimension, unit, value in the dimension's base unit) for a unit of words.SCALES."""
        return {
            (words.SCALES[unit][0], unit, value * Decimal(str(words.SCALES[unit][1])))
            for unit in self.unit
            if unit in words.SCALES
            for value in self.values
        }


def _unit_after(tokens: list[_Token], i: int, rules: _Rules) -> tuple[frozenset, int | None]:
    if tokens[i].unit:
        return tokens[i].unit, None
    if i + 1 >= len(tokens):
        return frozenset(), None
    after = tokens[i + 1]
    if after.text == "." and i + 2 < len(tokens) and tokens[i].text.split()[-1].isalpha():
        i, after = i + 1, tokens[i + 2]  # `18 млн. лв.`: the magnitude's full stop
    two = f"{after.folded} {tokens[i + 2].folded}" if i + 2 < len(tokens) else ""
    if two in rules.units:
        return rules.units[two], i + 2
    if i + 2 < len(tokens) and after.kind == "word" and rules.units.get(tokens[i + 2].folded, set()) & words.CURRENCIES:
        return rules.units[tokens[i + 2].folded], i + 2  # `2.4 billion Norwegian kroner`
    if after.text == "%" or after.folded in rules.units:
        return rules.units.get(after.folded, frozenset({"%"})), i + 1
    return frozenset(), None  # any other word after it is context, among `near`


def _number(tokens: list[_Token], i: int, rules: _Rules, sentence=frozenset()) -> _Number:
    unit, at = _unit_after(tokens, i, rules)
    if not unit and i > 0 and rules.units.get(tokens[i - 1].folded, frozenset()) & words.CURRENCIES:
        unit = rules.units[tokens[i - 1].folded]  # `£65`, `NOK 2.4 billion`
    if (
        not unit
        and i + 2 < len(tokens)
        and tokens[i + 2].kind == "number"
        and tokens[i + 1].folded in rules.range_words
    ):
        unit = _unit_after(tokens, i + 2, rules)[0]  # a range's first number: `5 and 40 °C`, `2 έως 8 °C`
    near: set[str] = set()
    window = 4 * NEAR  # tokens looked at on each side: linear in the text, however many numbers it holds
    for side in (tokens[i + 1 : i + 1 + window], tokens[max(0, i - window) : i][::-1]):
        ws = [t for t in side if rules.content(t) and t.folded not in rules.units][:NEAR]
        near |= {f for t in ws for f in rules.forms(t.folded)}
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    counted = [] if unit or nxt is None or not rules.content(nxt) else tokens[i + 1 : i + 3]
    counted = counted[: next((k for k, t in enumerate(counted) if not rules.content(t)), len(counted))]
    after = frozenset(rules.stem(t.folded) for t in counted)  # `21 arches`, `240 народни представители`
    written = " ".join(t.text for t in tokens[i : (at if at is not None else i + bool(after)) + 1])
    per, per_at = _how_often(tokens, i, unit, at, rules)
    return _Number(tokens[i].values, unit, frozenset(near), sentence, at, written, after, per=per, per_at=per_at)


def _how_often(tokens: list[_Token], i: int, unit: frozenset, at: int | None, rules: _Rules) -> tuple:
    """(how many times a second a number says something happens, the index of the word of its
    period where that word is not the number's unit) where it says how often: `daily`, `every
    week`, `every six months`, `twice a year`, `einmal im Jahr`, `three times a week`; (None, None)
    for any other number. `twice a year` is `every six months`."""
    seconds = lambda u: Decimal(str(words.SCALES[u][1]))  # noqa: E731
    value = min(tokens[i].values)
    timed = sorted(unit & words.TIME_UNITS)
    if tokens[i].unit and timed:  # `daily`
        return 1 / seconds(timed[0]), None
    if (tokens[i].folded in rules.every or (i > 0 and tokens[i - 1].folded in rules.every)) and timed and value:
        return 1 / (value * seconds(timed[0])), None  # `every week`, `every six months`
    if tokens[i].folded in rules.multiples or unit == {"times"}:  # `twice a year`, `drei Mal pro Woche`
        for k in range((at if at is not None else i) + 1, min(i + 5, len(tokens))):
            period = sorted((tokens[k].unit or rules.units.get(tokens[k].folded, frozenset())) & words.TIME_UNITS)
            if period:
                return value / seconds(period[0]), k
            if tokens[k].kind == "number" or tokens[k].folded not in rules.function_words | rules.every:
                break
    return None, None


def _kind(number: _Number) -> str:
    """What a number measures, for telling which source number speaks of the same thing: a date (in
    digits, 1000-2100, with no unit or a year's), a unit's dimension (`time`, `length`), another
    unit, or a count."""
    if number.unit <= {"year"} and number.written[:1].isdecimal() and all(1000 <= v <= 2100 for v in number.values):
        return "date"
    return "+".join(sorted({words.SCALES[u][0] if u in words.SCALES else u for u in number.unit})) or "count"


def _base(number: _Number) -> set[Decimal]:
    """Its values in its dimension's base unit (`2.85 km` -> 2850), or as written; of two units one
    word may name (`г`: gram or year), the first by name, whatever the process's hash seed."""
    scales = [Decimal(str(words.SCALES[u][1])) for u in sorted(number.unit) if u in words.SCALES][:1] or [Decimal(1)]
    return {v * scales[0] for v in number.values}


@dataclass
class _Sentence:
    polarities: dict  # content stem -> polarities it stands in
    negated_clauses: dict  # content stem -> whether a clause holding it has a negation
    quantifiers: set
    ordinals: dict  # value -> what it counts (_ordinal_of)
    text: str = ""  # as the source writes it


class _Evidence:
    """The words, numbers and sentences of some texts, for looking claims up."""

    def __init__(self, texts: list[str], rules: _Rules):
        self.rules = rules
        self.written: set[str] = set()  # as written, lower case (for lemmas)
        self.words: set[str] = set()
        self.stems: set[str] = set()
        self.units: set[str] = set()
        self.capitals: set[str] = set()  # abbreviations written in capitals
        self.before: dict[str, set[str]] = {}  # word -> the words written right before it
        self.initials: set[str] = set()  # the initials of runs of 2-5 content words
        self.numbers: list[_Number] = []
        self.sentences: list[_Sentence] = []
        self.clauses: list[tuple] = []  # _clauses' of every sentence
        self.clause_sentence: list[int] = []  # the index in `sentences` of each clause's sentence
        self.comparisons: list[tuple] = []  # _comparisons' of every sentence
        for text in texts:
            for start, end in sentence_spans(text, rules.language) or [(0, len(text))]:
                tokens = _tokens(text[start:end], rules)
                stems = frozenset(f for t in tokens if rules.content(t) for f in rules.forms(t.folded))
                place = (texts.index(text), len(self.sentences))
                self.sentences.append(replace(_sentence(tokens, rules), text=text[start:end].strip()))
                self.initials |= _initials(tokens, rules)
                self.comparisons += _comparisons(tokens, rules)
                self.clauses += _clauses(tokens, rules)
                self.clause_sentence += [len(self.sentences) - 1] * (len(self.clauses) - len(self.clause_sentence))
                for i, t in enumerate(tokens):
                    if t.kind == "number":
                        self.numbers.append(replace(_number(tokens, i, rules, stems), place=place))
                        self.units |= t.unit
                    if t.kind == "word" or (t.kind == "number" and t.folded.isalpha()):  # `twelve` is a word too
                        self.written.add(t.text.lower())
                        self.words.add(t.folded)
                        self.stems |= rules.forms(t.folded)
                        self.units |= rules.units.get(t.folded, set())
                        if len(t.text) > 1 and t.text.isupper():
                            self.capitals.add(t.folded)
                        if i and tokens[i - 1].kind == "word":
                            self.before.setdefault(t.folded, set()).add(tokens[i - 1].folded)

    @cached_property
    def lemmas(self) -> set[str]:
        return {self.rules.lemma(w) for w in self.written} - {""}

    def holds_pole(self, pole: frozenset) -> bool:
        return bool(pole & self.words or pole & self.stems)

    def _part(self, part: str) -> bool:
        """A German compound's part: a word here, a word's stem, or a word's start."""
        return len(part) >= 3 and (
            part in self.words
            or bool(self.rules.forms(part) & self.stems)
            or (len(part) >= STEM_MIN and any(w.startswith(part) for w in self.words))
        )

    def holds_word(self, token: _Token, strict: bool = False) -> bool:
        """Whole, by stem, unit, abbreviation, shared prefix (not `strict`: a name), German compound
        parts, or lemma."""
        rules, folded = self.rules, token.folded
        if folded in self.words or rules.forms(folded) & self.stems:
            return True
        if rules.units.get(folded, set()) & self.units or folded in self.initials:
            return True
        if not strict and len(folded) >= STEM_MIN and any(_shares_prefix(folded, w) for w in self.words):
            return True
        if rules.language == "de" and (
            _compound(folded, self._part)
            or not strict
            and any(
                len(w) > len(folded) >= STEM_MIN and (w.startswith(folded) or w.endswith(folded)) for w in self.words
            )
        ):
            return True
        if strict:  # a name is not lemmatised: `Teslas` is not `Tesla`'s lemma here
            return False
        lemma = rules.lemma(token.text.lower())
        return bool(lemma) and (lemma in self.lemmas or bool(rules.forms(lemma) & self.stems))

    def abbreviates(self, tokens: list[_Token], i: int) -> bool:
        """Word i abbreviates a word the sources write before the word that follows it here (`St
        Odran` for `Saint Odran`, `Αγ. Θεοδώρας` for `Αγίας Θεοδώρας`: two letters, or three and a
        full stop, in order, the first first, of a word two letters longer at least: `Paul` is no
        `Pauli`, `NTL` no `nichtrevolutionärer`), or is a name the sources write with an ending of
        one or two letters more or less (`Горбунов`, `Горбунова`) or in another case (`Андрей`,
        `Андрея`; `Сосновец`, `Сосновца`: _name_key), in a language that inflects names."""
        word = tokens[i].folded
        nxt = next((t.folded for t in tokens[i + 1 : i + 3] if t.kind == "word"), "")
        short = len(word) == 2 or (len(word) == 3 and i + 1 < len(tokens) and tokens[i + 1].text == ".")
        for before in self.before.get(nxt, ()):
            if short and len(before) >= len(word) + 2 and before[0] == word[0] and _in_order(word, before):
                return True
        if not nxt and short and any(len(w) > 4 and w.startswith(word) for w in self.words):
            return True  # `Αγ.` that ended the sentence where the name's next word began another
        return (
            self.rules.language in ("de", "bg", "ru", "el")
            and len(word) >= 5
            and any(
                0 < abs(len(w) - len(word)) <= 2
                and (w.startswith(word) or word.startswith(w))
                and len(w) >= 5
                or _name_key(w) == _name_key(word)
                for w in self.words
            )
        )

    def near_miss(self, token: _Token) -> bool:
        """A word held here, or one sharing its first STEM_MIN letters with a word here: an
        expansion of an abbreviation made of it is no expansion (`Europe Union` where the source
        writes `European Union` and `EU`)."""
        return self.holds_word(token, strict=True) or any(w[:STEM_MIN] == token.folded[:STEM_MIN] for w in self.words)

    def holds_number(self, claim: _Number, context: bool = True) -> bool:
        """The value is written here with its unit right after it or among the words near it
        (`300 hours` does not hold `300 days`; `members ... in 1998` holds `1998 members`), and, where
        words near the claim are held here at all, one of them in its sentence here (`context`: a
        word held nowhere is reported on its own, NOT IN SOURCE)."""
        near = claim.near & self.stems
        return any(
            (
                claim.rate
                and held.rate
                and abs(claim.per - held.per) <= claim.per / 50  # `twice a year` holds `every six months`
                or not (claim.rate and held.rate)  # `twice a week` does not hold `twice a day`
                and claim.values & held.values
                and (
                    not claim.unit
                    or bool(claim.unit & (held.unit | held.near))
                    or _kind(claim) == _kind(held) == "date"
                )
                or _same_quantity(claim, held)
            )
            and (not context or not near or bool(near & held.sentence))
            for held in self.numbers
        )

    def same_thing(self, claim: _Number) -> _Number | None:
        """The number stated here of what the claim speaks of: of its kind, a frequency for a
        frequency, counting the same noun or sharing the most words near the claim (two, where two
        near it are held here), and alone in that (a tie names nothing)."""

        def score(held: _Number) -> tuple[bool, int]:
            return bool(claim.after & held.after), len(claim.near & (held.near | held.sentence))

        candidates = [held for held in self.numbers if _kind(held) == _kind(claim) and held.rate == claim.rate]
        scored = sorted(((score(held), held) for held in candidates), key=lambda x: x[0])
        enough = min(2, len(claim.near & self.stems))  # two words near it shared, where it has two held
        if not scored or not (scored[-1][0][0] or enough and scored[-1][0][1] >= enough and _kind(claim) != "count"):
            return None
        top, best = scored[-1]
        if any(score == top and held.values != best.values for score, held in scored[:-1]):
            return None
        return best

    def derivation(self, claim: _Number, compared: bool, stated: list, rest: bool = False) -> str | None:
        """The working, where the claim is worked out from two numbers one source states of one
        kind (`77 = 1968 − 1891`): a number of years between two dates; a difference where the
        sentence compares (`176 m longer than`: `compared`; a length alone is no difference), of
        counts only of one noun (`1,400 workers, of whom 16 died` gives no 1,384); a sum of two of
        one sentence, of counts only of nouns, one the claim's, where the answer states both too
        (`nine buildings, two churches and seven buildings`); a ratio where the claim says
        `times`; a quantity times a count its sentence gives (`80 mg = 2 × 40 mg`), where the
        answer does not state that count itself (`80 mg twice daily` is no 80 mg a day). Where the
        answer speaks of the rest of a whole (`rest`: `the other`, `apart from`, or a negation): a
        percentage's complement (`60 % = 100 % − 40 %`), and a difference of two counts of one
        sentence (`163 = 186 − 23`), and the rest of an amount (`40 % × 7,8 Millionen`). A share of an
        amount its sentence gives with a percentage, or the amount before a rise by it (`4,68
        Millionen Euro ≈ 60 % × 7,8 Millionen Euro`, `6.250 ≈ 7.500 ÷ 1.2`), rounded as the claim is
        written. A date is worked out only as a date of the sources plus a number of years their
        sentence gives (`2024 = 2021 + 3 years`)."""
        kind, wanted = _kind(claim), _base(claim)
        if kind == "date":
            for a in self.numbers:
                for b in self.numbers:
                    if _kind(a) == "date" and b.unit == {"year"} and _kind(b) != "date" and a.place == b.place:
                        if any(p + q in claim.values for p in a.values for q in b.values):
                            return f"{claim.written} = {a.written} + {b.written}"
            return None
        if rest and kind == "%":
            for a in self.numbers:
                if _kind(a) == "%" and any(100 - p in wanted for p in a.values if 0 < p < 100):
                    return f"{claim.written} = 100 % − {a.written}"
        if kind != "%":  # a share of an amount its sentence gives, or the amount before a change by a share
            for share in (n for n in self.numbers if _kind(n) == "%"):
                for a in self.numbers:
                    if (
                        a.place != share.place
                        or _kind(a) != kind
                        or (claim.after and not _same_noun(claim.after, a.after))
                        or not claim.near & share.near - a.after  # the claim speaks of what the share is of
                    ):
                        continue
                    for p in share.values:
                        for v in _base(a):
                            for made, how in (
                                (v * p / 100, f"{_plain(p)} % × {a.written}"),
                                (v * (100 - p) / 100 if rest else None, f"{_plain(100 - p)} % × {a.written}"),
                                (v * 100 / (100 + p), f"{a.written} ÷ {_plain(1 + p / 100)}"),
                            ):
                                if made and 0 < p < 100 and any(abs(made - w) <= _precision(w) for w in wanted):
                                    return f"{claim.written} ≈ {how}"
        times = "times" in claim.unit or fold(claim.written.split()[0]) in self.rules.multiples
        for a in self.numbers:
            for b in self.numbers:
                pair = _kind(a)
                if a is b or a.place[0] != b.place[0] or pair != _kind(b):
                    continue
                dated = any("year" in n.unit and 1000 <= v <= 2100 for n in (a, b) for v in n.values)  # `1968 г`
                if pair == "date":
                    if claim.unit == {"year"}:
                        for p in a.values:
                            if any(p - q in claim.values and p > q for q in b.values):
                                return f"{claim.written} = {a.written} − {b.written}"
                    continue
                same = _same_noun(a.after, b.after) and (not claim.after or _same_noun(claim.after, a.after | b.after))
                # `410 000 people, and in 2023 690 000`: a bare count of one sentence counts the other's noun
                bare = a.place == b.place and bool(a.after) != bool(b.after)
                bare = bare and bool(claim.after) and _same_noun(claim.after, a.after | b.after)  # differences only
                parts = a.place == b.place and all(  # the answer says both parts, with their nouns
                    any(n.values & part.values and n.after & part.after for n in stated) for part in (a, b)
                )
                if pair == "count" and not same and not bare and not (parts and claim.after & (a.after | b.after)):
                    continue
                for p in _base(a):
                    for q in _base(b):
                        if times and q and p > q and abs(p / q - min(wanted)) <= min(wanted) / 20 and not dated:
                            return f"{claim.written} ≈ {a.written} ÷ {b.written}"
                        if pair != kind:
                            continue
                        if (
                            (compared or rest and a.place == b.place)
                            and p > q
                            and p - q in wanted
                            and (pair != "count" or same or bare or rest and a.place == b.place)
                        ):
                            return f"{claim.written} = {a.written} − {b.written}"
                        if (
                            a.place == b.place
                            and (pair != "count" or same or parts)
                            and p + q in wanted
                            and p
                            and q
                            and self.numbers.index(a) < self.numbers.index(b)
                        ):
                            return f"{claim.written} = {a.written} + {b.written}"
        for a in self.numbers:
            if _kind(a) != kind or kind == "count":
                continue
            for k in self.numbers:
                if k.place != a.place or _kind(k) not in ("count", "times") or k is a:
                    continue
                for n in k.values - {v for said in stated for v in said.values}:
                    if n == int(n) and 2 <= n <= 12 and {v * n for v in _base(a)} & wanted:
                        return f"{claim.written} = {_plain(n)} × {a.written}"
        return None

    @cached_property
    def _combinations(self) -> list[Decimal]:
        """Every sum, difference, product and quotient of two numbers these texts state."""
        values = sorted({v for n in self.numbers for v in _base(n) if v}, key=abs)[:40]
        out = []
        for a in values:
            for b in values:
                out += [a + b, a - b, a * b, a / b]
        return out

    def reachable(self, claim: _Number) -> bool:
        """The claim is one arithmetic step on two numbers stated here, rounded as the claim is
        written (`62 children a village on average` of `2,350 children in 38 villages`): where the
        answer says it worked (an average, a total, the rest, a comparison), a number the check
        cannot follow but no error it can name; NOT IN SOURCE, not UNSUPPORTED. `The bridge is 176 m
        long` (486 − 310) says no working and stays a contradiction."""
        return any(abs(c - w) <= _precision(w) for w in _base(claim) if w for c in self._combinations)

    def best_clause(self, stems: set[str], within: _Sentence | None = None) -> tuple[frozenset, frozenset]:
        """(words, negated) of the clause that shares the most content words with `stems` (at least
        one); of clauses that tie, the first of sentence `within` (the one sharing most with the answer's)."""
        best, most = (frozenset(), frozenset()), (0, False)
        for (_, content, held, negated, _), sentence in zip(self.clauses, self.clause_sentence):
            score = (len(stems & content), self.sentences[sentence] is within)
            if score[0] and score > most:
                best, most = (held, negated), score
        return best

    @cached_property
    def negated_only(self) -> frozenset:
        """Content stems that every clause here holding them negates."""
        seen: dict[str, bool] = {}
        for _, content, _, reached, _ in self.clauses:
            for stem in content:
                seen[stem] = seen.get(stem, True) and stem in reached
        return frozenset(stem for stem, negated in seen.items() if negated)

    def matching_clauses(self, stems: frozenset) -> list[tuple]:
        """(shared content stems, words and stems, stems a negation reaches, index of its sentence) of
        each clause here that shares the most content words with `stems`: two at least, or the one there is."""
        best, most = [], min(2, len(stems))
        for (_, content, held, reached, _), sentence in zip(self.clauses if stems else (), self.clause_sentence):
            shared = stems & content
            if len(shared) > most:
                best, most = [], len(shared)
            if len(shared) == most:
                best.append((shared, held, reached, sentence))
        return best

    def best_sentence(self, stems: set[str]) -> _Sentence | None:
        """The sentence that shares the most words (those whose polarity is read) with `stems`, at
        least two: a long stop-word list leaves a sentence few content words to match by."""
        best, most = None, 1
        for sentence in self.sentences:
            shared = len(stems & sentence.polarities.keys())
            if shared > most:
                best, most = sentence, shared
        return best


def _same_quantity(claim: _Number, held: _Number) -> bool:
    """The same amount in another unit of its dimension (`48 hours` = `two days`, `4 weeks` = `28
    days`, `2.85 km` = `2,850 m`); within 2 % where a month or a year is one of them (30.44 and 365.25
    days), exactly otherwise."""
    for dimension, unit, value in claim.quantities:
        for other_dimension, other_unit, other in held.quantities:
            if dimension != other_dimension or unit == other_unit:
                continue
            slack = Decimal("0.02") if {unit, other_unit} & {"month", "year"} else Decimal(0)
            if abs(value - other) <= abs(value) * slack:
                return True
    return False


def _precision(value: Decimal) -> Decimal:
    """How far a worked-out value may be from a number and still be it as written: half the place of
    its last significant digit, at most 1 % of it (`62` for 61.8; `4,68 Millionen` for 4 680 000; not
    `12.844` for 12 826, nor `10,000` for 9,600)."""
    return min(Decimal(10) ** value.normalize().as_tuple().exponent / 2, abs(value) / 100)


def _same_noun(a: frozenset, b: frozenset) -> bool:
    """Two stems' sets share a noun, a German compound its head (`windenergieanlag`, `anlag`)."""
    return bool(a & b) or any(len(x) >= 4 and len(y) >= 4 and (x.endswith(y) or y.endswith(x)) for x in a for y in b)


_RUSSIAN_ADJECTIVE_ENDINGS = ("ого", "его", "ому", "ему", "ыми", "ими", "ым", "им", "ом", "ем", "ой", "ей", "ая", "яя",
                              "ое", "ее", "ые", "ие", "ых", "их", "ую", "юю", "ыи", "ии")  # fmt: skip


def _name_key(word: str) -> str:
    """A name without its case ending and fleeting vowel, where names inflect so (`Сосновец`,
    `Сосновца` -> `сосновц`; `Андрей`, `Андрея` -> `андр`; `«Чистый лес»`, `«Чистого леса»`;
    `Δρακούλης`, `Δρακούλη`), folded."""
    adjectival = next((e for e in _RUSSIAN_ADJECTIVE_ENDINGS if word.endswith(e) and len(word) - len(e) >= 4), "")
    key = word[: len(word) - len(adjectival)].rstrip("аеиоуыэюяйьъαεηιουωςϊ")  # `Чистого`, `Чистый` -> `чист`
    if key == word and len(key) > 5 and key.endswith(("ец", "ок", "ек")):
        return key[:-2] + key[-1]
    return key


def _prefix(word: str) -> str:
    return word[: max(STEM_MIN, len(word) - STEM_SLACK)]


def _shares_prefix(word: str, other: str) -> bool:
    """One word starts with all but the last STEM_SLACK letters of the other, and the shorter is
    at least PREFIX_SHARE of the longer (`membership` for `members`; not `Arbeitnehmer` for `Arbeit`)."""
    short, long = sorted((word, other), key=len)
    return len(short) >= STEM_MIN and len(short) >= PREFIX_SHARE * len(long) and long.startswith(_prefix(short))


def _compound(word: str, held: Callable[[str], bool]) -> bool:
    """A German compound whose two parts (with a linking `s`, `n`, `e`...) are held."""
    if len(word) < 8:
        return False
    for i in range(4, len(word) - 3):
        left, right = word[:i], word[i:]
        lefts = [left] + [left[: -len(k)] for k in _GERMAN_LINKS if left.endswith(k)]
        if held(right) and any(held(part) for part in lefts):
            return True
    return False


def _initials(tokens: list[_Token], rules: _Rules) -> set[str]:
    """The initials of each run of 2-5 words (function words inside skipped): `United States` -> us."""
    out = set()
    ws = [t for t in tokens if t.kind == "word"]
    for i in range(len(ws)):
        letters = ""
        for t in ws[i : i + 8]:
            if t.folded in rules.function_words:
                continue
            letters += t.folded[0]
            if len(letters) >= 2:
                out.add(letters)
            if len(letters) == 5:
                break
    return out


def _clauses(tokens: list[_Token], rules: _Rules, negators: frozenset = frozenset()) -> list[tuple]:
    """(index of its first token, content stems, words and stems, the content stems a negation
    reaches, index past its last token) of each clause (split at punctuation and at words that
    open a clause of their own), in order. A negation of the verb (`not`, `nicht`, `не`, `δεν`)
    reaches its clause to the next `and`/`but` on either side; one of a noun (`no`, `kein`, `без`,
    `χωρίς`, `lacks`) the two content words after it. `negators`: indices of words that negate by a
    prefix (`несудоходна`), which reach themselves."""
    out, clause, start = [], [], 0
    for i, t in enumerate([*tokens, _Token(".", ".", "punct")]):
        if t.kind == "punct" or t.folded in rules.clause_words:
            content = frozenset(f for _, c in clause if _claims(c, rules) for f in rules.forms(c.folded))
            reached: set[str] = set()
            for n, (k, c) in enumerate(clause):
                if k in negators:
                    reached |= rules.forms(c.folded[len(_prefix_of(c.folded, rules)) :])
                    content |= reached
                if not _negates(tokens, k, rules):
                    continue
                if c.folded in rules.noun_negations:
                    after = [d for _, d in clause[n + 1 :] if _claims(d, rules)][:2]
                else:
                    left = max((m for m in range(n) if clause[m][1].folded in rules.coordinators), default=-1)
                    right = next(
                        (m for m in range(n + 1, len(clause)) if clause[m][1].folded in rules.coordinators), None
                    )
                    first = n + 1 if left < 0 and right is not None else left + 1  # the subject of both: not it
                    after = [d for _, d in clause[first:right] if _claims(d, rules)]
                reached |= {f for d in after for f in rules.forms(d.folded)}
            keys = frozenset(k for _, c in clause for k in rules.keys(c.folded))
            out.append((start, content, keys, frozenset(reached), i))
            clause, start = [], i + 1
        elif t.kind == "word":
            clause.append((i, t))
    return out


def _claims(token: _Token, rules: _Rules) -> bool:
    """A word a negation can deny: a content word, or a function word of four letters or more
    (`прави`, `können`: stop words that are verbs; not `den`, nor a light verb: `werden`)."""
    return rules.content(token) or (rules.polar(token) and len(token.folded) > 3 and not rules.light(token))


def _in_order(letters: str, word: str) -> bool:
    """Every letter of `letters` in `word`, in that order."""
    rest = iter(word)
    return all(c in rest for c in letters)


def _prefix_of(word: str, rules: _Rules) -> str:
    return next((p for p in _of(words.NEGATION_PREFIXES, rules.language) if word.startswith(p)), "")


def _negates(tokens: list[_Token], i: int, rules: _Rules) -> bool:
    """A negation, but for `not only`, which says what follows."""
    after = tokens[i + 1].folded if i + 1 < len(tokens) else ""
    return tokens[i].folded in rules.negations and after not in words.NOT_NEGATING


def _sentence(tokens: list[_Token], rules: _Rules) -> _Sentence:
    polarities: dict[str, set[bool]] = {}
    negated_clauses: dict[str, bool] = {}
    clause: list[str] = []
    clause_negated = False
    since_negation = None
    ordinals: dict[int, set[str]] = {}
    for i, t in enumerate(tokens):
        if t.kind == "punct" or t.folded in rules.clause_words:
            for s in clause:
                negated_clauses[s] = negated_clauses.get(s, False) or clause_negated
            clause, clause_negated, since_negation = [], False, None
        elif t.kind == "word" and t.folded in rules.negations:
            after = tokens[i + 1].folded if i + 1 < len(tokens) else ""
            if after not in words.NOT_NEGATING:
                since_negation, clause_negated = 0, True
        elif rules.polar(t):
            if since_negation is not None:
                since_negation += 1
            negated = since_negation is not None and since_negation <= NEGATION_SCOPE
            s = rules.stem(t.folded)
            polarities.setdefault(s, set()).add(negated)
            clause.append(s)
        if t.kind == "word" and (value := rules.ordinal(t)):
            ordinals.setdefault(value, set()).update(_ordinal_of(tokens, i, rules))
    for s in clause:
        negated_clauses[s] = negated_clauses.get(s, False) or clause_negated
    quantifiers = {cls for _, cls in _quantifiers(tokens, rules)}
    return _Sentence(polarities, negated_clauses, quantifiers, ordinals)


def _quantifiers(tokens: list[_Token], rules: _Rules, counted: bool = False) -> list[tuple[_Token, str]]:
    """(word, class) of each quantifier; English `most` after `the` or before an -ly word, and one
    after a superlative marker, is a superlative (`the most important`, `най-много`), not one."""
    out = []
    for i, t in enumerate(tokens):
        cls = rules.quantifier.get(t.folded) if t.kind == "word" else None
        before = tokens[i - 1].folded if i else ""
        after = tokens[i + 1].folded if i + 1 < len(tokens) else ""
        superlative = before in rules.superlative or (
            t.folded == "most" and (before in ("the", "a", "an") or after.endswith("ly"))
        )
        unit = tokens[i + 2].folded if i + 2 < len(tokens) and tokens[i + 1].kind == "number" else after
        frequency = t.folded in rules.every and rules.units.get(unit, set()) & words.TIME_UNITS  # `every six months`
        number = cls == "all" and i + 1 < len(tokens) and tokens[i + 1].text[:1].isdecimal()  # not `all two-thirds`
        if cls and not superlative and not frequency and (counted or not number):  # `the most`: a superlative;
            out.append((t, cls))  # `every year`: a frequency; `all 96 cables`: the number's claim (`counted`: kept)
    return out


def _name(token: _Token, at_start: bool, rules: _Rules) -> bool:
    """A name: two capitals, or a capital not at the start of the sentence (German capitalises
    every noun: only two capitals there); one the source does not hold is a contradiction. Every
    capitalised word is looked up whole or by stem, never by a prefix or lemma: `Austria` is not
    `Australia`."""
    capitals = sum(c.isupper() for c in token.text)
    return capitals >= 2 or (rules.language != "de" and not at_start and token.text[0].isupper())


def _with_markers(answer: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentences with a marker-only sentence (`[2]` after the full stop) joined to the one before."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and not _MARKER.sub("", answer[start:end]).strip(" .,;:"):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


Held = Callable[["_Evidence"], bool] | None


def _expansions(tokens: list[_Token], evidence: _Evidence) -> set[int]:
    """Indices of words whose initials make an abbreviation the source writes (`United States` for US)."""
    out: set[int] = set()
    ws = [(i, t) for i, t in enumerate(tokens) if t.kind == "word" and t.folded not in evidence.rules.function_words]
    for a in range(len(ws)):
        for b in range(a + 2, min(a + 5, len(ws)) + 1):
            run = [t for _, t in ws[a:b]]
            if "".join(t.folded[0] for t in run) in evidence.capitals and not any(map(evidence.near_miss, run)):
                out |= {i for i, _ in ws[a:b]}
    return out


def _check(tokens: list[_Token], evidence: _Evidence, exempt: _Evidence):
    """What one sentence states that `evidence` does not hold: (contradicted, not in source), each a
    list of (as written, held by), where `held by` tells whether another _Evidence holds that claim
    (None for what only a comparison with the best-matching source sentence shows)."""
    rules = evidence.rules
    contradicted: list[tuple[str, Held]] = []
    absent: list[tuple[str, Held]] = []
    worked: list[str] = []
    done: set[int] = _expansions(tokens, evidence)
    best = evidence.best_sentence({rules.stem(t.folded) for t in tokens if rules.polar(t)})
    first = next((i for i, t in enumerate(tokens) if t.kind != "punct"), 0)
    compared = any(t.folded in rules.comparison or t.folded.endswith(rules.comparative_endings) for t in tokens)
    stated = [_number(tokens, k, rules) for k, t in enumerate(tokens) if t.kind == "number"]
    negates = any(_negates(tokens, k, rules) for k in range(len(tokens)))
    rest = negates or any(t.folded in rules.rest for t in tokens)
    cued = rest or compared or any(t.folded in rules.aggregate for t in tokens)  # a working the answer says it did
    done |= _lead_in(tokens, rules)
    negators = frozenset(i for i, t in enumerate(tokens) if _negated_word(t, evidence))
    done |= negators
    clauses = _clauses(tokens, rules, negators)
    negating = bool(negators) or negates
    ours = _comparisons(tokens, rules)
    excepted = best is not None and bool(rules.excepting & {fold(w) for w in re.findall(r"\w+", best.text)})
    poles_here = set().union(*(rules.classes(t) for t in tokens if t.kind == "word"))
    # each clause of the answer (last first: the first whose start is <= i holds token i), with the
    # source clause that matches it best, for the exclusive classes
    clause_of = [(start, negated, evidence.best_clause(content, best)) for start, content, _, negated, _ in clauses][
        ::-1
    ]
    if len(tokens) > 2 and tokens[0].kind == "number" and tokens[1].text in ".)" and tokens[2].text[0].isupper():
        done.add(0)  # `1. Opened in 1962`: a list's marker
    for i, t in enumerate(tokens):
        if t.kind == "number" and i not in done:
            claim = _number(tokens, i, rules)
            if i > 0 and rules.units.get(tokens[i - 1].folded, frozenset()) & claim.unit & words.CURRENCIES:
                done.add(i - 1)  # `NOK` of `NOK 2.4 billion`
            if claim.per_at is not None:
                done |= set(range(i + 1, claim.per_at + 1))  # `a year` of `twice a year`
            if claim.unit_at is not None:
                done |= set(range(i + 1, claim.unit_at + 1))  # `cubic metres`: both words
                if claim.unit & words.CURRENCIES and claim.unit_at == i + 2 and tokens[i + 1].kind == "word":
                    done.discard(i + 1)  # `Norwegian` of `2.4 billion Norwegian kroner` is a claim of its own
                if any(words.SCALES.get(u, ("",))[0] == "length" for u in claim.unit):
                    done |= {
                        k
                        for k in (i - 1, claim.unit_at + 1)
                        if 0 <= k < len(tokens)
                        and tokens[k].folded in rules.dimensions
                        and not rules.dimensions[tokens[k].folded] & evidence.words
                    }  # `340 km long`: the length is the claim, where the sources say no `deep`
            if evidence.holds_number(claim) or exempt.holds_number(claim, context=False):
                continue
            others = [n for n in stated if not n.values & claim.values]
            if derived := evidence.derivation(claim, compared, others, rest):
                worked.append(derived)
                # the words that make it a difference claim nothing more: `mehr`, `increased`, `the other`
                done |= {k for k, w in enumerate(tokens) if w.folded in rules.comparison | rules.rest}
                continue
            held = lambda other, c=claim: other.holds_number(c)  # noqa: E731
            other = evidence.same_thing(claim)
            if evidence.holds_number(claim, context=False):
                absent.append((i, f"{claim.written} (stated, but of something else)", held))
            elif other is not None and not (cued and _kind(claim) != "date" and evidence.reachable(claim)):
                contradicted.append((i, f"{claim.written} (the source says {other.written})", held))
            elif other is not None:  # an average, a total, a remainder the rules above do not follow
                absent.append((i, f"{claim.written} (the source says {other.written}; or worked out otherwise)", held))
            else:
                absent.append((i, claim.written, held))
    for i, t in enumerate(tokens):
        if i in done or t.kind != "word" or len(t.folded) < 2 or t.folded in rules.no_claim:
            continue
        if t.folded in rules.negations or t.folded in rules.quantifier or t.folded in rules.superlative:
            continue
        if rules.units.get(t.folded) and i + 1 < len(tokens) and tokens[i + 1].kind == "number":
            continue  # `the year 1962`: the number's claim
        classes = rules.classes(t)
        order = _compared(i, ours, evidence.comparisons)
        if order is not None:
            if not order:
                contradicted.append((i, f"{t.text} (the source compares them the other way round)", None))
            continue
        _, negated_here, (held, negated) = next(c for c in clause_of if c[0] <= i)
        # another member of its class in the source's clause that matches, and not this one, where
        # the answer does not name that member itself (`the new tunnel is deeper than the older one`
        # contrasts the two); a negation on one side only flips the class (`prohibited` for `not allowed`)
        contrasted = {c for c, p in classes for k, q in poles_here if k == c and q != p}
        classes = {(c, p) for c, p in classes if c not in contrasted}
        others = _other_poles(classes, held, rules) if bool(negated) == bool(negated_here) else []
        if others:
            said = sorted(w for q in others for w in q & evidence.words)
            equated = any(w.folded in rules.equative for w in tokens[i + 1 : i + 3])  # `fünfmal so lang wie`
            (absent if excepted or equated else contradicted).append(
                (i, f"{t.text} (the source says {', '.join(said[:2]) or 'otherwise'})", None)
            )
            continue
        if classes and any(evidence.holds_pole(rules.poles[c][p]) for c, p in classes):
            continue  # its class's member the source holds: `often` for `frequently`
        if rules.ordinal(t) is not None:
            continue  # an ordinal is compared with the source sentence's (`_against`)
        if not rules.content(t):
            continue  # a function word (after the classes above: `often` is one in some lists)
        name = _name(t, i == first, rules)
        strict = t.text[0].isupper()  # a capital, at the start too, and any German noun: `Bernau` is not `Bern`
        if evidence.holds_word(t, strict) or exempt.holds_word(t, strict):
            continue
        if not name and rules.light(t):
            continue
        if name and evidence.abbreviates(tokens, i):
            continue
        held = lambda other, token=t, n=strict: other.holds_word(token, n)  # noqa: E731
        acronym = t.text.isupper()  # nothing in a source says otherwise of an acronym it does not write
        (contradicted if name and not acronym else absent).append((i, t.text, held))
    complement = any(" = 100 % − " in w for w in worked)  # `60 % do not` for `40 % do`: the working's negation
    for start, content, _, negated, end in [] if complement else clauses:
        flip = _flip(tokens, start, end, content, negated, evidence, best)
        if flip is not None:
            i, said = flip
            # a contradiction only where the answer says no negation at all: one it does say may
            # reach further or less far than read here (`kein schiffbarer Fluss`, `не могут`)
            clean = not any(start <= c[0] < end for c in contradicted + absent) and not negating
            (contradicted if clean else absent).append((i, said, None))
    contradicted.sort(key=lambda c: c[0])
    absent.sort(key=lambda c: c[0])
    out, rest = [c[1:] for c in contradicted], [a[1:] for a in absent]
    if best is not None:
        more, less = _against(tokens, best, rules, evidence.sentences)
        out, rest = out + more, rest + less
    return out, rest, worked, best.text if best is not None else ""


def _lead_in(tokens: list[_Token], rules: _Rules) -> set[int]:
    """Indices of verbs of saying within three words of a word about the sources (`the source says
    that`, `в источнике сказано`, `η πηγή αναφέρει`), or after one in the same clause (`the article
    on the Treaty of Velmora says`, `В статье об острове Долгий говорится`): they frame the claim
    and are none."""
    about = [i for i, t in enumerate(tokens) if t.kind == "word" and t.folded in rules.no_claim]
    sources = [i for i in about if tokens[i].folded in rules.sources]
    return {
        i
        for i, t in enumerate(tokens)
        if t.kind == "word"
        and (t.folded in rules.speech or rules.stem(t.folded) in rules.speech)
        and (
            any(abs(i - j) <= 3 for j in about)
            or any(j < i and all(k.kind != "punct" for k in tokens[j:i]) for j in sources)
        )
    }


def _negated_word(token: _Token, evidence: _Evidence) -> bool:
    """A word that negates by a prefix (`unsafe`, `несудоходна`) where the sources hold the word
    without it and not the word itself."""
    rules = evidence.rules
    if token.kind != "word" or not rules.content(token) or token.text[0].isupper() or evidence.holds_word(token):
        return False  # a capitalised word is no negation: `United` is no un-ited
    return any(
        token.folded.startswith(prefix)
        and len(token.folded) - len(prefix) >= STEM_MIN
        and evidence.holds_word(_Token(token.text[len(prefix) :], token.folded[len(prefix) :], "word"))
        for prefix in _of(words.NEGATION_PREFIXES, rules.language)
    )


def _flip(tokens, start: int, end: int, content: frozenset, negated: frozenset, evidence: _Evidence, best=None):
    """(index, what) where a negation reaches the words a clause of the answer shares with the
    source's clauses that share the most of its words (two, or its only one) on one side only, in
    each of those clauses (one that agrees is enough to pass); unless a word of an exclusive class
    whose other pole that clause holds carries it (`closed` for `not open`). Where no clause shares
    two words, a word the answer does not negate that the sources hold only under a negation (`has
    a bike lane` / `no railway line nor bike lane`). None where they agree (`has no airport` /
    `does not have an airport`)."""
    rules = evidence.rules
    matches = evidence.matching_clauses(content)
    if len(matches) > 1 and any(evidence.sentences[m[3]] is best for m in matches):  # a tie: the sentence that
        matches = [m for m in matches if evidence.sentences[m[3]] is best]  # shares most with the answer's
    ours = [(shared, negated & shared, reached & shared) for shared, held, reached, _ in matches]
    if any(
        tokens[i].kind == "word" and _other_poles(rules.classes(tokens[i]), held, rules)
        for _, held, _, _ in matches
        for i in range(start, end)
    ):
        return None
    flips = [(mine, theirs) for _, mine, theirs in ours if bool(mine) != bool(theirs)]
    if not matches:
        only = content - negated & evidence.negated_only
        flips = [(frozenset(), only)] if only else []
    elif len(flips) < len(ours):
        return None  # one of those clauses agrees
    if not flips:
        return None
    mine, theirs = flips[0]
    at = [i for i in range(start, end) if tokens[i].kind == "word" and rules.forms(tokens[i].folded) & (mine | theirs)]
    where = "negated here, not in the source" if mine else "negated in the source, not here"
    return (at or [start])[-1], f"{tokens[(at or [start])[-1]].text} ({where})"


def _other_poles(classes: set, held: set[str], rules: _Rules) -> list[frozenset]:
    """The other poles of a word's exclusive classes that `held` has, where it lacks the word's own."""
    out = []
    for c, p in classes:
        if not rules.poles[c][p] & held:
            out += [q for k, q in enumerate(rules.poles[c]) if k != p and q & held]
    return out


def _comparisons(tokens: list[_Token], rules: _Rules) -> list[tuple[int, set, frozenset, frozenset]]:
    """(index, exclusive classes, stems before it, stems after `than`) of each word of an exclusive
    class followed (within four words, or after a comma) by `than`/`als`/`от`/`чем`/`από`: what is
    compared with what, so that `B is smaller than A` can be read as the source's `A is larger than
    B`, and `a bigger annual budget than` as one comparison. Of the words before one `than`, the
    first compares (`far more light pollution than`: `more`, not `light`); what is compared runs from
    the sentence's start, or its last `;` or `:` (a full stop inside a sentence ends `1867 г.`)."""
    out: list[tuple[int, set, frozenset, frozenset]] = []
    taken: set[int] = set()
    for i, t in enumerate(tokens):
        classes = rules.classes(t) if t.kind == "word" else set()
        if not classes:
            continue
        than = next(
            (
                j
                for j in range(i + 1, min(i + 5, len(tokens)))
                if tokens[j].folded in rules.than and all(k.kind == "word" or k.text == "," for k in tokens[i + 1 : j])
            ),
            None,
        )
        if than is None or than in taken:
            continue
        taken.add(than)
        start = max((k + 1 for k in range(i) if tokens[k].text in ";:"), default=0)
        end = next((k for k in range(than + 1, len(tokens)) if tokens[k].kind == "punct"), len(tokens))
        before = frozenset(f for c in tokens[start:i] if rules.content(c) for f in rules.forms(c.folded))
        after = frozenset(f for c in tokens[than + 1 : end] if rules.content(c) for f in rules.forms(c.folded))
        out.append((i, classes, before, after))
    return out


def _compared(i: int, ours: list, theirs: list) -> bool | None:
    """Whether the comparison at token i of the answer says what a comparison of the sources says
    (True), the other way round (False), or neither can be told (None). It agrees where the thing
    compared against is the same with the same pole, or is the answer's subject with the other pole
    (`B is smaller than A` for `A is larger than B`); it is turned round only where both sides are
    found swapped with the same pole, or kept with the other pole: a word on both sides of the
    answer's comparison tells nothing."""
    mine = next((c for c in ours if c[0] == i), None)
    if mine is None:
        return None
    subject, against_ours = mine[2] - mine[3], mine[3] - mine[2]
    said = None
    for _, classes, before, against in theirs:
        for c, p in mine[1]:
            other = next((q for k, q in classes if k == c), None)
            if other is None:
                continue
            same = other == p
            to_object, to_subject = against & against_ours, against & subject
            if (same and to_object and not to_subject) or (not same and to_subject and not to_object):
                return True
            if (same and to_subject and before & against_ours and not to_object) or (
                not same and to_object and before & subject and not to_subject
            ):
                said = False
    return said


def _ordinal_of(tokens: list[_Token], i: int, rules: _Rules) -> set[str]:
    """The stems of the content words among the five tokens after the ordinal at i: what it counts
    (`второй по площади ботанический сад`)."""
    return {rules.stem(n.folded) for n in tokens[i + 1 : i + 6] if rules.content(n)}


def _against(tokens: list[_Token], best: _Sentence, rules: _Rules, sentences: list = ()) -> tuple[list, list]:
    """Quantifiers and ordinals against the source sentence that shares most words: (contradicted,
    not in source). A quantifier is a contradiction only where that sentence uses another."""
    out: list[tuple[str, Held]] = []
    absent: list[tuple[str, Held]] = []
    mine = _sentence(tokens, rules)
    wanted = {cls for _, cls in _quantifiers(tokens, rules, counted=True)} - best.quantifiers
    for t, cls in _quantifiers(tokens, rules, counted=True):
        if cls in wanted and best.quantifiers:
            out.append((f"{t.text} (quantifier: the source says {', '.join(sorted(best.quantifiers))})", None))
            break
        if cls in wanted and (t, cls) in _quantifiers(tokens, rules):
            absent.append((f"{t.text} (a quantifier the source does not use)", None))
            break
    values = {rules.ordinal(t) for t in tokens if t.kind == "word" and not t.text.isupper()} - {None}
    counted = {
        s for k, t in enumerate(tokens) if t.kind == "word" and rules.ordinal(t) for s in _ordinal_of(tokens, k, rules)
    }
    others = [s for s in sentences if any(counted & nouns for nouns in s.ordinals.values())]  # count the same thing
    for k, t in enumerate(tokens):
        # one ordinal, in lower case (`ΔΕΗ` is none); an answer naming several restates a sequence
        value = rules.ordinal(t) if t.kind == "word" and not t.text.isupper() and len(values) == 1 else None
        if not value:
            continue
        ours = _ordinal_of(tokens, k, rules)
        # another ordinal of the same thing (`the first article` for `the second article`; not `the
        # third phase` against `the first year`), in the best sentence or any the sources hold of it
        said = {v for s in [best, *others] for v, theirs in s.ordinals.items() if not ours or ours & theirs}
        if said and value not in said:
            out.append((f"{t.text} (the source gives another ordinal)", None))
            break
    said = {v for v in best.ordinals if v > 1}
    if said and not mine.ordinals:
        superlative = {
            rules.stem(t.folded)
            for k, t in enumerate(tokens)
            if t.kind == "word"
            and (t.folded.endswith(_SUPERLATIVE_ENDINGS) or (k > 0 and tokens[k - 1].folded in rules.superlative))
        }
        for value in said:
            if best.ordinals[value] & superlative:  # `the longest` where the source says `second-longest`
                out.append((f"superlative without the source's ordinal ({value})", None))
                break
    return out, absent


def check_support(
    answer: str,
    given: list[str],
    quotes: dict[int, str],
    language: str | None = None,
    question: str = "",
    titles: dict[int, str] | None = None,
) -> list[SentenceSupport]:
    """Each sentence of `answer` against the quotes it cites (`quotes`: every source shown, by its
    number); a sentence that cites no shown source is checked against all of them. `given`: the
    words the project wrote into the answer (its prefix), which are no claims; `question`: the
    question asked, whose words are claims like any (it only labels what is missing). `language`:
    the answer's and its sources', read from both together when not given (a short quote alone is
    often identified wrong, and the answer's closed classes are read in its language only). `titles`:
    each source's title and headings (`document > section`), which count as its text: an answer
    naming the document's own subject is no claim the source lacks."""
    titles = titles or {}
    language = (language or language_of("\n".join([answer, *quotes.values()]))).lower().split("-")[0]
    rules = _rules(language)
    built: dict[tuple, _Evidence] = {}

    def evidence(*texts: str) -> _Evidence:
        """Built on first use and once per set of texts: a verbatim sentence (every extractive
        answer) needs none, and sentences citing the same sources share one."""
        if texts not in built:
            built[texts] = _Evidence(list(texts), rules)
        return built[texts]

    out = []
    for start, end in _with_markers(answer, sentence_spans(answer, rules.language)):
        sentence = answer[start:end]
        cites = list(dict.fromkeys(int(n) for n in _MARKER.findall(sentence)))
        cited = [quotes[n] for n in cites if n in quotes]
        plain = _MARKER.sub("", sentence).strip()
        if cited and any(plain in quote for quote in cited):  # verbatim from what it cites: nothing to look up
            out.append(SentenceSupport(sentence, start, end, cites, [], [], matched=plain))
            continue
        everything = evidence(*quotes.values(), *titles.values())
        headed = [*cited, *(titles[n] for n in cites if titles.get(n))]  # a document's title counts as its text
        contradicted, absent, worked, matched = _check(
            _tokens(sentence, rules), evidence(*headed) if cited else everything, evidence(*given)
        )
        both = contradicted + absent
        out.append(
            SentenceSupport(
                sentence,
                start,
                end,
                cites,
                [text for text, _ in contradicted],
                [text for text, _ in absent],
                [text for text, held in both if held and held(everything)],
                [text for text, held in both if held and held(evidence(question))],
                worked,
                matched,
            )
        )
    return out
