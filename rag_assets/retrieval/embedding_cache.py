"""Embeddings cached by (model identity, sha256 of the embedded text), on disk, across runs.

Each model identity has its own folder of Parquet shards, on a local disk or on object
storage. New vectors are written a batch at a time, each shard whole (`storage`), so a run
killed mid-way (even with SIGKILL) loses at most the batch in flight and the rerun encodes
only what is missing. A changed text has a new hash; a changed model has a new folder.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rag_assets import storage
from rag_assets.retrieval.embedding import Embedder, text_key


def shard_digest(keys: list[str]) -> str:
    """In a shard's file name: which keys it holds, so a retried shard can see it was written."""
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CacheStats:
    texts: int
    unique: int
    hits: int
    encoded: int
    seconds: float

    @property
    def hit_rate(self) -> float:
        return self.hits / self.unique if self.unique else 1.0


class EmbeddingCache:
    """`query=True`: the model's query side, cached apart from its passages (e5 and bge embed
    them differently)."""

    def __init__(self, root: storage.AnyPath, embedder: Embedder, flush_every: int = 256, query: bool = False):
        self.embedder, self.query = embedder, query
        self.identity = f"{embedder.identity}#query" if query else embedder.identity
        self.folder = root / hashlib.sha256(self.identity.encode()).hexdigest()[:16]
        self.flush_every = flush_every
        self.vector_bytes_read = 0  # by the last encode(): what a lookup cost

    def _lookup(self, wanted: set[str]) -> tuple[dict[str, np.ndarray], int]:
        """Cached vectors of the `wanted` keys, and the bytes of vectors read. Each shard's key
        column is read (32 hex bytes a row, the cache's index); its vectors are read only when
        it holds a wanted key, and then only those rows are kept."""
        found: dict[str, np.ndarray] = {}
        vector_bytes = 0
        if not wanted:
            return found, 0
        wanted_keys = pa.array(sorted(wanted))
        for shard in storage.listing(self.folder, "shard-*.parquet"):
            keys = storage.read_parquet(shard, columns=["key"]).column("key")
            rows = pc.indices_nonzero(pc.is_in(keys, value_set=wanted_keys)).to_numpy()
            if not len(rows):
                continue
            column = storage.read_parquet(shard, columns=["vector"]).column("vector").combine_chunks()
            vectors = np.asarray(column.flatten(), dtype=np.float32).reshape(len(column), -1)
            vector_bytes += vectors.nbytes
            for row in rows:  # shards in write order: a key written again, the newer vector wins
                found[keys[int(row)].as_py()] = vectors[row].copy()
        return found, vector_bytes

    def _write_shard(self, keys: list[str], vectors: np.ndarray) -> None:
        storage.write_text(self.folder / "model.txt", self.identity + "\n")
        flat = pa.array(vectors.astype(np.float32).ravel())
        table = pa.table({"key": keys, "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])})
        name = f"shard-{time.time_ns()}-{os.getpid()}-{shard_digest(keys)}.parquet"  # time first: newest wins
        storage.write_parquet(self.folder / name, table)

    def encode_shard(self, keys: list[str], texts: list[str]) -> np.ndarray:
        """Encode one shard of missing texts and write it to the cache: the unit of work that a
        killed run or a lost worker loses at most."""
        vectors = self.embedder.encode(texts, query=self.query)
        self._write_shard(keys, vectors)
        return vectors

    def stored(self, texts: list[str]) -> tuple[np.ndarray | None, int]:
        """Vectors for `texts` (row-aligned) read from the cache, never encoded (a reader that
        writes nothing: `ask`): (vectors, 0), or (None, how many texts have none)."""
        keys = [text_key(t) for t in texts]
        cached, self.vector_bytes_read = self._lookup(set(keys))
        missing = len(set(keys) - cached.keys())
        if missing or not texts:
            return (None, missing) if missing else (np.zeros((0, self.embedder.dim), dtype=np.float32), 0)
        return np.stack([cached[k] for k in keys]), 0

    def encode(self, texts: list[str], progress=None, engine=None) -> tuple[np.ndarray, CacheStats]:
        """Vectors for `texts` (row-aligned); only texts not in the cache are encoded, in shards
        of `flush_every`, each written as soon as it is done.

        `progress(done, total)` is called after each written shard. `engine`, when given,
        encodes the shards elsewhere (`engine.encode_shards(cache, shards, progress)`, e.g. on
        Ray workers that write them to this cache); the vectors are then read back from it."""
        t0 = time.perf_counter()
        keys = [text_key(t) for t in texts]
        cached, self.vector_bytes_read = self._lookup(set(keys))
        # by length, then key: batches of like lengths pad least, and the order is deterministic
        missing = sorted(
            {k: t for k, t in zip(keys, texts) if k not in cached}.items(), key=lambda kt: (len(kt[1]), kt[0])
        )
        shards = [missing[start : start + self.flush_every] for start in range(0, len(missing), self.flush_every)]
        if engine is not None and shards:
            engine.encode_shards(self, shards, progress)
            written, _ = self._lookup({k for k, _ in missing})
            lost = [k for k, _ in missing if k not in written]
            if lost:
                raise RuntimeError(f"{len(lost)} texts were sent to be encoded but are not in the cache")
            cached.update(written)
        else:
            for i, shard in enumerate(shards):
                vectors = self.encode_shard([k for k, _ in shard], [t for _, t in shard])
                cached.update(zip((k for k, _ in shard), vectors))
                if progress:
                    progress(min((i + 1) * self.flush_every, len(missing)), len(missing))
        unique = len(set(keys))
        stats = CacheStats(len(texts), unique, unique - len(missing), len(missing), time.perf_counter() - t0)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32), stats
        return np.stack([cached[k] for k in keys]), stats
