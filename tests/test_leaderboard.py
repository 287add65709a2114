"""The experiment leaderboard's arithmetic on small cases computed by hand: per-question values, the
test against a best chosen on the other half of the questions (and its false "worse" rate on
identical configurations), frontiers, costs, recall within a token budget, identical chunk sets,
and the rerank score cache."""

import numpy as np
import pandas as pd
import pytest

from rag_assets import stats
from rag_assets.experiment.leaderboard import against_best, frontier, per_question, same_chunks, split_questions
from rag_assets.experiment.measure import costs, within_budget
from rag_assets.experiment.spec import Arm, Configuration
from rag_assets.retrieval import specs
from rag_assets.retrieval.embedding import reference_tokens
from rag_assets.retrieval.rerank import CachedScores


def test_a_question_counts_once_whatever_its_phrasings():
    rows = pd.DataFrame(
        {
            "question_id": ["q1", "q1", "q2"],
            "hit_rank": pd.array([1, None, 5], dtype="Int64"),
            "ndcg_10": [1.0, 0.0, 0.387],
            "budget_hit": [True, False, True],
        }
    )
    assert per_question(rows, "recall", 4).to_dict() == {"q1": 0.5, "q2": 0.0}
    assert per_question(rows, "recall", 5).to_dict() == {"q1": 0.5, "q2": 1.0}
    assert per_question(rows, "mrr", 4).to_dict() == pytest.approx({"q1": 0.5, "q2": 0.2})
    assert per_question(rows, "budget", 4).to_dict() == {"q1": 0.5, "q2": 1.0}


def test_the_best_is_chosen_on_one_half_and_tested_against_on_the_other_with_holm():
    questions = pd.Index([f"q{i}" for i in range(8)])
    scores = pd.DataFrame({"a": 1.0, "b": 0.0, "c": 1.0}, index=questions)  # a and c tie everywhere
    best, tests = against_best(scores)
    choose, test = split_questions(questions)
    assert len(choose) == len(test) == 4 and not set(choose) & set(test)
    assert best == "a"  # the tie goes to the first id, and the report names it
    assert (tests.loc["b", "wins"], tests.loc["b", "losses"]) == (0, 4)
    assert tests.loc["b", "p_value"] == pytest.approx(0.125)  # 2 x 0.5^4
    assert tests.loc["b", "p_holm"] == pytest.approx(0.25)  # two comparisons: 2 x 0.125
    assert (tests.loc["c", "wins"], tests.loc["c", "losses"], tests.loc["c", "p_holm"]) == (0, 0, 1.0)
    assert tests.attrs["tested"] == 4


def test_identical_configurations_are_called_worse_no_more_often_than_alpha():
    """20 configurations that are the same system (each question a hit with probability 0.7 for
    every one, independently), 200 questions, 200 draws: the share of draws in which any of them
    is called worse than the best stays at or under α (Holm bounds the family's error). Chosen and
    tested on the same questions, the best's luck would make that share far larger."""
    rng = np.random.default_rng(1)
    questions = pd.Index([f"q{i}" for i in range(200)])
    split_false, same_data_false = 0, 0
    for _ in range(200):
        scores = pd.DataFrame(rng.random((200, 20)) < 0.7, index=questions, columns=[f"c{i:02d}" for i in range(20)])
        scores = scores.astype(float)
        best, tests = against_best(scores)
        split_false += bool(((tests["p_holm"] < stats.ALPHA) & (tests["losses"] > tests["wins"])).any())
        naive = scores.mean().idxmax()  # chosen and tested on every question
        p = [
            stats.sign_test(int((scores[c] > scores[naive]).sum()), int((scores[c] < scores[naive]).sum()))
            for c in scores
            if c != naive
        ]
        same_data_false += any(q < stats.ALPHA for q in stats.holm(p))
    assert split_false / 200 <= stats.ALPHA + 0.02
    assert same_data_false > split_false  # what the split is for


def test_the_frontier_holds_what_nothing_beats_on_both():
    quality = pd.Series({"a": 0.9, "b": 0.8, "c": 0.95, "d": 0.7, "e": 0.99})
    cost = pd.Series({"a": 10.0, "b": 5.0, "c": 20.0, "d": 5.0, "e": float("nan")})
    assert frontier(quality, cost).to_dict() == {"a": True, "b": True, "c": True, "d": False, "e": False}


