"""Retrieval runs, metric tables with intervals, paired comparisons (significance, answerers,
regression: each returns a `rag_assets.report.Report`), the refusal sweep, history and exports.
Internal: `threshold_sweep`."""

__all__ = [
    "answer_eval",
    "comparisons",
    "metrics",
    "plots",
    "history",
    "metric_tables",
    "provenance",
    "refusal_figures",
    "regression",
    "retrieval_run",
    "significance",
    "trec",
]
