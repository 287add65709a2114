"""Intervals, tests and metrics against known values: the chapter's own figures and hand cases."""

import math

import numpy as np
import pandas as pd
import pytest

from rag_assets import stats
from rag_assets.evaluation import comparisons, metric_tables, significance
from rag_assets.evaluation.metrics import collapse_to_documents, first_relevant_rank, ndcg_at, recall_at
from rag_assets.retrieval.fusion import rrf


def test_wilson_reproduces_the_chapters_intervals_and_textbook_edges():
    # "R@20 is [0.471, 0.705] for A and [0.718, 0.901] for E" at 64 queries
    assert [round(x, 3) for x in stats.wilson(38, 64)] == [0.471, 0.705]
    assert [round(x, 3) for x in stats.wilson(53, 64)] == [0.718, 0.901]
    assert [round(x, 4) for x in stats.wilson(0, 10)] == [0.0, 0.2775]
    assert [round(x, 4) for x in stats.wilson(10, 10)] == [0.7225, 1.0]
    assert all(math.isnan(x) for x in stats.wilson(0, 0))


@pytest.mark.parametrize(
    "wins,losses,p", [(8, 6, 0.79), (9, 7, 0.80), (18, 3, 0.0015), (12, 2, 0.0129), (10, 3, 0.09), (10, 6, 0.45)]
)
def test_sign_test_reproduces_the_chapters_p_values(wins, losses, p):
    digits = len(str(p).split(".")[1])
    assert round(stats.sign_test(wins, losses), digits) == p
    assert stats.sign_test(wins, losses) == stats.sign_test(losses, wins)


def test_sign_test_edges_and_holm():
    assert stats.sign_test(0, 0) == 1.0
    assert stats.sign_test(5, 0) == pytest.approx(2 / 32)
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = np.array([1, 0.5, 0, 0, 1, 0.25] * 20)
    low, high = stats.bootstrap_mean_ci(values)
    assert (low, high) == stats.bootstrap_mean_ci(values)
    assert low < values.mean() < high


def test_rrf_ties_break_by_best_component_rank_then_id():
    assert rrf([["a", "b"], ["b", "a"]]) == [("a", 1 / 61 + 1 / 62), ("b", 1 / 61 + 1 / 62)]
    # "z" is first in one list; "a" is 62nd in both: equal fused score 1/61, z's best rank wins
    filler = [f"f{i:02d}" for i in range(61)]
    ranked = rrf([["z"] + filler[:60] + ["a"], filler + ["a"]])
    fused, order = dict(ranked), [d for d, _ in ranked]
    assert fused["z"] == fused["a"] == 1 / 61
    assert order.index("z") < order.index("a")
    assert [d for d, _ in rrf([["c", "a"], ["b"]])] == ["b", "c", "a"]  # b, c tie at rank 1: id order


def test_ranks_ndcg_and_recall_by_hand():
    assert first_relevant_rank(["x", "y", "z"], {"z", "q"}) == 3
    assert first_relevant_rank(["x"], {"q"}) is None
    assert ndcg_at(["d1", "d2", "d3"], {"d2": 1, "d4": 1}, 10) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )
    assert ndcg_at(["d3", "d1"], {"d1": 2, "d3": 1}, 10) == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )
    assert ndcg_at(["d1"], {"d1": 0}, 10) == 0.0
    assert recall_at(["d1", "d2"], {"d2": 1, "d4": 2, "d5": 0}, 100) == 0.5
    assert collapse_to_documents(["a::1", "b::1", "a::2"], {"a::1": "a", "a::2": "a", "b::1": "b"}) == ["a", "b"]


def _hits(rows):
    frame = pd.DataFrame(
        rows,
        columns=[
            "query_id",
            "question_id",
            "strategy",
            "retriever",
            "hit_rank",
            "citable_rank",
            "depth",
            "holders",
            "citable_holders",
        ],
    )
    frame["ndcg_10"] = frame["recall_100"] = np.nan
    return frame.astype({"hit_rank": "Int64", "citable_rank": "Int64"})


def test_metric_table_by_hand():
    ranks = [1, 3, None, 10]
    hits = _hits([(f"q{i}", f"q{i}", "C", "dense", r, None, 100, 1, 1) for i, r in enumerate(ranks)])
    table = metric_tables.metric_table(hits, {"C": 1}).set_index(["metric", "k"])
    assert table.loc[("recall", 1), "value"] == 0.25
    assert table.loc[("recall", 4), "value"] == 0.5
    assert table.loc[("recall", 20), "value"] == 0.75
    assert (table.loc[("recall", 4), "ci_low"], table.loc[("recall", 4), "ci_high"]) == pytest.approx(
        stats.wilson(2, 4)
    )
    mrr = table[table.index.get_level_values(0) == "mrr"].iloc[0]
    assert mrr["value"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 10) / 4) and mrr["ci_method"] == "bootstrap by question"
    assert table.loc[("recall", 4), "ci_method"] == "wilson" and table.loc[("recall", 4), "n_questions"] == 4
    assert table[table.index.get_level_values(0) == "citable_recall"]["value"].eq(0).all()
    assert table[table.index.get_level_values(0) == "answers_destroyed"]["value"].iloc[0] == 1


