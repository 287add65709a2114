"""Every query through every retriever of every strategy: what `retrieval_runs` materialises.
The Dagster asset only hands in its inputs and records the result's metadata."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from rag_assets import stats
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.ground_truth import Sample
from rag_assets.report import Outcome
from rag_assets.retrieval.rerank import LLMRelevanceReranker, Reranker, find_cross_encoder
from rag_assets.retrieval.search import DOCUMENT_DEPTH, ChunkIndex, run_queries, run_queries_on


def encode_queries(model, queries: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(query vectors, milliseconds per query): each encoded alone, as `ask` encodes one."""
    vectors, encode_ms = [], []
    for q in queries:
        t0 = time.perf_counter()
        vectors.append(model.encode([q], query=True)[0])
        encode_ms.append((time.perf_counter() - t0) * 1000)
    return (np.stack(vectors) if vectors else np.zeros((0, model.dim), np.float32)), np.array(encode_ms)


@dataclass
class Rerankers:
    """The rerankers a run uses, and in words why each is on or off."""

    cross_encoder: Reranker | None
    cross_encoder_status: str
    llm: Reranker | None
    llm_status: str
    llm_queries: set[str]  # the answerable queries the LLM reranker scores (on the serving strategy only)

    @classmethod
    def configure(cls, cross_encoder: str, llm_questions: int, llm_depth: int, lm: Callable, truth, serving: str):
        """`lm()` gives the generator, loaded only when the LLM reranker has questions to score."""
        reranker, status = find_cross_encoder(cross_encoder or None)
        sample = gt.sample(truth[truth["kind"] == "answerable"], Sample(llm_questions, 0, 0))
        llm, llm_status = None, "off (llm_rerank_questions = 0)"
        if len(sample):
            try:
                llm = LLMRelevanceReranker(lm(), llm_depth)  # reads the weights' hash
                llm_status = (
                    f"{llm.model}, top {llm.depth} of hybrid, strategy {serving}, {len(sample)} answerable queries"
                )
            except FileNotFoundError as exc:
                llm_status = f"off: {exc}"
        return cls(reranker, status, llm, llm_status, set(sample["query_id"]))

    def models(self) -> dict[str, str]:
        return {r.name: r.model for r in (self.cross_encoder, self.llm) if r is not None}


