"""The HNSW graph: recall against exact search on real vectors, rows filtered inside the
search, and `ask` using it above the size setting and exact search otherwise."""

import json

import numpy as np
import pandas as pd
import pytest

from rag_assets.app.cli import main
from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.retrieval import dense
from rag_assets.retrieval.ann import HnswIndex, recall_against_exact
from rag_assets.retrieval.embedding import LocalEmbedder


@pytest.fixture(scope="module")
def real():
    """Every chunk of strategy E of the bundled corpus and 200 of its questions, embedded."""
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    questions = gt.validate(records, snap)[0]["query"].drop_duplicates().head(200).tolist()
    model = LocalEmbedder()
    return model.encode(chunk_corpus(snap, STRATEGIES["E"])["text"].tolist()), model.encode(questions, query=True)


def test_recall_against_exact_search_on_real_vectors(real, tmp_path):
    vectors, queries = real
    graph = HnswIndex.build(vectors)
    recall, ms = recall_against_exact(graph, vectors, queries)
    assert recall[10] >= 0.99 and recall[100] >= 0.99 and ms > 0, recall
    rows, scores = graph.top_k(queries[0], 100)
    exact_rows, exact_scores = dense.top_k(queries[0], vectors, 100)
    assert len(rows) == 100 and np.all(np.diff(scores) <= 1e-6)  # best first
    assert np.allclose(scores, vectors[rows] @ queries[0], atol=1e-5)  # true cosines of the rows it returns
    graph.save(tmp_path / "E.faiss")
    again = HnswIndex.load(tmp_path / "E.faiss")
    assert again.rows == len(vectors) and np.array_equal(again.top_k(queries[0], 100)[0], rows)


def test_only_candidate_rows_come_back_and_none_for_no_candidates(real):
    vectors, queries = real
    graph = HnswIndex.build(vectors)
    visible = np.arange(0, len(vectors), 3)  # a tenant's rows
    for q in queries[:20]:
        rows, _ = graph.top_k(q, 10, visible)
        exact, _ = dense.top_k(q, vectors, 10, visible)
        assert set(rows) <= set(visible) and len(set(rows) & set(exact)) >= 9
    assert len(graph.top_k(queries[0], 10, np.zeros(0, dtype=np.int64))[0]) == 0


def test_ask_searches_the_graph_above_the_size_setting(tiny_dataset, tmp_path, monkeypatch, capsys):
    data_dir = tmp_path / "data"
    run = ["run", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir), "--strategies", "C", "--no-llm"]
    ask = ["ask", "Which way must the valve face?", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir)]
    ask += ["--strategy", "C", "--threshold", "0", "--json"]  # threshold 0: the gate refuses, no model call
    assert main(run) == 0
    capsys.readouterr()
    assert not (data_dir / "assets" / "hnsw_index" / "minilm" / "C.faiss").exists()  # a few chunks: nothing to build
    assert main(ask) == 0
    assert json.loads(capsys.readouterr().out)["dense_search"].startswith("exact (")

    monkeypatch.setenv("RAG_ASSETS_ANN_MIN_CHUNKS", "1")
    assert main(run) == 0
    row = pd.read_parquet(data_dir / "assets" / "hnsw_index" / "minilm" / "C.parquet").iloc[0]
    assert row["built"] and row["recall_at_10"] == 1.0 and row["n_queries"] > 0  # a tiny graph is exact
    capsys.readouterr()
    assert main(ask) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["dense_search"].startswith("hnsw (hnsw_index[minilm|C]: recall@10 1.000")
    (data_dir / "assets" / "hnsw_index" / "minilm" / "C.faiss").write_bytes(b"damaged")
    assert main(ask) == 0  # still answers, exactly, and says why
    assert (
        json.loads(capsys.readouterr().out)["dense_search"]
        == "exact: hnsw_index[minilm|C] cannot be read (RuntimeError)"
    )
    monkeypatch.setenv("RAG_ASSETS_ANN_MIN_CHUNKS", "many")
    assert main(ask) == 2 and "RAG_ASSETS_ANN_MIN_CHUNKS must be a whole number" in capsys.readouterr().err
