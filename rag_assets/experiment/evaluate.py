"""One configuration of an experiment, from the corpus snapshot to its per-question hits.

Its chunk set is cut, embedded through the (model, text) cache (so a size sweep embeds only texts
no earlier configuration embedded), indexed, and every question is retrieved and reranked as the
configuration says. What comes back is one row per answerable query with its first-hit rank and
latency, each row carrying the configuration's full settings, fingerprint and costs.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from rag_assets import stats
from rag_assets.chunking import placed
from rag_assets.evaluation import metric_tables
from rag_assets.experiment.arms import chunk_arm, embedder_of, reranker_of
from rag_assets.experiment.spec import Configuration
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.report import Outcome
from rag_assets.retrieval import dense, fusion
from rag_assets.retrieval.embedding_cache import EmbeddingCache
from rag_assets.retrieval.lexical import BM25Index, BM25Settings
from rag_assets.retrieval.search import milliseconds, reranked_rows

DEPTH = 100  # how deep each ranking goes, as in the lab's retrieval runs
LATENCY_QUERIES = 100  # queries encoded one at a time, as `ask` encodes one, for the latency figures
ROW_COLUMNS = [
    "config",
    "query_id",
    "question_id",
    "hit_rank",
    "ndcg_10",
    "depth",
    "search_ms",
    "rerank_ms",
    "encode_ms",
]


class QueryView:
    """A model's query side, cached apart from its passages (e5 and bge embed them differently)."""

    def __init__(self, model):
        self.model, self.identity, self.dim = model, f"{model.identity}#query", model.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, query=True)


def first_hit_ndcg(rank) -> float:
    """nDCG@10 with one relevant passage, the first that holds the needle: 1/log2(1 + rank)."""
    return 1.0 / math.log2(1 + int(rank)) if rank is not None and not pd.isna(rank) and rank <= 10 else 0.0


class Searcher:
    """The configuration's retriever over one chunk set."""

    def __init__(self, settings: dict, kind: str, texts: list[str], languages: list[str], vectors: np.ndarray | None):
        self.kind, self.settings, self.vectors, self.ann, self.bm25 = kind, settings, vectors, None, None
        if kind in ("bm25", "hybrid"):
            bm25 = BM25Settings(
                k1=settings.get("k1", BM25Settings.k1),
                b=settings.get("b", BM25Settings.b),
                **({"analyzer": settings["analyzer"]} if settings.get("analyzer") else {}),
            )
            self.bm25 = BM25Index.build(texts, bm25, languages)
        if kind == "dense" and settings.get("index") == "hnsw" and len(vectors):
            from rag_assets.retrieval.ann import EF_SEARCH, HnswIndex, M

            self.ann = HnswIndex.build(vectors, settings.get("m", M))
            self.ef_search = settings.get("ef_search", EF_SEARCH)

    def rank(self, query: str, vector: np.ndarray | None, depth: int) -> np.ndarray:
        if self.kind == "bm25":
            return self.bm25.top_k(query, depth)[0]
        if self.kind == "dense":
            if self.ann is not None:
                return self.ann.top_k(vector, depth, ef_search=self.ef_search)[0]
            return dense.top_k(vector, self.vectors, depth)[0]
        d_rows, d_scores = dense.top_k(vector, self.vectors, depth)
        b_rows, b_scores = self.bm25.top_k(query, depth)
        if "dense_weight" in self.settings:
            w = self.settings["dense_weight"]
            lists = [(d_rows.tolist(), d_scores.tolist()), (b_rows.tolist(), b_scores.tolist())]
            fused = fusion.weighted(lists, [w, 1 - w])
        else:
            fused = fusion.rrf([d_rows.tolist(), b_rows.tolist()], k=self.settings.get("rrf_k", fusion.RRF_K))
        return np.array([r for r, _ in fused[:depth]], dtype=np.int64)

    def size_bytes(self) -> int:
        size = self.vectors.nbytes if self.vectors is not None else 0
        if self.ann is not None:
            import faiss

            size += len(faiss.serialize_index(self.ann.index))
        if self.bm25 is not None:  # as saved on disk
            with tempfile.TemporaryDirectory() as tmp:
                self.bm25.save(Path(tmp) / "bm25")
                size += sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
        return size


