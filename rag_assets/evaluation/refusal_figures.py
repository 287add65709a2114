"""The refusal sweep as a reader sees it: the distance histogram and the Markdown table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_assets.evaluation.plots import png_bytes, pyplot


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
