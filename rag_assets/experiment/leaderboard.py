"""Every configuration of an experiment ranked: quality with intervals, recall within a token budget,
latency, size and cost, each compared with the best paired by question (Holm over the family), how
sure the ranking is (bootstrap intervals on ranks), and the quality-latency and quality-cost
frontiers drawn.

Quality is counted by question, as everywhere in the lab: a question asked in several phrasings
counts once, with the share of its phrasings that hit. Configurations are compared on the
questions every one of them was asked.

"Worse than the best" is not tested on the questions the best was chosen on: a best picked on the
same questions is favoured by its luck there, and identical configurations would then be called
worse far more often than α says (bench/leaderboard_selection.py measures it). The questions are
split in two by a seeded draw: the best is chosen on one half and every other configuration is
tested against it on the other; the figures shown are on all questions. Ties in choosing are
broken by configuration id, and the report names the one tested against.
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
from rag_assets.ingest.ground_truth import drafted_warning
from rag_assets.report import Report, table_markdown

# what every row of a configuration carries alike, copied to its leaderboard row
CARRIED = (
    "build_seconds",
    "index_endpoint_calls",
    "query_endpoint_calls",
    "query_endpoint_tokens",
    "token_count_source",
    "index_cost_usd",
    "cost_per_1k_queries_usd",
    "chunks",
    "passage_tokens_mean",
    "chunks_over_window",
    "encoder_window",
    "chunk_set",
    "load_before",
    "load_after",
)
RESAMPLES = 1000  # bootstrap draws of the question set for the rank intervals
SPLIT_SEED = 7  # the draw that splits the questions into the half that chooses the best and the half that tests
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
    "recall_budget",
    "recall_budget_low",
    "recall_budget_high",
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
    "same_chunks_as",
    "on_latency_frontier",
    "on_cost_frontier",
    "n_questions",
    "n_tested",
    "fingerprint",
    "settings",
]


def per_question(rows: pd.DataFrame, metric: str, k: int) -> pd.Series:
    """Each question's value of `metric` (recall, mrr, ndcg, budget: a hit within the token
    budget) at k: the mean over its phrasings."""
    ranks = rows["hit_rank"].astype("Float64")
    if metric == "recall":
        value = (ranks.fillna(k + 1) <= k).astype(float)
    elif metric == "mrr":
        value = (1.0 / ranks).fillna(0.0).astype(float)
    elif metric == "budget":
        value = rows["budget_hit"].astype(float)
    else:
        value = rows["ndcg_10"].astype(float)
    return value.groupby(rows["question_id"]).mean()


def split_questions(questions: pd.Index, seed: int = SPLIT_SEED) -> tuple[pd.Index, pd.Index]:
    """(the half that chooses the best, the half that tests against it): a seeded draw."""
    order = np.random.default_rng(seed).permutation(len(questions))
    half = len(questions) // 2
    return questions[np.sort(order[:half])], questions[np.sort(order[half:])]


def against_best(scores: pd.DataFrame, seed: int = SPLIT_SEED) -> tuple[str, pd.DataFrame]:
    """(the best, chosen on one half of the questions: highest mean, ties to the smallest id;
    every other configuration tested against it on the other half, paired by question, Holm over
    the family: a table of config, wins, losses, p_value, p_holm)."""
    choose, test = split_questions(scores.index, seed)
    means = scores.loc[choose].mean()
    best = sorted(means.index, key=lambda c: (-means[c], c))[0]
    rows = [{"config": c, **paired(scores.loc[test, c], scores.loc[test, best])} for c in scores.columns if c != best]
    table = pd.DataFrame(rows, columns=["config", "wins", "losses", "p_value"])
    table.attrs["tested"] = len(test)
    return best, with_holm(table).set_index("config")


def same_chunks(chunk_sets: dict[str, str]) -> dict[str, str]:
    """chunker arm -> the other chunker arms that made the identical chunk set (same spans, same
    texts), for every arm of `chunk_sets` (arm -> its chunk set's fingerprint)."""
    return {
        arm: ", ".join(sorted(o for o, f in chunk_sets.items() if f == fingerprint and o != arm))
        for arm, fingerprint in chunk_sets.items()
    }


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


def latency(rows: pd.DataFrame) -> pd.Series:
    """A query's latency as a user meets it, where it was timed (encoding alone, search, rerank)."""
    return rows["latency_ms"].dropna()


def rank(
    tables: dict[str, pd.DataFrame],
    rank_by: tuple[str, int],
    failed: dict[str, str] | None = None,
    token_budget: int | None = None,
) -> Report:
    """The leaderboard of the configurations' per-query rows (`tables`: config id -> rows), ranked
    by `rank_by` (metric, k); `failed` lists the configurations not ranked and why."""
    metric, k = rank_by
    failed = failed or {}
    tables = {c: t for c, t in tables.items() if len(t)}
    if not tables:
        markdown = "# Experiment leaderboard\n\nNo configuration has results yet.\n" + _failed(failed)
        return Report("experiment_leaderboard", markdown, pd.DataFrame(columns=COLUMNS), None, PLOT_NAME, {})
    common = set.intersection(*(set(t["question_id"]) for t in tables.values()))
    rows = {c: t[t["question_id"].isin(common)] for c, t in tables.items()}
    scores = pd.DataFrame({c: per_question(r, metric, k) for c, r in rows.items()}).sort_index()
    best, tests = against_best(scores)
    low, high = rank_intervals(scores)
    arms = {c: json.loads(r["settings"].iloc[0])["chunkers"]["name"] for c, r in rows.items()}
    twins = same_chunks({arms[c]: r["chunk_set"].iloc[0] for c, r in rows.items()})
    board = []
    for c, r in rows.items():
        first = r.iloc[0]
        one_each = r.groupby("question_id").size().max() == 1
        s = json.loads(first["settings"])
        mrr, ndcg, budget = per_question(r, "mrr", k), per_question(r, "ndcg", k), per_question(r, "budget", k)
        timed = latency(r)
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
            "recall_budget": budget.mean(),
            **dict(zip(("recall_budget_low", "recall_budget_high"), _interval(budget, one_each, "recall"))),
            "rank_low": int(low[c]),
            "rank_high": int(high[c]),
            "wins_vs_best": int(tests["wins"][c]) if c in tests.index else None,
            "losses_vs_best": int(tests["losses"][c]) if c in tests.index else None,
            "p_vs_best": float(tests["p_value"][c]) if c in tests.index else None,
            "p_holm_vs_best": float(tests["p_holm"][c]) if c in tests.index else None,
            "worse_than_best": bool(
                c in tests.index and tests["p_holm"][c] < stats.ALPHA and tests["losses"][c] > tests["wins"][c]
            ),
            "latency_p50_ms": stats.percentiles(timed).get("p50"),
            "latency_p95_ms": stats.percentiles(timed).get("p95"),
            "index_mb": first["index_bytes"] / 2**20,
            **{key: first[key] for key in (*CARRIED, "fingerprint", "settings")},
            "same_chunks_as": twins[arms[c]],
            "n_questions": len(common),
            "n_tested": tests.attrs.get("tested", 0),
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
    markdown = render(table, f"{metric}@{k}", origins, failed, plot is not None, best, token_budget)
    figures = {
        "configurations": len(table),
        "failed": len(failed),
        "best": best,
        "ranked_first": table["config"].iloc[0],
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


def _quality_view(table: pd.DataFrame, label: str, token_budget: int | None) -> pd.DataFrame:
    budget = f"recall within {token_budget:,} tokens" if token_budget else "recall within the budget"
    return pd.DataFrame(
        {
            "rank": table["rank"],
            "config": table["config"],
            label: [_between(*v) for v in zip(table["score"], table["score_low"], table["score_high"])],
            "rank interval": [f"{a}-{b}" for a, b in zip(table["rank_low"], table["rank_high"])],
            "MRR": [_between(*v) for v in zip(table["mrr"], table["mrr_low"], table["mrr_high"])],
            "nDCG@10": [_between(*v) for v in zip(table["ndcg_10"], table["ndcg_10_low"], table["ndcg_10_high"])],
            budget: [
                _between(*v)
                for v in zip(table["recall_budget"], table["recall_budget_low"], table["recall_budget_high"])
            ],
            "vs the best: p (Holm)": [
                "" if pd.isna(p) else f"{p:.3g}" + (", worse" if w else "")
                for p, w in zip(table["p_holm_vs_best"], table["worse_than_best"])
            ],
        }
    )


def _cost_view(table: pd.DataFrame) -> pd.DataFrame:
    def money(v):
        return "no price given" if v is None or pd.isna(v) else f"{v:.3g}"

    return pd.DataFrame(
        {
            "config": table["config"],
            "p50 / p95 ms": [f"{a:.1f} / {b:.1f}" for a, b in zip(table["latency_p50_ms"], table["latency_p95_ms"])],
            "load (1 min)": [f"{a:.2f} / {b:.2f}" for a, b in zip(table["load_before"], table["load_after"])],
            "index MB": table["index_mb"].round(2).astype(str),
            "build s": table["build_seconds"].round(1).astype(str),
            "endpoint calls (index / queries)": [
                f"{int(a)} / {int(b)}" for a, b in zip(table["index_endpoint_calls"], table["query_endpoint_calls"])
            ],
            "$ index": [money(v) for v in table["index_cost_usd"]],
            "$ per 1k queries": [money(v) for v in table["cost_per_1k_queries_usd"]],
        }
    )


def _chunk_view(table: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "config": table["config"],
            "passage tokens (mean)": table["passage_tokens_mean"].round(0).astype(int).astype(str),
            "chunks over the window": [
                "n/a" if pd.isna(w) else f"{int(o)} of {int(n)} over {int(w)}"
                for o, w, n in zip(table["chunks_over_window"], table["encoder_window"], table["chunks"])
            ],
            "same chunks as": table["same_chunks_as"],
            "frontier": [
                ", ".join(n for n, on in (("latency", a), ("cost", b)) if on)
                for a, b in zip(table["on_latency_frontier"], table["on_cost_frontier"])
            ],
            "tokens counted": table["token_count_source"],
        }
    )


def render(
    table: pd.DataFrame,
    label: str,
    origins: list[str],
    failed: dict[str, str],
    plotted: bool,
    best: str,
    token_budget: int | None,
) -> str:
    warning = "".join(f"\n> **{drafted_warning(o)}**\n" for o in origins if drafted_warning(o))
    first, chosen = table.iloc[0], table.set_index("config").loc[best]
    worse = int(table["worse_than_best"].sum())
    tied = table[table["score"] == first["score"]]["config"].tolist()
    twins = sorted(
        {", ".join(sorted([c, *t.split(", ")])) for c, t in zip(table["config"], table["same_chunks_as"]) if t}
    )
    lines = [
        "# Experiment leaderboard",
        "",
        f"Ranked by {label} (95 % intervals; ranks with 95 % bootstrap intervals over questions), on "
        f"{int(first['n_questions'])} questions, each counted once. Questions: {'; '.join(origins)}.",
        warning,
        f"Ranked first: {', '.join(f'`{c}`' for c in tied)} at {first['score']:.3f}"
        + (" (tied)" if len(tied) > 1 else "")
        + f". Tested against: `{best}` ({chosen['score']:.3f}), the best on half the questions (ties to the "
        f"first id); {worse} of {len(table) - 1} others are worse than it on the other {int(first['n_tested'])} "
        f"(paired sign test by question, Holm over the family, α = {stats.ALPHA}); the rest cannot be told apart "
        "from it on these questions.",
        "",
    ]
    if token_budget:
        lines += [
            f"Recall within {token_budget:,} tokens: the needle is quoted by a passage among those taken whole, in "
            "rank order, while their text fits the budget (tokens counted with one tokenizer for every "
            "configuration), so configurations compare at an equal context, whatever their chunk length.",
            "",
        ]
    if twins:
        lines += ["Chunkers that made identical chunk sets (the same spans and texts): " + "; ".join(twins) + ".", ""]
    lines += [
        "## Quality",
        "",
        table_markdown(_quality_view(table, label, token_budget), rows=len(table)),
        "",
        "## Latency, size and cost",
        "",
        "Latency: queries timed one at a time (encoding, search, rerank as measured when scored), after a "
        "warm-up, each the median of several runs; the machine's 1-minute load average before and after.",
        "",
        table_markdown(_cost_view(table), rows=len(table)),
        "",
        "## Chunks, frontiers and token counts",
        "",
        table_markdown(_chunk_view(table), rows=len(table)),
    ]
    if plotted:
        lines += ["", f"![quality against latency and cost; the frontier in red]({PLOT_NAME})"]
    return "\n".join(lines) + "\n" + _failed(failed)
