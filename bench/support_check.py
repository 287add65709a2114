"""The support check, measured: what it flags and what it passes, by kind and language, on variants
of real answer sentences; and, with --data-dir, its false alarms on the packaged generator's answers.

    python bench/support_check.py [--sentences 300] [--data-dir DIR [--answerable 100] ...]

Part 1 (always, a few seconds). Answer sentences of the development data: the sentence holding the
answer of each SQuAD 2.0 sample and XQuAD question (English, German), and the sentences of the
Bulgarian chapter (data/bulgarian_chapter), each cited against its whole paragraph. From each, a
seeded rewrite of every kind that applies to it:
- supported: verbatim; after a lead-in ("According to the sources, ..."); a clause dropped (the
  part after the last comma); one word inflected (a suffix changed, by rules per language); the two
  halves around the first comma swapped;
- unsupported: a name swapped for another name of the same language's data (anywhere; at the start;
  one sharing its first four letters); a number changed (a digit, a decimal point, a magnitude word
  added or changed, its unit swapped for another unit of the data); a negation added or removed; a
  quantifier changed to one of another class; a name only the question holds.
For each kind and language it prints the share passed (supported kinds) or flagged (unsupported
kinds), with Wilson 95 % intervals, and for unsupported kinds the share whose missing claims name
the change ("for it"). A kind with no sentence it applies to is printed with n = 0.

Part 2 (--data-dir: where `rag-assets run` materialised the serving strategy). A seeded sample of
the ground truth (one phrasing per question; 100 answerable, 40 unanswerable, every out-of-domain
one) is answered by the generator through the `ask` path (answers cached in the data dir), and each
answer is checked as `ask` checks it; it prints the share flagged among answers that contain a
reference answer and cite the needle's chunk (false alarms), among bluffs and among wrong answers,
and lists the flagged correct answers to read by hand.
"""

import argparse
import json
import random
import re
import unicodedata
import warnings
from collections import defaultdict
from pathlib import Path

from rag_assets import stats
from rag_assets.answering.support import check_support
from rag_assets.ingest.sentences import sentence_spans
from rag_assets.retrieval.lexical import PER_LANGUAGE, Tokenizer, analysis_of, stop_words