def test_paired_tests_count_discordant_pairs_and_skip_absent_systems():
    a = [1, 1, 5, None, 2]
    b = [None, 3, 1, None, 30]
    rows = [(f"q{i}", f"q{i}", "E", "hybrid", ra, None, 100, 1, 1) for i, ra in enumerate(a)]
    rows += [(f"q{i}", f"q{i}", "E", "dense", rb, None, 100, 1, 1) for i, rb in enumerate(b)]
    chosen = [
        comparisons.Comparison("hd", "h vs d", ("E", "hybrid"), ("E", "dense")),
        comparisons.Comparison("rh", "r vs h", ("E", "rerank"), ("E", "hybrid")),
    ]
    table, skipped = comparisons.paired_tests(_hits(rows), chosen, ks=(1, 4))
    at = table.set_index("k")
    # k=1: a hits q0,q1; b hits q2 -> +2/-1.  k=4: a hits q0,q1,q4; b hits q1,q2 -> +2/-1, one tie hit
    assert (at.at[1, "wins"], at.at[1, "losses"], at.at[4, "wins"], at.at[4, "losses"], at.at[4, "ties_hit"]) == (
        2,
        1,
        2,
        1,
        1,
    )
    assert at.at[1, "p_value"] == stats.sign_test(2, 1)
    assert list(table["p_holm"]) == pytest.approx(stats.holm(list(table["p_value"])))
    assert skipped == ["r vs h: no results for E/rerank"]


def test_top_k_keeps_index_order_among_ties_even_at_the_cut():
    from rag_assets.retrieval.ranking import top_k_indices

    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9, 0.5, 0.0])
    assert top_k_indices(scores, 4).tolist() == [1, 4, 0, 2]
    assert top_k_indices(scores, 10).tolist() == [1, 4, 0, 2, 5, 3, 6]
    assert top_k_indices(np.zeros(5), 2).tolist() == [0, 1]
    assert top_k_indices(np.zeros(0), 3).tolist() == []
    rng = np.random.default_rng(3)
    many = rng.integers(0, 20, size=5000).astype(float)
    assert top_k_indices(many, 100).tolist() == np.lexsort((np.arange(5000), -many))[:100].tolist()


def test_phrasings_of_one_question_count_once_in_tables_and_tests():
    """Two phrasings of q0 and one of q1: R@1 is the mean over questions of each question's hit
    share, the interval a bootstrap over questions, and the sign test counts questions."""
    a = _hits(
        [
            ("q0#0", "q0", "E", "hybrid", 1, None, 100, 1, 1),
            ("q0#1", "q0", "E", "hybrid", 1, None, 100, 1, 1),
            ("q1#0", "q1", "E", "hybrid", None, None, 100, 1, 1),
        ]
    )
    b = a.assign(retriever="dense", hit_rank=pd.array([1, None, None], dtype="Int64"))
    table = metric_tables.metric_table(pd.concat([a, b]), {}).set_index(["retriever", "metric", "k"])
    assert table.loc[("dense", "recall", 1), "value"] == pytest.approx((0.5 + 0) / 2)  # not 1/3 over phrasings
    assert table.loc[("dense", "recall", 1), ["n_queries", "n_questions"]].tolist() == [3, 2]
    assert table.loc[("dense", "recall", 1), "ci_method"] == "bootstrap by question"
    tests, _ = comparisons.paired_tests(
        pd.concat([a, b]), [comparisons.Comparison("hd", "h vs d", ("E", "hybrid"), ("E", "dense"))], ks=(1,)
    )
    row = tests.iloc[0]
    assert (row.wins, row.losses, row.ties_miss, row.n_questions, row.n_queries) == (1, 0, 1, 2, 3)
    assert (row.recall_a, row.recall_b) == (0.5, 0.25)


