"""Embeddings cached by (model identity, sha256 of the embedded text), on disk, across runs.

Each model identity has its own folder of Parquet shards. New vectors are written a batch
at a time, each shard to a temporary file renamed into place, so a run killed mid-way
(even with SIGKILL) loses at most the batch in flight and the rerun encodes only what is
missing. A changed text has a new hash; a changed model has a new folder.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rag_assets import storage
from rag_assets.retrieval.embedding import Embedder, text_key


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
    def __init__(self, root: Path, embedder: Embedder, flush_every: int = 256):
        self.embedder = embedder
        self.folder = Path(root) / hashlib.sha256(embedder.identity.encode()).hexdigest()[:16]
        self.flush_every = flush_every

    def _load(self) -> dict[str, np.ndarray]:
        cached: dict[str, np.ndarray] = {}
        for shard in sorted(self.folder.glob("shard-*.parquet")):
            table = pq.read_table(shard)
            keys = table.column("key").to_pylist()
            vectors = np.asarray(table.column("vector").combine_chunks().flatten(), dtype=np.float32)
            for key, vec in zip(keys, vectors.reshape(len(keys), -1)):
                cached[key] = vec
        return cached

    def _write_shard(self, keys: list[str], vectors: np.ndarray) -> None:
        storage.write_text(self.folder / "model.txt", self.embedder.identity + "\n")
        flat = pa.array(vectors.astype(np.float32).ravel())
        table = pa.table({"key": keys, "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])})
        storage.write_parquet(self.folder / f"shard-{time.time_ns()}-{os.getpid()}.parquet", table)

    def encode(self, texts: list[str], progress=None) -> tuple[np.ndarray, CacheStats]:
        """Vectors for `texts` (row-aligned); only texts not in the cache are encoded.

        `progress(done, total)` is called after each written batch."""
        t0 = time.perf_counter()
        keys = [text_key(t) for t in texts]
        cached = self._load()
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in cached}.items())
        for start in range(0, len(missing), self.flush_every):
            batch = missing[start : start + self.flush_every]
            vectors = self.embedder.encode([t for _, t in batch])
            self._write_shard([k for k, _ in batch], vectors)
            cached.update(zip((k for k, _ in batch), vectors))
            if progress:
                progress(min(start + self.flush_every, len(missing)), len(missing))
        unique = len(set(keys))
        stats = CacheStats(len(texts), unique, unique - len(missing), len(missing), time.perf_counter() - t0)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32), stats
        return np.stack([cached[k] for k in keys]), stats
