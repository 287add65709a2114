"""Rerankers re-score a shortlist with the query and passage seen together.

Three kinds, each reported under its name: a sentence-transformers CrossEncoder (`rerank`), loaded
from a local folder or the Hugging Face cache and never downloaded (where none is on the machine the
caller gets the reason in words); the local language model asked whether the passage answers the
query (`rerank-llm`), which runs wherever the generator does; and a model behind `POST /rerank`
(rag_assets.retrieval.remote). Each has an identity (`model`): the folder's fingerprint, the
generator's weights hash, an endpoint's probe fingerprint. `make` makes the one a spec names;
`CachedScores` keeps every score by (identity, query, passage) across runs.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from rag_assets import storage
from rag_assets.catalog import RERANK_DEPTH

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"


class Reranker(Protocol):
    name: str  # the retriever label its results carry
    model: str  # what scored them: its identity
    depth: int  # how much of the ranking it re-scores

    def score(self, query: str, passages: list[str]) -> np.ndarray: ...


class CrossEncoderReranker:
    name = "rerank"

    def __init__(self, cross_encoder, model: str, depth: int = RERANK_DEPTH):
        self.cross_encoder, self.model, self.depth = cross_encoder, model, depth

    @classmethod
    def load(cls, folder: str, depth: int = RERANK_DEPTH) -> CrossEncoderReranker:
        """The CrossEncoder in `folder`, its identity the fingerprint of its weights and configuration."""
        from sentence_transformers import CrossEncoder

        from rag_assets.retrieval.embedding import model_fingerprint

        identity = f"{Path(folder).name}@sha256:{model_fingerprint(Path(folder))[:16]}"
        return cls(CrossEncoder(str(folder), device="cpu"), identity, depth)

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        return np.asarray(
            self.cross_encoder.predict([(query, p) for p in passages], show_progress_bar=False), dtype=np.float64
        )


def find_cross_encoder(spec: str | None = None) -> tuple[CrossEncoderReranker | None, str]:
    """(reranker, how it was found) or (None, why there is none).

    `spec` (Settings.cross_encoder) is a model folder or a hub name that must already be in the
    local cache; the default is ms-marco-MiniLM-L-6-v2."""
    spec = spec or DEFAULT_CROSS_ENCODER
    if Path(spec).is_dir():
        return CrossEncoderReranker.load(spec), f"loaded from {spec}"
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(spec, local_files_only=True)
    except Exception:  # not in the cache: the hub is never contacted
        return None, (
            f"no cross-encoder on this machine: {spec!r} is neither a folder nor in the local Hugging Face "
            "cache, and models are never downloaded at run time; set RAG_ASSETS_CROSS_ENCODER to a local "
            "CrossEncoder folder to get rerank results"
        )
    return CrossEncoderReranker.load(local), f"loaded {spec} from the local cache"


RELEVANCE_PROMPT = "Passage:\n{passage}\n\nQuery: {query}\n\nDoes the passage answer the query? Reply with yes or no."


class LLMRelevanceReranker:
    """Score = log-odds of "yes" over "no" as the generator's first answer token."""

    name = "rerank-llm"

    def __init__(self, lm, depth: int = 10):
        self.lm = lm
        self.model = lm.identity
        self.depth = depth

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        return self.lm.log_odds([RELEVANCE_PROMPT.format(passage=p, query=query) for p in passages])


def make(spec, lm=None, records: Path | None = None) -> Reranker | None:
    """The reranker a spec (rag_assets.retrieval.specs) names; None for `none`. `lm()` gives the
    local generator, for `llm`; `records` keeps an endpoint's probe between runs."""
    if spec.kind == "none":
        return None
    if spec.kind == "url":
        from rag_assets.retrieval.remote import EndpointReranker

        return EndpointReranker(spec, records)
    if spec.kind == "llm":
        return LLMRelevanceReranker(lm(), spec.depth)
    return CrossEncoderReranker.load(spec.cross_encoder, spec.depth)


def score_key(query: str, passage: str) -> str:
    return hashlib.sha256(f"{query}\0{passage}".encode()).hexdigest()[:32]


class CachedScores:
    """A reranker whose scores are kept by (its identity, query, passage), on disk across runs, each
    with the seconds it cost when it was scored (a shortlist's cost divided among its passages), so
    a rerun scores only pairs it has not seen and still reports what scoring them costs. New scores
    are written a shard at a time (`flush`), each whole."""

    def __init__(self, root: storage.AnyPath, reranker: Reranker, flush_every: int = 500):
        self.reranker, self.flush_every = reranker, flush_every
        self.name, self.model, self.depth = reranker.name, reranker.model, reranker.depth
        self.folder = root / hashlib.sha256(reranker.model.encode()).hexdigest()[:16]
        self.known: dict[str, tuple[float, float]] = {}
        for shard in storage.listing(self.folder, "shard-*.parquet"):
            table = storage.read_parquet(shard).to_pydict()
            self.known.update(zip(table["key"], zip(table["score"], table["seconds"])))
        self.pending: dict[str, tuple[float, float]] = {}
        self.scored = self.reused = 0

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        keys = [score_key(query, p) for p in passages]
        missing = [i for i, k in enumerate(keys) if k not in self.known]
        if missing:
            t0 = time.perf_counter()
            fresh = self.reranker.score(query, [passages[i] for i in missing])
            each = (time.perf_counter() - t0) / len(missing)
            for i, s in zip(missing, fresh):
                self.known[keys[i]] = self.pending[keys[i]] = (float(s), each)
            self.scored += len(missing)
            if len(self.pending) >= self.flush_every:
                self.flush()
        self.reused += len(keys) - len(missing)
        return np.array([self.known[k][0] for k in keys], dtype=np.float64)

    def seconds(self, query: str, passages: list[str]) -> float:
        """What scoring these passages for `query` cost when they were scored."""
        return float(sum(self.known[score_key(query, p)][1] for p in passages))

    def flush(self) -> None:
        if not self.pending:
            return
        keys = list(self.pending)
        table = pa.table(
            {
                "key": keys,
                "score": [self.pending[k][0] for k in keys],
                "seconds": [self.pending[k][1] for k in keys],
            }
        )
        storage.write_text(self.folder / "model.txt", self.model + "\n")
        storage.write_parquet(self.folder / f"shard-{time.time_ns()}-{os.getpid()}.parquet", table)
        self.pending = {}
