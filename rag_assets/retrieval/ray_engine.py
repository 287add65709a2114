"""Heavy work on a Ray cluster: extraction of files and search of queries in batches as Ray
tasks (`map_batches`), and the shards of texts the embedding cache lacks, spread over a pool of
actors that each load the model once and write every shard they finish to the cache.

The driver sends texts and receives only a count per shard; vectors travel through the cache
(a folder every worker can reach), never through the driver's memory. Fault tolerance is Ray's
own, configured here on purpose: an actor whose process dies is restarted (`max_restarts`) and
its unfinished calls are retried on the new process (`max_task_retries`). A shard is written
under a name that carries a digest of its keys, and an actor first looks for that name, so a
retried call whose shard had already been written encodes nothing again.

With no address, a Ray cluster is started for this process (`ray.init`, stopped with it), with
token authentication on and its token kept in this process's environment rather than written to
the home folder, where every later `ray start` on the machine would need it.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets import environment, storage
from rag_assets.retrieval.embedding import LocalEmbedder
from rag_assets.retrieval.embedding_cache import EmbeddingCache, shard_digest


@dataclass(frozen=True)
class EmbedderSpec:
    """What a worker needs to load the same model: checked against the driver's identity."""

    path: str
    name: str
    batch_size: int
    backend: str
    identity: str
    query_prefix: str = ""
    passage_prefix: str = ""

    @classmethod
    def of(cls, embedder) -> EmbedderSpec:
        e = embedder
        return cls(str(e.path), e.name, e.batch_size, e.backend, e.identity, e.query_prefix, e.passage_prefix)


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse at once a cluster address nothing answers on (`ray.init` would wait minutes);
    `auto` is left to Ray."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        raise ConnectionError(f"no Ray cluster answers at {address}: {exc}") from None


def _apply(fn, batch: list, shared) -> list:
    return fn(batch, shared)


class ShardEncoder:
    """One Ray actor: the model loaded once, then shards encoded and written to the cache."""

    def __init__(self, spec: EmbedderSpec, cache_root: str, threads: int):
        embedder = LocalEmbedder(
            Path(spec.path), spec.name, spec.batch_size, spec.backend, threads, spec.query_prefix, spec.passage_prefix
        )
        if embedder.identity != spec.identity:  # other weights on this node: its vectors must not enter the cache
            raise RuntimeError(f"worker model {embedder.identity} is not the driver's {spec.identity}")
        self.cache = EmbeddingCache(storage.as_path(cache_root), embedder)  # a folder or a URL the worker writes to
        self.pid = os.getpid()

    def encode(self, keys: list[str], texts: list[str]) -> dict:
        t0 = time.perf_counter()
        digest = shard_digest(keys)
        written = bool(storage.listing(self.cache.folder, f"shard-*-{digest}.parquet"))
        if not written:
            self.cache.encode_shard(keys, texts)
        import ray

        return {
            "pid": self.pid,
            "restarted": ray.get_runtime_context().was_current_actor_reconstructed,
            "texts": len(texts),
            "seconds": time.perf_counter() - t0,
            "already_written": written,
        }


@dataclass
class RayEngine:
    """`address`: "" starts a cluster for this process; "auto", "host:port" or "ray://host:port"
    joins one. `workers`: actors in the pool (0: one per `cpus_per_worker` CPUs of the cluster)."""

    address: str = ""
    workers: int = 0
    cpus_per_worker: int = 1
    max_restarts: int = 3
    max_task_retries: int = 3
    log: object = print
    stats: dict = field(default_factory=dict)

    def connect(self) -> None:
        if not self.address and "ray" not in sys.modules:
            # Ray reads its authentication settings when it is first imported: they must be in
            # the environment before that, or the driver and the head it starts disagree.
            if environment.set_default("RAY_AUTH_MODE", "token") == "token" and not environment.value(
                "RAY_AUTH_TOKEN_PATH"
            ):
                environment.set_default("RAY_AUTH_TOKEN", secrets.token_hex(32))
        import ray

        if ray.is_initialized():
            return
        if self.address:
            check_reachable(self.address)
            ray.init(address=self.address, log_to_driver=False)
            return
        ray.init(num_cpus=len(os.sched_getaffinity(0)), include_dashboard=False, log_to_driver=False)

    def pool_size(self) -> int:
        import ray

        if self.workers:
            return self.workers
        return max(1, int(ray.cluster_resources().get("CPU", 1) // self.cpus_per_worker))

    def map_batches(self, fn, items: list, batch_size: int, what: str, shared=None) -> list:
        """`fn(batch, shared)` over batches of `items` as Ray tasks (retried on a lost worker),
        the results concatenated in `items` order. `shared` is put in the object store once."""
        import ray

        self.connect()
        task = ray.remote(max_retries=self.max_task_retries)(_apply)
        shared_ref = ray.put(shared)
        batches = [items[start : start + batch_size] for start in range(0, len(items), batch_size)]
        pending = {task.remote(fn, batch, shared_ref): i for i, batch in enumerate(batches)}
        results: list = [None] * len(batches)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            results[pending.pop(ready[0])] = ray.get(ready[0])
            self.log(f"{what}: batch {len(batches) - len(pending)}/{len(batches)} done")
        self.stats = {"batches": len(batches)}
        return [row for batch in results for row in batch]

    def encode_shards(self, cache, shards: list[list[tuple[str, str]]], progress=None) -> dict:
        """Every shard encoded and in the cache, or an exception; per-shard progress to `log`."""
        import ray
        from ray.util import ActorPool

        self.connect()
        size = min(self.pool_size(), len(shards))
        actor = ray.remote(
            num_cpus=self.cpus_per_worker, max_restarts=self.max_restarts, max_task_retries=self.max_task_retries
        )(ShardEncoder)
        spec = EmbedderSpec.of(cache.embedder)
        root = str(cache.folder.parent)
        actors = [actor.remote(spec, root, self.cpus_per_worker) for _ in range(size)]
        per_pid: dict[int, dict] = {}
        done_texts = already = 0
        total = sum(len(s) for s in shards)
        try:
            results = ActorPool(actors).map_unordered(
                lambda a, shard: a.encode.remote([k for k, _ in shard], [t for _, t in shard]), shards
            )
            for i, result in enumerate(results, start=1):
                worker = per_pid.setdefault(
                    result["pid"], {"texts": 0, "seconds": 0.0, "restarted": result["restarted"]}
                )
                if result["already_written"]:  # a retried shard: in the cache, encoded by nobody now
                    already += 1
                else:
                    worker["texts"] += result["texts"]
                    worker["seconds"] += result["seconds"]
                done_texts += result["texts"]
                self.log(
                    f"shard {i}/{len(shards)} done by worker pid {result['pid']}: {result['texts']} texts"
                    f" in {result['seconds']:.1f} s" + (" (already in the cache)" if result["already_written"] else "")
                )
                if progress:
                    progress(done_texts, total)
        finally:
            for a in actors:
                ray.kill(a)
        self.stats = {
            "workers": size,
            "restarts": sum(w["restarted"] for w in per_pid.values()),  # each restart is a new process
            "retried_shards_already_written": already,
            "shards": len(shards),
            "chunks_per_second_per_worker": {
                str(pid): (w["texts"] / w["seconds"] if w["seconds"] else 0.0) for pid, w in per_pid.items()
            },
        }
        return self.stats
