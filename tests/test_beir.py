"""BEIR folders in, document-level metrics out, through the real graph."""

import json

import pandas as pd
import pytest

from rag_assets.app.cli import main
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt


def test_import_writes_documents_and_graded_relevance(beir_folder, tmp_path):
    out = tmp_path / "native"
    assert main(["import", "beir", str(beir_folder), "--out", str(out)]) == 0
    assert (
        out / "documents" / "d1.md"
    ).read_text() == "# Zebras\n\nZebra stripes form a pattern that confuses biting flies.\n"
    assert (out / "documents" / "d3.md").read_text().startswith("Impeller wear")
    assert (out / "documents" / "d_4.md").exists()
    records, _ = gt.read_questions(out / "questions.jsonl")
    assert [(r["id"], r["relevant"]) for r in records] == [("q1", {"d1.md": 1}), ("q2", {"d2.md": 2, "d3.md": 1})]
    truth, rejects = gt.validate(records, corpus.snapshot(out / "documents"))
    assert rejects.empty and truth["needle"].isna().all()
    relevant = json.loads(truth.set_index("question_id").at["q2", "relevant"])
    assert sorted(relevant.values()) == [1, 2] and all(k.startswith("d") for k in relevant)


def test_missing_files_and_unknown_relevant_documents_are_reported(beir_folder, tmp_path, capsys):
    main(["import", "beir", str(beir_folder), "--out", str(tmp_path / "x")])
    snap = corpus.snapshot(tmp_path / "x" / "documents")
    (beir_folder / "qrels" / "test.tsv").unlink()
    assert main(["import", "beir", str(beir_folder), "--out", str(tmp_path / "y")]) == 2
    assert main(["import", "beir", str(tmp_path / "no-such-folder"), "--out", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 2, err
    assert "missing qrels/test.tsv" in err and "is not a folder" in err
    assert not (tmp_path / "y").exists() and not (tmp_path / "z").exists()
    records = [{"id": "q", "phrasings": ["?"], "kind": "answerable", "relevant": {"nope.md": 1}}]
    _, rejects = gt.validate(records, snap)
    assert rejects["reason"].tolist() == ["1 relevant documents are not in the corpus (e.g. 'nope.md')"]


def test_document_level_metrics_through_the_graph(beir_folder, tmp_path):
    native, data_dir = tmp_path / "native", tmp_path / "data"
    main(["import", "beir", str(beir_folder), "--out", str(native)])
    assert main(["run", "--dataset", str(native), "--data-dir", str(data_dir), "--strategies", "doc"]) == 0
    hits = pd.read_parquet(data_dir / "assets" / "query_hits.parquet").set_index(["retriever", "query_id"])
    # q1's words occur only in d1, its one relevant document: BM25 ranks it first
    assert hits.at[("bm25", "q1#0"), "ndcg_10"] == 1.0 and hits.at[("bm25", "q1#0"), "hit_rank"] == 1
    assert (hits["recall_100"] == 1.0).all()  # 4 documents, all returned
    table = pd.read_parquet(data_dir / "assets" / "evaluation_tables.parquet")
    ndcg = table[table["metric"] == "ndcg"].set_index("retriever")
    assert set(ndcg.index) == {"dense", "bm25", "hybrid"}  # the LLM reranker is opt-in
    assert (ndcg["k"] == 10).all() and (ndcg["n_queries"] == 2).all()
    assert ndcg.at["bm25", "value"] == pytest.approx(hits.xs("bm25")["ndcg_10"].mean())


def test_a_query_judged_only_at_grade_zero_is_left_out_as_trec_eval_does(beir_folder, tmp_path):
    main(["import", "beir", str(beir_folder), "--out", str(tmp_path / "x")])
    snap = corpus.snapshot(tmp_path / "x" / "documents")
    records = [
        {"id": "zero", "phrasings": ["zebras?"], "kind": "answerable", "relevant": {"d1.md": 0}},
        {"id": "one", "phrasings": ["zebras?"], "kind": "answerable", "relevant": {"d1.md": 1, "d2.md": 0}},
    ]
    truth, rejects = gt.validate(records, snap)
    assert truth["question_id"].tolist() == ["one"]
    assert rejects["question_id"].tolist() == ["zero"] and "grade 0" in rejects["reason"].iloc[0]
