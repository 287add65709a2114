"""Nightly evaluation: history, regression report, and the 02:00 UTC schedule."""

import json
from importlib.metadata import version

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
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

from rag_assets.defs.automation import AFTER_EVALUATION, AUTOMATION
from rag_assets.defs.glue import metadata
from rag_assets.defs.resources import DataDirResource
from rag_assets.evaluation import history, regression
from rag_assets.evaluation.provenance import of_table as provenance_of_table
from rag_assets.report import Markdown


def code_versions(context: AssetExecutionContext) -> str:
    """What produced an evaluation: the package version and the code version of every
    materialisable asset upstream of this one, read from the graph itself."""
    graph = context.job_def.asset_layer.asset_graph
    seen, todo = set(), [context.asset_key]
    while todo:
        for parent in graph.get(todo.pop()).parent_keys - seen:
            seen.add(parent)
            todo.append(parent)
    return json.dumps(
        {
            "rag_assets": version("rag_assets"),
            **{k.to_user_string(): graph.get(k).code_version for k in seen if graph.get(k).is_materializable},
        },
        sort_keys=True,
    )


@asset(kinds={"parquet"}, group_name="nightly", code_version="history2", automation_condition=AFTER_EVALUATION)
def evaluation_history(
    context: AssetExecutionContext,
    data_dir: DataDirResource,
    query_hits: pd.DataFrame,
    evaluation_tables: pd.DataFrame,
    corpus_snapshot: pd.DataFrame,
) -> MaterializeResult:
    """Appends this evaluation's per-query hits with full provenance (Parquet, by date)."""
    provenance = provenance_of_table(evaluation_tables)
    provenance["code_version"] = code_versions(context)
    if query_hits.empty:
        return MaterializeResult(
            metadata={
                "skipped": "nothing was evaluated (no answerable query, or no chunk): no entry appended",
                "entries": len(history.entries(data_dir.layout.history)),
            }
        )
    path = history.append(
        data_dir.layout.history,
        query_hits,
        provenance,
        context.run.run_id,
        documents=corpus_snapshot[corpus_snapshot["status"] == "ok"],
    )
    return MaterializeResult(
        metadata={
            "entry": MetadataValue.path(data_dir.layout.relative(path)),
            "entries": len(history.entries(data_dir.layout.history)),
            **{k: MetadataValue.text(str(v)) for k, v in provenance.items()},
        }
    )


@asset(
    kinds={"markdown"},
    group_name="nightly",
    code_version="regression2",
    automation_condition=AUTOMATION,
    deps=["evaluation_history"],
    check_specs=[AssetCheckSpec("no_significant_regression", asset="regression_report")],
)
def regression_report(context: AssetExecutionContext, data_dir: DataDirResource):
    """The newest evaluation against the previous one, on the questions both evaluated, with
    what changed in between named beside each verdict: paired sign tests by question, Holm."""
    report, result = regression.compare_evaluations(data_dir.layout.history)
    report.write(data_dir.layout.reports)
    yield MaterializeResult(metadata=metadata({**report.figures, "report": report.inline()}))
    if not result.compared:  # nothing compared is never a pass: a warning the UI shows
        yield AssetCheckResult(
            passed=False,
            severity=AssetCheckSeverity.WARN,
            description=f"nothing compared: {result.why_not}",
            metadata=metadata({"compared": False, "why_not": result.why_not, "changes": result.changes}),
        )
        return
    losses = Markdown(result.losses.to_markdown(index=False) if len(result.losses) else "none")
    yield AssetCheckResult(
        passed=result.losses.empty, metadata=metadata({"compared": True, "changes": result.changes, "losses": losses})
    )


EVALUATION_ASSETS = [
    "ground_truth",  # an edited questions.jsonl is read each night
    "retrieval_runs",
    "query_hits",
    "evaluation_tables",
    "significance_report",
    "refusal_sweep",
    "generation_eval",
    "evaluation_history",
    "regression_report",
]
nightly_evaluation_job = define_asset_job(
    "nightly_evaluation",
    selection=AssetSelection.assets(*EVALUATION_ASSETS),
    description="Re-run every query through every retriever and the generation sample, append to the history, "
    "compare with the previous run.",
)
nightly_evaluation_schedule = ScheduleDefinition(
    name="nightly_evaluation_0200_utc",
    job=nightly_evaluation_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
)
