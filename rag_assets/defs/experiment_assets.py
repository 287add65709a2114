"""experiment_runs, one partition per configuration of the experiment file, and
experiment_leaderboard over them: thin wrappers over rag_assets.experiment.

The file is a plain file the definitions are built from, not a `dg` YAML component: it lives
beside the user's documents (not in a project's defs folder), `rag-assets check` reads it
without importing Dagster, and its configurations become this graph's partitions, so that
changing one arm stales exactly the configurations it is part of (their source version is the
configuration's fingerprint, which hashes the arms' settings and the embedder's identity).
"""

from dagster import (
    AssetExecutionContext,
    AssetSpec,
    Output,
    StaticPartitionsDefinition,
    asset,
    define_asset_job,
)

from rag_assets.defs.glue import LazyTables, all_strategies_lazily, metadata, recorded
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.resources import DataDirResource, GeneratorResource
from rag_assets.experiment import evaluate, leaderboard
from rag_assets.experiment.spec import Experiment
from rag_assets.report import Link

GROUP = "experiment"
CONFIGS_JOB, LEADERBOARD_JOB = "experiment_configs", "experiment"


def experiment_definitions(experiment: Experiment) -> tuple[list, list]:
    """(the source, assets and jobs of one experiment file)."""
    ids = [c.id for c in experiment.configurations]
    partitions = StaticPartitionsDefinition(ids)
    configs = AssetSpec(
        "experiment_configs",
        group_name="sources",
        partitions_def=partitions,
        description=f"Each configuration of {experiment.path.name}; data version: its fingerprint (every arm's "
        "settings and the embedder's identity: weights hash, or an endpoint's probe vectors).",
    )

    @asset(
        kinds={"parquet"},
        group_name=GROUP,
        partitions_def=partitions,
        code_version="experiment1",
        deps=[configs],
        metadata={PREVIEW_KEY: ["config", "query_id", "hit_rank", "ndcg_10", "search_ms", "encode_ms"]},
    )
    def experiment_runs(
        context: AssetExecutionContext,
        data_dir: DataDirResource,
        generator: GeneratorResource,
        corpus_snapshot,
        ground_truth,
    ):
        """One configuration: chunked, embedded through the (model, text) cache, indexed, every
        answerable question retrieved (and reranked); its first-hit ranks and latencies, each row
        carrying the configuration's settings, fingerprint and endpoint costs."""
        config = experiment.configuration(context.partition_key)
        layout = data_dir.layout
        made = evaluate.evaluate_configuration(
            config,
            corpus_snapshot,
            ground_truth,
            layout.embedding_cache,
            layout.endpoint_records,
            generator.get,
            context.log.info,
        )
        yield from recorded(context, made)

    @asset(
        kinds={"parquet"},
        group_name=GROUP,
        code_version="leaderboard1",
        ins={"experiment_runs": all_strategies_lazily()},
        metadata={
            PREVIEW_KEY: ["rank", "config", "score", "rank_low", "rank_high", "p_holm_vs_best", "latency_p95_ms"]
        },
    )
    def experiment_leaderboard(context: AssetExecutionContext, data_dir: DataDirResource, experiment_runs: LazyTables):
        """Every configuration ranked with intervals, paired against the best (Holm), bootstrap rank
        intervals, latency, size and cost, and the frontiers drawn. Read it in the `report` entry
        below ([Show Markdown]); `report_path` is the same report in the data dir's reports/."""
        if callable(experiment_runs):  # one configuration: Dagster hands its one partition, not a mapping
            experiment_runs = {ids[0]: experiment_runs}
        tables = {c: read() for c, read in experiment_runs.items() if c in ids}
        failed = {c: "no materialisation: it failed or has not run (see its runs)" for c in ids if c not in tables}
        failed.update(experiment.skipped)  # combinations the file asks for that cannot run
        report = leaderboard.rank(tables, experiment.rank_by, failed)
        path = report.write(data_dir.layout.reports)
        context.log.info(f"leaderboard written to {path}")
        figures = {**report.figures, "report": report.inline(), "report_path": Link(data_dir.layout.relative(path))}
        return Output(report.table, metadata=metadata(figures))

    jobs = [
        define_asset_job(CONFIGS_JOB, [experiment_runs], description="One configuration of the experiment."),
        define_asset_job(LEADERBOARD_JOB, [experiment_leaderboard], description="The experiment's leaderboard."),
    ]
    return [configs, experiment_runs, experiment_leaderboard], jobs
