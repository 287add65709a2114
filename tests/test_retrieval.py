"""BM25 (against rank-bm25), exact dense search, the real embedding model, and the retrievers together."""

import math

import numpy as np
import pandas as pd
import pytest
from conftest import WordOverlapScorer, encoded_index
from rank_bm25 import BM25Okapi

from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.retrieval import dense
from rag_assets.retrieval.embedding import LocalEmbedder
from rag_assets.retrieval.fusion import rrf
from rag_assets.retrieval.lexical import BM25Index, BM25Settings, IndexUnreadable, Tokenizer
from rag_assets.retrieval.rerank import find_cross_encoder
from rag_assets.retrieval.search import ChunkIndex, run_queries


@pytest.fixture(scope="module")
def bundled():
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snap)[0], gt.Sample())
    return chunk_corpus(snap, STRATEGIES["C"]), truth


@pytest.fixture(scope="module")
def embedder():
    return LocalEmbedder()


def test_okapi_variant_agrees_with_rank_bm25_on_real_text(bundled):
    chunks, truth = bundled
    texts = chunks["text"].tolist()
    tokenize = Tokenizer("plain")  # the same tokens on both sides: the test is about the formula
    reference = BM25Okapi([tokenize(t) for t in texts], k1=1.2, b=0.75, epsilon=0.25)
    ours = BM25Index.build(texts, BM25Settings(variant="okapi", analyzer="plain"))
    queries = truth["query"].tolist()[:60]
    for q in queries:
        expected = reference.get_scores(tokenize(q))
        assert np.allclose(ours.scores(q), expected, rtol=1e-9, atol=1e-9)
        top = np.lexsort((np.arange(len(expected)), -expected))[:10]
        assert ours.top_k(q, 10)[0].tolist() == top.tolist()
    # terms in over half the chunks ("the") have negative raw idf: the epsilon floor was exercised
    assert reference.idf["the"] == pytest.approx(0.25 * reference.average_idf)


def test_lucene_variant_matches_its_formula_by_hand():
    docs = ["red pump red", "blue pump", "green valve"]
    index = BM25Index.build(docs, BM25Settings(analyzer="plain"))  # lucene, k1 = 1.2, b = 0.75
    n, avgdl, k1, b = 3, 7 / 3, 1.2, 0.75
    idf_red = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    idf_pump = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    tf = lambda f, dl: f / (f + k1 * (1 - b + b * dl / avgdl))  # noqa: E731
    assert index.scores("red pump") == pytest.approx(
        [idf_red * tf(2, 3) + idf_pump * tf(1, 3), idf_pump * tf(1, 2), 0.0]
    )
    assert index.scores("nothing matches").tolist() == [0.0, 0.0, 0.0]


def test_bm25_saves_and_loads_the_same_index(tmp_path, bundled):
    chunks, truth = bundled
    index = BM25Index.build(chunks["text"].tolist(), BM25Settings(analyzer="snowball"))
    for _ in range(3):  # replacing an existing index works and keeps the version before (a reader may be in it)
        index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.settings == index.settings
    for q in truth["query"].tolist()[:10]:
        assert np.array_equal(loaded.scores(q), index.scores(q))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[-1] == "idx" and len(names) == 3 and all(n.startswith(".idx.v-") for n in names[:2]), names
    assert (tmp_path / "idx").is_symlink() and (tmp_path / "idx").resolve().name in names
    with pytest.raises(IndexUnreadable, match="no BM25 index at"):
        BM25Index.load(tmp_path / "missing")
    empty = BM25Index.build([])  # a corpus with no chunk: an index of nothing, saved and loaded like any
    empty.save(tmp_path / "empty")
    assert BM25Index.load(tmp_path / "empty").scores("pump").tolist() == [] and empty.top_k("pump", 5)[0].tolist() == []


def test_tokenizer_options():
    assert Tokenizer("plain")("Café_au-lait E42, résumé!") == ["café", "au", "lait", "e42", "résumé"]
    assert Tokenizer()("The pump's bearings") == Tokenizer("english")("The pump's bearings")  # the default
    assert Tokenizer("snowball")("the pump of the year") == ["pump", "year"]
    assert Tokenizer("snowball")("running pumps") == ["run", "pump"]
    # Lucene's EnglishAnalyzer: possessives dropped, its 33 stop words, Porter (not Snowball) stems
    assert Tokenizer("english")("The pump's bearings are generously sized") == ["pump", "bear", "gener", "size"]
    assert Tokenizer("snowball")("generously") == ["generous"]
    with pytest.raises(ValueError, match="analyzer must be one of"):
        BM25Settings(analyzer="french")
    with pytest.raises(ValueError, match="variant must be one of"):
        BM25Settings(variant="bm25x")