def test_a_headline_names_the_k_where_a_difference_is_significant():
    """E beats C on 18 questions at R@4 and ties at R@20: the headline says R@4, with its counts,
    instead of judging at R@20 alone ("not significant")."""
    rows = []
    for i in range(60):
        e_rank, c_rank = (2, 7) if i < 18 else (1, 1)
        rows += [
            (f"q{i}", f"q{i}", "E", "dense", e_rank, None, 100, 1, 1),
            (f"q{i}", f"q{i}", "C", "dense", c_rank, None, 100, 1, 1),
        ]
    chosen = [
        comparisons.Comparison(
            "header_on_boundaries", "header on boundaries: E vs C (dense)", ("E", "dense"), ("C", "dense")
        )
    ]
    tests, _ = comparisons.paired_tests(_hits(rows), chosen)
    [line] = significance.headlines(tests, {}, 60)
    assert "After Holm correction: header on boundaries (at R@4)." in line
    assert "E/dense vs C/dense: significant at R@4 (wins +18/−0, Holm p = 3.1e-05); not at R@1, R@8, R@20." in line
    none = comparisons.paired_tests(_hits([r for r in rows if r[0] in ("q0", "q30", "q31")]), chosen)[0]
    assert "significant at no k after Holm (closest: R@4, +1/−0" in significance.verdict(none)


def test_the_recall_plot_fits_the_ui_dialog_and_its_one_legend_names_every_line():
    """8 strategies x 5 retrievers: the widest report there is. (The UI shows it in a 1024-px dialog.)"""
    rows = [
        {"strategy": s, "retriever": r, "metric": "recall", "k": k, "value": v, "ci_low": v - 0.05, "ci_high": v + 0.05}
        for s in ("A", "B", "C", "D", "E", "F", "W", "doc")
        for r in ("dense", "bm25", "hybrid", "rerank", "rerank-llm")
        for k, v in zip((1, 4, 8, 20), (0.3, 0.5, 0.6, 0.7))
    ]
    metrics = pd.DataFrame(rows)
    fig = significance.recall_figure(metrics)
    [legend] = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["A", "B", "C", "D", "E", "F", "W", "doc"]
    colour = {t.get_text(): h.get_color() for t, h in zip(legend.get_texts(), legend.legend_handles)}
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["bm25", "dense", "hybrid", "rerank", "rerank-llm"]
    assert all(ax.get_legend() is None for ax in panels)  # one legend for the figure, none per panel
    assert all(line.get_color() == colour[line.get_label()] for ax in panels for line in ax.get_lines())
    png = significance.recall_plot_png(metrics)
    width = int.from_bytes(png[16:20], "big")  # the PNG header's IHDR width
    assert 600 < width <= significance.PLOT_MAX_PX
    assert significance.recall_plot_png(metrics[metrics["metric"] == "mrr"]) is None


def test_embedding_models_are_compared_pairwise_ranked_and_named_when_the_corpus_cannot_tell_them_apart():
    """Three models on one strategy: me5-small finds 20 more questions at R@4 than minilm, mpnet ties
    minilm. The first model's retrievers carry no suffix; the headline and section say which k."""
    rows = []
    for i in range(60):
        ranks = {"dense": 7 if i < 20 else 1, "dense@mpnet": 7 if i < 20 else 1, "dense@me5-small": 2}
        rows += [(f"q{i}", f"q{i}", "E", r, rank, None, 100, 1, 1) for r, rank in ranks.items()]
        rows += [
            (f"q{i}", f"q{i}", "E", r.replace("dense", "hybrid"), rank, None, 100, 1, 1) for r, rank in ranks.items()
        ]
    hits, models = _hits(rows), ["minilm", "mpnet", "me5-small"]
    chosen = comparisons.model_comparisons(models, ["E"])
    assert [(c.a, c.b) for c in chosen[:3]] == [
        (("E", "dense"), ("E", "dense@mpnet")),
        (("E", "dense"), ("E", "dense@me5-small")),
        (("E", "dense@mpnet"), ("E", "dense@me5-small")),
    ]
    tests, skipped = comparisons.paired_tests(hits, chosen)
    assert skipped == [] and len(tests) == 6 * 4
    metrics = metric_tables.metric_table(hits, {})
    [dense, hybrid] = significance.model_headlines(metrics, tests, models)
    assert dense.startswith("**Which embedding model (dense, strategy E)?** me5-small ranks first at R@4 (1.000).")
    assert "E/dense vs E/dense@me5-small: significant at R@1 (wins +40/−0" in dense and "R@4 (loses +0/−20" in dense
    section = "\n".join(significance.models_section(metrics, tests, models))
    assert "by R@4: me5-small 1.000 > minilm 0.667 = mpnet 0.667." in section
    alike = section.split("cannot tell apart")[1].split("### Their sign tests")[0]
    assert "- dense, strategy E: minilm vs mpnet" in alike and "minilm vs me5-small" not in alike