ROOT = Path(__file__).resolve().parent.parent
SQUAD = ROOT.parent / "shared" / "datasets" / "squad-v2-dev-sample" / "squad-v2-dev-sample.json"
XQUAD = ROOT.parent / "shared" / "datasets" / "xquad"
CHAPTER = ROOT / "data" / "bulgarian_chapter" / "documents" / "rag-v-production.md"
SUPPORTED = ["verbatim", "lead-in", "clause dropped", "inflected", "reordered"]
UNSUPPORTED = [
    "name swapped",
    "name at the start swapped",
    "name, same first 4 letters",
    "number changed",
    "decimal point",
    "magnitude word",
    "unit swapped",
    "negation added",
    "negation removed",
    "quantifier changed",
    "claim only the question holds",
]
LEAD_IN = {"en": "According to the sources, ", "de": "Laut den Quellen: ", "bg": "Според източниците: "}
INFLECTIONS = {  # (ending, replacement) pairs, tried in order on a content word of 5 letters or more
    "en": [("ies", "y"), ("s", ""), ("ed", "ing"), ("ing", "ed"), ("y", "ies"), ("", "s")],
    "de": [("en", "e"), ("er", "e"), ("es", ""), ("e", "en"), ("s", ""), ("", "e")],
    "bg": [("ът", "а"), ("ят", "я"), ("та", ""), ("те", ""), ("то", ""), ("ия", "ията"), ("а", "ата"), ("", "ът")],
}
AUXILIARIES = {  # negation goes after these (en, de) or before them (bg)
    "en": "is was are were has had have can could will would did does do should may might must",
    "de": "ist war sind waren hat hatte haben hatten wird wurde wurden kann konnte können muss musste",
    "bg": "е са беше бяха бил била било били може могат трябва ще има",
}
NEGATE = {"en": "{} not", "de": "{} nicht", "bg": "не {}"}
# The bench's own word lists, written for it (not the check's): the words that negate, the
# quantifiers by class, the magnitude words with their powers of ten
NEGATIONS = {
    "en": {"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "without", "hardly"},
    "de": {"nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals", "nichts", "niemand",
           "weder", "ohne", "kaum"},
    "bg": {"не", "няма", "нямат", "нямаше", "никога", "нито", "никой", "никоя", "никое", "нищо", "без"},
}  # fmt: skip
QUANTIFIERS = {
    "en": {"all": {"all", "every", "each", "both", "always", "entire"}, "some": {"some", "several", "few", "sometimes"},
           "most": {"most", "mostly", "usually"}, "many": {"many", "often", "frequently", "numerous"}},
    "de": {"all": {"alle", "allen", "jeder", "jede", "jedes", "jeden", "beide", "immer"},
           "some": {"einige", "manche", "mehrere", "wenige", "manchmal"},
           "most": {"meisten", "meistens"}, "many": {"viele", "vielen", "oft", "häufig"}},
    "bg": {"all": {"всички", "всеки", "всяка", "всяко", "двата", "двете", "винаги"},
           "some": {"някои", "няколко", "малко", "понякога"}, "most": {"повечето", "обикновено"},
           "many": {"много", "често"}},
}  # fmt: skip
MAGNITUDES = {
    "en": {"thousand": 3, "million": 6, "billion": 9, "trillion": 12},
    "de": {"tausend": 3, "million": 6, "millionen": 6, "milliarde": 9, "milliarden": 9, "billion": 12},
    "bg": {"хиляди": 3, "хиляда": 3, "милион": 6, "милиона": 6, "милиард": 9, "милиарда": 9},
}
_WORD = re.compile(r"[^\W\d_]+")


def fold(word: str) -> str:
    """Lowercase without accents (ü -> u, ά -> α), as the bench compares words."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.casefold()) if not unicodedata.combining(c))


_NUMBER = re.compile(r"(?<![\w@.,/−\[-])\d+(?:[.,]\d+)*(?![\w@%/−-]|[.,]\d)")  # a number standing alone


def squad_sentences(path: Path, language: str) -> list[dict]:
    """The sentence holding each answer, its paragraph, and the question."""
    out = []
    for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            spans = sentence_spans(context, language)
            for qa in paragraph["qas"]:
                if qa.get("is_impossible") or not qa["answers"]:
                    continue
                at = qa["answers"][0]["answer_start"]
                span = next(((s, e) for s, e in spans if s <= at < e), None)
                if span:
                    out.append({"sentence": context[span[0] : span[1]], "quote": context, "question": qa["question"]})
    unique = {(r["sentence"], r["quote"]): r for r in out}  # one row per sentence, its first question
    return list(unique.values())


def chapter_sentences() -> list[dict]:
    """Every prose sentence of the Bulgarian chapter (6 words or more), with its paragraph; code
    blocks, tables, lists and headings left out."""
    out = []
    prose = re.sub(r"```.*?```", "", CHAPTER.read_text(encoding="utf-8"), flags=re.DOTALL)
    for paragraph in prose.split("\n\n"):
        if paragraph.lstrip().startswith(("#", "|", "-", "*", ">", "[")) or re.search(r"[`{};=]", paragraph):
            continue
        for s, e in sentence_spans(paragraph, "bg"):
            cyrillic = sum("\u0400" <= c <= "\u04ff" for c in paragraph[s:e])
            if len(paragraph[s:e].split()) >= 6 and cyrillic > len(paragraph[s:e]) / 2:
                out.append({"sentence": paragraph[s:e], "quote": paragraph, "question": ""})
    return out


def _value(written: str) -> float:
    """A number as the bench reads it (independently of the check): the last `.` or `,` before
    one or two digits is a decimal mark, any other separator groups thousands."""
    cleaned = re.sub(r"[\u00a0 ]", "", written)
    decimal = re.search(r"[.,](\d{1,2})$", cleaned)
    if decimal:
        return float(re.sub(r"\D", "", cleaned[: decimal.start()]) + "." + decimal.group(1))
    return float(re.sub(r"\D", "", cleaned))


def _names(text: str, stops: frozenset) -> list[re.Match]:
    return [
        m
        for m in _WORD.finditer(text)
        if m.group()[0].isupper() and fold(m.group()) not in stops and len(m.group()) > 2
    ]


def _sub(sentence: str, start: int, end: int, new: str) -> str:
    return sentence[:start] + new + sentence[end:]


def _period(text: str) -> str:
    return text.rstrip(" .,;:") + "."


class Variants:
    """The rewrites of one language's sentences; each returns (text, the change, question) or None."""

    def __init__(self, rows: list[dict], language: str, seed: int = 7):
        self.language, self.random = language, random.Random(seed)
        self.tokenizer = Tokenizer(analysis_of(PER_LANGUAGE, language))
        self.stops = frozenset(fold(w) for w in stop_words(language))
        self.negations = frozenset(fold(w) for w in NEGATIONS[language])
        self.pool_names = sorted({m.group() for r in rows for m in _names(r["sentence"], self.stops)[1:]})
        self.pool_units = sorted(
            {
                u
                for r in rows
                for u in re.findall(r"\d (\w+)", r["sentence"])
                if u.isalpha() and fold(u) not in self.stops
            }
        )

    def _absent(self, pool: list[str], quote: str, like=None) -> str | None:
        """A word of the pool that the quote holds in no inflection (else it is no swap)."""
        stems = set(self.stem(_WORD.findall(quote)))
        choices = [p for p in pool if self.stem([p])[0] not in stems and (like is None or like(p))]
        return self.random.choice(choices) if choices else None

    def stem(self, words: list[str]) -> list[str]:
        """Each word as the language's BM25 analysis reads it (a stop word as itself, folded)."""
        return [(self.tokenizer(w) or [fold(w)])[0] for w in words]

    def _new_number(self, written: str, quote: str) -> bool:
        """A rewritten number is a change only if the quote holds no number of that value."""
        held = {_value(m.group()) for m in re.finditer(r"\d+(?:[.,\u00a0 ]\d+)*", quote)}
        held |= {float(m.group()) for m in re.finditer(r"\d+", quote)}
        return _value(written) not in held

    def supported(self, kind: str, r: dict):
        s = r["sentence"]
        if kind == "verbatim":
            return s
        if kind == "lead-in":
            first = s.split()[0]
            keep = fold(first) not in self.stops or self.language == "de"
            return LEAD_IN[self.language] + (s if keep else s[0].lower() + s[1:])
        if kind == "clause dropped":
            head = s.rsplit(", ", 1)[0]
            return _period(head) if head != s and len(head.split()) >= 5 else None
        if kind == "inflected":
            words = [m for m in _WORD.finditer(s) if len(m.group()) >= 5 and fold(m.group()) not in self.stops]
            self.random.shuffle(words)
            for m in words:
                for ending, replacement in INFLECTIONS[self.language]:
                    if m.group().endswith(ending):
                        return _sub(s, m.start(), m.end(), m.group()[: len(m.group()) - len(ending)] + replacement)
            return None
        if kind == "reordered":
            if ", " not in s:
                return None
            a, b = s.rstrip(".").split(", ", 1)
            if len(a.split()) < 2 or len(b.split()) < 2:
                return None
            return _period(f"{b[0].upper()}{b[1:]}, {a}")
        raise ValueError(kind)

    def unsupported(self, kind: str, r: dict):
        s, quote, lang = r["sentence"], r["quote"], self.language
        names = _names(s, self.stops)
        if kind in (
            "name swapped",
            "name at the start swapped",
            "name, same first 4 letters",
            "claim only the question holds",
        ):
            if kind == "name at the start swapped":
                names = [m for m in names if m.start() == 0]
            if not names:
                return None
            m = self.random.choice(names)
            like = (lambda p: fold(p)[:4] == fold(m.group())[:4]) if kind.startswith("name, same") else None
            new = self._absent(self.pool_names, quote, like)
            if new is None:
                return None
            question = f"{r['question']} ({new})" if kind.startswith("claim only") else r["question"]
            return _sub(s, m.start(), m.end(), new), new, question
        numbers = list(_NUMBER.finditer(s))
        if kind == "number changed" and numbers:
            m = self.random.choice(numbers)
            digits = m.group()
            for step in range(1, 10):
                new = digits[:-1] + str((int(digits[-1]) + step) % 10)
                if self._new_number(new, quote):
                    return _sub(s, m.start(), m.end(), new), new, r["question"]
            return None
        if kind == "decimal point":
            mark = "." if lang == "en" else ","
            whole = [m for m in numbers if re.fullmatch(r"\d{2,}", m.group())]
            whole = [m for m in whole if self._new_number(f"{m.group()[:-1]}.{m.group()[-1]}", quote)]
            if whole:
                m = self.random.choice(whole)
                new = f"{m.group()[:-1]}{mark}{m.group()[-1]}"
                return _sub(s, m.start(), m.end(), new), new, r["question"]
            parts = [m for m in numbers if re.fullmatch(r"\d+[.,]\d{1,2}", m.group())]
            parts = [m for m in parts if self._new_number(re.sub(r"[.,]", "", m.group()), quote)]
            if parts:
                m = self.random.choice(parts)
                new = re.sub(r"[.,]", "", m.group())
                return _sub(s, m.start(), m.end(), new), new, r["question"]
            return None
        if kind == "magnitude word" and numbers:
            words = MAGNITUDES[lang]
            for m in numbers:
                after = re.match(r"\s+(\w+)", s[m.end() :])
                if after and fold(after.group(1)) in words:
                    other = next(w for w in words if words[w] != words[fold(after.group(1))])
                    at = m.end() + after.start(1)
                    return _sub(s, at, at + len(after.group(1)), other), other, r["question"]
            m = self.random.choice(numbers)
            big = {"en": "million", "de": "Millionen", "bg": "милиона"}[lang]
            return _sub(s, m.end(), m.end(), f" {big}"), big, r["question"]
        if kind == "unit swapped":
            units = [
                m for m in re.finditer(r"(?<=\d )(\w+)", s) if m.group().isalpha() and fold(m.group()) not in self.stops
            ]
            if not units:
                return None
            m = self.random.choice(units)
            new = self._absent(self.pool_units, quote)
            return (_sub(s, m.start(1), m.end(1), new), new, r["question"]) if new else None
        if kind == "negation added":
            if any(fold(w) in self.negations for w in _WORD.findall(s)):
                return None
            auxiliaries = set(AUXILIARIES[lang].split())
            words = list(_WORD.finditer(s))
            for k, m in enumerate(words):
                followed = re.match(r"\s+(\w+)", s[m.end() :])
                if followed and followed.group(1).lower() in ("only", "just", "nur", "само"):
                    continue  # "not only" negates nothing
                if m.group().lower() in auxiliaries and m.start() > 0 and (followed or lang == "de"):
                    if lang == "de" and not re.match(r"\s+\w", s[m.end() :]):  # a verb at the clause's end
                        m = words[k - 1]  # German negates the participle before it: "nicht beauftragt war"
                        return _sub(s, m.start(), m.start(), "nicht "), "nicht", r["question"]
                    new = NEGATE[lang].format(m.group())
                    return _sub(s, m.start(), m.end(), new), new, r["question"]
            if lang == "bg":  # Bulgarian puts the verb second more often than not
                words = list(_WORD.finditer(s))
                if len(words) > 2:
                    m = words[1]
                    return _sub(s, m.start(), m.end(), f"не {m.group()}"), "не", r["question"]
            return None
        if kind == "negation removed":  # every negation word (Bulgarian and German negate twice)
            found = [m for m in _WORD.finditer(s) if fold(m.group()) in self.negations]
            if not found or re.search(r"(?i)\b(not|nicht|не)\s+(only|just|nur|само)\b", s):
                return None  # "not only X" says X: no negation to remove
            if any(not re.match(r"\s+\w", s[m.end() :]) for m in found):
                return None  # "yes or no.": a negation word that negates no word after it
            for m in reversed(found):
                end = m.end() + 1 if s[m.end() : m.end() + 1] == " " else m.end()
                s = _sub(s, m.start(), end, "")
            return s[0].upper() + s[1:], found[0].group(), r["question"]
        if kind == "quantifier changed":
            classes = QUANTIFIERS[lang]
            for m in _WORD.finditer(s):
                cls = next((c for c, words in classes.items() if fold(m.group()) in words), None)
                if cls:
                    other = sorted(classes["some" if cls != "some" else "all"])[0]
                    other = other.capitalize() if m.group()[0].isupper() else other
                    return _sub(s, m.start(), m.end(), other), other, r["question"]
            return None
        return None


def _for_it(kind: str, change: str, missing: list[str]) -> bool:
    """Whether the missing claims name the change (for polarity and quantifiers: say what is off)."""
    if kind.startswith("negation"):
        return any("negated" in m for m in missing)
    if kind.startswith("quantifier"):
        return any("quantifier" in m for m in missing)
    return any(fold(w) in fold(m) for m in missing for w in _WORD.findall(change) or [change])


def measure(rows: list[dict], language: str, limit: int, misses: list | None = None) -> dict:
    rows = random.Random(3).sample(rows, min(limit, len(rows)))
    variants = Variants(rows, language)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # n, passed or flagged, flagged for it
    for r in rows:
        for kind in SUPPORTED:
            text = variants.supported(kind, r)
            if text is None or text.rstrip(".") == "":
                continue
            checked = check_support(f"{text} [1]", [], {1: r["quote"]}, language, question=r["question"])
            tally[kind][0] += 1
            tally[kind][1] += all(s.supported for s in checked)
            if misses is not None and not all(s.supported for s in checked):
                misses.append((language, kind, text, [m for s in checked for m in s.missing]))
        for kind in UNSUPPORTED:
            made = variants.unsupported(kind, r)
            if made is None:
                continue
            text, change, question = made
            checked = check_support(f"{text} [1]", [], {1: r["quote"]}, language, question=question)
            missing = [m for s in checked for m in s.missing]
            tally[kind][0] += 1
            tally[kind][1] += bool(missing)
            tally[kind][2] += _for_it(kind, change, missing)
            if misses is not None and not missing:
                misses.append((language, kind, text, r["quote"]))
    return tally


def _cell(k: int, n: int) -> str:
    if n == 0:
        return "n = 0"
    low, high = stats.wilson(k, n)
    return f"{k}/{n} = {k / n:.2f} [{low:.2f}, {high:.2f}]"


def constructed(limit: int, show: int) -> None:
    data = {
        "en (SQuAD 2.0 sample)": ("en", squad_sentences(SQUAD, "en")),
        "en (XQuAD)": ("en", squad_sentences(XQUAD / "xquad.en.json", "en")),
        "de (XQuAD)": ("de", squad_sentences(XQUAD / "xquad.de.json", "de")),
        "bg (chapter)": ("bg", chapter_sentences()),
    }
    misses: list = []
    tallies = {name: measure(rows, language, limit, misses) for name, (language, rows) in data.items()}
    print(f"## Constructed variants (up to {limit} sentences per set)\n")
    print("| kind | goal | " + " | ".join(tallies) + " |")
    print("|---|---|" + "---|" * len(tallies))
    for kind in SUPPORTED:
        print(
            f"| {kind} | passed ≥ 0.95 | " + " | ".join(_cell(t[kind][1], t[kind][0]) for t in tallies.values()) + " |"
        )
    for kind in UNSUPPORTED:
        cells = [f"{_cell(t[kind][1], t[kind][0])}; for it {t[kind][2]}" for t in tallies.values()]
        print(f"| {kind} | flagged ≥ 0.95 | " + " | ".join(cells) + " |")
    shown: dict = defaultdict(int)
    for language, kind, text, what in misses:  # a supported variant flagged (what was missing), or a change passed
        shown[language, kind] += 1
        if shown[language, kind] <= show:
            print(
                json.dumps(
                    {"language": language, "kind": kind, "text": text, "missing or quote": what}, ensure_ascii=False
                )
            )


def real_answers(args) -> None:
    from rag_assets.answering.generation import LocalLM
    from rag_assets.defs.partitions import model_strategy_key
    from rag_assets.defs.resources import EmbedderResource
    from rag_assets.evaluation.answer_eval import evaluate_answers
    from rag_assets.ingest import ground_truth as gt
    from rag_assets.layout import DataDir
    from rag_assets.settings import Settings

    layout = DataDir(Path(args.data_dir))
    truth = layout.read_table("ground_truth")
    sample = gt.sample(truth, gt.Sample(args.answerable, args.unanswerable, args.out_of_domain, 11))
    sample = sample.drop_duplicates("question_id")
    lm = LocalLM()
    embedders = EmbedderResource(models=Settings.from_environment().models)
    result = evaluate_answers(
        layout,
        args.strategy,
        layout.read_table("chunk_sets", args.strategy),
        layout.read_table("embeddings", model_strategy_key(embedders.primary, args.strategy)),
        layout.read_table("corpus_snapshot"),
        truth,
        sample,
        embedders.get(),
        lm,
        0.6,
        1024,
        8,
        ["generate"],
        log=lambda line: None,
    )
    scored = result.scored
    answered = scored[scored["answer"].map(lambda a: isinstance(a, str)) & ~scored["declined"]]
    groups = {
        "correct with evidence (false alarms)": answered[answered["outcome"] == "correct with evidence"],
        "bluffs (unanswerable, out-of-domain)": answered[answered["kind"] != "answerable"],
        "wrong answers to answerable questions": answered[
            answered["outcome"].isin(["generation failure", "retrieval failure"])
        ],
    }
    print(f"\n## The generator's answers\n\n{len(sample)} questions, {len(answered)} answered by {lm.identity}")
    print(f"answer cache {result.cache}\n")
    print("| " + " | ".join(groups) + " |")
    print("|" + "---|" * len(groups))
    flagged = []
    cells = []
    for name, rows in groups.items():
        flags = 0
        for r in rows.itertuples():
            quotes = {s["index"]: s["quote"] for s in r.sources}  # checked again as `ask` checks it,
            titles = {s["index"]: s.get("locator_label", "") for s in r.sources}  # titles and headings too
            checked = check_support(r.answer, [lm.answer_prefix], quotes, question=r.question, titles=titles)
            checked = [s.as_dict() for s in checked if not s.supported]
            flags += bool(checked)
            if checked and name.startswith("correct"):
                cited = sorted({n for s in checked for n in s["cites"]} or quotes)
                flagged.append(
                    {
                        "question": r.question,
                        "answer": r.answer,
                        "missing": [s["missing"] for s in checked],
                        "cited": {n: quotes[n] for n in cited if n in quotes},
                    }
                )
        cells.append(_cell(flags, len(rows)))
    print("| " + " | ".join(cells) + " |")
    print("\nflagged correct-with-evidence answers, to read by hand:")
    for row in flagged:
        print(json.dumps(row, ensure_ascii=False))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sentences", type=int, default=300, help="sentences sampled per set")
    p.add_argument("--show", type=int, default=0, help="print up to this many misses per kind and language")
    p.add_argument("--data-dir", help="also check the generator's answers on this materialised data dir")
    p.add_argument("--strategy", default="E")
    p.add_argument("--answerable", type=int, default=100)
    p.add_argument("--unanswerable", type=int, default=40)
    p.add_argument("--out-of-domain", type=int, default=36)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    constructed(args.sentences, args.show)
    if args.data_dir:
        real_answers(args)


if __name__ == "__main__":
    main()
