"""The refusal gate and its sweep, on hand-made runs and through the real graph."""

import pandas as pd
import pytest

from rag_assets import stats
from rag_assets.answering import refusal
from rag_assets.app.cli import main
from rag_assets.evaluation import threshold_sweep as sweep_of

TRUTH = pd.DataFrame(
    {
        "query_id": ["a1", "a2", "u1", "o1"],
        "question_id": ["a1", "a2", "u1", "o1"],
        "kind": ["answerable", "answerable", "unanswerable", "out_of_domain"],
        "needle": ["the valve faces north", "filter every 300 hours", None, None],
        "query": ["valve direction?", "filter interval?", "pump colour?", "renew my passport"],
    }
)
TEXTS = {
    "c1": "Note: the valve faces north.",
    "c2": "Replace the filter every 300 hours.",
    "c3": "Pumps and valves.",
    "c4": "Passport renewal is not covered by this pump manual.",
}
RUNS = pd.DataFrame(
    {
        "query_id": ["a1", "a2", "u1", "o1"],
        "chunk_ids": [["c1", "c3"], ["c3", "c2"], ["c3", "c1"], ["c4", "c3"]],
        "distances": [[0.30, 0.50], [0.40, 0.55], [0.45, 0.60], [0.62, 0.80]],
    }
)


def test_gate_keeps_at_most_four_chunks_strictly_under_the_threshold():
    assert refusal.gate(["a", "b", "c", "d", "e"], [0.1, 0.2, 0.3, 0.4, 0.45], 0.5) == ["a", "b", "c", "d"]
    assert refusal.gate(["a", "b"], [0.5, 0.6], 0.5) == []


def test_sweep_counts_by_hand():
    sweep = sweep_of.outcomes(RUNS, TRUTH, TEXTS, thresholds=[0.35, 0.5, 0.7]).set_index(
        ["threshold", "group", "outcome"]
    )
    # 0.35: only a1 keeps c1 (with its needle); everything else is refused
    assert sweep.loc[(0.35, "answerable", "answered with the needle"), "count"] == 1
    assert sweep.loc[(0.35, "answerable", "refused"), "count"] == 1
    assert sweep.loc[(0.35, "unanswerable", "answered (bluff)"), "count"] == 0
    # 0.5: a2 keeps only c3 (no needle); u1 bluffs with c3; o1 still refused
    assert sweep.loc[(0.5, "answerable", "answered without it"), "count"] == 1
    assert sweep.loc[(0.5, "unanswerable", "answered (bluff)"), "count"] == 1
    assert sweep.loc[(0.5, "out_of_domain", "refused"), "count"] == 1
    # 0.7: a2 now keeps c2 too; everything is answered
    assert sweep.loc[(0.7, "answerable", "answered with the needle"), "count"] == 2
    assert sweep.loc[(0.7, "out_of_domain", "answered (bluff)"), ["count", "n", "rate"]].tolist() == [1, 1, 1.0]
    low, high = sweep.loc[(0.7, "answerable", "answered with the needle"), ["ci_low", "ci_high"]]
    assert (low, high) == pytest.approx(stats.wilson(2, 2))


def test_sweep_counts_questions_not_phrasings():
    """a1 asked two ways: one phrasing answered with the needle, one refused, at 0.35. The
    question counts once, half each way, and its interval is a bootstrap over questions."""
    truth = pd.concat(
        [TRUTH, TRUTH.iloc[[0]].assign(query_id="a1-b", query="which way does the valve point?")], ignore_index=True
    )
    runs = pd.concat([RUNS, RUNS.iloc[[0]].assign(query_id="a1-b", distances=[[0.9, 0.95]])], ignore_index=True)
    sweep = sweep_of.outcomes(runs, truth, TEXTS, thresholds=[0.35]).set_index(["threshold", "group", "outcome"])
    row = sweep.loc[(0.35, "answerable", "answered with the needle")]
    assert (row["count"], row["n"], row["rate"]) == (0.5, 2, 0.25) and row["ci_method"] == "bootstrap by question"
    assert sweep.loc[(0.35, "answerable", "refused"), "count"] == 1.5
    assert sweep.loc[(0.35, "unanswerable", "refused"), "ci_method"] == "wilson"


def test_distances_and_bluff_examples_come_from_the_data():
    best = sweep_of.best_distances(RUNS, TRUTH).set_index("query_id")["best"]
    assert best.to_dict() == {"a1": 0.30, "a2": 0.40, "u1": 0.45, "o1": 0.62}
    assert sweep_of.answer_distances(RUNS, TRUTH, TEXTS).to_dict() == {"a1": 0.30, "a2": 0.55}
    examples = sweep_of.bluff_examples(RUNS, TRUTH, TEXTS, 0.7)
    assert examples["near_miss"]["query"] == "pump colour?" and examples["near_miss"]["distance"] == 0.45
    assert examples["literal_match"]["query"] == "renew my passport"  # "passport" appears, the answer does not
    assert sweep_of.bluff_examples(RUNS, TRUTH, TEXTS, 0.1) == {}


def test_refusal_sweep_through_the_graph(tiny_dataset, tmp_path):
    data_dir = tmp_path / "data"
    assert (
        main(["run", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir), "--strategies", "E", "--no-llm"]) == 0
    )
    sweep = pd.read_parquet(data_dir / "assets" / "refusal_sweep.parquet")
    assert set(sweep["group"]) == {"answerable", "unanswerable", "out_of_domain"}
    per = sweep.groupby(["threshold", "group"])["count"].sum().unstack()
    assert (per["answerable"] == 3).all()  # 3 questions (one with two phrasings), not 4 queries
    assert (per["unanswerable"] == 1).all() and (per["out_of_domain"] == 1).all()
    refused = sweep[(sweep["group"] == "out_of_domain") & (sweep["outcome"] == "refused")].set_index("threshold")[
        "count"
    ]
    assert refused.is_monotonic_decreasing and refused.iloc[0] == 1
    assert (data_dir / "reports" / "refusal_distances.png").read_bytes()[:4] == b"\x89PNG"
