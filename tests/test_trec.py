"""The runs other IR tools read: exported as TREC files, evaluated by ranx, they give back our
own figures (to 1e-9), with the mappings the README states."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY_DOCS, TINY_QUESTIONS, write_dataset
from ranx import Qrels, Run, evaluate

from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.evaluation import metric_tables, trec
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.dataset import BUNDLED_DATASET
from rag_assets.retrieval.embedding import Embedder
from rag_assets.retrieval.lexical import BM25Index
from rag_assets.retrieval.search import ChunkIndex, run_queries

KS = (1, 4, 8, 20)


def ours_and_ranx(snapshot: pd.DataFrame, truth: pd.DataFrame, out, strategy: str = "E"):
    """(our metric table, our per-query hits, the exported files' ranx scores per retriever)."""
    chunks = chunk_corpus(snapshot, STRATEGIES[strategy])
    embedder = Embedder()
    index = ChunkIndex(
        strategy,
        chunks["chunk_id"].tolist(),
        chunks["text"].tolist(),
        embedder.encode(chunks["text"].tolist()),
        BM25Index.build(chunks["text"].tolist()),
    )
    queries = truth[["query_id", "query"]]
    runs = run_queries(index, queries, embedder.encode(queries["query"].tolist()), np.zeros(len(queries)))
    hits = metric_tables.query_hits(runs, {strategy: chunks}, truth)
    table = metric_tables.metric_table(hits, {})
    trec.export(runs, {strategy: chunks}, truth, out)
    qrels = Qrels.from_file(str(out / f"qrels.{strategy}.chunks.txt"), kind="trec")
    metrics = [f"hit_rate@{k}" for k in KS] + ["mrr"]
    scores = {
        r: evaluate(
            qrels,
            Run.from_file(str(out / f"{strategy}.{r}.chunks.run"), kind="trec"),
            metrics,
            return_mean=False,
            make_comparable=True,
        )
        for r in ("dense", "bm25", "hybrid")
    }
    return table, hits, scores, qrels


def test_exported_runs_give_back_our_recall_and_mrr_on_the_bundled_corpus(tmp_path):
    snapshot = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snapshot)[0], gt.Sample())
    truth = truth[truth["kind"] == "answerable"].reset_index(drop=True)
    table, hits, scores, qrels = ours_and_ranx(snapshot, truth, tmp_path)
    ours = table.set_index(["retriever", "metric", "k"])["value"]
    judged = set(qrels.to_dict())  # questions with a relevant chunk; the destroyed ones have no qrels line
    share = len(judged) / truth["query_id"].nunique()
    assert 0.95 < share < 1  # E destroys a few answers: the mapping is exercised, not assumed
    for retriever, per_query in scores.items():
        for k in KS:
            ranx_mean = float(np.mean([v for q, v in zip(qrels.keys(), per_query[f"hit_rate@{k}"]) if q in judged]))
            assert ours[(retriever, "recall", k)] == pytest.approx(ranx_mean * share, abs=1e-9), (retriever, k)
        mrr = ours.xs("mrr", level="metric").loc[retriever].iloc[0]
        assert mrr == pytest.approx(float(np.mean(per_query["mrr"])) * share, abs=1e-9)


def test_several_phrasings_average_by_question_then_over_questions(tmp_path):
    dataset = write_dataset(tmp_path / "dataset", TINY_DOCS, TINY_QUESTIONS)
    snapshot = corpus.snapshot(dataset / "documents")
    records, _ = gt.read_questions(dataset / "questions.jsonl")
    truth = gt.validate(records, snapshot)[0]
    truth = truth[truth["kind"] == "answerable"].reset_index(drop=True)
    assert truth["question_id"].value_counts()["q-valve"] == 2  # two phrasings
    table, hits, scores, qrels = ours_and_ranx(snapshot, truth, tmp_path / "out", strategy="C")
    ours = table.set_index(["retriever", "metric", "k"])["value"]
    question_of = dict(zip(truth["query_id"], truth["question_id"]))
    for retriever, per_query in scores.items():
        for k in KS:
            by_query = pd.Series(per_query[f"hit_rate@{k}"], index=list(qrels.keys()))
            by_question = by_query.groupby(by_query.index.map(question_of)).mean().mean()
            assert ours[(retriever, "recall", k)] == pytest.approx(by_question, abs=1e-9)
