"""Every configuration of an experiment ranked: quality with intervals, latency, size and cost, each
compared with the best paired by question (Holm over the family), how sure the ranking is
(bootstrap intervals on ranks), and the quality-latency and quality-cost frontiers drawn.

Quality is counted by question, as everywhere in the lab: a question asked in several phrasings
counts once, with the share of its phrasings that hit. Configurations are compared on the
questions every one of them was asked.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from rag_assets import stats
from rag_assets.evaluation.comparisons import paired, with_holm
from rag_assets.evaluation.metrics import KS
from rag_assets.evaluation.plots import png_bytes, pyplot
from rag_assets.experiment import evaluate
from rag_assets.ingest.ground_truth import drafted_warning
from rag_assets.report import Report, table_markdown

# what every row of a configuration carries alike, copied to its leaderboard row
CARRIED = (
    "build_seconds",
    "index_endpoint_calls",
    "query_endpoint_calls",
    "query_endpoint_tokens",
    "index_cost_usd",
    "cost_per_1k_queries_usd",
)
RESAMPLES = 1000  # bootstrap draws of the question set for the rank intervals
PLOT_NAME = "experiment_frontiers.png"
COLUMNS = [
    "rank",
    "config",
    "chunker_arm",
    "embedder_arm",
    "retriever_arm",
    "reranker_arm",
    "score",
    "score_low",
    "score_high",
    *[f"recall_{k}" for k in KS],
    "mrr",
    "mrr_low",
    "mrr_high",
    "ndcg_10",
    "ndcg_10_low",
    "ndcg_10_high",
    "rank_low",
    "rank_high",
    "wins_vs_best",
    "losses_vs_best",
    "p_vs_best",
    "p_holm_vs_best",
    "worse_than_best",
    "latency_p50_ms",
    "latency_p95_ms",
    "index_mb",
    *CARRIED,
    "on_latency_frontier",
    "on_cost_frontier",
    "n_questions",
    "fingerprint",
    "settings",
]


def per_question(rows: pd.DataFrame, metric: str, k: int) -> pd.Series:
    """Each question's value of `metric` (recall, mrr, ndcg) at k: the mean over its phrasings."""
    ranks = rows["hit_rank"].astype("Float64")
    if metric == "recall":
        value = (ranks.fillna(k + 1) <= k).astype(float)
    elif metric == "mrr":
        value = (1.0 / ranks).fillna(0.0).astype(float)
    else:
        value = rows["ndcg_10"].astype(float)
    return value.groupby(rows["question_id"]).mean()


def _interval(values: pd.Series, one_query_each: bool, metric: str) -> tuple[float, float]:
    if metric == "recall":
        low, high, _, _ = stats.interval_of_shares(values, one_query_each)
        return low, high
    return stats.bootstrap_mean_ci(values.to_numpy())


def frontier(quality: pd.Series, cost: pd.Series) -> pd.Series:
    """True for configurations no other beats on both: at least as good and at most as costly,
    strictly better on one (NaN costs are never on it)."""
    on = pd.Series(False, index=quality.index)
    for c in quality.index:
        if pd.isna(cost[c]):
            continue
        others = quality.index[(quality.index != c) & cost.notna()]
        dominated = (
            (quality[others] >= quality[c])
            & (cost[others] <= cost[c])
            & ((quality[others] > quality[c]) | (cost[others] < cost[c]))
        ).any()
        on[c] = not dominated
    return on


def rank_intervals(values: pd.DataFrame, seed: int = 0) -> tuple[pd.Series, pd.Series]:
    """95 % percentile intervals of each configuration's rank (1 = best) when the questions are
    drawn again with replacement (`values`: questions x configurations)."""
    rng = np.random.default_rng(seed)
    matrix = values.to_numpy()
    draws = rng.integers(0, len(matrix), size=(RESAMPLES, len(matrix)))
    means = matrix[draws].mean(axis=1)  # RESAMPLES x configurations
    ranks = rankdata(-means, axis=1, method="min")
    low = np.percentile(ranks, 2.5, axis=0, method="lower")
    high = np.percentile(ranks, 97.5, axis=0, method="higher")
    return pd.Series(low.astype(int), index=values.columns), pd.Series(high.astype(int), index=values.columns)