def testcosts_from_the_tokens_sent_and_the_files_prices():
    embedder = Arm(
        "embedders",
        "served",
        specs.EmbeddingEndpoint(url="http://h:1/v1", model="m", price_per_million_tokens=0.02),
        1,
    )
    reranker = Arm("rerankers", "r", specs.RerankEndpoint(url="http://h:2", price_per_million_tokens=1.0), 2)
    config = Configuration(
        Arm("chunkers", "E", None, 3), embedder, Arm("retrievers", "hybrid", specs.Hybrid(), 4), reranker
    )
    figures = costs(config, (10, 5000), (20, 400), (100, 30000), sent=20, queries=100)
    assert figures["index_cost_usd"] == pytest.approx(5000 * 0.02 / 1e6)
    # per question: 400/20 embedding tokens at $0.02/M, and 30000/100 rerank tokens at $1/M; per 1,000 questions
    assert figures["cost_per_1k_queries_usd"] == pytest.approx((20 * 0.02 / 1e6 + 300 * 1.0 / 1e6) * 1000)
    free = Configuration(config.chunker, None, config.retriever, Arm("rerankers", "none", specs.NoReranker(), 5))
    assert costs(free, (0, 0), (0, 0), (0, 0), sent=0, queries=100) == {
        "index_cost_usd": None,
        "cost_per_1k_queries_usd": None,
    }


def test_recall_within_a_budget_takes_whole_passages_in_rank_order_while_they_fit():
    needle = "The inlet valve must face north."
    passages = pd.DataFrame(
        {
            "chunk_id": ["d::p1", "d::p2", "d::p3"],
            "document_id": ["d", "d", "d"],
            "content": ["Pumps hum quietly in the basement of the old mill.", needle, "Warranty covers two years."],
        }
    )
    passages["text"] = passages["content"]
    tokens = dict(zip(passages["chunk_id"], reference_tokens(passages["content"].tolist())))
    truth = pd.DataFrame({"question_id": ["q"], "kind": ["answerable"], "needle": [needle], "document_id": ["d"]})
    hits = pd.DataFrame({"query_id": ["q1", "q2"], "question_id": ["q", "q"]})
    hits["chunk_ids"] = [["d::p1", "d::p2", "d::p3"], ["d::p2", "d::p1", "d::p3"]]
    room = int(tokens["d::p1"] + tokens["d::p2"])
    within = within_budget(hits, passages, truth, room).set_index("query_id")
    assert within.loc["q1"].tolist() == [True, 2] and within.loc["q2"].tolist() == [True, 2]
    tight = within_budget(hits, passages, truth, room - 1).set_index("query_id")
    assert tight.loc["q1"].tolist() == [False, 1]  # the needle's passage no longer fits after the first
    assert tight.loc["q2"].tolist() == [True, 1]
    assert tight.attrs["holders"] == {"q": ["d::p2"]}


def test_chunkers_that_made_the_same_chunks_are_named_together():
    assert same_chunks({"sem400": "x", "chk400": "x", "E": "y"}) == {"sem400": "chk400", "chk400": "sem400", "E": ""}


class Counting:
    name, model, depth = "rerank", "word-overlap@1", 3

    def __init__(self):
        self.pairs = 0

    def score(self, query, passages):
        self.pairs += len(passages)
        q = set(query.lower().split())
        return np.array([len(q & set(p.lower().split())) for p in passages], dtype=float)


def test_rerank_scores_are_kept_by_reranker_query_and_passage_across_runs(tmp_path):
    inner = Counting()
    cached = CachedScores(tmp_path, inner)
    passages = ["the valve faces north", "tighten the bolts", "the warranty"]
    first = cached.score("which way does the valve face", passages)
    assert first.tolist() == [2.0, 1.0, 1.0] and inner.pairs == 3
    assert cached.score("which way does the valve face", passages[:2]).tolist() == [2.0, 1.0] and inner.pairs == 3
    assert cached.seconds("which way does the valve face", passages) > 0
    cached.flush()
    again = CachedScores(tmp_path, inner)  # another run: scores read back, nothing scored again
    assert again.score("which way does the valve face", passages).tolist() == first.tolist() and inner.pairs == 3
    other = Counting()
    other.model = "another-reranker@2"
    assert CachedScores(tmp_path, other).score("which way does the valve face", passages[:1]).tolist() == [2.0]
    assert other.pairs == 1  # another reranker's scores are its own
