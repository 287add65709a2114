"""The runs other IR tools read: exported as TREC files and loaded as written (no
`make_comparable`, no rescale), ranx and trec_eval's own measures (pytrec_eval) give back our
figures to 1e-9, with the mappings docs/pipeline.md states."""

import functools

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from conftest import TINY_DOCS, TINY_QUESTIONS, WordOverlapScorer, write_dataset
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
# our (metric, k) -> (ranx's name, trec_eval's)
NEEDLE = {**{("recall", k): (f"hit_rate@{k}", f"success_{k}") for k in KS}, ("mrr", None): ("mrr", "recip_rank")}
GRADED = {("ndcg", 10): ("ndcg@10", "ndcg_cut_10"), ("doc_recall", 100): ("recall@100", "recall_100")}
TREC_EVAL_MEASURES = {"success.1,4,8,20", "recip_rank", "ndcg_cut.10", "recall.100"}


@functools.cache
def _embedder() -> LocalEmbedder:
    """One encoder for the module: the default int8 one (the figures compared are ours and the
    tools' on the same runs, whichever model ranked them)."""
    return packaged.embedder(DEFAULT_EMBEDDER)


def ours_and_tools(snapshot, truth, out, strategy="E", level="chunks", metrics=NEEDLE, rerank_only=None):
    """(our figures by (retriever, metric, k); per retriever, ranx's and trec_eval's per-query scores of the exported
    files, as DataFrames indexed by query id with a column per metric of ours). `rerank_only`: query ids a reranker
    scores, as the LLM reranker scores a sample."""
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
    rerankers, limits = ([WordOverlapScorer()], {"rerank": rerank_only}) if rerank_only else ((), None)
    vectors = embedder.encode(queries["query"].tolist())
    runs = run_queries(index, queries, vectors, np.zeros(len(queries)), rerankers, rerank_queries=limits)
    table = metric_tables.metric_table(metric_tables.query_hits(runs, {strategy: chunks}, truth), {})
    trec.export(runs, trec.holders_of({strategy: chunks}, truth), truth, out)
    scores = {}
    for r in sorted(set(runs["retriever"])):
        run_file, own_qrels = out / f"{strategy}.{r}.{level}.run", out / f"qrels.{strategy}.{r}.{level}.txt"
        qrels_file = own_qrels if own_qrels.exists() else out / f"qrels.{strategy}.{level}.txt"
        qrels, run = Qrels.from_file(str(qrels_file), kind="trec"), Run.from_file(str(run_file), kind="trec")
        by_ranx = evaluate(qrels, run, [name for name, _ in metrics.values()], return_mean=False)
        with open(qrels_file) as q, open(run_file) as f:
            by_trec_eval = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), TREC_EVAL_MEASURES).evaluate(
                pytrec_eval.parse_run(f)
            )
        labels = [f"{m}@{k}" for m, k in metrics]
        scores[r] = {
            "ranx": pd.DataFrame([by_ranx[name] for name, _ in metrics.values()], labels, list(qrels.keys())).T,
            "trec_eval": pd.DataFrame(by_trec_eval).loc[[name for _, name in metrics.values()]].set_axis(labels).T,
        }
    ours = {(r.retriever, r.metric, None if pd.isna(r.k) else int(r.k)): r.value for r in table.itertuples()}
    return ours, scores


def test_exported_runs_give_back_our_recall_and_mrr_on_the_bundled_corpus(tmp_path):
    snapshot = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snapshot)[0], gt.Sample())
    truth = truth[truth["kind"] == "answerable"].reset_index(drop=True)
    assert truth["question_id"].is_unique  # one phrasing each: our figures are the tools' plain means
    ours, scores = ours_and_tools(snapshot, truth, tmp_path)
    qrels = [line.split() for line in (tmp_path / "qrels.E.chunks.txt").read_text().splitlines()]
    nothing = sorted(q for q, _, item, _ in qrels if item == trec.NOTHING_RELEVANT)
    assert 0 < len(nothing) < 0.05 * len(truth)  # E destroys a few answers: they are judged and count as misses
    for retriever, by_tool in scores.items():
        for tool, per_query in by_tool.items():
            assert sorted(per_query.index) == sorted(truth["query_id"]), (tool, retriever)  # every question, once
            assert (per_query.loc[nothing] == 0).all().all()
            for metric, k in NEEDLE:
                assert ours[(retriever, metric, k)] == pytest.approx(per_query[f"{metric}@{k}"].mean(), abs=1e-9), (
                    tool,
                    retriever,
                    metric,
                    k,
                )


