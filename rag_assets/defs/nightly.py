"""Nightly evaluation: history, regression report, and the 02:00 UTC schedule."""

import json
from importlib.metadata import version

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetSelection,
    DefaultScheduleStatus,
    MaterializeResult,
    MetadataValue,
    ScheduleDefinition,
    asset,
    define_asset_job,
)

from rag_assets import history, regression
from rag_assets.provenance import of_table as provenance_of_table
from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.chunk_assets import chunk_sets
from rag_assets.defs.corpus_assets import corpus_snapshot, ground_truth
from rag_assets.defs.evaluation_assets import evaluation_tables, query_hits, retrieval_runs
from rag_assets.defs.index_assets import bm25_index, embeddings
from rag_assets.defs.resources import DataDirResource

UPSTREAM = [corpus_snapshot, ground_truth, chunk_sets, embeddings, bm25_index, retrieval_runs, query_hits, evaluation_tables]

# What produced an evaluation: the package version and the code version of every asset upstream.
CODE_VERSION = json.dumps({
    "rag_assets": version("rag_assets"),
    **{key.to_user_string(): v for a in UPSTREAM for key, v in a.code_versions_by_key.items()},
}, sort_keys=True)


@asset(group_name="nightly", code_version="history1", automation_condition=AUTOMATION)
def evaluation_history(context: AssetExecutionContext, data_dir: DataDirResource, query_hits: pd.DataFrame,
                       evaluation_tables: pd.DataFrame) -> MaterializeResult:
    """Appends this evaluation's per-query hits with full provenance (Parquet, by date)."""
    provenance = provenance_of_table(evaluation_tables)
    provenance["code_version"] = CODE_VERSION
    if query_hits.empty:
        return MaterializeResult(metadata={
            "skipped": "nothing was evaluated (no answerable query, or no chunk): no entry appended",
            "entries": len(history.entries(data_dir.layout.history))})
    path = history.append(data_dir.layout.history, query_hits, provenance, context.run.run_id)
    return MaterializeResult(metadata={
        "entry": MetadataValue.path(str(path)),
        "entries": len(history.entries(data_dir.layout.history)),
        **{k: MetadataValue.text(str(v)) for k, v in provenance.items()},
    })


@asset(
    group_name="nightly",
    code_version="regression1",
    automation_condition=AUTOMATION,
    deps=[evaluation_history],
    check_specs=[AssetCheckSpec("no_significant_regression", asset="regression_report")],
)
def regression_report(context: AssetExecutionContext, data_dir: DataDirResource):
    """The newest evaluation against the previous one: paired sign tests, Holm, losses flagged."""
    entries = history.entries(data_dir.layout.history)
    current = pd.read_parquet(entries[-1]) if entries else None
    previous = pd.read_parquet(entries[-2]) if len(entries) > 1 else None
    if previous is None:
        result = regression.Regression(False, [], pd.DataFrame(columns=regression.REGRESSION_COLUMNS))
    else:
        result = regression.compare(current, previous, history.provenance_of(current), history.provenance_of(previous))
    markdown = regression.render(result, history.label(entries[-1]) if entries else None,
                                 history.label(entries[-2]) if previous is not None else None)
    out = data_dir.layout.reports
    out.mkdir(parents=True, exist_ok=True)
    (out / "regression_report.md").write_text(markdown, encoding="utf-8")
    yield MaterializeResult(metadata={
        "report": MetadataValue.md(markdown),
        "compared": result.compared,
        "changed_inputs": MetadataValue.json(result.changed_inputs),
        "significant_losses": len(result.losses),
    })
    yield AssetCheckResult(
        passed=result.losses.empty,
        metadata={"compared": result.compared, "changed_inputs": MetadataValue.json(result.changed_inputs),
                  "losses": MetadataValue.md(result.losses.to_markdown(index=False) if len(result.losses) else "none")},
    )


EVALUATION_ASSETS = ["retrieval_runs", "query_hits", "evaluation_tables", "significance_report", "refusal_sweep",
                     "generation_eval", "evaluation_history", "regression_report"]
nightly_evaluation_job = define_asset_job(
    "nightly_evaluation", selection=AssetSelection.assets(*EVALUATION_ASSETS),
    description="Re-run every query through every retriever and the generation sample, append to the history, "
                "compare with the previous run.",
)
nightly_evaluation_schedule = ScheduleDefinition(
    name="nightly_evaluation_0200_utc", job=nightly_evaluation_job, cron_schedule="0 2 * * *",
    execution_timezone="UTC", default_status=DefaultScheduleStatus.RUNNING,
)
