"""Does each sentence of an answer say only what its sources say? A deterministic check, no model.

What a sentence claims, and how each claim is looked up in the quotes the sentence cites (`[n]`;
a sentence that cites none, in every source shown):
- numbers, by value: `1,777`, `1 777` and `1777` are one number, `3.5` and `3,5` another (a
  separator before exactly three digits reads both ways); a magnitude word after a number is part
  of it (`1.5 million` is `1,500,000`; `MAGNITUDES`), and so is the word after it, its unit
  (`mg`, `hours`, `Punkte`: a word that is no stop word, or one of SHORT_UNITS), which a source
  must write right after the same value or among the NEAR content words around it; a content
  word near the number must be in the source's sentence too (its context).
  A number written in words in a source supports its digits; in the answer it is no claim;
- names: a word with a capital (at the start of a sentence too, unless it is a stop word of the
  language), or with two capitals; looked up whole, or by the language's stemmer (Snowball,
  BulStem), never by a prefix: `Austria` is not `Australia`;
- long words, LONG_WORD letters or more (rarity without a word list): whole, stemmed, or sharing
  all but their last STEM_SLACK letters with a source word (`membership` for `members`);
- polarity: a word of the answer that the best-matching cited sentence holds must stand in the same
  polarity there (negated: among the first NEGATION_SCOPE words after a negation word of the
  text's language (`NEGATIONS`) in its clause; `not only` negates nothing): `does cause` against
  `does not cause` is flagged, and so is the reverse;
- quantifiers: a quantifier of the answer (`QUANTIFIERS`: all/some/most/many) must have one of its
  class in the best-matching cited sentence: `all` against `some` is flagged; a quantifier dropped
  is not.
Words that speak of the sources or the exchange (`according`, `source`, `answer`; `ATTRIBUTION`)
and the project's own words (`given`: the answer prefix it wrote) are no claims. The question's
words are: a claim only the question holds is unsupported, and listed in `from_question`. A
sentence found verbatim (without its markers) in a quote it cites is supported as it stands.
Text is compared after Unicode compatibility folding, without accents and case. What this
catches and misses, by kind and language, is measured by bench/support_check.py
(docs/answering.md, "The support check").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from functools import lru_cache

import bm25s

from rag_assets.ingest.language import language_of
from rag_assets.ingest.sentences import sentence_spans
from rag_assets.retrieval import lexical

LONG_WORD = 9
STEM_MIN, STEM_SLACK = 4, 3
NEAR = 4
NEGATION_SCOPE = 3
_MARKER = re.compile(r"\[(\d+)\]")
_NUMBER = r"\d+(?:[.,\u00a0\u202f' ]\d+)*"  # digits with thousands or decimal separators
_TOKEN = re.compile(rf"{_NUMBER}|[^\W\d_]+|%|[.,;:!?()\u2013\u2014]")
_CLAUSE_BREAK = set(".,;:!?()\u2013\u2014")
_CONTRACTION = re.compile(r"n['’]t\b", re.IGNORECASE)

# The closed word classes a claim turns on, per language; a language not listed reads English's.
# Negations and quantifiers of every language listed are read in any text (a language told from a
# short quote is often wrong, and these words are seldom content words of another language).
MAGNITUDES = {
    "en": {"thousand": 3, "million": 6, "billion": 9, "trillion": 12, "bn": 9, "mn": 6},
    "de": {"tausend": 3, "million": 6, "millionen": 6, "mio": 6, "milliarde": 9, "milliarden": 9, "mrd": 9,
           "billion": 12, "billionen": 12},
    "bg": {"хиляда": 3, "хиляди": 3, "хил": 3, "милион": 6, "милиона": 6, "милиони": 6, "млн": 6,
           "милиард": 9, "милиарда": 9, "милиарди": 9, "млрд": 9, "трилион": 12, "трилиона": 12},
    "ru": {"тысяча": 3, "тысячи": 3, "тысяч": 3, "тыс": 3, "миллион": 6, "миллиона": 6, "миллионов": 6,
           "млн": 6, "миллиард": 9, "миллиарда": 9, "миллиардов": 9, "млрд": 9},
    "el": {"χιλιαδες": 3, "εκατομμυριο": 6, "εκατομμυρια": 6, "εκατ": 6, "δισεκατομμυριο": 9,
           "δισεκατομμυρια": 9, "δισ": 9},
    "fr": {"mille": 3, "million": 6, "millions": 6, "milliard": 9, "milliards": 9},
    "es": {"mil": 3, "millon": 6, "millones": 6},
}  # fmt: skip
NEGATIONS = {
    "en": {"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot", "hardly"},
    "de": {"nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals", "ohne", "weder",
           "nichts", "niemand"},
    "bg": {"не", "няма", "нямат", "нямаше", "никога", "без", "нито", "никой", "нищо"},
    "ru": {"не", "нет", "нельзя", "никогда", "без", "ни", "никто", "ничего"},
    "el": {"δεν", "μην", "μη", "οχι", "ποτε", "χωρις", "ουτε", "κανεις"},
    "fr": {"ne", "pas", "jamais", "sans", "aucun", "aucune", "rien", "personne"},
    "es": {"no", "nunca", "sin", "ningun", "ninguna", "ninguno", "jamas", "nada", "nadie"},
}  # fmt: skip
QUANTIFIERS = {  # class -> words
    "en": {"all": {"all", "every", "always", "entire"}, "some": {"some", "several", "few", "sometimes"},
           "most": {"most", "mostly", "usually", "majority"}, "many": {"many", "numerous", "often"}},
    "de": {"all": {"alle", "allen", "aller", "jeder", "jede", "jedes", "jeden", "jedem", "immer", "samtliche"},
           "some": {"einige", "einigen", "einiger", "manche", "manchen", "mehrere", "wenige", "manchmal"},
           "most": {"meisten", "meist", "meistens", "uberwiegend", "mehrheit"}, "many": {"viele", "vielen", "oft"}},
    "bg": {"all": {"всички", "всеки", "всяка", "всяко", "винаги", "целия", "цялата"},
           "some": {"някои", "няколко", "понякога"}, "most": {"повечето", "обикновено", "мнозинството"},
           "many": {"много", "многобройни", "често"}},
    "ru": {"all": {"все", "всех", "каждый", "каждая", "каждое", "всегда"}, "some": {"некоторые", "несколько", "иногда"},
           "most": {"большинство", "обычно"}, "many": {"многие", "много", "часто"}},
    "el": {"all": {"ολοι", "ολες", "ολα", "καθε", "παντα"}, "some": {"μερικοι", "μερικες", "μερικα", "ορισμενοι"},
           "most": {"περισσοτεροι", "συνηθως"}, "many": {"πολλοι", "πολλες", "πολλα", "συχνα"}},
}  # fmt: skip
ATTRIBUTION = {  # words that speak of the sources or of the exchange, not of the world
    "en": {"according", "source", "sources", "document", "documents", "passage", "passages", "context", "text",
           "mentioned", "answer", "question"},
    "de": {"laut", "zufolge", "quelle", "quellen", "dokument", "dokumente", "dokumenten", "text", "textes",
           "abschnitt", "erwahnt", "genannt", "steht", "heißt", "heisst", "antwort", "frage"},
    "bg": {"според", "източник", "източника", "източникът", "източници", "източниците", "документ", "документа",
           "документът", "документи", "документите", "текст", "текста", "текстът", "откъс", "откъса", "отговор",
           "отговора", "отговорът", "въпрос", "въпроса", "въпросът"},
    "ru": {"согласно", "источник", "источника", "источнику", "источники", "документ", "документа", "текст", "текста",
           "ответ", "вопрос"},
    "el": {"συμφωνα", "πηγη", "πηγες", "πηγης", "εγγραφο", "κειμενο", "κειμενου", "απαντηση", "ερωτηση"},
}  # fmt: skip
NOT_NEGATING = {"only", "just", "merely", "solely", "nur", "само", "только", "μονο", "seulement", "solo"}
SHORT_UNITS = set("g kg mg t l ml m cm mm km h s min kb mb gb tb hz khz mhz ghz w kw mw v ha".split())
BULGARIAN_ARTICLES = ("ът", "ят", "та", "то", "те", "а", "я")
NUMBER_WORDS = {  # a source's number in words supports its digits
    "en": "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
          "seventeen eighteen nineteen twenty",
    "de": "null eins zwei drei vier funf sechs sieben acht neun zehn elf zwolf dreizehn vierzehn funfzehn sechzehn "
          "siebzehn achtzehn neunzehn zwanzig",
    "bg": "нула едно две три четири пет шест седем осем девет десет единадесет дванадесет тринадесет "
          "четиринадесет петнадесет шестнадесет седемнадесет осемнадесет деветнадесет двадесет",
}  # fmt: skip


@dataclass(frozen=True)
class SentenceSupport:
    text: str
    start: int  # offsets in the answer
    end: int
    cites: list[int]  # the [n] this sentence (or the marker right after it) points at
    missing: list[str]  # claims, as written in the answer, its sources do not hold (polarity and quantifiers named)
    elsewhere: list[str]  # those of `missing` that another shown source holds: the citation, not the claim, is wrong
    from_question: list[str] = field(default_factory=list)  # those of `missing` that only the question holds

    @property
    def supported(self) -> bool:
        return not self.missing

    def as_dict(self) -> dict:
        return {**asdict(self), "supported": self.supported}


def fold(text: str) -> str:
    """Compatibility form, no accents, case-folded: what claims and sources are compared as."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _words_of(table: dict, language: str):
    return table.get(language, table["en"])


