"""Nightly regression: the newest evaluation against the previous one, query by query.

Two evaluations are compared only when their inputs are the same (corpus, embedding
model, chunker settings, questions); otherwise the report names what changed instead of
comparing numbers that measure different things.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rag_assets.evaluation import significance
from rag_assets.evaluation.comparisons import compare_paired
from rag_assets.evaluation.provenance import INPUTS

REGRESSION_COLUMNS = [
    "strategy",
    "retriever",
    "k",
    "wins",
    "losses",
    "recall_previous",
    "recall_current",
    "p_value",
    "p_holm",
    "significant_loss",
]


@dataclass(frozen=True)
class Regression:
    compared: bool
    changed_inputs: list[str]
    table: pd.DataFrame

    @property
    def losses(self) -> pd.DataFrame:
        return self.table[self.table["significant_loss"]]


def changed_inputs(current: dict, previous: dict) -> list[str]:
    return [name for key, name in INPUTS.items() if current.get(key) != previous.get(key)]


def compare(current: pd.DataFrame, previous: pd.DataFrame, current_inputs: dict, previous_inputs: dict) -> Regression:
    """Paired sign test per strategy x retriever x k on the queries both runs answered.

    `current`/`previous` are per-query hit tables (query_id, strategy, retriever, hit_rank).
    A loss is significant when the current run loses more queries than it wins and the
    Holm-adjusted p over the whole table is below 0.05."""
    changed = changed_inputs(current_inputs, previous_inputs)
    if changed:
        return Regression(False, changed, pd.DataFrame(columns=REGRESSION_COLUMNS))
    ranks = lambda hits: {s: g.set_index("query_id")["hit_rank"] for s, g in hits.groupby(["strategy", "retriever"])}  # noqa: E731
    now, before = ranks(current), ranks(previous)
    pairs = [
        ({"strategy": s, "retriever": r}, now[(s, r)], before[(s, r)]) for s, r in sorted(now.keys() & before.keys())
    ]
    table = compare_paired(pairs, ["strategy", "retriever"]).rename(
        columns={"recall_a": "recall_current", "recall_b": "recall_previous"}
    )[REGRESSION_COLUMNS[:-1]]
    table["significant_loss"] = (table["losses"] > table["wins"]) & (table["p_holm"] < significance.ALPHA)
    return Regression(True, [], table)


def render(result: Regression, current_label: str | None, previous_label: str | None) -> str:
    if current_label is None:
        return "# Regression report\n\nThe history holds no evaluation yet: nothing to compare.\n"
    if previous_label is None:
        return (
            "# Regression report\n\nNo previous evaluation to compare with: this is the first entry of the history.\n"
        )
    head = f"# Regression report\n\n{current_label} against {previous_label}.\n\n"
    if not result.compared:
        return (
            head + f"Not compared: the inputs differ ({', '.join(result.changed_inputs)} changed), "
            "so the two runs measure different things.\n"
        )
    losses = result.losses
    verdict = (
        "No significant loss."
        if losses.empty
        else "Significant losses: "
        + "; ".join(
            f"{r.strategy}/{r.retriever} at R@{r.k} (+{r.wins}/−{r.losses}, Holm p = {r.p_holm:.2g})"
            for r in losses.itertuples()
        )
        + "."
    )
    lines = [
        "| strategy | retriever | k | wins | losses | R@k before | R@k now | p | p (Holm) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.strategy} | {r.retriever} | {r.k} | +{r.wins} | −{r.losses} | {r.recall_previous:.3f} | "
        f"{r.recall_current:.3f} | {r.p_value:.2g} | {r.p_holm:.2g} |"
        for r in result.table.itertuples()
    ]
    return head + verdict + "\n\n" + "\n".join(lines) + "\n"
