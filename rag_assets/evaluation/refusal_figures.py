"""The refusal gate swept for each embedding model (`sweep_models`), and what a reader sees of
it: the distance histogram and the Markdown table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_assets.evaluation import threshold_sweep
from rag_assets.evaluation.plots import png_bytes, pyplot
from rag_assets.evaluation.retrieval_run import retriever_name
from rag_assets.report import Markdown, inline_png

PLOT_NAME = "refusal_distances.png"
COLUMNS = ["model", *threshold_sweep.SWEEP_COLUMNS]


@dataclass(frozen=True)
class RefusalSweep:
    table: pd.DataFrame  # model x threshold x group x outcome
    plot: bytes  # the first model's distance histogram
    figures: dict


def sweep_models(
    runs: pd.DataFrame, truth: pd.DataFrame, texts: dict[str, str], strategy: str, thresholds: dict[str, float]
) -> RefusalSweep:
    """The gate over a grid around each model's own threshold (`thresholds`: model -> its
    threshold, the serving model first), on one strategy's dense runs; the plot and the headline
    figures are the first model's, `models` has each model's."""
    names, sweeps, per_model, measured = list(thresholds), [], {}, {}
    for name, threshold in thresholds.items():
        dense = retriever_name("dense", name, names[0])
        mine = runs[(runs["strategy"] == strategy) & (runs["retriever"] == dense)]
        grid = sorted(set(threshold_sweep.grid_around(threshold)) | {threshold})
        sweeps.append(threshold_sweep.outcomes(mine, truth, texts, grid).assign(model=name))
        best = threshold_sweep.best_distances(mine, truth)
        answer = threshold_sweep.answer_distances(mine, truth, texts)
        must_refuse = best.loc[best["kind"] != "answerable", "best"]
        measured[name] = mine, grid, best, answer
        per_model[name] = {
            "operating_threshold": round(threshold, 4),
            "worst_in_domain_answer_distance": round(float(answer.max()), 3) if len(answer) else None,
            "best_must_refuse_distance": round(float(must_refuse.min()), 3) if len(must_refuse) else None,
        }
    table = pd.concat(sweeps, ignore_index=True)[COLUMNS]
    name, threshold = names[0], thresholds[names[0]]
    mine, grid, best, answer = measured[name]
    png = distance_histogram_png(best, threshold)
    step = threshold / 6  # 0.1 around MiniLM's 0.6
    targets = (threshold - step, threshold, threshold + step)
    shown = sorted({min(grid, key=lambda t: abs(t - target)) for target in targets})
    must_refuse = truth[truth["kind"] != "answerable"].drop_duplicates("question_id")
    figures = {
        "must_refuse_questions_by_origin": must_refuse["origin"].value_counts().to_dict(),
        "strategy": strategy,
        "model": name,
        "operating_threshold": float(threshold),
        "models": per_model,
        "at_three_thresholds": Markdown(sweep_table(table[table["model"] == name], shown)),
        "distances": Markdown(f"![best distances]({inline_png(png)})"),
        "worst_in_domain_answer_distance": float(answer.max()),
        "best_out_of_domain_distance": float(best.loc[best["kind"] == "out_of_domain", "best"].min()),
        "best_unanswerable_distance": float(best.loc[best["kind"] == "unanswerable", "best"].min()),
        "must_refuse_queries": int((best["kind"] != "answerable").sum()),
        "bluff_examples": threshold_sweep.bluff_examples(mine, truth, texts, threshold),
    }
    return RefusalSweep(table, png, figures)


def distance_histogram_png(best: pd.DataFrame, threshold: float) -> bytes:
    fig, ax = pyplot().subplots(figsize=(7, 3.6))
    bins = np.linspace(0, 1.2, 49)
    for kind, label in (
        ("answerable", "answerable"),
        ("unanswerable", "unanswerable (in domain)"),
        ("out_of_domain", "out of domain"),
    ):
        values = best.loc[best["kind"] == kind, "best"].dropna()
        if len(values):
            ax.hist(values, bins=bins, alpha=0.5, label=f"{label} (n={len(values)})")
    ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold}")
    ax.set_xlabel("cosine distance of the nearest chunk")
    ax.set_ylabel("queries")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def sweep_table(sweep: pd.DataFrame, thresholds) -> str:
    """Markdown: one row per threshold, the rates that matter side by side."""
    cols = [
        ("answerable", "answered with the needle"),
        ("answerable", "answered without it"),
        ("answerable", "refused"),
        ("unanswerable", "answered (bluff)"),
        ("out_of_domain", "answered (bluff)"),
    ]
    head = (
        "| threshold | answered with needle | answered without | refused (answerable) | bluffs (unanswerable) "
        "| bluffs (out of domain) |"
    )
    lines = [head, "|---|---|---|---|---|---|"]
    keyed = sweep.set_index(["threshold", "group", "outcome"])
    for t in thresholds:
        cells = []
        for g, o in cols:
            r = keyed.loc[(t, g, o)]
            cells.append(f"{r['count']:g}/{int(r['n'])} ({r['rate']:.3f})" if r["n"] else "—")
        lines.append(f"| {t:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
