"""Do drafted questions rank systems the way written ones do? Kendall's tau between the two
orderings of every configuration, with a bootstrap interval over questions, and how many of
the significance report's verdicts the two question sets share."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from rag_assets.evaluation.significance import ALPHA

RETRIEVERS = ("dense", "bm25", "hybrid")


def per_question(hits: pd.DataFrame, k: int = 4) -> pd.DataFrame:
    """Per question x configuration: R@k and reciprocal rank, each the mean over its phrasings
    (rows: question ids; columns: (metric, strategy/retriever))."""
    hits = hits[hits["retriever"].isin(RETRIEVERS)].copy()
    hits["config"] = hits["strategy"] + "/" + hits["retriever"]
    hits["recall"] = (hits["hit_rank"].notna() & (hits["hit_rank"] <= k)).astype(float)
    hits["rr"] = (1.0 / hits["hit_rank"]).fillna(0.0)
    return hits.pivot_table(index="question_id", columns="config", values=["recall", "rr"], aggfunc="mean")


def tau_with_interval(
    written: pd.DataFrame, drafted: pd.DataFrame, metric: str, rounds: int = 1000, seed: int = 0
) -> dict:
    """tau between the configurations' means over each set's questions, and a 95 % percentile
    bootstrap interval (each round resamples both sets' questions, independently)."""
    a, b = written[metric], drafted[metric]
    configs = sorted(set(a.columns) & set(b.columns))
    a, b = a[configs].to_numpy(), b[configs].to_numpy()
    tau = float(kendalltau(a.mean(0), b.mean(0)).statistic)
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(rounds):
        ra = a[rng.integers(0, len(a), len(a))].mean(0)
        rb = b[rng.integers(0, len(b), len(b))].mean(0)
        value = kendalltau(ra, rb).statistic
        if np.isfinite(value):
            taus.append(value)
    low, high = np.percentile(taus, [2.5, 97.5])
    return {"tau": tau, "ci_low": float(low), "ci_high": float(high), "configurations": len(configs)}


def _verdict(row) -> str:
    if row.p_holm >= ALPHA:
        return "not significant"
    return "a better" if row.wins > row.losses else "b better"


def verdicts(written: pd.DataFrame, drafted: pd.DataFrame) -> dict:
    """The significance report's comparisons under both sets: same verdict, one significant and
    the other not, or significant both ways in opposite directions (flipped)."""
    both = written.merge(drafted, on=["comparison_id", "k"], suffixes=("_w", "_d"))
    w = both.rename(columns=lambda c: c.removesuffix("_w")).apply(_verdict, axis=1)
    d = both.rename(columns=lambda c: c.removesuffix("_d")).apply(_verdict, axis=1)
    significant = (w != "not significant") & (d != "not significant")
    return {
        "comparisons": len(both),
        "same_verdict": int((w == d).sum()),
        "same_significant": int(((w == d) & (w != "not significant")).sum()),
        "significant_in_one_only": int(((w == "not significant") != (d == "not significant")).sum()),
        "flipped": int((significant & (w != d)).sum()),
    }
