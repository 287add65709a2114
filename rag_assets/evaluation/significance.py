"""The significance report: the systems compared paired by question (`compare_systems`), as
Markdown tables, a recall@k plot, and plain sentences that are generated from the numbers (never
written by hand), so they change when the numbers do."""

from __future__ import annotations

import pandas as pd

from rag_assets.evaluation import comparisons
from rag_assets.evaluation.comparisons import MODEL_RETRIEVERS
from rag_assets.evaluation.metrics import KS
from rag_assets.evaluation.plots import PLOT_DPI, png_bytes, pyplot
from rag_assets.evaluation.provenance import of_table as provenance_of_table
from rag_assets.evaluation.retrieval_run import retriever_name
from rag_assets.ingest.ground_truth import drafted_warning, origin_figures
from rag_assets.report import Report
from rag_assets.stats import ALPHA


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def recall_table(metrics: pd.DataFrame) -> str:
    """strategy x retriever rows: R@k [95 % interval] and MRR, over n questions."""
    rec = metrics[metrics["metric"] == "recall"]
    single = {
        m: metrics[metrics["metric"] == m].set_index(["strategy", "retriever"]) for m in ("mrr", "ndcg", "doc_recall")
    }
    extra = [m for m in ("ndcg", "doc_recall") if len(single[m])]  # document-level data sets only
    titles = {"ndcg": "nDCG@10", "doc_recall": "R@100 (documents)"}
    lines = [
        "| strategy | retriever | "
        + " | ".join([f"R@{k}" for k in KS] + ["MRR"] + [titles[m] for m in extra])
        + " | n |",
        "|---|---|" + "---|" * (len(KS) + 2 + len(extra)),
    ]
    for (s, r), g in rec.groupby(["strategy", "retriever"], sort=True):
        g = g.set_index("k")
        cells = [f"{g.at[k, 'value']:.3f} [{g.at[k, 'ci_low']:.3f}, {g.at[k, 'ci_high']:.3f}]" for k in KS]
        cells += [f"{single[m].loc[(s, r), 'value']:.3f}" for m in ["mrr", *extra]]
        lines.append(f"| {s} | {r} | " + " | ".join(cells) + f" | {int(single['mrr'].loc[(s, r), 'n_questions'])} |")
    return "\n".join(lines)


def significance_table(tests: pd.DataFrame) -> str:
    lines = ["| comparison | k | wins | losses | R@k a | R@k b | p | p (Holm) |", "|---|---|---|---|---|---|---|---|"]
    for t in tests.itertuples():
        holm = f"**{_fmt_p(t.p_holm)}**" if t.p_holm < ALPHA else _fmt_p(t.p_holm)
        lines.append(
            f"| {t.comparison} | {t.k} | +{t.wins} | −{t.losses} | {t.recall_a:.3f} | {t.recall_b:.3f} | "
            f"{_fmt_p(t.p_value)} | {holm} |"
        )
    return "\n".join(lines)


def verdict(rows: pd.DataFrame) -> str:
    """One comparison over every k: where the difference is significant after Holm (direction,
    wins and losses in questions, Holm p), or that it is significant at no k."""
    first = rows.iloc[0]
    significant = rows[rows["p_holm"] < ALPHA]
    name = f"{first.a} vs {first.b}"
    if significant.empty:
        best = (
            rows.assign(discordant=rows["wins"] + rows["losses"])
            .sort_values(["p_holm", "discordant"], ascending=[True, False], kind="stable")
            .iloc[0]
        )
        return (
            f"{name}: significant at no k after Holm (closest: R@{best.k}, +{best.wins}/−{best.losses}, "
            f"Holm p = {_fmt_p(best.p_holm)})."
        )
    parts = [
        f"R@{t.k} ({'wins' if t.wins > t.losses else 'loses'} +{t.wins}/−{t.losses}, Holm p = {_fmt_p(t.p_holm)})"
        for t in significant.itertuples()
    ]
    rest = [f"R@{k}" for k in rows["k"] if k not in set(significant["k"])]
    return f"{name}: significant at {', '.join(parts)}" + (f"; not at {', '.join(rest)}." if rest else ".")


