"""Nightly regression: the newest evaluation against the previous one, query by query.

Two evaluations are compared only when their inputs are the same (corpus, embedding
model, chunker settings, questions); otherwise the report names what changed instead of
comparing numbers that measure different things.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rag_assets import stats
from rag_assets.evaluation import paired_at
from rag_assets.provenance import INPUTS
from rag_assets.metrics import KS

REGRESSION_COLUMNS = ["strategy", "retriever", "k", "wins", "losses", "recall_previous", "recall_current",
                      "p_value", "p_holm", "significant_loss"]


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
    keys = ["strategy", "retriever", "query_id"]
    joined = current[keys + ["hit_rank"]].merge(previous[keys + ["hit_rank"]], on=keys, suffixes=("_cur", "_prev"))
    rows = []
    for (strategy, retriever), g in joined.groupby(["strategy", "retriever"], sort=True):
        for k in KS:
            t = paired_at(g["hit_rank_cur"], g["hit_rank_prev"], k)
            rows.append({"strategy": strategy, "retriever": retriever, "k": k, "wins": t["wins"], "losses": t["losses"],
                         "recall_previous": t["recall_b"], "recall_current": t["recall_a"], "p_value": t["p_value"]})
    table = pd.DataFrame(rows, columns=REGRESSION_COLUMNS[:-2])
    table["p_holm"] = stats.holm(table["p_value"].tolist()) if len(table) else []
    table["significant_loss"] = (table["losses"] > table["wins"]) & (table["p_holm"] < stats.ALPHA)
    return Regression(True, [], table)


def render(result: Regression, current_label: str | None, previous_label: str | None) -> str:
    if current_label is None:
        return "# Regression report\n\nThe history holds no evaluation yet: nothing to compare.\n"
    if previous_label is None:
        return "# Regression report\n\nNo previous evaluation to compare with: this is the first entry of the history.\n"
    head = f"# Regression report\n\n{current_label} against {previous_label}.\n\n"
    if not result.compared:
        return head + f"Not compared: the inputs differ ({', '.join(result.changed_inputs)} changed), so the two runs measure different things.\n"
    losses = result.losses
    verdict = ("No significant loss." if losses.empty else
               "Significant losses: " + "; ".join(f"{r.strategy}/{r.retriever} at R@{r.k} (+{r.wins}/−{r.losses}, Holm p = {r.p_holm:.2g})"
                                                   for r in losses.itertuples()) + ".")
    lines = ["| strategy | retriever | k | wins | losses | R@k before | R@k now | p | p (Holm) |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.strategy} | {r.retriever} | {r.k} | +{r.wins} | −{r.losses} | {r.recall_previous:.3f} | "
              f"{r.recall_current:.3f} | {r.p_value:.2g} | {r.p_holm:.2g} |" for r in result.table.itertuples()]
    return head + verdict + "\n\n" + "\n".join(lines) + "\n"
