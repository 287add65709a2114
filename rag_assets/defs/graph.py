"""The whole graph: every asset, check, job, sensor and schedule, with the resources made from one `Settings`."""

from dagster import AssetSelection, Definitions, define_asset_job

from rag_assets.defs.automation import automation_sensor
from rag_assets.defs.chunk_assets import chunk_sets
from rag_assets.defs.corpus_assets import corpus_snapshot, ground_truth
from rag_assets.defs.drafting_assets import drafted_questions
from rag_assets.defs.evaluation_assets import (
    evaluation_tables,
    query_hits,
    refusal_sweep,
    retrieval_runs,
    significance_report,
)
from rag_assets.defs.external_sources import SOURCES, source_versions_sensor
from rag_assets.defs.generation_assets import generation_eval
from rag_assets.defs.index_assets import bm25_index, embeddings, hnsw_index
from rag_assets.defs.nightly import (
    evaluation_history,
    nightly_evaluation_job,
    nightly_evaluation_schedule,
    regression_report,
)
from rag_assets.defs.partitions import model_strategy_partitions
from rag_assets.defs.resources import from_settings
from rag_assets.settings import Settings

ASSETS = [
    corpus_snapshot,
    drafted_questions,
    ground_truth,
    chunk_sets,
    embeddings,
    bm25_index,
    hnsw_index,
    retrieval_runs,
    query_hits,
    evaluation_tables,
    significance_report,
    refusal_sweep,
    generation_eval,
    evaluation_history,
    regression_report,
]


PARTITIONED = AssetSelection.assets(*[a for a in ASSETS if a.partitions_def])
BY_MODEL = AssetSelection.assets(*[a for a in ASSETS if a.partitions_def == model_strategy_partitions])
# The jobs `rag-assets run` launches, one per stage of its plan, so that its runs carry a job name.
RUN_JOBS = [
    define_asset_job(
        "corpus",
        AssetSelection.assets(*ASSETS) - PARTITIONED.downstream(),
        description="The unpartitioned roots: corpus snapshot, drafted questions and ground truth.",
    ),
    define_asset_job(
        "strategy_indexes",
        PARTITIONED - BY_MODEL,
        description="One strategy's chunk set and BM25 index (one run per strategy).",
    ),
    define_asset_job(
        "model_indexes",
        BY_MODEL,
        description="One (model, strategy) partition's embeddings and HNSW graph (one run per partition).",
    ),
    define_asset_job(
        "evaluation",
        PARTITIONED.downstream() - PARTITIONED,
        description="Everything downstream of the strategies: runs, tables, reports, history.",
    ),
]


def build_definitions(settings: Settings, experiment=None) -> Definitions:
    """The whole graph over one data dir and dataset, with its resources made from `settings`
    (checked when they were made). Nothing is built on import: a command calls this once it has
    its settings, and `definitions.py` calls it for the UI. With an experiment file in the
    settings, the experiment domain too: `experiment` as the command read it, else read here
    (ExperimentError when the file cannot run)."""
    lab = Definitions(
        assets=[*SOURCES, *ASSETS],
        sensors=[source_versions_sensor, automation_sensor],
        jobs=[nightly_evaluation_job, *RUN_JOBS],
        schedules=[nightly_evaluation_schedule],
        resources=from_settings(settings),
    )
    if not settings.experiment:
        return lab
    from rag_assets.defs.experiment.definitions import experiment_definitions
    from rag_assets.experiment import spec

    return Definitions.merge(lab, experiment_definitions(experiment or spec.load(settings.experiment)))