@dataclass(frozen=True)
class _Rules:
    """One language's stemmer and closed word classes (folded)."""

    language: str
    stem: Callable[[str], str]
    stops: frozenset  # stopwords-iso: a capitalised first word in it is no name, a word after a number no unit
    function_words: frozenset  # the short list: what is not read for polarity
    negations: frozenset
    quantifier: dict  # word -> class
    magnitudes: dict  # word -> power of ten
    attribution: frozenset  # stems

    def forms(self, word: str) -> set[str]:
        """A word's stems with and without a Bulgarian definite article, which BulStem alone leaves
        apart (`парламента` -> парламен, `парламентът` -> парламент)."""
        out = {self.stem(word)}
        if self.language == "bg":
            out |= {
                self.stem(word[: -len(a)]) for a in BULGARIAN_ARTICLES if word.endswith(a) and len(word) > len(a) + 2
            }
        return out

    def word_after_number(self, token: _Token) -> bool:
        """A word right after a number that is its unit or what it counts: no stop word."""
        return token.folded not in self.stops and len(token.folded) > 1

    def content(self, token: _Token) -> bool:
        """A word that says what a number counts or where it stands: no stop word."""
        return (
            token.kind == "word"
            and len(token.folded) > 1
            and token.folded not in self.stops
            and self.stem(token.folded) not in self.attribution
        )

    def polar(self, token: _Token) -> bool:
        """A word whose polarity is read: no negation, quantifier or short function word (a verb
        such as `can`, a stop word in stopwords-iso, is negated as any other)."""
        return (
            token.kind == "word"
            and len(token.folded) > 2
            and token.folded not in self.function_words
            and token.folded not in self.negations
            and token.folded not in self.quantifier
        )


