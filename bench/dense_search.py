"""Exact dense search latency over 100k x 384 unit vectors (target: <= 10 ms per query).

    python bench/dense_search.py [--rows 100000] [--queries 200]

Search cost does not depend on what the vectors mean, so random unit vectors stand in for
an index; queries are real rows, so the best hit is known and checked.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import pct, timed  # noqa: E402

from rag_assets.retrieval.dense import top_k  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=200)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(args.rows, args.dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    picks = rng.integers(0, args.rows, size=args.queries)
    top_k(matrix[0], matrix, 100)  # warm-up
    times = []
    for i in picks:
        (rows, _), ms = timed(top_k, matrix[i], matrix, 100)
        assert rows[0] == i
        times.append(ms)
    print(
        f"{args.rows} x {args.dim} float32, top-100, {args.queries} queries: "
        f"p50 {pct(times, 50):.2f} ms, p95 {pct(times, 95):.2f} ms, max {max(times):.2f} ms"
    )


if __name__ == "__main__":
    main()
