"""How each stage's time and memory grow with the corpus: 1k, 10k and 100k chunks of real text.

    python bench/scaling.py [--sizes 1000,10000,100000] [--queries 1000] [--strategy C]

The corpora: unique chunk-sized texts of 2-5 real sentences of the bundled corpus (seeded draws
with duplicates removed, `common.synthetic_chunks`), 20 to a document, as Markdown files. The
questions: for 1,000 seeded texts, the needle is its first two sentences and the query its first
sentence (real text; a needle that is not unique in the corpus is rejected by validation, as any
would be). Each size runs in a fresh process through the core functions the assets call:
snapshot (extraction), ground truth (needle validation), chunking (one strategy, default C),
BM25 build, embedding (the int8 encoder into an empty cache), query encoding, dense + BM25 +
hybrid retrieval of 1,000 queries (exact search), and evaluation (hits, recall@k and MRR with
intervals). It prints seconds per stage and the process's peak RSS after it, then the fitted
exponent of time against chunk count per stage (log-log least squares).
"""

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import synthetic_chunks  # noqa: E402

STAGES = [
    "snapshot",
    "ground_truth",
    "chunking",
    "bm25_build",
    "embedding",
    "query_encoding",
    "retrieval",
    "evaluation",
]
PER_DOCUMENT = 20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_dataset(root: Path, size: int, queries: int) -> None:
    texts = list(dict.fromkeys(synthetic_chunks(int(size * 1.05) + 50, seed=size)))[:size]
    documents = root / "documents"
    documents.mkdir(parents=True)
    for start in range(0, len(texts), PER_DOCUMENT):
        body = "\n\n".join(texts[start : start + PER_DOCUMENT])
        (documents / f"doc-{start // PER_DOCUMENT:06d}.md").write_text(body + "\n", encoding="utf-8")
    rng = np.random.default_rng(0)
    with (root / "questions.jsonl").open("w", encoding="utf-8") as out:
        for i in rng.choice(len(texts), size=min(queries, len(texts)), replace=False):
            sentences = re.split(r"(?<=[.!?]) ", texts[i])
            record = {
                "id": f"q{i}",
                "kind": "answerable",
                "phrasings": [sentences[0]],
                "needle": " ".join(sentences[:2]),
            }
            out.write(json.dumps(record) + "\n")


def one_size(size: int, queries: int, strategy: str) -> dict:
    from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
    from rag_assets.evaluation import metric_tables
    from rag_assets.ingest import corpus
    from rag_assets.ingest import ground_truth as gt
    from rag_assets.retrieval.embedding import LocalEmbedder
    from rag_assets.retrieval.embedding_cache import EmbeddingCache
    from rag_assets.retrieval.lexical import BM25Index
    from rag_assets.retrieval.search import ChunkIndex, run_queries

    out = {"size": size}

    def stage(name, fn):
        t0 = time.perf_counter()
        result = fn()
        out[name] = (time.perf_counter() - t0, peak_mb())
        return result

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_dataset(root, size, queries)
        model = LocalEmbedder(backend="onnx-int8")
        out["baseline_mb"] = peak_mb()
        snap = stage("snapshot", lambda: corpus.snapshot(root / "documents"))
        records, _ = gt.read_questions(root / "questions.jsonl")
        truth, rejects = stage("ground_truth", lambda: gt.validate(records, snap))
        chunks = stage("chunking", lambda: chunk_corpus(snap, STRATEGIES[strategy]))
        texts = chunks["text"].tolist()
        bm25 = stage("bm25_build", lambda: BM25Index.build(texts))
        vectors, _ = stage("embedding", lambda: EmbeddingCache(root / "cache", model).encode(texts))
        query_vectors = stage("query_encoding", lambda: model.encode(truth["query"].tolist(), query=True))
        index = ChunkIndex(strategy, chunks["chunk_id"].tolist(), texts, vectors, bm25)
        runs = stage(
            "retrieval",
            lambda: run_queries(index, truth[["query_id", "query"]], query_vectors, np.zeros(len(truth))),
        )
        table = stage(
            "evaluation",
            lambda: metric_tables.metric_table(metric_tables.query_hits(runs, {strategy: chunks}, truth), {}),
        )
        out.update(chunks=len(chunks), characters=int(snap["text"].str.len().sum()), rejected=len(rejects))
        dense_r20 = table[(table["retriever"] == "dense") & (table["metric"] == "recall") & (table["k"] == 20)]
        out["dense_recall_20"] = float(dense_r20["value"].iloc[0]) if len(dense_r20) else None
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--strategy", default="C")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single size, in this process
    args = p.parse_args()
    if args.one:
        print(json.dumps(one_size(args.one, args.queries, args.strategy)))
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        command = [sys.executable, __file__, "--one", str(size), "--queries", str(args.queries)]
        command += ["--strategy", args.strategy]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = results[-1]
        print(
            f"\n{r['size']} texts -> {r['chunks']} chunks of strategy {args.strategy} ({r['characters'] / 1e6:.1f}M "
            f"characters), {args.queries} questions ({r['rejected']} rejected), dense R@20 {r['dense_recall_20']:.3f}; "
            f"process baseline {r['baseline_mb']:.0f} MB"
        )
        for name in STAGES:
            seconds, mb = r[name]
            print(f"  {name:15s} {seconds:8.2f} s   peak RSS so far {mb:7.0f} MB", flush=True)
    if len(results) > 1:
        chunks = np.log([r["chunks"] for r in results])
        print("\nexponent of time against chunks (1.0 = linear):")
        for name in STAGES:
            times = np.log([max(r[name][0], 1e-4) for r in results])
            print(f"  {name:15s} {np.polyfit(chunks, times, 1)[0]:.2f}")


if __name__ == "__main__":
    main()
