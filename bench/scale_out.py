"""Embedding throughput: local against the Ray engine with 1 and 2 workers, on one machine.

    python bench/scale_out.py [--chunks 20000] [--shard 256]

The texts: unique chunk-sized texts of 2-5 real sentences of the bundled corpus
(`common.synthetic_chunks`, seeded, duplicates removed). Each configuration encodes all of them
with the int8 encoder into an empty embedding cache, in shards of `--shard` texts: `local` in
this process (its encoder uses every core), `ray` through a Ray head this script starts
(`ray start --head`, 2 CPUs, dashboard off) and stops, with 1 worker of 2 threads and with 2
workers of 1 thread each. Per-task overhead: the round trip of an empty call to a Ray actor.
From the measured rate per core, the workers needed to embed 2 million chunks in one hour.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from common import synthetic_chunks  # noqa: E402
from servers import ray_cluster  # noqa: E402

from rag_assets.retrieval.embedding import LocalEmbedder  # noqa: E402
from rag_assets.retrieval.embedding_cache import EmbeddingCache  # noqa: E402
from rag_assets.retrieval.ray_engine import RayEngine  # noqa: E402

CORES = 2
TARGET_CHUNKS, TARGET_SECONDS = 2_000_000, 3600


class Echo:
    def ping(self):
        return 0


def task_overhead_ms(calls: int = 300) -> float:
    import ray

    actor = ray.remote(num_cpus=0)(Echo).remote()
    ray.get(actor.ping.remote())
    t0 = time.perf_counter()
    for _ in range(calls):
        ray.get(actor.ping.remote())
    ms = (time.perf_counter() - t0) * 1000 / calls
    ray.kill(actor)
    return ms


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--chunks", type=int, default=20_000)
    p.add_argument("--shard", type=int, default=256)
    args = p.parse_args()
    texts = list(dict.fromkeys(synthetic_chunks(int(args.chunks * 1.1) + 50, seed=13)))[: args.chunks]
    print(f"{len(texts)} unique texts, {sum(map(len, texts)) / len(texts):.0f} characters on average")
    model = LocalEmbedder(backend="onnx-int8")
    rates, reference = {}, None
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        reference, _ = EmbeddingCache(Path(tmp) / "local", model, flush_every=args.shard).encode(texts)
        rates["local (1 process, 2 threads)"] = len(texts) / (time.perf_counter() - t0)
        os.environ["RAY_AUTH_MODE"] = "disabled"  # the cluster below is this script's, on this machine
        with ray_cluster(cpus=CORES) as (address, _):
            for workers, cpus in ((1, 2), (2, 1)):
                engine = RayEngine(address=address, workers=workers, cpus_per_worker=cpus, log=lambda m: None)
                cache = EmbeddingCache(Path(tmp) / f"ray-{workers}", model, flush_every=args.shard)
                t0 = time.perf_counter()
                vectors, _ = cache.encode(texts, engine=engine)
                rates[f"ray ({workers} worker{'s' if workers > 1 else ''} x {cpus} CPU)"] = len(texts) / (
                    time.perf_counter() - t0
                )
                assert np.abs(vectors - reference).max() <= 1e-6, "ray and local vectors differ"
            overhead = task_overhead_ms()
            import ray

            ray.shutdown()
    local = rates["local (1 process, 2 threads)"]
    print(f"\nembedding throughput, {len(texts)} texts, shards of {args.shard} ({CORES} cores):")
    for name, rate in rates.items():
        print(f"  {name:32s} {rate:7.1f} chunks/s   {rate / local:5.2f}x local")
    print(f"per-task overhead (empty actor call, round trip): {overhead:.2f} ms")
    per_core = max(rates.values()) / CORES
    needed = TARGET_CHUNKS / TARGET_SECONDS
    print(f"\nmeasured rate per core: {per_core:.1f} chunks/s; 2M chunks in one hour needs {needed:.0f} chunks/s:")
    for cores_per_worker in (1, 4, 8, 16):
        workers = int(np.ceil(needed / (per_core * cores_per_worker)))
        print(f"  workers of {cores_per_worker:2d} cores: {workers:4d} ({workers * cores_per_worker} cores)")


if __name__ == "__main__":
    main()