def test_exact_dense_search_and_the_distance_identity():
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(500, 16)).astype(np.float32)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    q = unit[7]
    rows, sims = dense.top_k(q, unit, 10)
    assert rows[0] == 7 and rows.tolist() == np.argsort(-(unit @ q), kind="stable")[:10].tolist()
    assert dense.top_k(q, np.ones((4, 16), np.float32) / 4, 3)[0].tolist() == [0, 1, 2]  # ties by row
    assert dense.norm_error(unit) < 1e-6 and dense.distance_identity_error(unit) < 1e-6
    assert dense.norm_error(matrix) > 0.1 and dense.distance_identity_error(matrix) > 0.1


def test_real_model_gives_unit_vectors_and_a_stable_identity(embedder):
    from sentence_transformers import SentenceTransformer

    texts = ["The inlet valve must face north.", "Oxygen condenses at 90.20 K."]
    vectors = embedder.encode(texts)
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert dense.norm_error(vectors) < 1e-5
    plain = SentenceTransformer(str(embedder.path), device="cpu").encode(texts, normalize_embeddings=True)
    assert np.allclose(vectors, plain, atol=1e-5)
    assert embedder.identity.startswith("sentence-transformers/all-MiniLM-L6-v2@sha256:")
    assert LocalEmbedder().identity == embedder.identity and embedder.window == 256


def test_retrievers_rank_fuse_and_rerank_one_chunk_set(embedder, bundled):
    chunks, truth = bundled
    chunks = chunks.head(120)
    vectors = embedder.encode(chunks["text"].tolist())
    index = ChunkIndex(
        "C", chunks["chunk_id"].tolist(), chunks["text"].tolist(), vectors, BM25Index.build(chunks["text"].tolist())
    )
    queries = pd.DataFrame(
        {"query_id": ["q1", "q2"], "query": ["Who was the Norse leader?", "When were the Normans in Normandy?"]}
    )
    qv = embedder.encode(queries["query"].tolist())
    runs = run_queries(index, queries, qv, np.array([1.0, 2.0]), [WordOverlapScorer()], depth=50)
    assert runs.groupby("query_id")["retriever"].apply(list).tolist() == [["dense", "bm25", "hybrid", "rerank"]] * 2
    by = runs.set_index(["query_id", "retriever"])
    d, b, h, r = (by.loc[("q1", x)] for x in ("dense", "bm25", "hybrid", "rerank"))
    assert len(d.chunk_ids) == 50 and d.scores == sorted(d.scores, reverse=True)
    assert [c for c, _ in rrf([d.chunk_ids, b.chunk_ids])][:50] == h.chunk_ids
    position = {c: i for i, c in enumerate(index.chunk_ids)}
    for row in (d, b, h, r):
        expected = [1 - float(vectors[position[c]] @ qv[0]) for c in row.chunk_ids]
        assert row.distances == pytest.approx(expected, abs=1e-6)
    assert sorted(r.chunk_ids[:25]) == sorted(h.chunk_ids[:25]) and r.chunk_ids[25:] == h.chunk_ids[25:]
    assert r.scores[:25] == sorted(r.scores[:25], reverse=True) and all(math.isnan(s) for s in r.scores[25:])
    assert r.total_ms >= h.total_ms >= h.stage_ms and d.encode_ms == 1.0
    with pytest.raises(ValueError, match="do not line up"):
        ChunkIndex("C", ["x"], ["x"], vectors, index.bm25)


def test_no_local_cross_encoder_means_no_rerank_and_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    reranker, reason = find_cross_encoder("cross-encoder/ms-marco-MiniLM-L-6-v2")
    assert reranker is None
    assert "no cross-encoder on this machine" in reason and "never downloaded" in reason


