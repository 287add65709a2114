"""One configuration of an experiment measured through the lab's own engine, from the corpus
snapshot to its per-question hits.

Its chunk set is cut; embedded through the (model, text) cache, so a size sweep embeds only texts no
earlier configuration embedded; indexed as its retriever says (`ChunkIndex.build`); and every
answerable question ranked by `search.run_queries`, the function the lab's runs, `ask` and `serve`
rank with, reranked through the (reranker, query, passage) score cache; hits are the lab's
`metric_tables.query_hits`. Then what a user weighs beside recall@k: recall within a token budget of
context (passages taken whole, in rank order, while they fit), the chunks' length in tokens and how
many exceed the embedder's window, and latency measured after a warm-up, each query timed several
times, the machine's load recorded beside it. One row per answerable query, each carrying the
configuration's settings, fingerprint, costs and the passages it returned (for TREC files).
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from rag_assets import stats
from rag_assets.chunking.diagnostics import needle_holders
from rag_assets.evaluation import metric_tables
from rag_assets.experiment.arms import chunk_arm, counter_of
from rag_assets.experiment.spec import Configuration
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.report import Outcome
from rag_assets.retrieval import embedders, rerank
from rag_assets.retrieval.embedding import REFERENCE_TOKENIZER, reference_tokens
from rag_assets.retrieval.embedding_cache import EmbeddingCache
from rag_assets.retrieval.search import ChunkIndex, milliseconds, run_queries

LATENCY_QUERIES = 100  # queries timed one at a time, as `ask` answers one
WARM_UP = 5  # queries run first and not timed: the first calls pay for loading and connecting
REPEATS = 3  # times each timed query runs; its latency is the median
ROW_COLUMNS = [
    "config",
    "query_id",
    "question_id",
    "hit_rank",
    "ndcg_10",
    "depth",
    "budget_hit",
    "passages_in_budget",
    "search_ms",
    "rerank_ms",
    "encode_ms",
    "latency_ms",
    "chunk_ids",
    "relevant_ids",
]
CARRIED = [  # figures every row of a configuration carries alike
    "fingerprint",
    "settings",
    "model_id",
    "reranker_model",
    "corpus_hash",
    "ground_truth_hash",
    "question_origin",
    "chunk_set",
    "chunks",
    "returned_passages",
    "passage_tokens_mean",
    "passage_tokens_p95",
    "chunks_over_window",
    "encoder_window",
    "token_budget",
    "index_bytes",
    "build_seconds",
    "index_endpoint_calls",
    "index_endpoint_tokens",
    "query_endpoint_calls",
    "query_endpoint_tokens",
    "token_count_source",
    "index_cost_usd",
    "cost_per_1k_queries_usd",
    "load_before",
    "load_after",
]


def first_hit_ndcg(rank) -> float:
    """nDCG@10 with one relevant passage, the first that holds the needle: 1/log2(1 + rank)."""
    return 1.0 / math.log2(1 + int(rank)) if rank is not None and not pd.isna(rank) and rank <= 10 else 0.0


def measure(
    config: Configuration,
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    layout,
    token_budget: int,
    lm: Callable | None = None,
    log: Callable[[str], None] = print,
    progress: Callable[[str, int, int], None] | None = None,
) -> Outcome:
    """The configuration's per-query rows and figures. `layout`: the data dir (its caches and
    endpoint records); `lm()`: the local generator, for an LLM reranker; `progress(stage, done,
    total)` follows embedding and ranking. Raises what its arms raise (an endpoint that fails, a
    chunk that cannot be placed): the caller records nothing for it."""
    step = (lambda stage: functools.partial(progress, stage)) if progress else (lambda stage: None)
    t_build = time.perf_counter()
    records = layout.endpoint_records
    model = embedders.make(config.embedder.spec, records) if config.embedder else None
    if model is not None and getattr(model, "moved", None):
        log(f"embedder {config.embedder.name}: {model.moved}: a new identity, its embeddings are computed anew")
    chunked = chunk_arm(snapshot, config.chunker, counter_of(model))
    chunks = chunked.indexed
    log(f"{config.id}: {len(chunks)} chunks, {len(chunked.returned)} returned passages")
    vectors = None
    if model is not None:
        vectors, cached = EmbeddingCache(layout.embedding_cache, model).encode(chunks["text"].tolist(), step("embed"))
        log(f"{config.id}: {cached.encoded} chunks embedded, {cached.hits} from the cache")
    index = ChunkIndex.build(config.id, chunks, vectors, config.retriever.spec)
    build_seconds = time.perf_counter() - t_build
    index_usage = _usage(model)
    made = rerank.make(config.reranker.spec, lm, records)
    reranker = rerank.CachedScores(layout.rerank_cache, made) if made is not None else None

    queries = truth[truth["kind"] == "answerable"][["query_id", "query"]].reset_index(drop=True)
    query_vectors, sent = None, 0
    if model is not None:
        query_vectors, cached = EmbeddingCache(layout.embedding_cache, model, query=True).encode(
            queries["query"].tolist()
        )
        sent = cached.encoded
    retrievers = {config.id: config.retriever.spec}
    runs = run_queries(
        index,
        queries,
        query_vectors,
        np.full(len(queries), np.nan),
        [reranker] if reranker else [],
        retrievers=retrievers,
        rerank_from=config.id,
        progress=step("rank"),
    )
    if reranker is not None:
        reranker.flush()
        log(f"{config.id}: {reranker.scored} passages reranked, {reranker.reused} scores from the cache")
    final = runs[runs["retriever"] == (reranker.name if reranker else config.id)].reset_index(drop=True)
    final["chunk_ids"] = [returned(c, [], chunked.returned_of)[0] for c in final["chunk_ids"]]
    final["retriever"] = config.id
    hits = metric_tables.query_hits(final, {config.id: chunked.returned}, truth)
    hits["ndcg_10"] = [n if not pd.isna(n) else first_hit_ndcg(r) for n, r in zip(hits["ndcg_10"], hits["hit_rank"])]
    hits = hits.merge(final[["query_id", "chunk_ids", "stage_ms", "total_ms"]], on="query_id")
    hits["search_ms"] = hits["total_ms"] - (hits["stage_ms"] if reranker else 0.0)  # the ranking before any rerank
    budget = within_budget(hits, chunked.returned, truth, token_budget)
    hits = hits.merge(budget, on="query_id")
    rerank_ms = {}
    if reranker is not None:
        texts = dict(zip(index.chunk_ids, index.texts))
        shortlists = runs[runs["retriever"] == config.id].set_index("query_id")["chunk_ids"]
        rerank_ms = {
            q.query_id: 1000 * reranker.seconds(q.query, [texts[c] for c in shortlists[q.query_id][: reranker.depth]])
            for q in queries.itertuples()
        }
    hits["rerank_ms"] = hits["query_id"].map(rerank_ms).astype(float) if rerank_ms else math.nan

    load_before = os.getloadavg()[0]
    timed = _latency(model, index, retrievers, queries, hits.set_index("query_id")["rerank_ms"])
    load_after = os.getloadavg()[0]
    sent += timed.attrs["encoded"]
    hits = hits.merge(timed, on="query_id", how="left")
    hits["config"] = config.id
    hits["relevant_ids"] = hits["question_id"].map(budget.attrs["holders"])
    table = hits[ROW_COLUMNS].copy()

    query_usage = _minus(_usage(model), index_usage)
    rerank_usage = _usage(made)
    identities = identities_of(config, model, made)
    passage_tokens = budget.attrs["passage_tokens"]
    window = getattr(model, "window", None) if model is not None else None
    own = model.count_tokens(chunks["text"].tolist()) if model is not None and window else None
    figures = {
        "config": config.id,
        "fingerprint": config.fingerprint(identities),
        "settings": json.dumps(config.settings(), sort_keys=True),
        "model_id": model.identity if model is not None else None,
        "reranker_model": made.model if made is not None else None,
        "chunk_set": chunked.fingerprint(),
        "chunks": len(chunks),
        "returned_passages": len(chunked.returned),
        "passage_tokens_mean": float(np.mean(passage_tokens)) if len(passage_tokens) else 0.0,
        "passage_tokens_p95": float(np.percentile(passage_tokens, 95)) if len(passage_tokens) else 0.0,
        "chunks_over_window": int((own > window).sum()) if own is not None else None,
        "encoder_window": window,
        "token_budget": token_budget,
        "index_bytes": index.size_bytes(),
        "build_seconds": round(build_seconds, 3),
        "index_endpoint_calls": index_usage[0],
        "index_endpoint_tokens": index_usage[1],
        "query_endpoint_calls": query_usage[0] + rerank_usage[0],
        "query_endpoint_tokens": query_usage[1] + rerank_usage[1],
        "token_count_source": "; ".join(s for s in (_source(model), _source(made)) if s) or "no endpoint",
        **costs(config, index_usage, query_usage, rerank_usage, sent, len(queries)),
        "corpus_hash": corpus.corpus_hash(snapshot),
        "ground_truth_hash": gt.ground_truth_hash(truth),
        "question_origin": gt.origin_label(truth),
        "load_before": round(load_before, 2),
        "load_after": round(load_after, 2),
        "latency_ms": stats.percentiles(table["latency_ms"].dropna()),
        "recallwithin_budget": float(table["budget_hit"].mean()) if len(table) else math.nan,
        "budget_tokenizer": REFERENCE_TOKENIZER,
    }
    if figures["chunks_over_window"]:
        log(
            f"{config.id}: {figures['chunks_over_window']} of {len(chunks)} chunks exceed {config.embedder.name}'s "
            f"window of {window} tokens: the model reads only their start"
        )
    for key in CARRIED:
        table[key] = figures[key]
    return Outcome(table, figures, version=figures["fingerprint"])


def returned(ranked: list[str], distances: list[float], returned_of: dict[str, str] | None):
    """A ranking of indexed chunks as the passages it returns: each passage once, at the rank of its
    best chunk, with the smallest cosine distance of its chunks (`distances` may be empty: none)."""
    if returned_of is None:
        return list(ranked), list(distances)
    nearest: dict[str, float] = {}
    for i, c in enumerate(ranked):
        passage, d = returned_of[c], distances[i] if distances else np.inf
        nearest[passage] = min(nearest.get(passage, np.inf), d)
    return list(nearest), [float(d) for d in nearest.values()] if distances else []


def identities_of(config: Configuration, model, reranker) -> dict[str, str]:
    """The identities a configuration's fingerprint hashes: its embedder's and its reranker's."""
    out = {config.embedder.name: model.identity} if model is not None else {}
    if reranker is not None:
        out[config.reranker.name] = reranker.model
    return out


