"""Intervals and paired tests, for every floor that reports a number (answer scoring,
evaluation, drafting agreement): below them all, so none imports upwards for them.

- Wilson score interval for a proportion (R@k at n queries).
- Percentile bootstrap for a mean that is not a proportion (MRR), seeded.
- Exact two-sided sign test on the discordant pairs of a paired comparison.
- Holm's step-down adjustment across the comparisons of one report.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binomtest, norm

Z95 = float(norm.ppf(0.975))
ALPHA = 0.05  # significance level of every report (after Holm adjustment)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def interval_of_shares(shares, one_query_each: bool) -> tuple[float, float, str, int | None]:
    """(low, high, method, successes) of a mean of per-question shares. With one query per
    question a share is 0 or 1 and the interval is Wilson's; with several phrasings per question
    they are not independent, so the interval is a bootstrap over questions."""
    if one_query_each:
        successes = int(shares.sum())
        return (*wilson(successes, len(shares)), "wilson", successes)
    return (*bootstrap_mean_ci(np.asarray(shares, dtype=np.float64)), "bootstrap by question", None)


def bootstrap_mean_ci(
    values: np.ndarray, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    return (float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail)))


def percentiles(values, qs=(50, 95), digits: int = 3) -> dict:
    """{"p50": ..., "p95": ...} of `values` (linear interpolation), rounded; {} when empty."""
    values = np.asarray(values, dtype=np.float64)
    return {f"p{q}": round(float(np.percentile(values, q)), digits) for q in qs} if len(values) else {}


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided p of `wins` vs `losses` under p = 1/2; ties were already dropped."""
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
