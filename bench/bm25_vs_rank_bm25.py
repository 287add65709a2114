"""BM25 query latency: our bm25s index vs rank-bm25 on the same tokens, 5k and 100k chunks.

    python bench/bm25_vs_rank_bm25.py [--sizes 5000,100000] [--queries 30]

Both score the same Okapi formula (our `okapi` variant); top-10 must be identical. The
default Lucene variant's latency is printed too.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

sys.path.insert(0, str(Path(__file__).parent))
from common import bundled_queries, pct, synthetic_chunks, timed  # noqa: E402

from rag_assets.retrieval.lexical import BM25Index, BM25Settings, Tokenizer  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="5000,100000")
    p.add_argument("--queries", type=int, default=30)
    args = p.parse_args()
    tokenize = Tokenizer("plain")  # the same tokens on both sides
    queries = bundled_queries(args.queries)
    print(
        f"{'chunks':>8} {'rank-bm25 p50 ms':>17} {'ours p50 ms':>12} {'speed-up':>9} "
        f"{'lucene p50 ms':>14} {'same top-10':>12}"
    )
    for n in [int(s) for s in args.sizes.split(",")]:
        texts = synthetic_chunks(n)
        tokens = [tokenize(t) for t in texts]
        reference = BM25Okapi(tokens, k1=1.2, b=0.75, epsilon=0.25)
        okapi = BM25Index.build(texts, BM25Settings(variant="okapi", analyzer="plain"))
        lucene = BM25Index.build(texts)
        ref_ms, ours_ms, luc_ms, same = [], [], [], 0
        for q in queries:
            scores, ms = timed(lambda: reference.get_scores(tokenize(q)))
            top_ref = np.lexsort((np.arange(n), -scores))[:10]
            ref_ms.append(ms)
            (top_ours, _), ms = timed(okapi.top_k, q, 10)
            ours_ms.append(ms)
            _, ms = timed(lucene.top_k, q, 10)
            luc_ms.append(ms)
            same += top_ours.tolist() == top_ref.tolist()
        r, o = pct(ref_ms, 50), pct(ours_ms, 50)
        print(f"{n:>8} {r:>17.2f} {o:>12.3f} {r / o:>8.0f}x {pct(luc_ms, 50):>14.3f} {same:>6}/{len(queries)}")


if __name__ == "__main__":
    main()