def rank(tables: dict[str, pd.DataFrame], rank_by: tuple[str, int], failed: dict[str, str] | None = None) -> Report:
    """The leaderboard of the configurations' per-query rows (`tables`: config id -> rows), ranked
    by `rank_by` (metric, k); `failed` lists the configurations without rows and why."""
    metric, k = rank_by
    failed = failed or {}
    tables = {c: t for c, t in tables.items() if len(t)}
    if not tables:
        markdown = "# Experiment leaderboard\n\nNo configuration has results yet.\n" + _failed(failed)
        return Report("experiment_leaderboard", markdown, pd.DataFrame(columns=COLUMNS), None, PLOT_NAME, {})
    common = set.intersection(*(set(t["question_id"]) for t in tables.values()))
    rows = {c: t[t["question_id"].isin(common)] for c, t in tables.items()}
    scores = pd.DataFrame({c: per_question(r, metric, k) for c, r in rows.items()}).sort_index()
    best = scores.mean().idxmax()
    low, high = rank_intervals(scores)
    tests = with_holm(
        pd.DataFrame([{"config": c, **paired(scores[c], scores[best])} for c in scores.columns if c != best])
        if len(scores.columns) > 1
        else pd.DataFrame(columns=["config", "wins", "losses", "p_value"])
    ).set_index("config")
    board = []
    for c, r in rows.items():
        first = r.iloc[0]
        one_each = r.groupby("question_id").size().max() == 1
        s = json.loads(first["settings"])
        mrr, ndcg = per_question(r, "mrr", k), per_question(r, "ndcg", k)
        latency = evaluate.latency(r)
        entry = {
            "config": c,
            **{
                f"{axis}_arm": s.get(axis + "s", {}).get("name", "-")
                for axis in ("chunker", "embedder", "retriever", "reranker")
            },
            "score": scores[c].mean(),
            **dict(zip(("score_low", "score_high"), _interval(scores[c], one_each, metric))),
            **{f"recall_{kk}": per_question(r, "recall", kk).mean() for kk in KS},
            "mrr": mrr.mean(),
            **dict(zip(("mrr_low", "mrr_high"), _interval(mrr, one_each, "mrr"))),
            "ndcg_10": ndcg.mean(),
            **dict(zip(("ndcg_10_low", "ndcg_10_high"), _interval(ndcg, one_each, "ndcg"))),
            "rank_low": int(low[c]),
            "rank_high": int(high[c]),
            "wins_vs_best": int(tests["wins"][c]) if c in tests.index else None,
            "losses_vs_best": int(tests["losses"][c]) if c in tests.index else None,
            "p_vs_best": float(tests["p_value"][c]) if c in tests.index else None,
            "p_holm_vs_best": float(tests["p_holm"][c]) if c in tests.index else None,
            "worse_than_best": bool(c in tests.index and tests["p_holm"][c] < stats.ALPHA),
            "latency_p50_ms": stats.percentiles(latency).get("p50"),
            "latency_p95_ms": stats.percentiles(latency).get("p95"),
            "index_mb": first["index_bytes"] / 2**20,
            **{key: first[key] for key in (*CARRIED, "fingerprint", "settings")},
            "n_questions": len(common),
        }
        board.append(entry)
    table = pd.DataFrame(board).sort_values(["score", "config"], ascending=[False, True], ignore_index=True)
    table["rank"] = rankdata(-table["score"].to_numpy(), method="min").astype(int)
    quality = table.set_index("config")["score"]
    table["on_latency_frontier"] = frontier(
        quality, table.set_index("config")["latency_p95_ms"].astype(float)
    ).to_numpy()
    table["on_cost_frontier"] = frontier(
        quality, table.set_index("config")["cost_per_1k_queries_usd"].astype(float)
    ).to_numpy()
    table = table[COLUMNS]
    origins = sorted({t["question_origin"].iloc[0] for t in tables.values()})
    plot = frontier_png(table, f"{metric}@{k}")
    markdown = render(table, f"{metric}@{k}", origins, failed, plot is not None)
    figures = {
        "configurations": len(table),
        "failed": len(failed),
        "best": best,
        "rank_by": f"{metric}@{k}",
        "questions": len(common),
        "question_origin": "; ".join(origins),
    }
    return Report("experiment_leaderboard", markdown, table, plot, PLOT_NAME, figures)