def headlines(tests: pd.DataFrame, destroyed: dict[str, int], answerable: int) -> list[str]:
    """The chapter's questions, answered from this run's numbers at every k; comparisons are
    found by id; wins and losses count questions."""
    out = []
    by_id = {c: g for c, g in tests.groupby("comparison_id", sort=False)}
    present = lambda ids: [c for c in by_id if c in ids]  # noqa: E731  (in the table's order)
    ingredients = present(["overlap_on_blind", "boundaries_vs_blind", "header_on_boundaries"])
    if ingredients:
        buys = []
        for c in ingredients:
            wins = by_id[c][(by_id[c]["p_holm"] < ALPHA) & (by_id[c]["wins"] > by_id[c]["losses"])]
            if len(wins):
                buys.append(
                    f"{by_id[c]['comparison'].iloc[0].split(':')[0]} (at {', '.join(f'R@{k}' for k in wins['k'])})"
                )
        out.append(
            "**Which ingredient buys recall?** "
            + (
                f"After Holm correction: {'; '.join(buys)}."
                if buys
                else "No single ingredient wins significantly at any k after Holm correction."
            )
            + " "
            + " ".join(verdict(by_id[c]) for c in ingredients)
        )
    if present(["hybrid_vs_dense"]):
        out.append("**Does hybrid beat dense?** " + verdict(by_id["hybrid_vs_dense"]))
    if {"A", "B"} <= destroyed.keys() and present(["overlap_on_blind"]):
        cost = present(["overlap_on_header", "overlap_on_boundaries", "overlap_on_blind"])
        out.append(
            f"**What does overlap cost and buy?** It rescues split answers: blind cuts destroy {destroyed['A']} of "
            f"{answerable} answers, blind cuts with overlap {destroyed['B']}"
            + (
                f"; boundaries {destroyed.get('C', 0)}, boundaries with overlap {destroyed.get('D', 0)}."
                if "C" in destroyed
                else "."
            )
            + " On ranking: "
            + " ".join(verdict(by_id[c]) for c in cost)
        )
    return out


def _recall_at(metrics: pd.DataFrame, k: int) -> pd.Series:
    """R@k by (strategy, retriever)."""
    return metrics[(metrics["metric"] == "recall") & (metrics["k"] == k)].set_index(["strategy", "retriever"])["value"]


def _ranked_models(recall: pd.Series, strategy: str, base: str, models: list[str]) -> list[tuple[str, float]]:
    """(model, R@k) of each model run on `strategy` under `base`, best first; a tie in the order the
    models were named."""
    found = [(m, (strategy, retriever_name(base, m, models[0]))) for m in models]
    scored = [(m, float(recall[system])) for m, system in found if system in recall.index]
    return sorted(scored, key=lambda pair: (-pair[1], models.index(pair[0])))


def _model_pairs(tests: pd.DataFrame, base: str, strategy: str) -> list[pd.DataFrame]:
    """The model comparisons of one strategy and retriever, each as its rows over every k."""
    groups = tests.groupby("comparison_id", sort=False)
    return [rows for cid, rows in groups if cid.startswith(f"models_{base}_{strategy}_")]


def model_headlines(metrics: pd.DataFrame, tests: pd.DataFrame, models: list[str], k: int = 4) -> list[str]:
    """Which embedding model, per retriever, on strategy E (the first strategy when E did not run):
    the first by R@k, and where it differs from each other model."""
    if len(models) < 2 or tests.empty:
        return []
    recall = _recall_at(metrics, k)
    strategies = sorted(set(metrics["strategy"]))
    strategy = "E" if "E" in strategies else strategies[0]
    out = []
    for base in MODEL_RETRIEVERS:
        ranked = _ranked_models(recall, strategy, base, models)
        if len(ranked) < 2:
            continue
        best, value = ranked[0]
        system = f"{strategy}/{retriever_name(base, best, models[0])}"
        verdicts = [
            verdict(rows)
            for rows in _model_pairs(tests, base, strategy)
            if system in (rows["a"].iloc[0], rows["b"].iloc[0])
        ]
        out.append(
            f"**Which embedding model ({base}, strategy {strategy})?** {best} ranks first at R@{k} "
            f"({value:.3f}). " + " ".join(verdicts)
        )
    return out


