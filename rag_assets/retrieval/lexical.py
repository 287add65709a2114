"""BM25 over chunks with bm25s: tokenise, index, save, load and score as separate steps.

Tokenisation (documented because it decides what matches) is an analysis, applied alike to
chunks and queries. Each starts from Unicode NFKC, lowercase, runs of letters and digits
(`[^\\W_]+`, any script); a run of Chinese or Japanese characters (Han, Hiragana, Katakana),
which have no spaces between words, becomes its overlapping character bigrams (a lone character
stays one term), as Lucene's CJKAnalyzer does. Then:
- `plain`: nothing more;
- `english`: an approximation of Lucene's EnglishAnalyzer (Pyserini's BEIR indexes): possessive
  's dropped, Lucene's 33 English stop words removed, Porter stemming (PyStemmer's `porter`); the
  tokens are the runs above, not StandardTokenizer's UAX #29 words (docs/pipeline.md);
- `snowball`: bm25s's English stop words (the same 33 as Lucene's) and the Snowball English
  stemmer, possessives kept;
- `per-language` (default): each document is analysed by the analysis of its own language (the
  snapshot's `language`): `english` for English; Bulgarian by BulStem (Nakov's rules, `bulstem`)
  with stopwords-iso's Bulgarian list; every language Snowball stems (PyStemmer: German, Russian,
  Greek, French, ...) by its Snowball stemmer with its stopwords-iso list (none where it has
  none); any other language by plain tokens (its stopwords-iso list, where there is one, removed).
  A query is analysed by every analysis the index holds, most documents first, and keeps each
  term once: in a one-language index that is exactly that language's analysis; in a mixed one a
  query matches each language's documents in their own terms (docs/pipeline.md).

Variants:
- `lucene` (default): idf = ln(1 + (N - n + 0.5)/(n + 0.5)), tf part f/(f + k1(1 - b + b|d|/avgdl)),
  k1 = 1.2, b = 0.75 -- what Lucene/Pyserini compute.
- `okapi`: what rank-bm25's BM25Okapi computes: idf = ln((N - n + 0.5)/(n + 0.5)) with negative
  values replaced by epsilon x mean idf, times f(k1 + 1)/(f + k1(1 - b + b|d|/avgdl)). Built with
  bm25s's Robertson term part; the idf is substituted per term in the score matrix.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import bm25s
import numpy as np

from rag_assets import storage
from rag_assets.catalog import ANALYZERS, BM25_VARIANTS, DEFAULT_ANALYZER
from rag_assets.retrieval import ranking

# bm25s sets its own logger to DEBUG on import, so any root handler prints "Building index from
# tokens" for every index: its progress is not ours to show.
logging.getLogger("bm25s").setLevel(logging.WARNING)

_TOKEN = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+")


# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
LUCENE_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split()
)
FORCED = {  # name -> (stop words, PyStemmer algorithm or None, drop possessive 's): one analysis for every document
    "plain": (frozenset(), None, False),
    "english": (LUCENE_STOP_WORDS, "porter", True),
    "snowball": (frozenset(bm25s.stopwords.STOPWORDS_EN), "english", False),
}
PER_LANGUAGE = "per-language"
# ANALYZERS: the forced ones and PER_LANGUAGE. The default, DEFAULT_ANALYZER, is PER_LANGUAGE: on
# English documents it is `english` (no forced analyzer wins on the bundled corpus,
# bench/bm25_analyzers.py, and it is what published BEIR figures are computed with); every other
# language gets its own (docs/results.md, "Languages").
# ISO 639-1 code -> PyStemmer's Snowball algorithm
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
    "nl": "dutch", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian",
    "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "st": "sesotho", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
BULSTEM = "bulstem"  # Bulgarian, which Snowball lacks
BULSTEM_CONTEXT = 2  # BulStem's rule set (1-3 letters of context): all within 0.01 R@4 (bench/languages.py)
_POSSESSIVE = re.compile(r"['’]s\b")


def analysis_of(analyzer: str, language: str | None) -> str:
    """The analysis a document in `language` gets under `analyzer`: the forced analyzer's
    name, or under `per-language` the language's own (`english` for English, else its code)."""
    if analyzer != PER_LANGUAGE:
        return analyzer
    language = language or "und"
    return "english" if language == "en" else language