def frontier_png(table: pd.DataFrame, label: str) -> bytes | None:
    """Quality against p95 latency and, with prices, against cost per 1,000 questions; the frontier
    drawn and named (the other configurations are in the tables)."""
    from matplotlib.ticker import FormatStrFormatter, MaxNLocator

    plt = pyplot()
    priced = table["cost_per_1k_queries_usd"].notna().any()
    fig, axes = plt.subplots(1, 2 if priced else 1, figsize=(12 if priced else 7, 5), squeeze=False)
    panels = [("latency_p95_ms", "p95 query latency (ms, measured here)", "on_latency_frontier")]
    if priced:
        panels.append(("cost_per_1k_queries_usd", "$ per 1,000 questions (from the file's prices)", "on_cost_frontier"))
    for ax, (column, xlabel, on) in zip(axes[0], panels):
        shown = table[table[column].notna()]
        ax.scatter(shown[column].astype(float), shown["score"], color="#999", label="configuration")
        edge = shown[shown[on]].sort_values(column)
        ax.plot(edge[column].astype(float), edge["score"], "o-", color="#c0392b", label="frontier")
        for r in edge.itertuples():
            ax.annotate(
                r.config, (float(getattr(r, column)), r.score), fontsize=7, xytext=(4, -10), textcoords="offset points"
            )
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%.3g"))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        ax.legend(loc="best")
    return png_bytes(fig)


def _failed(failed: dict[str, str]) -> str:
    if not failed:
        return ""
    lines = "\n".join(f"- `{c}`: {why}" for c, why in sorted(failed.items()))
    return f"\n## Configurations without results\n\n{lines}\n"


def _between(value, low, high) -> str:
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def _quality_view(table: pd.DataFrame, label: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rank": table["rank"],
            "config": table["config"],
            label: [_between(*v) for v in zip(table["score"], table["score_low"], table["score_high"])],
            "rank interval": [f"{a}-{b}" for a, b in zip(table["rank_low"], table["rank_high"])],
            "MRR": [_between(*v) for v in zip(table["mrr"], table["mrr_low"], table["mrr_high"])],
            "nDCG@10": [_between(*v) for v in zip(table["ndcg_10"], table["ndcg_10_low"], table["ndcg_10_high"])],
            "p (Holm) vs best": ["" if pd.isna(p) else f"{p:.3g}" for p in table["p_holm_vs_best"]],
            "worse than best": ["yes" if w else "" for w in table["worse_than_best"]],
        }
    )


def _cost_view(table: pd.DataFrame) -> pd.DataFrame:
    def money(v):
        return "no price given" if v is None or pd.isna(v) else f"{v:.3g}"

    return pd.DataFrame(
        {
            "config": table["config"],
            "p50 / p95 ms": [f"{a:.1f} / {b:.1f}" for a, b in zip(table["latency_p50_ms"], table["latency_p95_ms"])],
            "index MB": table["index_mb"].round(2).astype(str),
            "build s": table["build_seconds"].round(1).astype(str),
            "endpoint calls (index / queries)": [
                f"{int(a)} / {int(b)}" for a, b in zip(table["index_endpoint_calls"], table["query_endpoint_calls"])
            ],
            "$ index": [money(v) for v in table["index_cost_usd"]],
            "$ per 1k queries": [money(v) for v in table["cost_per_1k_queries_usd"]],
            "frontier": [
                ", ".join(n for n, on in (("latency", a), ("cost", b)) if on)
                for a, b in zip(table["on_latency_frontier"], table["on_cost_frontier"])
            ],
        }
    )


def render(table: pd.DataFrame, label: str, origins: list[str], failed: dict[str, str], plotted: bool) -> str:
    warning = "".join(f"\n> **{drafted_warning(o)}**\n" for o in origins if drafted_warning(o))
    best = table.iloc[0]
    worse = int(table["worse_than_best"].sum())
    lines = [
        "# Experiment leaderboard",
        "",
        f"Ranked by {label} (95 % intervals; ranks with 95 % bootstrap intervals over questions), on "
        f"{int(best['n_questions'])} questions, each counted once. Questions: {'; '.join(origins)}.",
        warning,
        f"Best: `{best['config']}` at {best['score']:.3f}. {worse} of {len(table) - 1} others are worse than it "
        f"(paired sign test by question, Holm over the family, α = {stats.ALPHA}); the rest cannot be told "
        "apart from it on these questions.",
        "",
        "## Quality",
        "",
        table_markdown(_quality_view(table, label), rows=len(table)),
        "",
        "## Latency, size and cost",
        "",
        table_markdown(_cost_view(table), rows=len(table)),
    ]
    if plotted:
        lines += ["", f"![quality against latency and cost; the frontier in red]({PLOT_NAME})"]
    return "\n".join(lines) + "\n" + _failed(failed)