def models_section(metrics: pd.DataFrame, tests: pd.DataFrame, models: list[str], k: int = 4) -> list[str]:
    """The embedding models ranked per strategy and retriever by R@k, each pair's verdict over
    every k (its own Holm family), and the pairs this corpus cannot tell apart."""
    if len(models) < 2:
        return []
    recall = _recall_at(metrics, k)
    lines, alike = [f"## Embedding models ({', '.join(models)}; `dense` and `hybrid` are {models[0]}'s)", ""], []
    for strategy in sorted(set(metrics["strategy"])):
        for base in MODEL_RETRIEVERS:
            ranked = _ranked_models(recall, strategy, base, models)
            if len(ranked) < 2:
                continue
            order = f"{ranked[0][0]} {ranked[0][1]:.3f}" + "".join(
                f" {'>' if v < before else '='} {m} {v:.3f}" for (_, before), (m, v) in zip(ranked, ranked[1:])
            )
            lines.append(f"- **{base}, strategy {strategy}**, by R@{k}: {order}.")
            for rows in _model_pairs(tests, base, strategy):
                lines.append(f"  - {verdict(rows)}")
                if (rows["p_holm"] >= ALPHA).all():
                    alike.append(rows["comparison"].iloc[0])
    lines += ["", "Pairs this corpus cannot tell apart (significant at no k after Holm):"]
    lines += [f"- {c}" for c in alike] or ["- none"]
    return lines + ["", "### Their sign tests", "", significance_table(tests)]


PLOT_MAX_PX = 960  # the widest a plot may be: the UI shows Markdown metadata in a 1024-px dialog


def recall_plot_png(metrics: pd.DataFrame) -> bytes | None:
    """The recall figure as PNG; None when there is no recall to plot."""
    fig = recall_figure(metrics)
    return None if fig is None else png_bytes(fig)


def recall_figure(metrics: pd.DataFrame, retrievers: list[str] | None = None):
    """Recall@k curves per strategy, one panel per retriever (two panels a row), 95 % intervals
    as bands, and one legend naming every strategy with the same colour in every panel; at
    most PLOT_MAX_PX wide. None when there is no recall to plot."""
    plt = pyplot()
    rec = metrics[metrics["metric"] == "recall"]
    if rec.empty:
        return None
    retrievers = retrievers or sorted(rec["retriever"].unique())
    strategies = sorted(rec["strategy"].unique())
    colours = dict(zip(strategies, plt.get_cmap("tab10").colors * 2))
    columns = min(2, len(retrievers))
    rows = -(-len(retrievers) // columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(PLOT_MAX_PX / PLOT_DPI - 0.3, 3.3 * rows + 0.6), sharey=True, squeeze=False
    )
    for ax, retriever in zip(axes.flat, retrievers):
        for strategy, g in rec[rec["retriever"] == retriever].groupby("strategy", sort=True):
            g = g.sort_values("k")
            ks = g["k"].astype(int).to_numpy()
            ax.plot(ks, g["value"], marker="o", color=colours[strategy], label=strategy)
            ax.fill_between(
                ks, g["ci_low"].astype(float), g["ci_high"].astype(float), color=colours[strategy], alpha=0.12
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(KS), [str(k) for k in KS])
        ax.set_title(retriever)
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(retrievers) :]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], color=colours[s], marker="o", label=s) for s in strategies]
    fig.legend(
        handles=handles,
        title="strategy",
        loc="lower center",
        ncol=min(len(strategies), 8),
        fontsize=8,
        title_fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.12 / rows, 1, 1))
    return fig


