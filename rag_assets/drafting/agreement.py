"""Do drafted questions rank systems the way written ones do? Kendall's tau between the two
orderings of every configuration (or of the close ones only: `close`), with a bootstrap interval
over questions; the tau that the same number of written questions reaches against the other
written ones, a split that shares no question (what the question count alone costs); how many of
the significance report's verdicts the two question sets share; and how the judge treats
people's questions."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, spearmanr

from rag_assets.stats import ALPHA, wilson

RETRIEVERS = ("dense", "bm25", "hybrid")
# The strategies whose recall is not set by needles cut at chunk boundaries: A and B cut blind
# (any needle-based set orders them below the rest alike), W and doc are other units altogether.
CLOSE_STRATEGIES = ("C", "D", "E", "F")


def close(per_question_table: pd.DataFrame) -> pd.DataFrame:
    """The columns of CLOSE_STRATEGIES only: the configurations a needle-based set does not order
    by construction."""
    keep = [c for c in per_question_table.columns if c[1].split("/")[0] in CLOSE_STRATEGIES]
    return per_question_table[keep]


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
    tau = float(kendalltau(a.mean(axis=0), b.mean(axis=0)).statistic)
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(rounds):
        ra = a[rng.integers(0, len(a), len(a))].mean(axis=0)
        rb = b[rng.integers(0, len(b), len(b))].mean(axis=0)
        value = kendalltau(ra, rb).statistic
        if np.isfinite(value):
            taus.append(value)
    low, high = np.percentile(taus, [2.5, 97.5])
    return {"tau": tau, "ci_low": float(low), "ci_high": float(high), "configurations": len(configs)}


def subsample_tau(
    full: pd.DataFrame, pool: pd.DataFrame, n: int, metric: str, rounds: int = 200, seed: int = 0
) -> dict:
    """tau between the configurations' ordering on all of `full`'s questions and on random
    subsets of n of `pool`'s (drawn without replacement). With pool = full: the agreement that n
    questions of the same kind reach, so a drafted set of n is judged against what its size
    allows; with pool = a drafted set and growing n: what more drafted questions would buy."""
    configs = sorted(set(full[metric].columns) & set(pool[metric].columns))
    reference = full[metric][configs].mean(axis=0).to_numpy()
    values = pool[metric][configs].to_numpy()
    n = min(n, len(values))
    rng = np.random.default_rng(seed)
    draws = (values[rng.choice(len(values), n, replace=False)].mean(axis=0) for _ in range(rounds))
    return {"questions": n, **_spread((reference, drawn) for drawn in draws)}


def disjoint_tau(written: pd.DataFrame, n: int, metric: str, rounds: int = 200, seed: int = 0) -> dict:
    """tau between the ordering on n written questions and on the other written ones, over random
    splits: the agreement n questions of the same kind reach against a set they are not part of,
    as a drafted set is not part of the written one."""
    values = written[metric].to_numpy()
    n = min(n, len(values) - 1)
    rng = np.random.default_rng(seed)
    splits = (rng.permutation(len(values)) for _ in range(rounds))
    pairs = ((values[order[:n]].mean(axis=0), values[order[n:]].mean(axis=0)) for order in splits)
    return {"questions": n, "against": len(values) - n, **_spread(pairs)}


def _spread(orderings) -> dict:
    """The median tau over (a, b) pairs of orderings and its 2.5-97.5 % range (an undefined tau,
    from a constant ordering, left out)."""
    taus = [t for a, b in orderings if np.isfinite(t := kendalltau(a, b).statistic)]
    low, median, high = np.percentile(taus, [2.5, 50, 97.5])
    return {"tau_median": float(median), "ci_low": float(low), "ci_high": float(high)}


def judge_on_written(margins: list[float], overlaps: list[float]) -> dict:
    """The judge on people's questions: the share whose own needle beats its decoy (the share
    of written questions the `not_answered` filter would keep, with a Wilson interval), and the
    Spearman correlation of its margin with the question's overlap with its needle (a judge that
    tracks word overlap would favour questions that favour BM25)."""
    kept = sum(m > 0 for m in margins)
    low, high = wilson(kept, len(margins))
    rho = spearmanr(margins, overlaps).statistic if len(margins) > 2 else float("nan")
    return {
        "questions": len(margins),
        "kept": kept,
        "kept_share": kept / len(margins) if margins else 0.0,
        "ci_low": low,
        "ci_high": high,
        "spearman_margin_overlap": float(rho),
    }


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
