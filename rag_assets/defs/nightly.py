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

from rag_assets import storage
from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.resources import DataDirResource
from rag_assets.evaluation import history, regression
from rag_assets.evaluation.provenance import of_table as provenance_of_table


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


@asset(group_name="nightly", code_version="history1", automation_condition=AUTOMATION)
def evaluation_history(
    context: AssetExecutionContext, data_dir: DataDirResource, query_hits: pd.DataFrame, evaluation_tables: pd.DataFrame
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
    path = history.append(data_dir.layout.history, query_hits, provenance, context.run.run_id)
    return MaterializeResult(
        metadata={
            "entry": MetadataValue.path(str(path)),
            "entries": len(history.entries(data_dir.layout.history)),
            **{k: MetadataValue.text(str(v)) for k, v in provenance.items()},
        }
    )


@asset(
    group_name="nightly",
    code_version="regression1",
    automation_condition=AUTOMATION,
    deps=["evaluation_history"],
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
    markdown = regression.render(
        result,
        history.label(entries[-1]) if entries else None,
        history.label(entries[-2]) if previous is not None else None,
    )
    storage.write_text(data_dir.layout.reports / "regression_report.md", markdown)
    yield MaterializeResult(
        metadata={
            "report": MetadataValue.md(markdown),
            "compared": result.compared,
            "changed_inputs": MetadataValue.json(result.changed_inputs),
            "significant_losses": len(result.losses),
        }
    )
    yield AssetCheckResult(
        passed=result.losses.empty,
        metadata={
            "compared": result.compared,
            "changed_inputs": MetadataValue.json(result.changed_inputs),
            "losses": MetadataValue.md(result.losses.to_markdown(index=False) if len(result.losses) else "none"),
        },
    )


EVALUATION_ASSETS = [
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