def evaluate_configuration(
    config: Configuration,
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    cache_root,
    records,
    lm: Callable | None = None,
    log: Callable[[str], None] = print,
) -> Outcome:
    """The configuration's per-query rows and figures. Raises what its arms raise (an endpoint
    that fails, a chunk that cannot be placed): the caller records nothing for it."""
    t_build = time.perf_counter()
    model = embedder_of(config.embedder, records) if config.embedder else None
    if model is not None and getattr(model, "moved", None):
        log(f"embedder {config.embedder.name}: {model.moved}: a new identity, its embeddings are computed anew")
    counter = (lambda text: int(model.count_tokens([text], special_tokens=False)[0])) if model is not None else None
    chunked = chunk_arm(snapshot, config.chunker, counter)
    chunks = chunked.indexed
    texts = chunks["text"].tolist()
    log(f"{config.id}: {len(chunks)} chunks, {len(chunked.returned)} returned passages")
    vectors, cache = None, None
    if model is not None:
        vectors, cache = EmbeddingCache(cache_root, model).encode(texts)
    searcher = Searcher(config.retriever.settings, config.retriever.kind, texts, chunks["language"].tolist(), vectors)
    build_seconds = time.perf_counter() - t_build
    index_usage = _usage(model)
    reranker = reranker_of(config.reranker, lm)

    queries = truth[truth["kind"] == "answerable"][["query_id", "query"]].reset_index(drop=True)
    encode_ms = np.full(len(queries), np.nan)
    query_vectors, sent = None, 0
    if model is not None:
        sample = np.random.default_rng(0).choice(len(queries), size=min(LATENCY_QUERIES, len(queries)), replace=False)
        for i in sample:  # each alone, as `ask` encodes one: the latency a user sees
            t0 = time.perf_counter()
            model.encode([queries["query"][i]], query=True)
            encode_ms[i] = milliseconds(time.perf_counter() - t0)
        query_vectors, cached = EmbeddingCache(cache_root, QueryView(model)).encode(queries["query"].tolist())
        sent = len(sample) + cached.encoded  # the queries this run sent to the model (the rest: cached)
    ids = np.asarray(chunks["chunk_id"].tolist(), dtype=object)
    runs, timing = [], []
    for i, q in enumerate(queries.itertuples()):
        t0 = time.perf_counter()
        rows = searcher.rank(q.query, None if query_vectors is None else query_vectors[i], DEPTH)
        search_s = time.perf_counter() - t0
        rerank_s = math.nan
        if reranker is not None:
            t0 = time.perf_counter()
            rows, _ = reranked_rows(reranker, q.query, texts, rows)
            rerank_s = time.perf_counter() - t0
        ranked = placed.returned_ids(ids[rows].tolist(), chunked.returned_of)
        runs.append({"query_id": q.query_id, "strategy": config.id, "retriever": config.id, "chunk_ids": ranked})
        timing.append(
            (q.query_id, milliseconds(search_s), milliseconds(rerank_s) if not math.isnan(rerank_s) else math.nan)
        )
    hits = metric_tables.query_hits(pd.DataFrame(runs), {config.id: chunked.returned}, truth)
    hits = hits.merge(pd.DataFrame(timing, columns=["query_id", "search_ms", "rerank_ms"]), on="query_id")
    hits = hits.merge(pd.DataFrame({"query_id": queries["query_id"], "encode_ms": encode_ms}), on="query_id")
    hits["ndcg_10"] = [n if not pd.isna(n) else first_hit_ndcg(r) for n, r in zip(hits["ndcg_10"], hits["hit_rank"])]
    hits["config"] = config.id
    table = hits[ROW_COLUMNS].copy()

    query_usage = _minus(_usage(model), index_usage)
    rerank_usage = _usage(reranker)
    identities = {config.embedder.name: model.identity} if model is not None else {}
    figures = {
        "config": config.id,
        "fingerprint": config.fingerprint(identities),
        "settings": json.dumps(config.settings(), sort_keys=True),
        "model_id": model.identity if model is not None else None,
        "reranker_model": getattr(reranker, "model", None),
        "chunks": len(chunks),
        "returned_passages": len(chunked.returned),
        "index_bytes": searcher.size_bytes(),
        "build_seconds": round(build_seconds, 3),
        "encoded": cache.encoded if cache else 0,
        "cache_hits": cache.hits if cache else 0,
        "index_endpoint_calls": index_usage[0],
        "index_endpoint_tokens": index_usage[1],
        "query_endpoint_calls": query_usage[0] + rerank_usage[0],
        "query_endpoint_tokens": query_usage[1] + rerank_usage[1],
        **_costs(config, index_usage, query_usage, rerank_usage, sent, len(queries)),
        "corpus_hash": corpus.corpus_hash(snapshot),
        "ground_truth_hash": gt.ground_truth_hash(truth),
        "question_origin": gt.origin_label(truth),
        "latency_ms": stats.percentiles(latency(table)),
    }
    for key in (
        "fingerprint",
        "settings",
        "model_id",
        "reranker_model",
        "corpus_hash",
        "ground_truth_hash",
        "question_origin",
        "chunks",
        "index_bytes",
        "build_seconds",
        "index_endpoint_calls",
        "index_endpoint_tokens",
        "query_endpoint_calls",
        "query_endpoint_tokens",
        "index_cost_usd",
        "cost_per_1k_queries_usd",
    ):
        table[key] = figures[key]
    return Outcome(table, figures, version=figures["fingerprint"])


def latency(rows: pd.DataFrame) -> pd.Series:
    """A query's latency as a user meets it: encoding (on the queries encoded one at a time),
    search and rerank; without an embedder, search and rerank of every query."""
    sampled = rows[rows["encode_ms"].notna()] if rows["encode_ms"].notna().any() else rows
    return sampled["encode_ms"].fillna(0) + sampled["search_ms"] + sampled["rerank_ms"].fillna(0)


def _usage(thing) -> tuple[int, int]:
    endpoint = getattr(thing, "endpoint", None)
    return (endpoint.usage.calls, endpoint.usage.tokens) if endpoint is not None else (0, 0)


def _minus(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] - b[0], a[1] - b[1]


def _costs(config: Configuration, index_usage, query_usage, rerank_usage, sent: int, queries: int) -> dict:
    """Dollars from the tokens endpoints report and the prices the file gives (None without a price):
    to index (what this run embedded; the probe included), and per 1,000 questions from the tokens per
    question actually sent (`sent` questions embedded, every one of the `queries` reranked)."""
    price = config.embedder.settings.get("price_per_million_tokens") if config.embedder else None
    rerank_price = config.reranker.settings.get("price_per_million_tokens")
    index_cost = index_usage[1] * price / 1e6 if price is not None else None
    per_question = []
    if price is not None and sent:
        per_question.append(query_usage[1] / sent * price / 1e6)
    if rerank_price is not None and queries:
        per_question.append(rerank_usage[1] / queries * rerank_price / 1e6)
    return {"index_cost_usd": index_cost, "cost_per_1k_queries_usd": sum(per_question) * 1000 if per_question else None}
