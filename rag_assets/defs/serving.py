"""What `rag-assets ask` answers from: one strategy's materialised index, never rebuilt, and
refused unless Dagster's own lineage says it is fresh (the same verdict the UI shows)."""

import pandas as pd
from dagster import AssetKey, DagsterInstance, Definitions
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver
from dagster._time import get_current_datetime

from rag_assets.defs.generation_assets import titled
from rag_assets.defs.index_assets import chunk_index
from rag_assets.defs.sources import record_source_versions
from rag_assets.retrieval import ChunkIndex


class IndexNotReady(RuntimeError):
    """The index is missing, stale or does not line up: answering from it would mislead."""


def stale_resolver(defs: Definitions, instance: DagsterInstance) -> CachingStaleStatusResolver:
    graph = defs.resolve_asset_graph()
    view = AssetGraphView(temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
                          instance=instance, asset_graph=graph)
    return CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)


def _name(key: AssetKey, partition: str | None) -> str:
    return key.to_user_string() + (f"[{partition}]" if partition else "")


def freshness_problems(defs: Definitions, instance: DagsterInstance, strategy: str) -> list[str]:
    """Why the strategy's index cannot be served, one line each (empty: it can).

    Source versions (corpus folder, embedding model, chunker settings) are recorded first,
    as the sensor would, so an edit made since the last run is seen now."""
    record_source_versions(instance, defs.resources["dataset"], defs.resources["embedder"])
    resolver = stale_resolver(defs, instance)
    problems = []
    for key, partition in ((AssetKey("corpus_snapshot"), None), (AssetKey("chunk_sets"), strategy),
                           (AssetKey("embeddings"), strategy), (AssetKey("bm25_index"), strategy)):
        status = resolver.get_status(key, partition).value
        if status == "MISSING":
            problems.append(f"{_name(key, partition)} has never been materialised")
        elif status == "STALE":
            causes = sorted({f"{c.reason}" + (f" ({_name(c.dependency.asset_key, c.dependency.partition_key)})"
                                               if c.dependency else "") for c in resolver.get_stale_causes(key, partition)})
            problems.append(f"{_name(key, partition)} is stale: {'; '.join(causes)}")
    return problems


def load_index(defs: Definitions, instance: DagsterInstance, strategy: str, model_identity: str) -> tuple[ChunkIndex, pd.DataFrame]:
    """(the strategy's index, its chunks with document titles), or IndexNotReady saying why not."""
    problems = freshness_problems(defs, instance, strategy)
    if problems:
        raise IndexNotReady(f"the index of strategy {strategy} cannot be served:\n  - " + "\n  - ".join(problems)
                            + "\nmaterialise it again (`rag-assets run`, or from the UI) before asking")
    load = lambda name, partition=None: defs.load_asset_value(AssetKey(name), partition_key=partition, instance=instance)  # noqa: E731
    chunks, vectors, snapshot = load("chunk_sets", strategy), load("embeddings", strategy), load("corpus_snapshot")
    try:
        index = chunk_index(defs.resources["data_dir"], strategy, chunks, vectors, model_identity, snapshot)
    except ValueError as exc:  # IdentityMismatch included
        raise IndexNotReady(str(exc)) from None
    return index, titled(chunks, snapshot)