@lru_cache(maxsize=64)
def stop_words(language: str) -> frozenset:
    """stopwords-iso's list for a language, in lower case (empty for a language it lacks)."""
    import stopwordsiso

    words = stopwordsiso.stopwords(language) if stopwordsiso.has_lang(language) else set()
    return frozenset(unicodedata.normalize("NFKC", w).lower() for w in words)


def _rules(analysis: str) -> tuple[frozenset, str | None, bool]:
    """(stop words, stemmer, drop possessives) of an analysis."""
    if analysis in FORCED:
        return FORCED[analysis]
    if analysis == "bg":
        return stop_words("bg"), BULSTEM, False
    return stop_words(analysis), SNOWBALL.get(analysis), False


def unstemmed(analysis: str) -> bool:
    """A language left to plain tokens for want of a stemmer (never a forced analyzer)."""
    return analysis not in FORCED and _rules(analysis)[1] is None


def describe(analysis: str) -> str:
    """One line that says what an analysis does: what a user reads in bm25_index's metadata."""
    if analysis in FORCED:
        return f"{analysis} (forced)" if analysis != "english" else "english: Lucene's 33 stop words, Porter"
    stop, stemmer, _ = _rules(analysis)
    words = f"{len(stop)} stop words (stopwords-iso)" if stop else "no stop words"
    if unstemmed(analysis):
        return f"{analysis}: plain tokens (no stemmer for this language), {words}"
    if stemmer == BULSTEM:
        return f"{analysis}: BulStem (context {BULSTEM_CONTEXT}), {words}"
    return f"{analysis}: Snowball {stemmer}, {words}"


@lru_cache(maxsize=1)
def _bulstem():
    from bulstem.stem import BulStemmer

    return BulStemmer.from_file(f"stem-context-{BULSTEM_CONTEXT}", min_freq=2, left_context=BULSTEM_CONTEXT)


class _BulStem:
    """BulStem behind PyStemmer's `stemWords`; its rules are read once per process."""

    def stemWords(self, words):  # noqa: N802 (PyStemmer's name)
        stemmer = _bulstem()
        return [stemmer.stem(w) for w in words]


def _terms(text: str) -> list[str]:
    """Runs of letters and digits; a CJK run becomes its character bigrams."""
    terms = []
    for run in _TOKEN.findall(text):
        if not _CJK.search(run):
            terms.append(run)
            continue
        at = 0
        for cjk in _CJK.finditer(run):
            if cjk.start() > at:
                terms.append(run[at : cjk.start()])
            chars = cjk.group()
            terms += [chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)]
            at = cjk.end()
        if at < len(run):
            terms.append(run[at:])
    return terms


class Tokenizer:
    """One analysis (a forced analyzer's name or a language code, see `analysis_of`)."""

    def __init__(self, analysis: str = "english"):
        self.analysis = analysis
        self.stopwords, self.algorithm, self.possessives = _rules(analysis)
        self._local = threading.local()  # a PyStemmer stemmer is not thread-safe: one per thread

    def __reduce__(self):  # the stemmer cannot be pickled: an engine's worker builds its own
        return Tokenizer, (self.analysis,)

    @property
    def stemmer(self):
        if self.algorithm is None:
            return None
        if self.algorithm == BULSTEM:
            return _BulStem()
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            import Stemmer

            stemmer = self._local.stemmer = Stemmer.Stemmer(self.algorithm)
        return stemmer

    def __call__(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text).lower()
        if self.possessives:
            text = _POSSESSIVE.sub("", text)
        tokens = [t for t in _terms(text) if t not in self.stopwords]
        stemmer = self.stemmer
        if stemmer:  # Porter stems a lone "s" to nothing: an empty token matches nothing
            return [t for t in stemmer.stemWords(tokens) if t]
        return tokens


