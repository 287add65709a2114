"""What `rag-assets ask` answers from: one strategy's materialised index, never rebuilt, and
refused unless Dagster's own lineage says it is fresh (the same verdict the UI shows), its
blocking checks passed, and its files can be read. Nothing here writes: the data dir and the
instance may be read-only."""

from datetime import UTC, datetime

import pandas as pd
from dagster import AssetCheckKey, AssetKey, AssetRecordsFilter, DagsterInstance, Definitions

# Dagster has no public API for the stale verdict the UI shows: these two are pinned by
# tests/test_layers.py and by the freshness tests, against dagster==1.13.27.
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver

from rag_assets.answering.answerer import with_titles
from rag_assets.defs.external_sources import changed_source_events, versions_of
from rag_assets.defs.glue import label
from rag_assets.defs.partitions import model_and_strategy, model_strategy_key
from rag_assets.layout import DataDir
from rag_assets.retrieval.ann import HnswIndex
from rag_assets.retrieval.lexical import IndexUnreadable
from rag_assets.retrieval.search import ChunkIndex

# The sources the served index is built from, and the asset that reads each (questions are not served).
SOURCE_READERS = {
    "corpus_files": "corpus_snapshot",
    "embedding_model": "embeddings",
    "chunker_settings": "chunk_sets",
    "bm25_settings": "bm25_index",
}


class IndexNotReady(RuntimeError):
    """The index is missing, stale, failed a check or cannot be read: answering would mislead."""


def stale_resolver(defs: Definitions, instance: DagsterInstance) -> CachingStaleStatusResolver:
    graph = defs.resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=datetime.now(UTC), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    return CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)


def served_model(defs: Definitions) -> str:
    """The embedding model answers are served from: the first the definitions name."""
    return defs.resources["embedder"].primary


def served(defs: Definitions, strategy: str) -> list[tuple[AssetKey, str | None]]:
    """The partitions a strategy's served index is made of (the served model's embeddings)."""
    return [
        (AssetKey("corpus_snapshot"), None),
        (AssetKey("chunk_sets"), strategy),
        (AssetKey("embeddings"), model_strategy_key(served_model(defs), strategy)),
        (AssetKey("bm25_index"), strategy),
    ]


def freshness_problems(defs: Definitions, instance: DagsterInstance, strategy: str) -> list[str]:
    """Why the strategy's index cannot be served, one phrase each (empty: it can).

    Source versions (corpus folder, embedding model, chunker settings) are compared with the
    ones last recorded without recording anything, so an edit made since then is seen now."""
    problems, model = [], served_model(defs)
    readers = dict(served(defs, strategy)[1:])
    for event in changed_source_events(instance, versions_of(defs.resources)):
        source = event.asset_key.to_user_string()
        if source in SOURCE_READERS and event.partition in (None, strategy, model):
            reader = AssetKey(SOURCE_READERS[source])
            problems.append(
                f"{label(reader, readers.get(reader))} is stale: {label(event.asset_key, event.partition)} "
                "changed since the last run"
            )
    resolver = stale_resolver(defs, instance)
    for key, partition in served(defs, strategy):
        status = resolver.get_status(key, partition).value
        if status == "MISSING":
            problems.append(f"{label(key, partition)} has never been materialised")
        elif status == "STALE":
            causes = sorted(
                {
                    f"{c.reason}"
                    + (f" ({label(c.dependency.asset_key, c.dependency.partition_key)})" if c.dependency else "")
                    for c in resolver.get_stale_causes(key, partition)
                }
            )
            problems.append(f"{label(key, partition)} is stale: {'; '.join(causes)}")
    return problems


def _evaluation(instance: DagsterInstance, check: AssetCheckKey, materialization) -> bool | None:
    """Whether `check` passed on that materialisation (None: it never ran on it). Dagster 1.13
    records a partitioned asset's check without its partition, so each evaluation is matched
    to the materialisation it evaluated; newest first, never further back than it."""
    cursor = None
    while True:
        page = instance.event_log_storage.get_asset_check_execution_history(check, limit=50, cursor=cursor)
        for record in page:
            evaluation = record.event.dagster_event.event_specific_data if record.event else None
            target = getattr(evaluation, "target_materialization_data", None)
            if target and target.storage_id == materialization.storage_id:
                return evaluation.passed
            if record.create_timestamp < materialization.timestamp - 60:  # planned before it was made
                return None
        if len(page) < 50:
            return None
        cursor = page[-1].id


