"""Nightly evaluation: the schedule's tick, the history, and the regression comparison."""

from datetime import UTC, datetime

import pandas as pd
from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    DagsterInstance,
    build_schedule_context,
    instance_for_test,
)

from rag_assets.app.cli import main
from rag_assets.defs import build_definitions
from rag_assets.evaluation import history, regression
from rag_assets.settings import Settings

INPUTS = {
    "corpus_hash": "c1",
    "model_id": "m1",
    "chunker": "{}",
    "ground_truth_hash": "g1",
    "bm25": "{}",
    "question_origin": "written",
}


def test_the_schedule_ticks_at_two_utc_into_a_valid_run_request():
    defs = build_definitions(Settings())
    schedule = defs.resolve_schedule_def("nightly_evaluation_0200_utc")
    assert schedule.cron_schedule == "0 2 * * *" and schedule.execution_timezone == "UTC"
    assert schedule.default_status.value == "RUNNING"
    with instance_for_test() as instance:
        context = build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
        )
        result = schedule.evaluate_tick(context)
    assert len(result.run_requests) == 1
    job = defs.resolve_job_def(schedule.job_name)
    selected = {k.to_user_string() for k in job.asset_layer.selected_asset_keys}
    assert selected == {
        "ground_truth",
        "retrieval_runs",
        "query_hits",
        "evaluation_tables",
        "significance_report",
        "refusal_sweep",
        "generation_eval",
        "evaluation_history",
        "regression_report",
    }


def _hits(ranks, strategy="C", retriever="dense", first=0):
    return pd.DataFrame(
        {
            "query_id": [f"q{i}#0" for i in range(first, first + len(ranks))],
            "question_id": [f"q{i}" for i in range(first, first + len(ranks))],
            "strategy": strategy,
            "retriever": retriever,
            "hit_rank": pd.array(ranks, dtype="Int64"),
        }
    )


def test_a_significant_loss_is_flagged_and_noise_is_not():
    before = _hits([1] * 30 + [None] * 10)
    worse = _hits([None] * 20 + [1] * 10 + [None] * 10)
    result = regression.compare(worse, before, INPUTS, INPUTS)
    at1 = result.table.set_index("k").loc[1]
    assert (at1["wins"], at1["losses"]) == (0, 20) and at1["significant_loss"]
    assert set(result.losses["k"]) == {1, 4, 8, 20}
    noisy = _hits([1] * 29 + [None] * 10 + [1])
    assert regression.compare(noisy, before, INPUTS, INPUTS).losses.empty
    assert "Significant losses: C/dense at R@1 (+0/−20" in regression.render(result, "now", "before")


def test_changed_inputs_are_compared_on_the_shared_questions_and_named():
    """The corpus, the model and the questions changed overnight and quality fell: the gate
    still compares, on the questions both evaluated, and says what changed beside the verdict."""
    before = _hits([1] * 30 + [None] * 10)
    after = _hits([None] * 20 + [1] * 10 + [None] * 10 + [1] * 5, first=0)  # 5 questions added
    changed = {
        **INPUTS,
        "model_id": "m2",
        "ground_truth_hash": "g2",
        "corpus_hash": "c2",
        "chunker": '{"C": {"target": 400}}',
    }
    docs_before = pd.DataFrame({"document_id": ["a", "b", "c"], "sha256": ["1", "2", "3"]})
    docs_after = pd.DataFrame({"document_id": ["a", "b", "d"], "sha256": ["1", "22", "4"]})
    result = regression.compare(after, before, changed, INPUTS, docs_after, docs_before)
    assert result.compared and set(result.table["n_questions"]) == {40}  # the 5 new questions are not paired
    assert result.changes == [
        "corpus: 1 document added, 1 edited, 1 removed",
        "model: m1 -> m2",
        "questions: 5 questions added",
        "chunker of C changed",
    ]
    at1 = result.table.set_index("k").loc[1]
    assert (at1["wins"], at1["losses"]) == (0, 20) and at1["significant_loss"]
    assert "model: m1 -> m2" in at1["changed"] and "chunker of C changed" in at1["changed"]
    report = regression.render(result, "now", "before")
    assert "What changed: corpus: 1 document added, 1 edited, 1 removed; model: m1 -> m2" in report
    assert "Compared by question on the 40 questions both evaluated; Holm over the" in report


def test_only_evaluations_sharing_no_question_are_not_compared():
    result = regression.compare(
        _hits([1, 1]), _hits([None, 1], first=10), {**INPUTS, "ground_truth_hash": "g2"}, INPUTS
    )
    assert not result.compared and result.why_not == "the two evaluations share no question" and result.losses.empty
    assert "Not compared: the two evaluations share no question." in regression.render(result, "now", "before")


def test_history_entries_are_dated_ordered_and_carry_provenance(tmp_path):
    hits = _hits([1, None])
    first = history.append(
        tmp_path,
        hits,
        {**INPUTS, "code_version": "v"},
        "run-aaaaaaaa",
        datetime(2026, 11, 30, 2, 0, tzinfo=UTC),
    )
    second = history.append(
        tmp_path,
        hits,
        {**INPUTS, "code_version": "v"},
        "run-bbbbbbbb",
        datetime(2026, 12, 1, 2, 0, tzinfo=UTC),
    )
    assert history.entries(tmp_path) == [first, second]
    assert first.parent.name == "date=2026-11-30"
    entry = pd.read_parquet(second)
    assert history.provenance_of(entry) == {**INPUTS, "code_version": "v"}
    assert entry["run_id"].unique().tolist() == ["run-bbbbbbbb"]


def test_two_runs_then_a_changed_question_set(tiny_dataset, tmp_path):
    data_dir = tmp_path / "data"
    args = ["run", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir), "--strategies", "C", "--no-llm"]
    assert main(args) == 0
    with DagsterInstance.from_config(str(data_dir / "dagster_home")) as instance:  # a first entry compares nothing
        check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("regression_report"), "no_significant_regression")]
        )
        evaluation = next(iter(check.values())).event.dagster_event.event_specific_data
        assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN
    assert main(args) == 0
    report = (data_dir / "reports" / "regression_report.md").read_text()
    assert "No significant loss." in report and "| C | dense | 1 |" in report and "What changed: nothing" in report
    questions = tiny_dataset / "questions.jsonl"
    lines = questions.read_text().splitlines()
    questions.write_text("\n".join(line for line in lines if "q-filter" not in line) + "\n")
    assert main(args) == 0
    report = (data_dir / "reports" / "regression_report.md").read_text()
    assert "What changed: questions: 1 question removed." in report and "No significant loss." in report
    assert "Compared by question on the 2 questions both evaluated; Holm over the" in report
    assert len(history.entries(data_dir / "assets" / "evaluation_history")) == 3
    with DagsterInstance.from_config(str(data_dir / "dagster_home")) as instance:
        record = instance.fetch_materializations(AssetKey("regression_report"), limit=1).records[0]
        assert record.asset_materialization.metadata["changes"].value == ["questions: 1 question removed"]
        assert record.asset_materialization.metadata["compared"].value is True