class QueryTokenizer:
    """A query analysed by every analysis of an index, most documents first, each term kept once
    (the rule for mixed-language corpora, docs/pipeline.md); one analysis: exactly its tokens."""

    def __init__(self, analyses: list[str]):
        self.analyses = list(analyses)
        self.tokenizers = [Tokenizer(a) for a in self.analyses]

    def __call__(self, text: str) -> list[str]:
        if len(self.tokenizers) == 1:
            return self.tokenizers[0](text)
        tokens, seen = [], set()
        for tokenize in self.tokenizers:
            new = [t for t in tokenize(text) if t not in seen]
            seen.update(new)
            tokens += new
        return tokens


@dataclass(frozen=True)
class BM25Settings:
    variant: str = "lucene"
    k1: float = 1.2
    b: float = 0.75
    epsilon: float = 0.25  # okapi only: floor for negative idf, as a share of the mean idf
    analyzer: str = DEFAULT_ANALYZER

    def __post_init__(self):
        if self.variant not in BM25_VARIANTS:
            raise ValueError(f"BM25 variant must be one of {', '.join(BM25_VARIANTS)}, got {self.variant!r}")
        if self.analyzer not in ANALYZERS:
            raise ValueError(f"BM25 analyzer must be one of {', '.join(ANALYZERS)}, got {self.analyzer!r}")

    def fingerprint(self) -> str:
        """What decides an index's content, as one string: the bm25_settings source's data version."""
        return json.dumps(asdict(self), sort_keys=True)


class IndexUnreadable(RuntimeError):
    """A saved index that is missing or damaged."""