def retrieve_all(
    layout,
    strategies: list[str],
    chunk_sets: Mapping[str, Callable[[], pd.DataFrame]],
    embeddings: Mapping[str, Callable[[], pd.DataFrame]],
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    model,
    rerankers: Rerankers,
    serving: str,
    engine=None,
    log: Callable[[str], None] = print,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(the runs, each query's encoding milliseconds). Strategies are read and searched one at a
    time (`chunk_sets[s]()` loads one); with an engine, a strategy's queries are searched in
    batches there (the same rows), unless a reranker runs on it. Document-level questions are
    judged on 100 distinct documents, however many chunks that takes. Each row carries its
    provenance: the corpus and chunker its chunk set recorded, the settings its BM25 index was
    built with, the ground truth and the model."""
    queries = truth[["query_id", "query"]]
    query_vectors, encode_ms = encode_queries(model, queries["query"])
    documents = DOCUMENT_DEPTH if truth["relevant"].notna().any() else None
    frames, stamps = [], {}
    for strategy in strategies:
        chunks = chunk_sets[strategy]()
        stamps[strategy] = {s: chunks[s].iloc[0] if len(chunks) else None for s in ("corpus_hash", "chunker")}
        index = ChunkIndex.open(layout, strategy, chunks, embeddings[strategy](), model.identity, snapshot)
        stamps[strategy]["bm25"] = json.dumps(asdict(index.bm25.settings), sort_keys=True)
        del chunks
        chosen = [r for r in (rerankers.cross_encoder, rerankers.llm if strategy == serving else None) if r]
        if engine and not chosen:  # a reranker's model stays in this process: so does its strategy
            frames.append(run_queries_on(engine, index, queries, query_vectors, encode_ms, documents))
        else:
            limits = {LLMRelevanceReranker.name: rerankers.llm_queries}
            frames.append(
                run_queries(
                    index, queries, query_vectors, encode_ms, chosen, rerank_queries=limits, documents=documents
                )
            )
        log(f"strategy {strategy}: {len(queries)} queries retrieved")
    runs = pd.concat(frames, ignore_index=True)
    for stamp in ("corpus_hash", "chunker", "bm25"):
        runs[stamp] = runs["strategy"].map({s: recorded[stamp] for s, recorded in stamps.items()})
    runs["ground_truth_hash"] = gt.ground_truth_hash(truth)
    runs["question_origin"] = gt.origin_label(truth)
    runs["model_id"] = model.identity
    runs["reranker_model"] = runs["retriever"].map(rerankers.models())
    return runs, encode_ms


LEXICAL = "bm25"  # the one retriever no embedding model takes part in


def retriever_name(retriever: str, model: str, primary: str) -> str:
    """What a run of `model` is called: the serving (first) model's retrievers keep their names
    (dense, hybrid, rerank), every other model's carry it (`dense@me5-small`), so a table keyed by
    (strategy, retriever) holds every model side by side."""
    return retriever if model == primary or retriever == LEXICAL else f"{retriever}@{model}"


def retrieve_models(
    layout,
    strategies: list[str],
    chunk_sets: Mapping[str, Callable[[], pd.DataFrame]],
    embeddings: Mapping[tuple[str, str], Callable[[], pd.DataFrame]],
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    models: dict,
    rerankers: Rerankers,
    serving: str,
    engine=None,
    log: Callable[[str], None] = print,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """`retrieve_all` for each model of `models` (name -> Embedder, the first serves), the runs of
    all of them in one table with a `model` column: BM25 runs once (under the first model), and
    the rerankers rerank the first model's hybrid list only. `embeddings[(model, strategy)]` loads
    one table. Returns (runs, each model's query encoding milliseconds)."""
    primary, frames, encode_ms = next(iter(models)), [], {}
    for name, model in models.items():
        log(f"model {name}: {model.identity}")
        tables = {s: embeddings[(name, s)] for s in strategies}
        chosen = rerankers if name == primary else Rerankers(None, "", None, "", set())
        runs, encode_ms[name] = retrieve_all(
            layout, strategies, chunk_sets, tables, snapshot, truth, model, chosen, serving, engine, log
        )
        if name != primary:
            runs = runs[runs["retriever"] != LEXICAL]
        runs["retriever"] = [retriever_name(r, name, primary) for r in runs["retriever"]]
        runs["model"] = name
        frames.append(runs)
    runs = pd.concat(frames, ignore_index=True)
    runs.loc[runs["retriever"] == LEXICAL, ["model", "model_id"]] = None  # no model made these
    return runs, encode_ms


def evaluate(
    layout,
    chunk_sets: Mapping[str, Callable[[], pd.DataFrame]],
    embeddings: Mapping[tuple[str, str], Callable[[], pd.DataFrame]],
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    models: dict,
    serving_rule: Callable,
    rerank: tuple[str, int, int],
    lm: Callable,
    engine=None,
    log: Callable[[str], None] = print,
) -> Outcome:
    """`retrieve_models` over the strategies every model embedded (`embeddings[(model, strategy)]`
    loads one table), the serving strategy chosen among them by `serving_rule`, the rerankers
    configured from `rerank` (cross-encoder, LLM reranker's questions and depth; `lm()` loads the
    generator only when it has questions), with the runs' figures."""
    names = list(models)
    strategies = sorted(s for s in chunk_sets if all((m, s) in embeddings for m in names))
    skipped = sorted(set(chunk_sets) - set(strategies))
    warnings = (
        [f"strategies {', '.join(skipped)} lack the embeddings of a model of {', '.join(names)}"] if skipped else []
    )
    serving = serving_rule(strategies)
    rerankers = Rerankers.configure(*rerank, lm, truth, serving)
    note = f"reranker: {rerankers.cross_encoder_status}; rerank-llm: {rerankers.llm_status}"
    log(note)
    runs, encode_ms = retrieve_models(
        layout, strategies, chunk_sets, embeddings, snapshot, truth, models, rerankers, serving, engine, log
    )
    latency = {
        r: {"stage_ms": stats.percentiles(g["stage_ms"]), "total_ms": stats.percentiles(g["total_ms"])}
        for r, g in runs.groupby("retriever")
    }
    figures = {
        "models": {m: model.identity for m, model in models.items()},
        "strategies": sorted(runs["strategy"].unique()),
        "retrievers": sorted(runs["retriever"].unique()),
        "rerank": rerankers.cross_encoder_status,
        "rerank_llm": rerankers.llm_status,
        "query_encode_ms": {m: stats.percentiles(ms) for m, ms in encode_ms.items()},
        "engine": "ray" if engine else "local",
        "latency_ms": latency,
    }
    return Outcome(runs, figures, warnings=warnings)
