"""embeddings and hnsw_index, one partition per (model, strategy), and bm25_index, one per
strategy: thin wrappers over the core."""

import hashlib
import time

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)
from tqdm import tqdm

from rag_assets.chunking import diagnostics
from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import decimals, label, significant
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.partitions import model_and_strategy, model_strategy_partitions, strategy_partitions
from rag_assets.defs.resources import ComputeResource, DataDirResource, EmbedderResource, RetrievalSettings
from rag_assets.retrieval import ann, dense
from rag_assets.retrieval.ann import HnswIndex, recall_against_exact
from rag_assets.retrieval.embedding import (
    PIPELINE_VERSION,
    embedding_frame,
    reencoding_error,
    require_identity,
    vectors_of,
)
from rag_assets.retrieval.embedding_cache import EmbeddingCache
from rag_assets.retrieval.lexical import BM25Index, describe, unstemmed

UNIT_TOLERANCE = 1e-5


IDENTITY_SAMPLE = 32  # vectors re-encoded by single_model_identity, a new sample every run
SAME_VECTOR = 1e-4  # largest 1 - cos between a stored vector and its re-encoding


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
    texts = chunk_sets["text"].tolist()
    cache = EmbeddingCache(data_dir.layout.embedding_cache, model)
    engine = compute.runner(context.log.info)
    with tqdm(desc=label("embeddings", context.partition_key), unit="chunk", leave=False) as bar:

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        vectors, stats = cache.encode(texts, progress, engine)
    context.log.info(f"{stats.encoded} texts encoded, {stats.hits} from the cache ({stats.hit_rate:.0%})")
    spread = {"engine": "ray" if engine else "local"}
    if engine and engine.stats:  # what the Ray pool did (nothing when every text was cached)
        spread |= {
            **{k: MetadataValue.int(engine.stats[k]) for k in ("workers", "shards", "restarts")},
            "retried_shards_already_written": MetadataValue.int(engine.stats["retried_shards_already_written"]),
            "chunks_per_second_per_worker": MetadataValue.json(
                {pid: round(rate, 1) for pid, rate in engine.stats["chunks_per_second_per_worker"].items()}
            ),
        }
    tokens = diagnostics.token_stats(chunk_sets, model)
    frame = embedding_frame(chunk_sets, vectors, model.identity)
    norm_err = dense.norm_error(vectors)
    identity_err = dense.distance_identity_error(vectors) if len(vectors) else 0.0
    yield Output(
        frame,
        metadata={
            "model_id": model.identity,
            "dim": model.dim,
            "chunks": len(texts),
            "index_mb": decimals(vectors.nbytes / 2**20),  # the vectors alone, float32
            "encoded": stats.encoded,
            "cache_hits": stats.hits,
            "cache_hit_rate": decimals(stats.hit_rate),
            "chunks_per_second": decimals(stats.encoded / stats.seconds if stats.encoded else 0.0),
            **spread,
            **{k: decimals(v) if isinstance(v, float) else MetadataValue.int(v) for k, v in tokens.items()},
        },
    )
    yield AssetCheckResult(
        check_name="unit_norm_and_distance_identity",
        passed=norm_err < UNIT_TOLERANCE and identity_err < UNIT_TOLERANCE,
        metadata={
            "max_norm_error": significant(norm_err),
            "max_identity_error_200x200": significant(identity_err),
        },
    )
    identities = sorted(frame["model_id"].unique())
    seed = int.from_bytes(hashlib.sha256(f"{context.run.run_id}/{context.partition_key}".encode()).digest()[:8], "big")
    drift, sampled = reencoding_error(model, texts, vectors, IDENTITY_SAMPLE, seed)
    yield AssetCheckResult(
        check_name="single_model_identity",
        passed=set(identities) <= {model.identity} and drift <= SAME_VECTOR,
        metadata={
            "identities": MetadataValue.json(identities),
            "configured": model.identity,
            "reencoded_sample": len(sampled),
            "sample_seed": str(seed),  # drawn anew by every run (its id and the partition)
            "sampled_rows": MetadataValue.json(sampled),
            "max_reencoding_distance": significant(drift),
            "tolerance": significant(SAME_VECTOR),
        },
    )


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
    vectors = vectors_of(embeddings)
    t0 = time.perf_counter()
    graph = HnswIndex.build(vectors)
    build_seconds = time.perf_counter() - t0
    graph.save(path)
    index_bytes = path.stat().st_size
    queries = ground_truth.drop_duplicates("query")
    queries = queries.sample(n=min(ANN_QUERIES, len(queries)), random_state=0)["query"].tolist()
    recall, ms = ({10: None, 100: None}, 0)
    if queries:
        recall, ms = recall_against_exact(graph, vectors, model.encode(queries, query=True))
    row.update(
        built=True,
        m=ann.M,
        ef_construction=ann.EF_CONSTRUCTION,
        ef_search=ann.EF_SEARCH,
        recall_at_10=recall[10],
        recall_at_100=recall[100],
        n_queries=len(queries),
        build_seconds=build_seconds,
        index_bytes=index_bytes,
        ms_per_query=ms,
    )
    return Output(
        pd.DataFrame([row]),
        metadata={
            "built": True,
            "file": MetadataValue.path(data_dir.layout.relative(path)),
            "recall_at_10": decimals(recall[10]) if queries else None,
            "recall_at_100": decimals(recall[100]) if queries else None,
            "recall_queries": len(queries),
            "build_seconds": decimals(build_seconds),
            "index_mb": decimals(index_bytes / 2**20),
            "ms_per_query": decimals(ms),
            "parameters": MetadataValue.json(
                {"M": ann.M, "efConstruction": ann.EF_CONSTRUCTION, "efSearch": ann.EF_SEARCH}
            ),
        },
    )
