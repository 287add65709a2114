"""embeddings and hnsw_index, one partition per (model, strategy), and bm25_index, one per
strategy: thin wrappers over the core."""

import dataclasses
import hashlib
import time

import pandas as pd
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)

from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import decimals, label, metadata, recorded
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.partitions import model_and_strategy, model_strategy_partitions, strategy_partitions
from rag_assets.defs.resources import ComputeResource, DataDirResource, EmbedderResource, RetrievalSettings
from rag_assets.progress_bars import Bars
from rag_assets.report import Link
from rag_assets.retrieval import ann
from rag_assets.retrieval.embed_chunks import embed_chunks
from rag_assets.retrieval.embedding import (
    PIPELINE_VERSION,
    require_identity,
    vectors_of,
)
from rag_assets.retrieval.lexical import BM25Index, describe, unstemmed


@asset(
    kinds={"parquet"},
    group_name="indexing",
    partitions_def=model_strategy_partitions,
    code_version=PIPELINE_VERSION,
    deps=["embedding_model"],
    automation_condition=AUTOMATION,
    check_specs=[
        AssetCheckSpec("unit_norm_and_distance_identity", asset="embeddings", blocking=True),
        AssetCheckSpec(
            "single_model_identity",
            asset="embeddings",
            blocking=True,
            description="every row is stamped with the configured model, and a sample of vectors, drawn "
            "anew by every run, equals that model's fresh encoding of the chunk texts",
        ),
    ],
)
def embeddings(
    context: AssetExecutionContext,
    embedder: EmbedderResource,
    compute: ComputeResource,
    data_dir: DataDirResource,
    chunk_sets: pd.DataFrame,
):
    """L2-normalised vectors of each chunk's embedded `text` by one model, stamped with its identity.

    Only texts the cache (model identity x text hash) lacks are encoded: here, or in shards
    by Ray workers (the `compute` resource), the same vectors either way."""
    model = embedder.get(model_and_strategy(context.partition_key)[0])
    seed = int.from_bytes(hashlib.sha256(f"{context.run.run_id}/{context.partition_key}".encode()).digest()[:8], "big")
    engine = compute.runner(context.log.info)
    with Bars(label("embeddings", context.partition_key), "chunk") as progress:
        done = embed_chunks(chunk_sets, model, data_dir.layout.embedding_cache, engine, progress, seed)
    if embedder.chosen_because:
        done = dataclasses.replace(done, figures={**done.figures, "model_choice": embedder.chosen_because})
    yield from recorded(context, done)


@asset(
    kinds={"bm25s"},
    group_name="indexing",
    partitions_def=strategy_partitions,
    code_version="bm25-1",
    deps=["bm25_settings"],
    automation_condition=AUTOMATION,
)
def bm25_index(
    context: AssetExecutionContext, data_dir: DataDirResource, retrieval: RetrievalSettings, chunk_sets: pd.DataFrame
) -> MaterializeResult:
    """A bm25s index over each chunk's embedded `text`, saved beside the Parquet assets."""
    settings = retrieval.bm25()
    t0 = time.perf_counter()
    index = BM25Index.build(chunk_sets["text"].tolist(), settings, chunk_sets["language"].tolist())
    seconds = time.perf_counter() - t0
    analyses = {describe(a): n for a, n in index.analyses.items()}
    for analysis in filter(unstemmed, index.analyses):
        context.log.warning(f"{describe(analysis)}: its chunks are matched word for word, without stemming")
    path = data_dir.layout.bm25(context.partition_key)
    index.save(path)
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(data_dir.layout.relative(path)),
            "settings": MetadataValue.json(vars(settings)),
            "documents": index.n_docs,
            "vocabulary": index.vocabulary_size,
            "analyses": MetadataValue.json(analyses),  # what made each language's terms, and its chunks
            "build_seconds": decimals(seconds),
        }
    )


ANN_QUERIES = 1000  # at most this many of the partition's questions measure the graph's recall


@asset(
    kinds={"faiss"},
    group_name="indexing",
    partitions_def=model_strategy_partitions,
    code_version="hnsw1",
    automation_condition=AUTOMATION,
    metadata={PREVIEW_KEY: ["model", "strategy", "built", "rows", "recall_at_10", "recall_at_100", "build_seconds"]},
)
def hnsw_index(
    context: AssetExecutionContext,
    embedder: EmbedderResource,
    retrieval: RetrievalSettings,
    data_dir: DataDirResource,
    embeddings: pd.DataFrame,
    ground_truth: pd.DataFrame,
):
    """An HNSW graph (faiss) over the strategy's vectors, which `ask` searches instead of every
    vector once the chunk set reaches `retrieval.ann_min_chunks`; below that nothing is built
    (exact search is fast enough). Its recall@10 and @100 against exact search are measured on
    the data set's own questions. Evaluation assets never use it: every figure stays exact."""
    name, strategy = model_and_strategy(context.partition_key)
    model = embedder.get(name)
    path = data_dir.layout.hnsw(name, strategy)
    row = {"model": name, "strategy": strategy, "rows": len(embeddings), "model_id": model.identity, "built": False}
    if not len(embeddings) or len(embeddings) < retrieval.ann_min_chunks:
        path.unlink(missing_ok=True)
        why = f"{len(embeddings)} chunks, under ann_min_chunks = {retrieval.ann_min_chunks}: ask searches exactly"
        return Output(pd.DataFrame([row]), metadata={"built": False, "reason": why})
    require_identity(embeddings["model_id"], model.identity, label("embeddings", context.partition_key))
    queries = ground_truth.drop_duplicates("query")
    queries = queries.sample(n=min(ANN_QUERIES, len(queries)), random_state=0)["query"].tolist()
    encode = lambda texts: model.encode(texts, query=True)  # noqa: E731
    built, figures = ann.build_measured(vectors_of(embeddings), encode, queries, path)
    row.update(built)
    figures["file"] = Link(data_dir.layout.relative(path))
    return Output(pd.DataFrame([row]), metadata=metadata(figures))