def failed_checks(defs: Definitions, instance: DagsterInstance, strategy: str) -> list[str]:
    """The served assets' blocking checks that failed on, or never ran on, their latest materialisation."""
    graph = defs.resolve_asset_graph()
    out = []
    for key, partition in served(defs, strategy):
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
        ).records
        for check in sorted(
            (c for c in graph.asset_check_keys if c.asset_key == key and graph.get_check_spec(c).blocking),
            key=lambda c: c.name,
        ):
            passed = _evaluation(instance, check, records[0]) if records else True
            if passed is False:
                out.append(f"{label(key, partition)} failed its check {check.name}")
            elif passed is None:
                out.append(f"{label(key, partition)} has no result of its check {check.name}")
    return out


def _load(layout: DataDir, name: str, partition: str | None = None) -> pd.DataFrame:
    try:
        return layout.read_table(name, partition)
    except Exception as exc:  # a deleted, truncated or foreign file: say which asset, never a traceback
        raise IndexNotReady(
            f"{label(AssetKey(name), partition)} cannot be read ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}): materialise it again"
        ) from None


def serving_strategy_of(defs: Definitions, instance: DagsterInstance) -> str:
    """The strategy `ask` answers from when none is named: the rule the refusal sweep and
    generation_eval use (`RetrievalSettings.serving`), over the strategies whose chunk set and
    embeddings of the served model have been materialised; the configured one when none has
    (refused later, by name)."""
    model = served_model(defs)
    partitions = map(model_and_strategy, instance.get_materialized_partitions(AssetKey("embeddings")))
    embedded = {s for m, s in partitions if m == model}
    present = set(instance.get_materialized_partitions(AssetKey("chunk_sets"))) & embedded
    settings = defs.resources["retrieval"]
    return settings.serving(present) if present else settings.serving_strategy


def load_index(
    defs: Definitions, instance: DagsterInstance, strategy: str, model_identity: str
) -> tuple[ChunkIndex, pd.DataFrame]:
    """(the strategy's index, its chunks with document titles), or IndexNotReady saying why not."""
    problems = freshness_problems(defs, instance, strategy) + failed_checks(defs, instance, strategy)
    if problems:
        model = served_model(defs)
        others = sorted(
            m
            for m, s in map(model_and_strategy, instance.get_materialized_partitions(AssetKey("embeddings")))
            if s == strategy and m != model
        )
        hint = f" (or answer with a model materialised for it: --embedder {' | '.join(others)})" if others else ""
        raise IndexNotReady(
            f"the index of strategy {strategy} cannot be served: {'; '.join(problems)}; "
            f"materialise it again (`rag-assets run --models {model}`, or from the UI) before asking{hint}"
        )
    layout = defs.resources["data_dir"].layout
    chunks, vectors, snapshot = (
        _load(layout, "chunk_sets", strategy),
        _load(layout, "embeddings", model_strategy_key(served_model(defs), strategy)),
        _load(layout, "corpus_snapshot"),
    )
    try:
        index = ChunkIndex.open(layout, strategy, chunks, vectors, model_identity, snapshot)
    except IndexUnreadable as exc:
        raise IndexNotReady(f"bm25_index[{strategy}] cannot be read ({exc}): materialise it again") from None
    except ValueError as exc:  # IdentityMismatch and misaligned vectors included
        raise IndexNotReady(str(exc)) from None
    index.ann, index.dense_search = approximate_index(defs, instance, strategy, model_identity, len(chunks))
    return index, with_titles(chunks, snapshot)


def approximate_index(
    defs: Definitions, instance: DagsterInstance, strategy: str, model_identity: str, rows: int
) -> tuple[HnswIndex | None, str]:
    """(the strategy's HNSW graph, or None; how dense search runs, in words). The graph is used
    from `ann_min_chunks` chunks on, when it is fresh and was built from these very vectors;
    otherwise dense search is exact, and the words say why."""
    threshold = defs.resources["retrieval"].ann_min_chunks
    if rows < threshold:
        return None, f"exact ({rows} chunks, under ann_min_chunks = {threshold})"
    key, model = AssetKey("hnsw_index"), served_model(defs)
    partition = model_strategy_key(model, strategy)
    status = stale_resolver(defs, instance).get_status(key, partition).value
    if status != "FRESH":
        return None, f"exact: {label(key, partition)} is {status.lower()}"
    layout = defs.resources["data_dir"].layout
    try:
        row = layout.read_table("hnsw_index", partition).iloc[0]
        if not row["built"] or row["model_id"] != model_identity or row["rows"] != rows:
            return None, f"exact: {label(key, partition)} was not built for these {rows} vectors of {model_identity}"
        graph = HnswIndex.load(layout.hnsw(model, strategy))
    except Exception as exc:  # a damaged file: exact search still answers
        return None, f"exact: {label(key, partition)} cannot be read ({type(exc).__name__})"
    return graph, (
        f"hnsw ({label(key, partition)}: recall@10 {row['recall_at_10']:.3f}, "
        f"recall@100 {row['recall_at_100']:.3f} against exact search)"
    )
