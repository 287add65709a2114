"""chunk_sets, one partition per strategy: thin wrapper over rag_assets.chunking."""

import json

import pandas as pd
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    asset,
)

from rag_assets.chunking import diagnostics, strategies
from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import recorded
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.partitions import strategy_partitions

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
    yield from recorded(
        context, diagnostics.chunk_set(corpus_snapshot, ground_truth, strategy, chunker_stamp(strategy))
    )
