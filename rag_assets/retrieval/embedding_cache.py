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
import pyarrow.compute as pc
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
        for shard in sorted(self.folder.glob("shard-*.parquet")):
            parquet = pq.ParquetFile(shard)
            keys = parquet.read(columns=["key"]).column("key")
            rows = pc.indices_nonzero(pc.is_in(keys, value_set=wanted_keys)).to_numpy()
            if not len(rows):
                continue
            column = parquet.read(columns=["vector"]).column("vector").combine_chunks()
            vectors = np.asarray(column.flatten(), dtype=np.float32).reshape(len(column), -1)
            vector_bytes += vectors.nbytes
            for row in rows:  # shards in write order: a key written again, the newer vector wins
                found[keys[int(row)].as_py()] = vectors[row].copy()
        return found, vector_bytes

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
        cached, self.vector_bytes_read = self._lookup(set(keys))
        # by length, then key: batches of like lengths pad least, and the order is deterministic
        missing = sorted(
            {k: t for k, t in zip(keys, texts) if k not in cached}.items(), key=lambda kt: (len(kt[1]), kt[0])
        )
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