PLOT_NAME = "recall_at_k.png"


def compare_systems(query_hits: pd.DataFrame, metrics: pd.DataFrame, models: list[str]) -> Report:
    """Paired sign tests by question for the chapter's comparisons (one Holm family) and, with
    several embedding models, every pair of models per strategy under dense and hybrid retrieval
    (another): the table (`family` column), the report with its recall plot, and its figures."""
    tests, skipped = comparisons.paired_tests(query_hits, comparisons.default_comparisons())
    strategies = sorted(set(query_hits["strategy"]))
    model_tests, model_skipped = comparisons.paired_tests(query_hits, comparisons.model_comparisons(models, strategies))
    skipped += model_skipped
    destroyed = (
        metrics[metrics["metric"] == "answers_destroyed"]
        .drop_duplicates("strategy")
        .set_index("strategy")["value"]
        .astype(int)
        .to_dict()
    )
    provenance = provenance_of_table(metrics)
    png = recall_plot_png(metrics)
    markdown = render(
        metrics,
        tests,
        skipped=skipped,
        destroyed=destroyed,
        answerable=int(query_hits["question_id"].nunique()),
        provenance=provenance,
        image=PLOT_NAME if png else None,
        model_tests=model_tests,
        models=models,
    )
    table = pd.concat([tests.assign(family="chapter"), model_tests.assign(family="models")], ignore_index=True)
    figures = {**origin_figures(str(provenance.get("question_origin"))), "models": models, "not_compared": skipped}
    return Report("significance_report", markdown, table, png, PLOT_NAME, figures)


def render(
    metrics: pd.DataFrame,
    tests: pd.DataFrame,
    *,
    skipped: list[str],
    destroyed: dict[str, int],
    answerable: int,
    provenance: dict,
    image: str | None,
    model_tests: pd.DataFrame | None = None,
    models: list[str] | None = None,
) -> str:
    """The whole report as Markdown; `image` is the plot's link (file name or data URI), None
    when nothing was evaluated; `model_tests` compare the embedding `models` (several only)."""
    warning = drafted_warning(provenance.get("question_origin"))
    parts = [
        "# Retrieval evaluation and significance",
        "",
        *([f"> **{warning}**", ""] if warning else []),
        *[f"- {k}: `{v}`" for k, v in provenance.items()],
        "",
        "## Headlines",
        "",
        *(
            [
                f"- {h}"
                for h in headlines(tests, destroyed, answerable)
                + (model_headlines(metrics, model_tests, models) if model_tests is not None and models else [])
            ]
            or ["- None: the systems these questions compare were not run (see below)."]
        ),
        "",
        "## Recall@k with 95 % intervals, by question",
        "",
        "A hit is a returned chunk whose embedded text holds the whole needle (document-level data sets: any chunk "
        "of a relevant document). Every figure counts questions: a question with several phrasings scores the "
        "share of them that hit. Intervals are Wilson's when each question has one phrasing, a bootstrap over "
        "questions otherwise; MRR is over the 100-deep list, with a bootstrap interval in `evaluation_tables`.",
        "",
        recall_table(metrics) if image else "No results: no answerable query was retrieved (no chunk, or no question).",
        "",
        f"![recall@k]({image})" if image else "",
        "",
        "## Paired exact sign tests (wins/losses are questions; bold: Holm p < 0.05)",
        "",
        f"Holm families: the {len(tests)} tests of this table are one (`chapter`)"
        + ("; the model pairs below are another (`models`)." if model_tests is not None and models else "."),
        "",
        significance_table(tests),
    ]
    if skipped:
        parts += ["", "Not compared:", *[f"- {s}" for s in skipped]]
    if model_tests is not None and models:
        parts += ["", *models_section(metrics, model_tests, models)]
    return "\n".join(parts) + "\n"