def within_budget(hits: pd.DataFrame, returned: pd.DataFrame, truth: pd.DataFrame, budget: int) -> pd.DataFrame:
    """Per query: whether a passage whose quoted content holds the needle is among those taken whole,
    in rank order, while their contents' tokens (the reference tokenizer's, the same for every
    configuration) fit in `budget`; and how many were taken. Its attrs: each question's holders
    (passages whose embedded text holds the needle: the qrels of a TREC export) and every
    passage's tokens."""
    tokens = dict(zip(returned["chunk_id"], reference_tokens(returned["content"].tolist()).tolist()))
    holders = needle_holders(returned, truth)
    rows = []
    for h in hits.itertuples():
        used, taken = 0, []
        for c in h.chunk_ids:
            if used + tokens[c] > budget:
                break
            used += tokens[c]
            taken.append(c)
        cited = holders.get(h.question_id, (set(), set()))[1]
        rows.append({"query_id": h.query_id, "budget_hit": bool(cited & set(taken)), "passages_in_budget": len(taken)})
    frame = pd.DataFrame(rows, columns=["query_id", "budget_hit", "passages_in_budget"])
    frame.attrs["holders"] = {q: sorted(held[0]) for q, held in holders.items()}
    frame.attrs["passage_tokens"] = np.fromiter(tokens.values(), dtype=np.int64, count=len(tokens))
    return frame


