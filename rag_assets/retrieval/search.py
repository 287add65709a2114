"""One retrieval engine: a chunk set's index, and every query through the retrievers asked for
(rag_assets.retrieval.specs: dense, BM25, hybrid, each with its settings) and the rerankers after
them. The lab's runs, an experiment's configurations, `ask` and `serve` all rank through
`run_queries`.

Each result row keeps the ranked chunk ids, their scores, their cosine distances to the
query (whatever retriever ranked them: the refusal gate reads distances) and the time
each stage took.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rag_assets.catalog import DEPTH
from rag_assets.ingest.access import ALL_TENANTS, Scope, access_by_document, check_tenant
from rag_assets.progress_bars import Bars
from rag_assets.retrieval import dense, fusion
from rag_assets.retrieval.ann import HnswIndex
from rag_assets.retrieval.embedding import require_identity, text_key, vectors_of
from rag_assets.retrieval.lexical import BM25Index, BM25Settings
from rag_assets.retrieval.rerank import Reranker
from rag_assets.retrieval.specs import LAB_RETRIEVERS, Retriever

DOCUMENT_DEPTH = 100  # distinct documents a ranking covers for document-level questions (R@100)
RUN_COLUMNS = [
    "query_id",
    "strategy",
    "retriever",
    "chunk_ids",
    "scores",
    "distances",
    "encode_ms",
    "stage_ms",
    "total_ms",
]


@dataclass
class ChunkIndex:
    """One chunk set's chunks with their vectors and BM25 index, aligned by row (either may be
    None where no retriever asked for needs it); `access` holds each chunk's document access list
    (None: public)."""

    strategy: str
    chunk_ids: list[str]
    texts: list[str]
    vectors: np.ndarray | None
    bm25: BM25Index | None
    access: list[frozenset[str] | None] | None = None
    ann: HnswIndex | None = None  # when set, dense search walks this graph instead of every vector
    dense_search: str = "exact"  # how dense search runs, in words (ask reports it)
    _visible: dict = field(default_factory=dict, repr=False, compare=False)  # tenant -> rows, made once

    def visible_to(self, tenant: str | Scope | None) -> np.ndarray | None:
        """Rows `tenant` may see (None: all rows): public chunks and those whose access list
        names it. No tenant sees public chunks only; ALL_TENANTS sees everything."""
        if tenant is ALL_TENANTS:
            return None
        if tenant is not None:
            check_tenant(tenant)
        if self.access is None:  # never guess: without the lists every row could be anyone's
            raise ValueError(
                f"the index of strategy {self.strategy} carries no access lists, so it can only answer for all "
                "tenants (the operator's view): build it with the corpus snapshot"
            )
        if tenant not in self._visible:  # the index never changes: each tenant's rows are listed once
            self._visible[tenant] = np.array(
                [i for i, a in enumerate(self.access) if a is None or tenant in a], dtype=np.int64
            )
        return self._visible[tenant]

    @classmethod
    def from_tables(
        cls,
        strategy: str,
        chunks: pd.DataFrame,
        embeddings: pd.DataFrame,
        bm25: BM25Index,
        model_identity: str,
        snapshot: pd.DataFrame | None = None,
    ) -> ChunkIndex:
        """One strategy's materialised tables as an index, refused (ValueError) unless the vectors
        come from the model that embeds the queries and encode exactly these chunk texts. With
        the corpus snapshot, each chunk carries its document's access list; without it the index
        answers only for ALL_TENANTS."""
        require_identity(embeddings["model_id"], model_identity, f"embeddings[{strategy}]")
        if embeddings["chunk_id"].tolist() != chunks["chunk_id"].tolist() or embeddings["text_sha256"].tolist() != [
            text_key(t) for t in chunks["text"]
        ]:
            raise ValueError(
                f"embeddings[{strategy}] were computed for another version of chunk_sets[{strategy}] "
                f"(chunk ids or texts differ): rematerialise embeddings[{strategy}]"
            )
        access = None
        if snapshot is not None:
            lists = access_by_document(snapshot)
            access = [lists[d] for d in chunks["document_id"]]
        return cls(strategy, chunks["chunk_id"].tolist(), chunks["text"].tolist(), vectors_of(embeddings), bm25, access)

    @classmethod
    def open(
        cls,
        layout,
        strategy: str,
        chunks: pd.DataFrame,
        embeddings: pd.DataFrame,
        model_identity: str,
        snapshot: pd.DataFrame,
    ) -> ChunkIndex:
        """The one way a materialised strategy becomes an index (retrieval_runs, generation_eval,
        `ask`): its tables, the BM25 index saved in the data dir `layout`, and the snapshot's
        access lists. IndexUnreadable for a damaged BM25 index, ValueError for misaligned tables."""
        return cls.from_tables(
            strategy, chunks, embeddings, BM25Index.load(layout.bm25(strategy)), model_identity, snapshot
        )

    @classmethod
    def build(
        cls,
        name: str,
        chunks: pd.DataFrame,
        vectors: np.ndarray | None,
        retriever: Retriever,
        access: list[frozenset[str] | None] | None = None,
    ) -> ChunkIndex:
        """An index made for one retriever: BM25 built with its settings where it ranks by BM25
        (its own, or the lab's defaults inside a hybrid), an HNSW graph where it asks for one."""
        texts = chunks["text"].tolist()
        bm25 = None
        if retriever.kind in ("bm25", "hybrid"):
            given = (
                {"k1": retriever.k1, "b": retriever.b, "analyzer": retriever.analyzer}
                if retriever.kind == "bm25"
                else {}
            )
            bm25 = BM25Index.build(
                texts, BM25Settings(**{k: v for k, v in given.items() if v is not None}), chunks["language"].tolist()
            )
        index = cls(name, chunks["chunk_id"].tolist(), texts, vectors, bm25, access)
        if retriever.kind == "dense" and retriever.index == "hnsw" and vectors is not None and len(vectors):
            index.ann = HnswIndex.build(vectors, retriever.m, ef_search=retriever.ef_search)
            index.dense_search = f"hnsw (m {retriever.m}, ef_search {retriever.ef_search})"
        return index

    def __post_init__(self):
        sizes = {"chunks": len(self.chunk_ids), "texts": len(self.texts)}
        if self.vectors is not None:
            sizes["vectors"] = len(self.vectors)
        if self.bm25 is not None:
            sizes["BM25 documents"] = self.bm25.n_docs
        if len(set(sizes.values())) > 1:
            raise ValueError(
                f"strategy {self.strategy}: {', '.join(f'{n} {w}' for w, n in sizes.items())} do not line up; "
                "rematerialise its embeddings and bm25_index"
            )

    def size_bytes(self) -> int:
        """What the index holds: its vectors, its HNSW graph and its BM25 index as saved on disk."""
        import tempfile

        size = self.vectors.nbytes if self.vectors is not None else 0
        if self.ann is not None:
            size += self.ann.size_bytes()
        if self.bm25 is not None:
            with tempfile.TemporaryDirectory() as tmp:
                self.bm25.save(Path(tmp) / "bm25")
                size += sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
        return size


def run_queries(
    index: ChunkIndex,
    queries: pd.DataFrame,
    query_vectors: np.ndarray | None,
    encode_ms: np.ndarray,
    rerankers: Sequence[Reranker] = (),
    depth: int = DEPTH,
    rerank_queries: dict[str, set[str]] | None = None,
    tenant: str | Scope | None = ALL_TENANTS,
    documents: int | None = None,
    retrievers: Mapping[str, Retriever] = LAB_RETRIEVERS,
    rerank_from: str = "hybrid",
    progress=None,
) -> pd.DataFrame:
    """Rows of RUN_COLUMNS for every query in `queries` (columns query_id, query) and every
    retriever of `retrievers` (name -> spec; the lab's dense, BM25 and hybrid by default).

    Each ranking is `depth` chunks long; with `documents`, longer where needed, until it
    covers that many distinct documents (or every candidate chunk): document-level recall at
    100 means 100 documents, however many chunks each has (as BEIR and Pyserini count it).
    A hybrid fuses dense and BM25 lists `spec.depth` deep (at least `depth`), by RRF or by weight.

    Each reranker re-scores the top `reranker.depth` of the `rerank_from` ranking; the rest keeps
    its order. `rerank_queries` limits a reranker (by name) to some query ids: a language-model
    scorer is too slow on a CPU for every query. `progress(done, total)` follows the queries (without
    it, 50 queries or more show a bar, or one line when done where stderr is no terminal).

    `tenant` filters before ranking, in every retriever: chunks it may not see are never
    scored, so they cannot reach a result, a fusion or a reranker's shortlist."""
    rerank_queries = rerank_queries or {}
    candidates = index.visible_to(tenant)
    rows = []
    ids = np.asarray(index.chunk_ids, dtype=object)
    position = {c: i for i, c in enumerate(index.chunk_ids)}
    kinds = {spec.kind for spec in retrievers.values()}
    wide = max([depth] + [spec.depth or depth for spec in retrievers.values() if spec.kind == "hybrid"])
    if progress is None and len(queries) >= 50:
        progress = Bars(f"retrieval[{index.strategy}]", "query")
    for qi, q in enumerate(queries.itertuples()):
        vec = query_vectors[qi] if query_vectors is not None else None

        def row(retriever, chunk_rows, scores, stage, total):
            rows.append(
                {
                    "query_id": q.query_id,
                    "strategy": index.strategy,
                    "retriever": retriever,
                    "chunk_ids": ids[chunk_rows].tolist(),
                    "scores": [float(s) for s in scores],
                    "distances": dense.cosine_distance(index.vectors[chunk_rows] @ vec).astype(float).tolist()
                    if len(chunk_rows) and vec is not None and index.vectors is not None
                    else [],
                    "encode_ms": float(encode_ms[qi]),
                    "stage_ms": milliseconds(stage),
                    "total_ms": milliseconds(total),
                }
            )

        ranked: dict[str, tuple[np.ndarray, float]] = {}  # name -> (rows, seconds to them)
        t_dense = t_bm25 = 0.0
        if kinds & {"dense", "hybrid"}:
            t0 = time.perf_counter()
            search = (
                (lambda k: index.ann.top_k(vec, k, candidates))
                if index.ann is not None
                else (lambda k: dense.top_k(vec, index.vectors, k, candidates))
            )
            d_rows, d_scores = _deep(search, wide, documents, ids)
            t_dense = time.perf_counter() - t0
        if kinds & {"bm25", "hybrid"}:
            t0 = time.perf_counter()
            b_rows, b_scores = _deep(lambda k: index.bm25.top_k(q.query, k, candidates), wide, documents, ids)
            t_bm25 = time.perf_counter() - t0
        for name, spec in retrievers.items():
            if spec.kind == "dense":
                n = _covering(d_rows, depth, documents, ids)
                row(name, d_rows[:n], d_scores[:n], t_dense, t_dense)
                ranked[name] = (d_rows[:n], t_dense)
            elif spec.kind == "bm25":
                n = _covering(b_rows, depth, documents, ids)
                row(name, b_rows[:n], b_scores[:n], t_bm25, t_bm25)
                ranked[name] = (b_rows[:n], t_bm25)
            else:
                t0 = time.perf_counter()
                fused = _fused(spec, spec.depth or depth, ids, d_rows, d_scores, b_rows, b_scores, documents)
                fused = fused[
                    : _covering(np.array([position[c] for c, _ in fused], dtype=np.int64), depth, documents, ids)
                ]
                h_rows = np.array([position[c] for c, _ in fused], dtype=np.int64)
                t_fuse = time.perf_counter() - t0
                row(name, h_rows, [s for _, s in fused], t_fuse, t_dense + t_bm25 + t_fuse)
                ranked[name] = (h_rows, t_dense + t_bm25 + t_fuse)

        for reranker in rerankers:
            if reranker.name in rerank_queries and q.query_id not in rerank_queries[reranker.name]:
                continue
            shortlist, before = ranked[rerank_from]
            t0 = time.perf_counter()
            reranked, scores = reranked_rows(reranker, q.query, index.texts, shortlist)
            t_rerank = time.perf_counter() - t0
            tail = [math.nan] * (len(shortlist) - len(scores))
            row(reranker.name, reranked, list(scores) + tail, t_rerank, before + t_rerank)
        if progress is not None:
            progress(qi + 1, len(queries))
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def _fused(
    spec, deep: int, ids: np.ndarray, d_rows, d_scores, b_rows, b_scores, documents: int | None
) -> list[tuple[str, float]]:
    """A hybrid's ranking: its two lists, each `deep` long (for document-level questions, as deep
    as covering the documents takes), fused by RRF (ties: fused score, best component rank, chunk
    id) or by weight (min-max normalised scores; ties: chunk id)."""
    if documents is None:
        d_rows, d_scores, b_rows, b_scores = (x[:deep] for x in (d_rows, d_scores, b_rows, b_scores))
    if spec.dense_weight is None:
        return fusion.rrf([ids[d_rows].tolist(), ids[b_rows].tolist()], k=spec.rrf_k)
    lists = [(ids[d_rows].tolist(), list(map(float, d_scores))), (ids[b_rows].tolist(), list(map(float, b_scores)))]
    return fusion.weighted(lists, [spec.dense_weight, 1 - spec.dense_weight])


def reranked_rows(reranker: Reranker, query: str, texts: list[str], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`rows` with their first `reranker.depth` re-ordered by the reranker's scores (ties keep the
    ranking's order), the rest as they were; and the shortlist's scores, best first."""
    shortlist = rows[: reranker.depth]
    scores = np.asarray(reranker.score(query, [texts[i] for i in shortlist]))
    order = np.lexsort((np.arange(len(scores)), -scores))
    return np.concatenate([shortlist[order], rows[reranker.depth :]]), scores[order]


def milliseconds(seconds: float) -> float:
    return round(seconds * 1000, 4)


def document_of(chunk_id: str) -> str:
    """Chunk ids start with their document's id: `{document_id}::{strategy}-{n}`."""
    return chunk_id.split("::", 1)[0]


def _covering(rows: np.ndarray, depth: int, documents: int | None, ids: np.ndarray) -> int:
    """Length of the shortest prefix of `rows` that holds `depth` chunks and, with `documents`,
    that many distinct documents (all of `rows` when they hold fewer)."""
    if documents is None:
        return min(depth, len(rows))
    seen: set[str] = set()
    for n, r in enumerate(rows, start=1):
        seen.add(document_of(ids[r]))
        if n >= depth and len(seen) >= documents:
            return n
    return len(rows)


def _deep(search, depth: int, documents: int | None, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`search(k)`'s ranking, asked deeper (k doubled) until its prefix covers `documents`
    distinct documents, then cut there (see `_covering`)."""
    k = depth
    while True:
        rows, scores = search(k)
        n = _covering(rows, depth, documents, ids)
        if n < len(rows) or len(rows) < k:  # covered, or nothing more to find
            return rows[:n], scores[:n]
        if documents is None or len({document_of(ids[r]) for r in rows}) >= documents:
            return rows[:n], scores[:n]
        k *= 2


QUERY_BATCH = 128  # queries per task when an engine spreads retrieval


def run_queries_on(
    engine,
    index: ChunkIndex,
    queries: pd.DataFrame,
    query_vectors: np.ndarray,
    encode_ms: np.ndarray,
    documents: int | None = None,
) -> pd.DataFrame:
    """`run_queries` (no rerankers, every chunk visible) over batches of queries through
    `engine.map_batches`: the index is shipped once, and the rows come back in query order."""
    shared = (index, queries.reset_index(drop=True), query_vectors, encode_ms, documents)
    frames = engine.map_batches(
        _query_batch, list(range(len(queries))), QUERY_BATCH, f"retrieval[{index.strategy}]", shared
    )
    if frames:
        return pd.concat(frames, ignore_index=True)
    return run_queries(index, queries, query_vectors, encode_ms, documents=documents)


def _query_batch(positions: list[int], shared) -> list[pd.DataFrame]:
    index, queries, query_vectors, encode_ms, documents = shared
    rows = np.asarray(positions, dtype=np.int64)
    return [run_queries(index, queries.iloc[rows], query_vectors[rows], encode_ms[rows], documents=documents)]
