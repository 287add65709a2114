"""A model's outputs by what determines them, kept in the data dir so a rerun decodes only what changed.

Drafted questions and judgements (rag_assets.drafting) and generation_eval's answers use it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import pyarrow as pa

from rag_assets import storage
from rag_assets.answering.generation import Generation


class OutputCache:
    """A model's replies by key (sha256 of model identity and prompt), as Parquet shards in one
    folder per model; each shard is written whole, so a killed run loses at most one batch."""

    def __init__(self, root: storage.AnyPath, model_identity: str):
        self.folder = root / hashlib.sha256(model_identity.encode()).hexdigest()[:16]
        self.model_identity = model_identity
        self.values: dict[str, str] = {}
        for shard in storage.listing(self.folder, "shard-*.parquet"):
            table = storage.read_parquet(shard).to_pydict()
            self.values.update(zip(table["key"], table["value"]))

    def key(self, prompt: str) -> str:
        return hashlib.sha256(f"{self.model_identity}\0{prompt}".encode()).hexdigest()

    def put(self, values: dict[str, str]) -> None:
        if not values:
            return
        storage.write_text(self.folder / "model.txt", self.model_identity + "\n")
        keys = sorted(values)
        table = pa.table({"key": keys, "value": [values[k] for k in keys]})
        storage.write_parquet(self.folder / f"shard-{time.time_ns()}-{os.getpid()}.parquet", table)
        self.values.update(values)


def decoding_identity(lm) -> str:
    """The model and every setting that decides its greedy output: what an answer's key names."""
    settings = {
        "max_new_tokens": getattr(lm, "max_new_tokens", None),
        "answer_prefix": getattr(lm, "answer_prefix", None),
        "stop_strings": list(getattr(lm, "stop_strings", ())),
    }
    return f"{lm.identity} {json.dumps(settings, sort_keys=True)}"


class AnswerCache:
    """generation_eval's answers by (model and decoding settings, prompt): a rerun after an edit
    decodes only the prompts that changed. A failed reply (an endpoint's timeout) is never kept."""

    def __init__(self, root: storage.AnyPath):
        self.root, self.reused, self.decoded = root, 0, 0
        self._caches: dict[str, OutputCache] = {}

    def generate_many(self, lm, prompts: list[str], batch_size: int = 1, progress=None) -> list[Generation]:
        identity = decoding_identity(lm)
        cache = self._caches.setdefault(identity, OutputCache(self.root, identity))
        keys = [cache.key(p) for p in prompts]
        missing = [i for i, k in enumerate(keys) if k not in cache.values]
        fresh = lm.generate_many([prompts[i] for i in missing], batch_size, progress) if missing else []
        cache.put({keys[i]: json.dumps(g.__dict__) for i, g in zip(missing, fresh) if not g.failure})
        self.decoded += len(missing)
        self.reused += len(prompts) - len(missing)
        out = dict(zip(missing, fresh))
        for i, key in enumerate(keys):
            if i not in out:
                out[i] = Generation(**{**json.loads(cache.values[key]), "cached": True})
        return [out[i] for i in range(len(prompts))]
