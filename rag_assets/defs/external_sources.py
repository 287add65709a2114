"""What the graph reads from outside: the corpus folder, the questions, the embedding model,
the chunker settings and the BM25 settings. Each is an external asset whose data version is
its content hash or identity.

A new version is recorded (as a run-less materialisation carrying `dagster/data_version`)
only when it differs from the last one recorded, by `rag-assets run` before it starts and
by a sensor that runs by default. The assets that read a source then show as stale in the
UI ("has a new dependency data version") and the automation sensor re-materialises them.
"""

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    AssetRecordsFilter,
    AssetSpec,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from rag_assets.chunking.strategies import STRATEGIES
from rag_assets.defs.glue import label
from rag_assets.defs.partitions import model_partitions, strategy_partitions
from rag_assets.defs.resources import DatasetResource, EmbedderResource, RetrievalSettings
from rag_assets.ingest import corpus

DATA_VERSION_TAG = "dagster/data_version"  # the tag Dagster reads a data version from (tests/test_layers.py)

corpus_files = AssetSpec(
    "corpus_files",
    group_name="sources",
    description="The documents folder; data version: hash of every file's path, content and extractor.",
)
embedding_model = AssetSpec(
    "embedding_model",
    group_name="sources",
    partitions_def=model_partitions,
    description="Each embedding model; data version: its identity (name + fingerprint of weights and configuration). "
    "Only the models a run names are recorded.",
)
questions_file = AssetSpec(
    "questions_file",
    group_name="sources",
    description="The dataset's questions.jsonl; data version: sha256 of its bytes (`absent` without one).",
)
chunker_settings = AssetSpec(
    "chunker_settings",
    group_name="sources",
    partitions_def=strategy_partitions,
    description="Each strategy's settings; data version: their fingerprint.",
)
bm25_settings = AssetSpec(
    "bm25_settings",
    group_name="sources",
    description="The BM25 variant, k1, b and analyzer every bm25_index is built with; data version: their fingerprint.",
)
SOURCES = [corpus_files, questions_file, embedding_model, chunker_settings, bm25_settings]


def source_versions(
    dataset: DatasetResource, embedder: EmbedderResource, retrieval: RetrievalSettings
) -> list[tuple[AssetKey, str | None, str]]:
    """(source, partition, current data version) for every source of the lab: hashed or read here,
    never asked of a server (an experiment's sources are its own: rag_assets.defs.experiment)."""
    out = [
        (corpus_files.key, None, corpus.folder_hash(dataset.dataset().documents_dir)),
        (questions_file.key, None, _digest_or_absent(dataset.dataset().questions_path)),
        *((embedding_model.key, m, embedder.identity(m)) for m in embedder.names()),
        (bm25_settings.key, None, retrieval.bm25().fingerprint()),
    ]
    return out + [(chunker_settings.key, s.id, s.fingerprint()) for s in STRATEGIES.values()]


def _digest_or_absent(path) -> str:
    return corpus.file_digest(path) if path.is_file() else "absent"


def _recorded(instance: DagsterInstance, key: AssetKey, partition: str | None) -> str | None:
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
    ).records
    return records[0].asset_materialization.tags.get(DATA_VERSION_TAG) if records else None


def changed_source_events(instance: DagsterInstance, versions) -> list[AssetMaterialization]:
    return [
        AssetMaterialization(
            key, partition=partition, tags={DATA_VERSION_TAG: version}, metadata={"data_version": version}
        )
        for key, partition, version in versions
        if _recorded(instance, key, partition) != version
    ]


def with_observations(events: list[AssetMaterialization]) -> list:
    """Dagster 1.13 reads a partitioned external dependency's data version from observations
    when it computes staleness, and from materialisations when it evaluates automation: a
    partitioned source version is reported as both, so the UI and the automation agree. The
    observation goes first: staleness looks for versions recorded after the materialisation
    a child last read."""
    return [AssetObservation(e.asset_key, partition=e.partition, tags=e.tags) for e in events if e.partition] + events


def versions_of(defs: Definitions) -> list[tuple[AssetKey, str | None, str]]:
    """`source_versions` under a Definitions' resources."""
    r = defs.resources
    return source_versions(r["dataset"], r["embedder"], r["retrieval"])


def record(instance: DagsterInstance, versions) -> list[str]:
    """Record the sources whose version changed among `versions`; return their names."""
    events = changed_source_events(instance, versions)
    for event in with_observations(events):
        instance.report_runless_asset_event(event)
    return [label(e.asset_key, e.partition) for e in events]


def record_source_versions(instance: DagsterInstance, defs: Definitions) -> list[str]:
    """Record the lab's sources whose version changed under `defs`' resources; return their names."""
    return record(instance, versions_of(defs))


@sensor(default_status=DefaultSensorStatus.RUNNING, minimum_interval_seconds=60)
def source_versions_sensor(
    context: SensorEvaluationContext,
    dataset: DatasetResource,
    embedder: EmbedderResource,
    retrieval: RetrievalSettings,
):
    """Records a new data version for each source that changed since the last tick."""
    versions = source_versions(dataset, embedder, retrieval)
    return SensorResult(asset_events=with_observations(changed_source_events(context.instance, versions)))