@lru_cache(maxsize=64)
def _rules(language: str) -> _Rules:
    stemmer = lexical.Tokenizer(lexical.analysis_of(lexical.PER_LANGUAGE, language)).stemmer

    @lru_cache(maxsize=65536)
    def stem(word: str) -> str:
        return stemmer.stemWords([word])[0] or word if stemmer else word

    stops = frozenset(fold(w) for w in lexical.stop_words(language))
    return _Rules(
        language,
        stem,
        stops,
        frozenset(bm25s.stopwords.STOPWORDS_EN if language == "en" else ()),  # Lucene's 33 English stop words
        # the language's own negations and quantifiers only: Russian "ни" is Bulgarian "us", and
        # German "Not" (need) a noun, not English "not"
        frozenset(fold(w) for w in _words_of(NEGATIONS, language)),
        {fold(w): cls for cls, words in _words_of(QUANTIFIERS, language).items() for w in words},
        {fold(w): power for w, power in _words_of(MAGNITUDES, language).items()},
        frozenset(stem(fold(w)) for w in _words_of(ATTRIBUTION, language)),
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


def _tokens(text: str, rules: _Rules) -> list[_Token]:
    """Words, numbers (with their magnitude word folded in) and clause punctuation, in order. A
    run of digits and separators that is no one number (`2019 20`) is read as its parts."""
    text = _CONTRACTION.sub(" not", _MARKER.sub(" ", text))
    out: list[_Token] = []
    for m in _TOKEN.finditer(text):
        written = m.group()
        if written[0].isdecimal():
            values = _values(written)
            parts = [written] if values else re.split(r"[\u00a0\u202f' ]", written)
            for part in parts:  # a date such as 3.5.2020 is one value, its digits
                read = values or _values(part) or {Decimal(re.sub(r"\D", "", part))}
                out.append(_Token(part, part, "number", frozenset(read)))
            continue
        folded = fold(written)
        if folded in rules.magnitudes and out and out[-1].kind == "number":
            last = out[-1]
            scale = Decimal(10) ** rules.magnitudes[folded]
            out[-1] = _Token(f"{last.text} {written}", last.folded, "number", frozenset(v * scale for v in last.values))
            continue
        out.append(_Token(written, folded, "punct" if written in _CLAUSE_BREAK else "word"))
    return out


@lru_cache(maxsize=64)
def _number_words(language: str) -> dict[str, Decimal]:
    return {fold(w): Decimal(i) for i, w in enumerate(NUMBER_WORDS.get(language, NUMBER_WORDS["en"]).split())}


@dataclass(frozen=True)
class _Number:
    values: frozenset
    unit: frozenset  # the stems of the word right after it (empty: none)
    near: frozenset  # the stems of the NEAR nearest content words on each side
    sentence: frozenset = frozenset()  # in a source: the stems of its sentence's content words


def _number(tokens: list[_Token], i: int, rules: _Rules, values: frozenset, sentence=frozenset()) -> _Number:
    unit: frozenset = frozenset()
    if i + 1 < len(tokens):
        after = tokens[i + 1]
        if after.text == "%":
            unit = frozenset({"%"})
        elif after.kind == "word" and (after.folded in SHORT_UNITS or rules.word_after_number(after)):
            unit = frozenset(rules.forms(after.folded))
    near: set[str] = set()
    for side in (tokens[i + 1 :], tokens[:i][::-1]):  # the NEAR nearest content words on each side
        words = [t for t in side if rules.content(t)][:NEAR]
        near |= {f for t in words for f in rules.forms(t.folded)}
    return _Number(values, unit, frozenset(near), sentence)


class _Evidence:
    """The words, numbers and sentences of some texts, for looking claims up."""

    def __init__(self, texts: list[str], rules: _Rules):
        self.rules = rules
        self.words: set[str] = set()
        self.stems: set[str] = set()
        self.numbers: list[_Number] = []
        self.sentences: list[dict[str, set[bool]]] = []  # per sentence: content stem -> polarities it stands in
        self.quantifiers: list[set[str]] = []
        words_as_numbers = _number_words(rules.language)
        for text in texts:
            for start, end in sentence_spans(text, rules.language) or [(0, len(text))]:
                tokens = _tokens(text[start:end], rules)
                self.sentences.append(_polarities(tokens, rules))
                stems = frozenset(f for t in tokens if rules.content(t) for f in rules.forms(t.folded))
                self.quantifiers.append(_quantifier_classes(tokens, rules))
                for i, t in enumerate(tokens):
                    if t.kind == "word":
                        self.words.add(t.folded)
                        self.stems |= rules.forms(t.folded)
                        if t.folded in words_as_numbers:
                            self.numbers.append(
                                _number(tokens, i, rules, frozenset({words_as_numbers[t.folded]}), stems)
                            )
                    elif t.kind == "number":
                        self.numbers.append(_number(tokens, i, rules, t.values, stems))

    def holds_word(self, folded: str, kind: str) -> bool:
        if folded in self.words or self.rules.forms(folded) & self.stems:
            return True
        if kind != "word":  # names only whole or stemmed: a prefix is another name
            return False
        prefix = _prefix(folded)
        return any(w.startswith(prefix) or (len(w) >= STEM_MIN and folded.startswith(_prefix(w))) for w in self.words)

    def holds_number(self, claim: _Number, context: bool = True) -> bool:
        """The value is written here with its unit right after it or among the words near it
        (`300 hours` does not hold `300 days`; `members ... in 1998` holds `1998 members`), and, where
        the claim has content words near it, one of them in its sentence here (`context`)."""
        return any(
            claim.values & held.values
            and (not claim.unit or bool(claim.unit & (held.unit | held.near)))
            and (not context or not claim.near or bool(claim.near & held.sentence))
            for held in self.numbers
        )

    def best_sentence(self, stems: set[str]) -> int | None:
        """The sentence that shares the most content words with `stems` (at least two)."""
        best, most = None, 1
        for i, polarities in enumerate(self.sentences):
            shared = len(stems & polarities.keys())
            if shared > most:
                best, most = i, shared
        return best


def _prefix(word: str) -> str:
    return word[: max(STEM_MIN, len(word) - STEM_SLACK)]


def _polarities(tokens: list[_Token], rules: _Rules) -> dict[str, set[bool]]:
    """Each word's stem -> whether it stands negated (among the first NEGATION_SCOPE words after a
    negation word, in its clause; `Rules.polar`), over all its occurrences."""
    out: dict[str, set[bool]] = {}
    since_negation = None
    for i, t in enumerate(tokens):
        if t.kind == "punct":
            since_negation = None
        elif t.kind == "word" and t.folded in rules.negations:
            after = tokens[i + 1].folded if i + 1 < len(tokens) else ""
            since_negation = None if after in NOT_NEGATING else 0  # "not only X" says X
        elif rules.polar(t):
            if since_negation is not None:
                since_negation += 1
            negated = since_negation is not None and since_negation <= NEGATION_SCOPE
            out.setdefault(rules.stem(t.folded), set()).add(negated)
    return out


def _quantifiers(tokens: list[_Token], rules: _Rules) -> list[tuple[_Token, str]]:
    """(word, class) of each quantifier; English `most` after `the` or before an -ly word is a
    superlative (`the most important`, `most simply`), not one."""
    out = []
    for i, t in enumerate(tokens):
        cls = rules.quantifier.get(t.folded) if t.kind == "word" else None
        before = tokens[i - 1].folded if i else ""
        after = tokens[i + 1].folded if i + 1 < len(tokens) else ""
        if cls and not (t.folded == "most" and (before in ("the", "a", "an") or after.endswith("ly"))):
            out.append((t, cls))
    return out


def _quantifier_classes(tokens: list[_Token], rules: _Rules) -> set[str]:
    return {cls for _, cls in _quantifiers(tokens, rules)}


def _capitalised(token: _Token) -> bool:
    return token.text[0].isupper() or sum(c.isupper() for c in token.text) >= 2


def _claims(tokens: list[_Token], rules: _Rules, long_word: int) -> list[tuple[str, str, int]]:
    """(as written, kind, token index) of each number, name and long word, in order, once each."""
    out, seen = [], set()
    first_word = True
    for i, t in enumerate(tokens):
        if t.kind == "punct":
            continue
        at_start, first_word = first_word, False
        if t.kind == "number":
            kind = "number"
        elif t.folded in rules.negations or t.folded in rules.quantifier or rules.stem(t.folded) in rules.attribution:
            continue
        elif sum(c.isupper() for c in t.text) >= 2 or (
            t.text[0].isupper() and not (at_start and t.folded in rules.stops)
        ):
            kind = "name" if len(t.text) > 1 else None
        elif len(t.text) >= long_word:
            kind = "word"
        else:
            kind = None
        if kind and (t.text, kind) not in seen:
            seen.add((t.text, kind))
            out.append((t.text, kind, i))
    return out


def _with_markers(answer: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentences with a marker-only sentence (`[2]` after the full stop) joined to the one before."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and not _MARKER.sub("", answer[start:end]).strip(" .,;:"):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _missing(tokens: list[_Token], evidence: _Evidence, exempt: _Evidence, long_word: int):
    """What one sentence states that `evidence` does not hold: (as written, held by) pairs, where
    `held by` tells whether another _Evidence holds that claim (None for polarity and quantifiers)."""
    rules = evidence.rules
    missing = []
    for text, kind, i in _claims(tokens, rules, long_word):
        if kind == "number":
            claim = _number(tokens, i, rules, tokens[i].values)
            if not evidence.holds_number(claim) and not exempt.holds_number(claim, context=False):
                bare = _Number(claim.values, frozenset(), frozenset())
                written = f"{text} {tokens[i + 1].text}" if claim.unit and evidence.holds_number(bare) else text
                missing.append((written, lambda other, c=claim: other.holds_number(c)))
        elif not evidence.holds_word(fold(text), kind) and not exempt.holds_word(fold(text), kind):
            missing.append((text, lambda other, w=text, k=kind: other.holds_word(fold(w), k)))
    polarities = _polarities(tokens, rules)
    best = evidence.best_sentence(set(polarities))
    if best is None:
        return missing
    cited = evidence.sentences[best]
    for t in tokens:
        here = polarities.get(rules.stem(t.folded)) if rules.polar(t) else None
        there = cited.get(rules.stem(t.folded)) if here else None
        if here and there and not here & there:
            where = "negated here, not in the source" if True in here else "negated in the source, not here"
            missing.append((f"{t.text} ({where})", None))
            break
    wanted = _quantifier_classes(tokens, rules) - evidence.quantifiers[best]
    for t, cls in _quantifiers(tokens, rules):
        if cls in wanted:
            missing.append((f"{t.text} (quantifier not in the source)", None))
            break
    return missing


def check_support(
    answer: str,
    given: list[str],
    quotes: dict[int, str],
    language: str | None = None,
    long_word: int = LONG_WORD,
    question: str = "",
) -> list[SentenceSupport]:
    """Each sentence of `answer` against the quotes it cites (`quotes`: every source shown, by its
    number); a sentence that cites no shown source is checked against all of them. `given`: the
    words the project wrote into the answer (its prefix), which are no claims; `question`: the
    question asked, whose words are claims like any (it only labels what is missing). `language`:
    the answer's and its sources', read from both together when not given (a short quote alone is
    often identified wrong, and the answer's negations are read in its language only)."""
    rules = _rules(language or language_of("\n".join([answer, *quotes.values()])))
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
        words = _MARKER.sub("", sentence).strip()
        if cited and any(words in quote for quote in cited):  # verbatim from what it cites: nothing to look up
            out.append(SentenceSupport(sentence, start, end, cites, [], []))
            continue
        everything = evidence(*quotes.values())
        missing = _missing(
            _tokens(sentence, rules), evidence(*cited) if cited else everything, evidence(*given), long_word
        )
        elsewhere = [text for text, held in missing if held and held(everything)]
        from_question = [text for text, held in missing if held and held(evidence(question))]
        out.append(
            SentenceSupport(sentence, start, end, cites, [text for text, _ in missing], elsewhere, from_question)
        )
    return out
