"""experiment_runs, one partition per configuration of the experiment file, and
experiment_leaderboard over them: thin wrappers over rag_assets.experiment.

The file is a plain file the definitions are built from, not a `dg` YAML component: it lives
beside the user's documents (not in a project's defs folder), `rag-assets check` reads it
without importing Dagster, and its configurations become this graph's partitions, so that
changing one arm stales exactly the configurations it is part of (their source version is the
configuration's fingerprint, which hashes the arms' settings and their models' identities).
"""

from dagster import AssetExecutionContext, Output, asset

from rag_assets.defs.experiment import sources
from rag_assets.defs.glue import LazyTables, all_strategies_lazily, metadata, recorded
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.resources import DataDirResource, GeneratorResource
from rag_assets.experiment import leaderboard, measure
from rag_assets.experiment.spec import Experiment
from rag_assets.progress_bars import Bars
from rag_assets.report import Link


def assets_of(experiment: Experiment) -> list:
    ids = [c.id for c in experiment.configurations]
    partitions = sources.partitions_of(experiment)

    @asset(
        kinds={"parquet"},
        group_name=sources.GROUP,
        partitions_def=partitions,
        code_version="experiment2",
        deps=[sources.SOURCE],
        metadata={PREVIEW_KEY: ["config", "query_id", "hit_rank", "ndcg_10", "budget_hit", "latency_ms"]},
    )
    def experiment_runs(
        context: AssetExecutionContext,
        data_dir: DataDirResource,
        generator: GeneratorResource,
        corpus_snapshot,
        ground_truth,
    ):
        """One configuration: chunked, embedded through the (model, text) cache, indexed and every
        answerable question ranked by the lab's engine (reranked through the score cache); its
        first-hit ranks, hits within the token budget, returned passages and latencies, each row
        carrying the configuration's settings, fingerprint and endpoint costs."""
        config = experiment.configuration(context.partition_key)
        with Bars(config.id, "item", log=None) as bars:
            made = measure.measure(
                config,
                corpus_snapshot,
                ground_truth,
                data_dir.layout,
                experiment.token_budget,
                generator.get,
                context.log.info,
                bars.stage,
            )
        yield from recorded(context, made)

    @asset(
        kinds={"parquet"},
        group_name=sources.GROUP,
        code_version="leaderboard2",
        ins={"experiment_runs": all_strategies_lazily()},
        metadata={
            PREVIEW_KEY: ["rank", "config", "score", "rank_low", "rank_high", "p_holm_vs_best", "latency_p95_ms"]
        },
    )
    def experiment_leaderboard(context: AssetExecutionContext, data_dir: DataDirResource, experiment_runs: LazyTables):
        """Every configuration whose last attempt succeeded with its current settings ranked with
        intervals, each tested against the best (chosen on half the questions, tested on the
        other), bootstrap rank intervals, recall within the token budget, latency, size and cost,
        and the frontiers drawn; those that failed or whose result is for other settings listed,
        not ranked. Read it in the `report` entry below ([Show Markdown]); `report_path` is the
        same report in the data dir's reports/."""
        if callable(experiment_runs):  # one configuration: Dagster hands its one partition, not a mapping
            experiment_runs = {ids[0]: experiment_runs}
        state = sources.results(context.instance, experiment)
        tables, failed = {}, dict(experiment.skipped)  # combinations the file asks for that cannot run
        for c in ids:
            if state[c]["failed_run"]:
                earlier = "its earlier result is not ranked" if c in experiment_runs else "no result"
                failed[c] = f"its last run ({state[c]['failed_run'][:8]}) failed: {earlier}"
            elif c not in experiment_runs:
                failed[c] = "no materialisation: it failed or has not run (see its runs)"
            else:
                table = experiment_runs[c]()
                fingerprint = table["fingerprint"].iloc[0] if len(table) else None
                if state[c]["version"] is not None and fingerprint != state[c]["version"]:
                    failed[c] = "its result is for other settings or models than the file's now: run it again"
                else:
                    tables[c] = table
        report = leaderboard.rank(tables, experiment.rank_by, failed, experiment.token_budget)
        path = report.write(data_dir.layout.reports)
        context.log.info(f"leaderboard written to {path}")
        figures = {**report.figures, "report": report.inline(), "report_path": Link(data_dir.layout.relative(path))}
        return Output(report.table, metadata=metadata(figures))

    return [experiment_runs, experiment_leaderboard]