@pytest.mark.parametrize("depth", [10, 100])
def test_hybrid_keeps_dense_nearest_chunk_so_the_gate_refuses_alike(embedder, bundled, depth):
    """Only chunks of dense's own top `depth` can fuse above dense's nearest (RRF >= 1/61), so a
    distance gate over hybrid's list refuses exactly when it does over dense's: `ask` answers
    with hybrid and refusal_sweep measures dense."""
    chunks, truth = bundled
    chunks = chunks.head(300)
    index = encoded_index("C", chunks, embedder)
    queries = truth.drop_duplicates("question_id").head(80)[["query_id", "query"]]
    runs = run_queries(index, queries, embedder.encode(queries["query"].tolist()), np.zeros(len(queries)), depth=depth)
    nearest = runs.assign(nearest=runs["distances"].apply(min)).pivot(
        index="query_id", columns="retriever", values="nearest"
    )
    assert len(nearest) == 80 and (nearest["hybrid"] == nearest["dense"]).all()


def test_bm25_returns_only_chunks_that_match_and_hybrid_fuses_only_real_candidates(embedder):
    texts = ["The impeller spins.", "The valve is closed.", "Bearings need grease.", "Seals leak when worn."]
    index = ChunkIndex("C", [f"c{i}" for i in range(4)], texts, embedder.encode(texts), BM25Index.build(texts))
    query = "impeller"
    runs = run_queries(
        index, pd.DataFrame({"query_id": ["q"], "query": [query]}), embedder.encode([query]), np.zeros(1)
    ).set_index("retriever")
    assert runs.at["bm25", "chunk_ids"] == ["c0"]  # before: c0, then c1, c2, c3 at score 0 in index order
    assert all(s > 0 for s in runs.at["bm25", "scores"])
    fused = dict(zip(runs.at["hybrid", "chunk_ids"], runs.at["hybrid", "scores"]))
    assert fused["c0"] == pytest.approx(2 / 61) and all(fused[c] < 1 / 60 for c in ("c1", "c2", "c3"))  # dense only


def test_document_level_rankings_reach_as_many_distinct_documents_as_asked():
    """R@100 at document level means 100 documents: a chunked corpus needs more than 100 chunks
    for that, and the ranking goes as deep as it takes (here 4 documents of 30 chunks each)."""
    texts = [f"pump manual part {d} section {i} pressure valve" for d in range(4) for i in range(30)]
    ids = [f"doc{d}::C-{i:04d}" for d in range(4) for i in range(30)]
    vectors = np.eye(120, 8, dtype=np.float32) + 0.01
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = ChunkIndex("C", ids, texts, vectors, BM25Index.build(texts), [None] * 120)
    queries = pd.DataFrame({"query_id": ["q"], "query": ["pressure valve section"]})
    shallow = run_queries(index, queries, vectors[:1], np.zeros(1), depth=10)
    deep = run_queries(index, queries, vectors[:1], np.zeros(1), depth=10, documents=4)
    for retriever in ("dense", "bm25", "hybrid"):
        chunks = deep.set_index("retriever").at[retriever, "chunk_ids"]
        assert len({c.split("::")[0] for c in chunks}) == 4 and len(chunks) >= 10, retriever
        assert len(shallow.set_index("retriever").at[retriever, "chunk_ids"]) == 10
    assert len({c.split("::")[0] for c in shallow.set_index("retriever").at["bm25", "chunk_ids"]}) < 4


def test_the_tokeniser_differs_from_lucenes_standard_tokenizer_where_the_docs_say():
    """docs/pipeline.md says `english` approximates EnglishAnalyzer and names where its tokens
    differ from StandardTokenizer's (which keeps each of these whole), and that a CJK run becomes its
    bigrams as in Lucene's CJKAnalyzer."""
    tokens = Tokenizer("plain")
    assert tokens("don't") == ["don", "t"]
    assert tokens("1,000 and 3.14") == ["1", "000", "and", "3", "14"]
    assert tokens("U.S.A. snake_case") == ["u", "s", "a", "snake", "case"]
    assert tokens("東京都") == ["東京", "京都"] and tokens("RAG系统x") == ["rag", "系统", "x"]
    assert tokens("都") == ["都"]
    assert Tokenizer("english")("The pump's valves") == ["pump", "valv"]


def test_building_an_index_logs_nothing_below_warning(caplog):
    """bm25s sets its logger to DEBUG: a user's `run` printed "DEBUG:bm25s:Building index from tokens"."""
    import logging

    caplog.set_level(logging.DEBUG)  # the root logger: a handler that would print everything
    BM25Index.build(["a pump", "a valve"])
    assert not [r for r in caplog.records if r.name.startswith("bm25s")]