def test_phrasings_average_by_question_nothing_retrieved_is_a_miss_and_a_sample_has_its_qrels(tmp_path):
    """A Bulgarian phrasing shares no word with the English corpus: BM25 retrieves nothing for it. A
    reranker that scores a sample of the queries has its own qrels."""
    questions = [
        {**q, "phrasings": [*q["phrasings"], "Накъде трябва да сочи входящият клапан?"]} if q["id"] == "q-valve" else q
        for q in TINY_QUESTIONS
    ]
    dataset = write_dataset(tmp_path / "dataset", TINY_DOCS, questions)
    snapshot = corpus.snapshot(dataset / "documents")
    records, _ = gt.read_questions(dataset / "questions.jsonl")
    truth = gt.validate(records, snapshot)[0]
    truth = truth[truth["kind"] == "answerable"].reset_index(drop=True)
    assert truth["question_id"].value_counts()["q-valve"] == 3  # three phrasings
    sample = set(truth["query_id"][::2])  # a reranker that scores a sample, as the LLM reranker does
    ours, scores = ours_and_tools(snapshot, truth, tmp_path / "out", strategy="C", rerank_only=sample)
    assert (tmp_path / "out" / "qrels.C.rerank.chunks.txt").exists()  # the sample's own qrels
    assert not (tmp_path / "out" / "qrels.C.hybrid.chunks.txt").exists()
    empty = [line for line in (tmp_path / "out" / "C.bm25.chunks.run").read_text().splitlines() if "NOTHING" in line]
    assert len(empty) == 1 and empty[0].split()[2] == trec.NOTHING_RETRIEVED
    question_of = dict(zip(truth["query_id"], truth["question_id"]))
    assert set(scores) == {"dense", "bm25", "hybrid", "rerank"}
    for retriever, by_tool in scores.items():
        for tool, per_query in by_tool.items():
            asked = sample if retriever == "rerank" else set(truth["query_id"])
            assert sorted(per_query.index) == sorted(asked), (tool, retriever)
            by_question = per_query.groupby(per_query.index.map(question_of)).mean().mean()
            for metric, k in NEEDLE:
                assert ours[(retriever, metric, k)] == pytest.approx(by_question[f"{metric}@{k}"], abs=1e-9)
    assert ours[("bm25", "recall", 20)] < 1  # the query BM25 retrieved nothing for is a miss in every figure


@pytest.mark.parametrize("strategy", ["doc", "C"])
def test_graded_document_runs_give_back_our_ndcg_and_recall_on_the_beir_fixture(beir_folder, tmp_path, strategy):
    main(["import", "beir", str(beir_folder), "--out", str(tmp_path / "native")])
    snapshot = corpus.snapshot(tmp_path / "native" / "documents")
    records, _ = gt.read_questions(tmp_path / "native" / "questions.jsonl")
    truth = gt.validate(records, snapshot)[0]
    ours, scores = ours_and_tools(snapshot, truth, tmp_path / "out", strategy, level="documents", metrics=GRADED)
    for retriever, by_tool in scores.items():
        for tool, per_query in by_tool.items():
            assert sorted(per_query.index) == sorted(truth["query_id"]), (tool, retriever)
            for metric, k in GRADED:
                assert ours[(retriever, metric, k)] == pytest.approx(per_query[f"{metric}@{k}"].mean(), abs=1e-9)
    assert {round(s["ranx"]["ndcg@10"].mean(), 9) for s in scores.values()} != {1.0}  # an imperfect ranking
