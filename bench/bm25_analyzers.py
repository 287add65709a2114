"""Which BM25 analyzer to default to: plain, english (Lucene's EnglishAnalyzer) and snowball,
measured on the bundled corpus (strategy E, the default 400-question sample) and on the BEIR
test fixture, with paired exact sign tests by question and Holm across the table.

    python bench/bm25_analyzers.py
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from common import bm25_runs  # noqa: E402
from conftest import BEIR_CORPUS as CORPUS  # noqa: E402  (the BEIR fixture the tests use)
from conftest import BEIR_QRELS as QRELS  # noqa: E402
from conftest import BEIR_QUERIES as QUERIES  # noqa: E402

from rag_assets.catalog import BUNDLED_DATASET  # noqa: E402
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus  # noqa: E402
from rag_assets.evaluation import comparisons, metric_tables  # noqa: E402
from rag_assets.evaluation.metrics import ndcg_at  # noqa: E402
from rag_assets.ingest import corpus  # noqa: E402
from rag_assets.ingest import ground_truth as gt  # noqa: E402
from rag_assets.retrieval.lexical import FORCED, BM25Index, BM25Settings  # noqa: E402


def bundled() -> None:
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snap)[0], gt.Sample())
    truth = truth[truth["kind"] == "answerable"]
    chunks = chunk_corpus(snap, STRATEGIES["E"])
    hits = pd.concat([metric_tables.query_hits(bm25_runs(chunks, truth, a), {"E": chunks}, truth) for a in FORCED])
    table = metric_tables.metric_table(hits, {})
    recall = table[table["metric"].isin(["recall", "mrr"])].pivot_table(
        index="retriever", columns=["metric", "k"], values="value", dropna=False
    )
    print(f"bundled corpus, strategy E, BM25 (lucene variant), {truth['question_id'].nunique()} questions")
    print(recall.round(3).to_string())
    pairs = [
        comparisons.Comparison(f"{a}_vs_{b}", f"{a} vs {b}", ("E", a), ("E", b))
        for a, b in (("english", "plain"), ("snowball", "plain"), ("english", "snowball"))
    ]
    tests, _ = comparisons.paired_tests(hits, pairs)
    print(
        tests[["comparison", "k", "wins", "losses", "recall_a", "recall_b", "p_value", "p_holm"]]
        .round(4)
        .to_string(index=False)
    )


def beir_fixture() -> None:
    texts = [f"{d['title']}\n{d['text']}" if d["title"] else d["text"] for d in CORPUS]
    qrels = {}
    for line in QRELS.strip().splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = int(g)
    print(f"\nBEIR test fixture: {len(CORPUS)} documents, {len(qrels)} judged queries (too few to decide anything)")
    for analyzer in FORCED:
        index = BM25Index.build(texts, BM25Settings(analyzer=analyzer))
        scores = [
            ndcg_at([CORPUS[i]["_id"] for i in index.top_k(q["text"], 10)[0]], qrels[q["_id"]], 10)
            for q in QUERIES
            if q["_id"] in qrels
        ]
        print(f"  {analyzer:<9} nDCG@10 {np.mean(scores):.3f}")


if __name__ == "__main__":
    bundled()
    beir_fixture()