def _latency(model, index: ChunkIndex, retrievers: dict, queries: pd.DataFrame, rerank_ms: pd.Series) -> pd.DataFrame:
    """Per sampled query (a fixed sample of LATENCY_QUERIES): the median of REPEATS timings of
    encoding it alone and searching, after WARM_UP untimed queries; plus its rerank time as it was
    measured when its scores were computed. Its attrs: how many queries were sent to the model."""
    rng = np.random.default_rng(0)
    sample = rng.choice(len(queries), size=min(LATENCY_QUERIES, len(queries)), replace=False)
    encoded = 0

    def once(i: int) -> tuple[float, float]:
        nonlocal encoded
        one = queries.iloc[[i]]
        vector, encode = None, 0.0
        if model is not None:
            t0 = time.perf_counter()
            vector = model.encode([one["query"].iloc[0]], query=True)
            encode = time.perf_counter() - t0
            encoded += 1
        run = run_queries(index, one, vector, np.zeros(1), retrievers=retrievers)
        return milliseconds(encode), float(run["total_ms"].iloc[0])

    for i in sample[:WARM_UP]:
        once(int(i))
    rows = []
    for i in sample:
        times = np.array([once(int(i)) for _ in range(REPEATS)])
        encode, search = np.median(times, axis=0)
        query_id = queries["query_id"].iloc[int(i)]
        rerank = rerank_ms.get(query_id, math.nan)
        rows.append(
            {
                "query_id": query_id,
                "encode_ms": encode if model is not None else math.nan,
                "latency_ms": encode + search + (0.0 if pd.isna(rerank) else rerank),
            }
        )
    frame = pd.DataFrame(rows, columns=["query_id", "encode_ms", "latency_ms"])
    frame.attrs["encoded"] = encoded
    return frame


def _usage(thing) -> tuple[int, int]:
    endpoint = getattr(thing, "endpoint", None)
    return (endpoint.usage.calls, endpoint.usage.tokens) if endpoint is not None else (0, 0)


def _source(thing) -> str:
    endpoint = getattr(thing, "endpoint", None)
    return f"{endpoint.label}: {endpoint.usage.source}" if endpoint is not None else ""


def _minus(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] - b[0], a[1] - b[1]


def costs(config: Configuration, index_usage, query_usage, rerank_usage, sent: int, queries: int) -> dict:
    """Dollars from the tokens endpoints were sent and the prices the file gives (None without a
    price): to index (what this run embedded; its probes included), and per 1,000 questions from the
    tokens per question actually sent (`sent` questions embedded, every one of the `queries`
    reranked)."""
    price = getattr(config.embedder.spec, "price_per_million_tokens", None) if config.embedder else None
    rerank_price = getattr(config.reranker.spec, "price_per_million_tokens", None)
    index_cost = index_usage[1] * price / 1e6 if price is not None else None
    per_question = []
    if price is not None and sent:
        per_question.append(query_usage[1] / sent * price / 1e6)
    if rerank_price is not None and queries:
        per_question.append(rerank_usage[1] / queries * rerank_price / 1e6)
    return {"index_cost_usd": index_cost, "cost_per_1k_queries_usd": sum(per_question) * 1000 if per_question else None}
