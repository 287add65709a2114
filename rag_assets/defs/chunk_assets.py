"""chunk_sets, one partition per strategy: thin wrapper over rag_assets.chunking."""

import json

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    DataVersion,
    MetadataValue,
    Output,
    asset,
)

from rag_assets.chunking import diagnostics, strategies
from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import decimals
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.partitions import strategy_partitions
from rag_assets.ingest import corpus

# The chunking code itself; bump it when the algorithms change. A strategy's settings are not
# part of it: they are the per-partition source `chunker_settings`, so changing one strategy
# stales that strategy's chunk set only (a code version would stale every partition).
CHUNKER_CODE_VERSION = "chunker2"


def chunker_stamp(strategy: strategies.Strategy) -> str:
    """The settings and code version that produced a chunk set, as JSON."""
    return json.dumps({"code_version": CHUNKER_CODE_VERSION, **strategy.settings()}, sort_keys=True)


@asset(
    kinds={"parquet"},
    group_name="chunking",
    partitions_def=strategy_partitions,
    code_version=CHUNKER_CODE_VERSION,
    deps=["chunker_settings"],
    metadata={PREVIEW_KEY: ["chunk_id", "document_id", "section", "start", "end", "word_count", "text"]},
    automation_condition=AUTOMATION,
    check_specs=[
        AssetCheckSpec("offsets_slice_back", asset="chunk_sets", blocking=True),
        AssetCheckSpec("chunk_ids_unique", asset="chunk_sets", blocking=True),
        AssetCheckSpec("every_ok_document_chunked", asset="chunk_sets", blocking=True),
    ],
)
def chunk_sets(context: AssetExecutionContext, corpus_snapshot: pd.DataFrame, ground_truth: pd.DataFrame):
    """Chunks of one strategy (docs/design.md §5): `text` is embedded, `content` is quoted back."""
    strategy = strategies.STRATEGIES[context.partition_key]
    chunks = strategies.chunk_corpus(corpus_snapshot, strategy)
    chunks["corpus_hash"] = corpus.corpus_hash(corpus_snapshot)  # provenance travels with the data,
    chunks["chunker"] = chunker_stamp(strategy)  # and says what made it, whatever today's code says
    stats = diagnostics.chunk_set_stats(chunks, ground_truth)
    destroyed = stats.pop("destroyed_question_ids")
    context.log.info(
        f"strategy {strategy.id}: {stats['chunks']} chunks, {stats['answers_destroyed']} answers destroyed"
    )
    bad_offsets = strategies.offset_violations(chunks, corpus_snapshot)
    duplicate_ids = chunks["chunk_id"][chunks["chunk_id"].duplicated()].tolist()
    coverage = corpus.chunk_coverage(corpus_snapshot, chunks)
    yield Output(
        chunks,
        data_version=DataVersion(strategies.chunk_table_hash(chunks)),
        metadata={
            **{k: decimals(v) if isinstance(v, float) else MetadataValue.int(v) for k, v in stats.items()},
            "settings": MetadataValue.json(strategy.settings()),
            "destroyed_question_ids": MetadataValue.json(destroyed),
            "chunks_per_document": MetadataValue.json(coverage["chunks_per_document"]),
        },
    )
    yield AssetCheckResult(
        check_name="offsets_slice_back",
        passed=not bad_offsets,
        metadata={"violations": len(bad_offsets), "examples": MetadataValue.json(bad_offsets[:10])},
    )
    yield AssetCheckResult(
        check_name="chunk_ids_unique",
        passed=not duplicate_ids,
        metadata={"duplicates": MetadataValue.json(duplicate_ids[:10])},
    )
    yield AssetCheckResult(
        check_name="every_ok_document_chunked",
        passed=not coverage["ok_without_chunks"] and not coverage["chunks_of_other_documents"],
        metadata={
            "ok_without_chunks": MetadataValue.json(coverage["ok_without_chunks"]),
            "chunks_of_other_documents": MetadataValue.json(coverage["chunks_of_other_documents"]),
        },
    )
