"""Peak memory of the graph with all 8 strategies on a corpus of about 100k chunks per strategy.

    python bench/memory.py [--texts 100000] [--queries 1000]

The corpus is `scaling.build_dataset`'s: unique chunk-sized texts of real sentences of the
bundled corpus, 20 to a Markdown file, and 1,000 needle questions. Each step runs in a process
of its own, through the project's definitions and the same jobs as `rag-assets run`
(`execute_in_process`, an instance in a temporary folder), and prints its seconds and the
process's peak RSS: the roots (snapshot, ground truth); each strategy's chunk set and BM25
index; then each asset downstream of the strategies, one process each (generation off).

Embeddings are not computed: encoding 8 x 100k texts takes about 3 hours on this 2-core
machine. Each strategy's `embeddings` table is written by `embedding_frame`, the asset's own
table builder, with random unit vectors under the real model identity. Memory does not depend
on the vectors' values; the retrieval figures of such a run mean nothing and are not printed.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from scaling import build_dataset  # noqa: E402

from rag_assets.defs.nightly import EVALUATION_ASSETS  # noqa: E402

DOWNSTREAM = [a for a in EVALUATION_ASSETS if a != "ground_truth"]  # the nightly job's, less its root


def step(data_dir: Path, dataset: Path, job: str, assets: list[str], partition: str | None) -> dict:
    """One job's assets executed in this process; its seconds and this process's peak RSS."""
    from dagster import AssetKey, DagsterInstance

    from rag_assets.defs import build_definitions
    from rag_assets.settings import Settings

    defs = build_definitions(Settings(data_dir=data_dir, dataset=dataset, llm=False))
    t0 = time.perf_counter()
    with DagsterInstance.from_config(str(data_dir / "dagster_home")) as instance:
        result = defs.resolve_job_def(job).execute_in_process(
            instance=instance,
            asset_selection=[AssetKey(a) for a in assets],
            partition_key=partition,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
    assert result.success
    out = {"seconds": time.perf_counter() - t0, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if partition:
        from rag_assets import storage
        from rag_assets.defs.partitions import model_strategy_key
        from rag_assets.layout import DataDir
        from rag_assets.retrieval import packaged
        from rag_assets.retrieval.embedding import embedding_frame
        from rag_assets.retrieval.packaged import DEFAULT_EMBEDDER

        layout = DataDir(data_dir)
        chunks = layout.read_table("chunk_sets", partition)
        vectors = np.random.default_rng(0).standard_normal((len(chunks), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        storage.write_parquet(
            layout.table("embeddings", model_strategy_key(DEFAULT_EMBEDDER, partition)),
            embedding_frame(chunks, vectors, packaged.embedder(DEFAULT_EMBEDDER).identity),
        )
        out["chunks"] = len(chunks)
    return out


def in_process(arguments: list[str]) -> dict:
    done = subprocess.run([sys.executable, __file__, "--step", *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--texts", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--step", nargs=5, help=argparse.SUPPRESS)  # data dir, dataset, job, assets, partition
    args = p.parse_args()
    if args.step:
        data_dir, dataset, job, assets, partition = args.step
        print(json.dumps(step(Path(data_dir), Path(dataset), job, assets.split(","), partition or None)))
        return
    from rag_assets.app.instance import use_data_dir
    from rag_assets.chunking.strategies import STRATEGIES

    with tempfile.TemporaryDirectory(prefix="rag-assets-memory-") as tmp:
        dataset, data_dir = Path(tmp) / "dataset", Path(tmp) / "data"
        build_dataset(dataset, args.texts, args.queries)
        use_data_dir(data_dir, dataset)  # its dagster.yaml, as `rag-assets run` writes it
        print(f"{args.texts} texts, {args.queries} questions; every step in a fresh process")
        print("| step | chunks | seconds | peak RSS (MB) |\n|---|---|---|---|")
        roots = in_process([str(data_dir), str(dataset), "corpus", "corpus_snapshot,ground_truth", ""])
        print(f"| corpus_snapshot, ground_truth | - | {roots['seconds']:.1f} | {roots['peak_mb']:.0f} |", flush=True)
        for strategy in STRATEGIES:
            r = in_process([str(data_dir), str(dataset), "strategy_indexes", "chunk_sets,bm25_index", strategy])
            print(f"| chunk_sets, bm25_index [{strategy}] | {r['chunks']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} |")
        for asset in DOWNSTREAM:
            r = in_process([str(data_dir), str(dataset), "evaluation", asset, ""])
            print(f"| {asset} (8 strategies) | - | {r['seconds']:.1f} | {r['peak_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