class BM25Index:
    def __init__(self, retriever: bm25s.BM25 | None, settings: BM25Settings, n_docs: int, analyses: dict[str, int]):
        """`retriever` is None only for an index of no documents (bm25s cannot build one);
        `analyses`: how many documents each analysis made terms of, most first."""
        self.retriever = retriever
        self.settings = settings
        self.n_docs = n_docs
        self.analyses = analyses
        self.tokenize = QueryTokenizer(list(analyses) or [analysis_of(settings.analyzer, "en")])

    @classmethod
    def build(
        cls, texts: list[str], settings: BM25Settings = BM25Settings(), languages: list[str] | None = None
    ) -> BM25Index:
        """`languages`: each text's language (ISO 639-1), which the `per-language` analyzer
        reads; none given: every text is taken as English."""
        if languages is not None and len(languages) != len(texts):
            raise ValueError(f"{len(languages)} languages for {len(texts)} texts")
        analyses = [analysis_of(settings.analyzer, lang) for lang in (languages or ["en"] * len(texts))]
        counts = dict(sorted(Counter(analyses).items(), key=lambda item: (-item[1], item[0])))
        if not texts:
            return cls(None, settings, 0, counts)
        tokenizers = {a: Tokenizer(a) for a in counts}
        corpus_tokens = [tokenizers[a](t) for a, t in zip(analyses, texts)]
        if settings.variant == "lucene":
            retriever = bm25s.BM25(k1=settings.k1, b=settings.b, method="lucene", dtype="float64")
        else:
            retriever = bm25s.BM25(
                k1=settings.k1, b=settings.b, method="robertson", idf_method="lucene", dtype="float64"
            )
        retriever.index(corpus_tokens, show_progress=False)
        if settings.variant == "okapi":
            _substitute_okapi_idf(retriever, corpus_tokens, settings)
        return cls(retriever, settings, len(texts), counts)

    @property
    def vocabulary_size(self) -> int:
        return len(self.retriever.vocab_dict) if self.retriever else 0

    def document_share(self, term: str) -> float:
        """The share of documents that hold `term` (by its rarest token under the index's analysis):
        0.0 for a term the index never saw, 1.0 for one that analyses to nothing (a stop word)."""
        tokens = self.tokenize(term)
        if not tokens or self.n_docs == 0:
            return 1.0
        vocabulary, indptr = self.retriever.vocab_dict, self.retriever.scores["indptr"]
        counts = [int(indptr[vocabulary[t] + 1] - indptr[vocabulary[t]]) if t in vocabulary else 0 for t in tokens]
        return min(counts) / self.n_docs

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for one query (zeros when no term matches)."""
        if self.n_docs == 0:
            return np.zeros(0)
        ids = [self.retriever.vocab_dict[t] for t in self.tokenize(query) if t in self.retriever.vocab_dict]
        if not ids:
            return np.zeros(self.n_docs)
        return np.asarray(self.retriever.get_scores_from_ids(ids), dtype=np.float64)

    def top_k(self, query: str, k: int, candidates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the k best documents that match at least one query term (a
        positive score), only among `candidates` (sorted indices) when given; ties break by index.
        A document that matches nothing is never returned: it would rank by index order alone."""
        scores = self.scores(query)
        rows = np.arange(len(scores)) if candidates is None else candidates
        scores = scores[rows]
        matched = scores > 0
        return ranking.top_k(scores[matched], k, rows[matched])

    def save(self, path: storage.AnyPath) -> None:
        """Write to `path` atomically (see `storage.replace_dir`)."""

        def fill(tmp: Path) -> None:
            if self.retriever:
                self.retriever.save(str(tmp))
            (tmp / "rag_assets_bm25.json").write_text(
                json.dumps({"settings": asdict(self.settings), "n_docs": self.n_docs, "analyses": self.analyses})
            )

        storage.replace_dir(path, fill)

    @classmethod
    def load(cls, path: storage.AnyPath) -> BM25Index:
        """The index saved at `path` (a folder, or its object on object storage);
        IndexUnreadable when it is missing or damaged."""
        try:
            with storage.local_dir(path) as folder:
                meta_path = folder / "rag_assets_bm25.json"
                if not meta_path.exists():
                    raise FileNotFoundError
                meta = json.loads(meta_path.read_text())
                retriever = bm25s.BM25.load(str(folder)) if meta["n_docs"] else None
            settings = BM25Settings(**meta["settings"])
            # an index saved before analyses were recorded was built with one forced analyzer
            analyses = meta.get("analyses", {settings.analyzer: meta["n_docs"]})
            index = cls(retriever, settings, meta["n_docs"], analyses)
        except FileNotFoundError:
            raise IndexUnreadable(f"no BM25 index at {path}") from None
        except Exception as exc:  # any damage to any of its files
            raise IndexUnreadable(f"the BM25 index at {path} is damaged ({type(exc).__name__}: {exc})") from None
        if retriever and retriever.scores["num_docs"] != index.n_docs:
            raise IndexUnreadable(
                f"the BM25 index at {path} holds {index.retriever.scores['num_docs']} documents, "
                f"its record says {index.n_docs}"
            )
        return index


def _substitute_okapi_idf(retriever: bm25s.BM25, corpus_tokens: list[list[str]], settings: BM25Settings) -> None:
    """Turn bm25s's Robertson-tf / Lucene-idf matrix into rank-bm25's BM25Okapi scores."""
    n_docs = len(corpus_tokens)
    df = np.zeros(len(retriever.vocab_dict))
    for tokens in corpus_tokens:
        for t in set(tokens):
            df[retriever.vocab_dict[t]] += 1
    seen = df > 0  # bm25s may keep an empty-string token that occurs nowhere
    lucene = np.zeros_like(df)
    lucene[seen] = np.log1p((n_docs - df[seen] + 0.5) / (df[seen] + 0.5))
    okapi = np.zeros_like(df)
    okapi[seen] = np.log(n_docs - df[seen] + 0.5) - np.log(df[seen] + 0.5)
    mean_idf = okapi[seen].mean() if seen.any() else 0.0
    okapi[seen & (okapi < 0)] = settings.epsilon * mean_idf
    factor = np.divide((settings.k1 + 1) * okapi, lucene, out=np.zeros_like(okapi), where=lucene > 0)
    matrix = retriever.scores
    columns = np.diff(matrix["indptr"])  # one per indexed term; a trailing unused token may lack one
    per_entry = np.repeat(factor[: len(columns)], columns)
    matrix["data"] = (matrix["data"] * per_entry).astype(matrix["data"].dtype)
