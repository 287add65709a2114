"""The runs other IR tools read: exported as TREC files, evaluated by ranx, they give back our
own figures (to 1e-9), with the mappings docs/pipeline.md states."""

import functools

import numpy as np
import pandas as pd
import pytest
from conftest import TINY_DOCS, TINY_QUESTIONS, write_dataset
from ranx import Qrels, Run, evaluate

from rag_assets.app.cli import main
from rag_assets.catalog import BUNDLED_DATASET, DEFAULT_EMBEDDER
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.evaluation import metric_tables, trec
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.retrieval import packaged
from rag_assets.retrieval.embedding import LocalEmbedder
from rag_assets.retrieval.lexical import BM25Index
from rag_assets.retrieval.search import ChunkIndex, run_queries

KS = (1, 4, 8, 20)


@functools.cache
def _embedder() -> LocalEmbedder:
    """One encoder for the module: the default int8 one (the figures compared are ours and
    ranx's on the same runs, whichever model ranked them)."""
    return packaged.embedder(DEFAULT_EMBEDDER)


def ours_and_ranx(snapshot, truth, out, strategy="E", level="chunks", metrics=(*(f"hit_rate@{k}" for k in KS), "mrr")):
    """(our metric table, the exported qrels, and per retriever the exported run's per-query ranx scores)."""
    chunks = chunk_corpus(snapshot, STRATEGIES[strategy])
    embedder = _embedder()
    index = ChunkIndex(
        strategy,
        chunks["chunk_id"].tolist(),
        chunks["text"].tolist(),
        embedder.encode(chunks["text"].tolist()),
        BM25Index.build(chunks["text"].tolist()),
    )
    queries = truth[["query_id", "query"]]
    runs = run_queries(index, queries, embedder.encode(queries["query"].tolist()), np.zeros(len(queries)))
    table = metric_tables.metric_table(metric_tables.query_hits(runs, {strategy: chunks}, truth), {})
    trec.export(runs, trec.holders_of({strategy: chunks}, truth), truth, out)
    qrels = Qrels.from_file(str(out / f"qrels.{strategy}.{level}.txt"), kind="trec")
    scores = {
        r: evaluate(
            qrels,
            Run.from_file(str(out / f"{strategy}.{r}.{level}.run"), kind="trec"),
            list(metrics),
            return_mean=False,
            make_comparable=True,
        )
        for r in ("dense", "bm25", "hybrid")
    }
    return table, qrels, scores


def test_exported_runs_give_back_our_recall_and_mrr_on_the_bundled_corpus(tmp_path):
    snapshot = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snapshot)[0], gt.Sample())
    truth = truth[truth["kind"] == "answerable"].reset_index(drop=True)
    table, qrels, scores = ours_and_ranx(snapshot, truth, tmp_path)
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
    table, qrels, scores = ours_and_ranx(snapshot, truth, tmp_path / "out", strategy="C")
    ours = table.set_index(["retriever", "metric", "k"])["value"]
    question_of = dict(zip(truth["query_id"], truth["question_id"]))
    for retriever, per_query in scores.items():
        for k in KS:
            by_query = pd.Series(per_query[f"hit_rate@{k}"], index=list(qrels.keys()))
            by_question = by_query.groupby(by_query.index.map(question_of)).mean().mean()
            assert ours[(retriever, "recall", k)] == pytest.approx(by_question, abs=1e-9)


@pytest.mark.parametrize("strategy", ["doc", "C"])
def test_graded_document_runs_give_back_our_ndcg_and_recall_on_the_beir_fixture(beir_folder, tmp_path, strategy):
    main(["import", "beir", str(beir_folder), "--out", str(tmp_path / "native")])
    snapshot = corpus.snapshot(tmp_path / "native" / "documents")
    records, _ = gt.read_questions(tmp_path / "native" / "questions.jsonl")
    truth = gt.validate(records, snapshot)[0]
    table, qrels, scores = ours_and_ranx(
        snapshot, truth, tmp_path / "out", strategy, level="documents", metrics=("ndcg@10", "recall@100")
    )
    ours = table.set_index(["retriever", "metric", "k"])["value"]
    assert sorted(qrels.keys()) == sorted(truth["query_id"])  # every graded question judged: no mapping here
    for retriever, per_query in scores.items():
        assert ours[(retriever, "ndcg", 10)] == pytest.approx(float(np.mean(per_query["ndcg@10"])), abs=1e-9)
        assert ours[(retriever, "doc_recall", 100)] == pytest.approx(float(np.mean(per_query["recall@100"])), abs=1e-9)
    assert {round(float(np.mean(s["ndcg@10"])), 9) for s in scores.values()} != {1.0}  # an imperfect ranking is checked
