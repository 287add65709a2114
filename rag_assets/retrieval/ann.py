"""An approximate nearest-neighbour index (HNSW, faiss) for serving large chunk sets.

Exact search costs one matrix product per query and grows linearly with the chunk set; an
HNSW graph answers in roughly logarithmic time at a measured loss of recall. It serves `ask`
above a size setting only: every evaluation figure stays exact. faiss was chosen over usearch
by measurement (docs/results.md, `bench/ann.py`), and because it filters inside the graph
search (an ID selector), so a tenant's query walks the graph but returns only rows it may see.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_assets import storage
from rag_assets.retrieval.specs import HNSW_EF_SEARCH, HNSW_M

M = HNSW_M  # graph degree
EF_CONSTRUCTION = 200
EF_SEARCH = HNSW_EF_SEARCH  # candidates kept while searching: above the 100 results a ranking needs


@dataclass
class HnswIndex:
    index: object  # faiss.IndexHNSWFlat over inner products of unit vectors (= cosine)
    rows: int
    ef_search: int = EF_SEARCH  # candidates a search keeps, unless told otherwise

    @classmethod
    def build(
        cls, vectors: np.ndarray, m: int = M, ef_construction: int = EF_CONSTRUCTION, ef_search: int = EF_SEARCH
    ) -> HnswIndex:
        import faiss

        if m < 2:  # faiss aborts the process on a graph of degree below 2
            raise ValueError(f"an HNSW graph needs a degree m of at least 2, got {m}")
        index = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        return cls(index, len(vectors), ef_search)

    def size_bytes(self) -> int:
        import faiss

        return len(faiss.serialize_index(self.index))

    def save(self, path: Path) -> None:
        import faiss

        storage.write_bytes(path, faiss.serialize_index(self.index).tobytes())

    @classmethod
    def load(cls, path: Path) -> HnswIndex:
        import faiss

        index = faiss.deserialize_index(np.frombuffer(path.read_bytes(), dtype=np.uint8))
        return cls(index, index.ntotal)

    def top_k(self, query: np.ndarray, k: int, candidates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosine similarities of (about) the k nearest rows, best first, as
        `dense.top_k` returns them; only rows in `candidates` when given."""
        import faiss

        if candidates is not None and not len(candidates):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        params = faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k))
        if candidates is not None:
            selector = faiss.IDSelectorBatch(np.ascontiguousarray(candidates, dtype=np.int64))
            params.sel = selector
        scores, rows = self.index.search(query.reshape(1, -1).astype(np.float32), min(k, self.rows), params=params)
        keep = rows[0] >= 0  # fewer than k reachable: faiss pads with -1
        return rows[0][keep].astype(np.int64), scores[0][keep]


def recall_against_exact(
    ann: HnswIndex, vectors: np.ndarray, queries: np.ndarray, ks=(10, 100)
) -> tuple[dict[int, float], float]:
    """Mean share of the exact top k that the index returns, per k; and the index's mean
    milliseconds per query."""
    from rag_assets.retrieval import dense

    found, elapsed = [], 0.0
    for q in queries:
        t0 = time.perf_counter()
        rows, _ = ann.top_k(q, max(ks))
        elapsed += time.perf_counter() - t0
        found.append(rows)
    exact = [dense.top_k(q, vectors, max(ks))[0] for q in queries]  # the top k of the deepest, for every k
    recall = {}
    for k in ks:
        shares = [len(set(f[:k].tolist()) & set(e[:k].tolist())) / min(k, len(vectors)) for f, e in zip(found, exact)]
        recall[k] = float(np.mean(shares)) if shares else float("nan")
    return recall, elapsed * 1000 / max(len(queries), 1)


def build_measured(vectors: np.ndarray, encode_queries, queries: list[str], path) -> tuple[dict, dict]:
    """Build the graph over `vectors`, save it at `path`, and measure its recall@10 and @100
    against exact search on `queries` (encoded by `encode_queries`). Returns (the row the
    asset's table records, the figures it reports)."""
    t0 = time.perf_counter()
    graph = HnswIndex.build(vectors)
    build_seconds = time.perf_counter() - t0
    graph.save(path)
    index_bytes = path.stat().st_size
    recall, ms = ({10: None, 100: None}, 0.0)
    if queries:
        recall, ms = recall_against_exact(graph, vectors, encode_queries(queries))
    parameters = {"m": M, "ef_construction": EF_CONSTRUCTION, "ef_search": EF_SEARCH}
    row = {
        "built": True,
        **parameters,
        "recall_at_10": recall[10],
        "recall_at_100": recall[100],
        "n_queries": len(queries),
        "build_seconds": build_seconds,
        "index_bytes": index_bytes,
        "ms_per_query": ms,
    }
    figures = {
        "built": True,
        "recall_at_10": recall[10],
        "recall_at_100": recall[100],
        "recall_queries": len(queries),
        "build_seconds": build_seconds,
        "index_mb": index_bytes / 2**20,
        "ms_per_query": ms,
        "parameters": {"M": M, "efConstruction": EF_CONSTRUCTION, "efSearch": EF_SEARCH},
    }
    return row, figures
