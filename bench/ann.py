"""HNSW against exact search on real embeddings: build time, latency, recall; then latency at 1M rows.

    pip install -e ".[bench]" && python bench/ann.py [--rows 20000] [--queries 1000] [--million-rows 1000000]

Vectors: `--rows` unique chunks of 2-5 real sentences of the bundled corpus (seeded draws,
duplicates removed), embedded with the int8 encoder (the fastest here; the graph does not care
which encoder made the vectors). Queries: real questions (the bundled questions.jsonl, then the
SQuAD 2.0 dev sample's), embedded the same way. For faiss's IndexHNSWFlat and usearch at the
project's settings (M 32, efConstruction 200, efSearch 256), one thread per query: build seconds,
p50/p95 ms per query, and recall@10/@100 against exact top-k. Exact search at the same size for
comparison.

At 1M rows there are not enough real vectors to embed here (it would take about 3 hours), so
the 1M set is the real vectors repeated with Gaussian noise (sigma 0.05 per dimension) and
renormalised: that part reports build time and latency only, never recall, which only real
vectors can measure.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import pct, synthetic_chunks  # noqa: E402

from rag_assets.catalog import BUNDLED_DATASET, PROJECT_ROOT  # noqa: E402
from rag_assets.retrieval import dense  # noqa: E402
from rag_assets.retrieval.ann import EF_CONSTRUCTION, EF_SEARCH, HnswIndex, M  # noqa: E402
from rag_assets.retrieval.embedding import LocalEmbedder  # noqa: E402

SQUAD = PROJECT_ROOT.parent / "shared" / "datasets" / "squad-v2-dev-sample" / "squad-v2-dev-sample.json"


def real_questions(n: int) -> list[str]:
    questions = [json.loads(line)["phrasings"][0] for line in (BUNDLED_DATASET / "questions.jsonl").open()]
    if SQUAD.exists():
        data = json.loads(SQUAD.read_text())["data"]
        questions += [q["question"] for a in data for p in a["paragraphs"] for q in p["qas"]]
    return list(dict.fromkeys(questions))[:n]


def exact(queries, vectors, k):
    times, found = [], []
    for q in queries:
        t0 = time.perf_counter()
        found.append(dense.top_k(q, vectors, k)[0])
        times.append((time.perf_counter() - t0) * 1000)
    return found, times


def measure(name, search, queries, truth):
    times, recall10, recall100 = [], [], []
    for q, t in zip(queries, truth):
        t0 = time.perf_counter()
        rows = search(q)
        times.append((time.perf_counter() - t0) * 1000)
        if t is not None:
            recall10.append(len(set(rows[:10].tolist()) & set(t[:10].tolist())) / 10)
            recall100.append(len(set(rows[:100].tolist()) & set(t[:100].tolist())) / 100)
    quality = f", recall@10 {np.mean(recall10):.4f}, recall@100 {np.mean(recall100):.4f}" if recall10 else ""
    print(f"  {name}: p50 {pct(times, 50):.3f} ms, p95 {pct(times, 95):.3f} ms{quality}", flush=True)


def faiss_and_usearch(vectors, queries, truth, label):
    import faiss
    from usearch.index import Index

    faiss.omp_set_num_threads(2)
    t0 = time.perf_counter()
    graph = HnswIndex.build(vectors)
    print(f"  faiss build ({label}): {time.perf_counter() - t0:.1f} s", flush=True)
    faiss.omp_set_num_threads(1)
    measure("faiss HNSW", lambda q: graph.top_k(q, 100)[0], queries, truth)
    t0 = time.perf_counter()
    index = Index(
        ndim=vectors.shape[1], metric="ip", connectivity=M, expansion_add=EF_CONSTRUCTION, expansion_search=EF_SEARCH
    )
    index.add(np.arange(len(vectors)), vectors, threads=2)
    print(f"  usearch build ({label}): {time.perf_counter() - t0:.1f} s", flush=True)
    measure("usearch HNSW", lambda q: index.search(q, 100, threads=1).keys.astype(np.int64), queries, truth)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--million-rows", type=int, default=1_000_000)
    args = p.parse_args()
    texts = list(dict.fromkeys(synthetic_chunks(int(args.rows * 1.05), seed=1)))[: args.rows]
    model = LocalEmbedder(backend="onnx-int8")
    t0 = time.perf_counter()
    vectors = model.encode(texts)
    print(f"{len(texts)} unique real-text chunks embedded ({model.identity}) in {time.perf_counter() - t0:.0f} s")
    queries = model.encode(real_questions(args.queries), query=True)
    truth, exact_ms = exact(queries, vectors, 100)
    print(f"\n{len(vectors)} real vectors, {len(queries)} real questions, top 100, one thread per query:")
    print(f"  exact: p50 {pct(exact_ms, 50):.3f} ms, p95 {pct(exact_ms, 95):.3f} ms")
    faiss_and_usearch(vectors, queries, truth, f"{len(vectors)} rows")

    if args.million_rows:
        rng = np.random.default_rng(0)
        big = vectors[rng.integers(0, len(vectors), size=args.million_rows)]
        big += rng.normal(0, 0.05, size=big.shape).astype(np.float32)
        big /= np.linalg.norm(big, axis=1, keepdims=True)
        _, exact_ms = exact(queries[:200], big, 100)
        print(f"\n{len(big)} rows (real vectors plus noise: latency only), 200 queries:")
        print(f"  exact: p50 {pct(exact_ms, 50):.1f} ms, p95 {pct(exact_ms, 95):.1f} ms")
        faiss_and_usearch(big, queries[:200], [None] * 200, f"{len(big)} rows")


if __name__ == "__main__":
    main()
