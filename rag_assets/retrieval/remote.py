"""Models behind HTTP: an OpenAI-compatible embeddings endpoint (vLLM, TEI, Ollama, infinity, hosted
ones) and a rerank endpoint (the Cohere / infinity request shape). `url` is the base URL as an
OpenAI client takes it (`http://host:8000/v1` for vLLM; infinity serves at its root): requests go
to `url + "/embeddings"` and `url + "/rerank"`.

A model behind a URL can change without its name changing, so an endpoint embedder's identity is
not its name: it is a fingerprint of the vectors it returns for a fixed probe set. The probe runs
when the embedder is made; its vectors are kept in a small record (`record`), and the next probe
that agrees with them (cosine ≥ 1 - PROBE_TOLERANCE each, same dimension) keeps the recorded
identity, so float noise between calls never stales anything, while a model that moved gets a new
identity: a new embedding cache folder, a new source version, stale embeddings.

Every failure is an `EndpointError` naming the endpoint: refused keys and unknown models at once,
429, 5xx and timeouts after `retries` attempts with exponential backoff, and answers that cannot be
vectors (wrong count, wrong or changing length, NaN).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag_assets import storage

PROBE = (
    "The quick brown fox jumps over the lazy dog.",
    "query: how many moons does Mars have?",
    "passage: Phobos and Deimos are the two moons of Mars.",
    "Ein Satz auf Deutsch, damit mehrsprachige Modelle auffallen.",
    "1234567890",
)
PROBE_TOLERANCE = 1e-4
# Texts per request: smaller requests pay HTTP and JSON per text (infinity on loopback reached 0.70 of
# the in-process model's throughput at 32, 0.88 at 64; docs/experiments.md, bench/experiment.py).
BATCH = 64
RETRIED = {408, 409, 425, 429, 500, 502, 503, 504}
BACKOFF_S = 0.5


class EndpointError(RuntimeError):
    """An endpoint that cannot give what was asked; the message names it."""


@dataclass
class Usage:
    calls: int = 0
    tokens: int = 0  # as the endpoint reports them (`usage`); 0 when it reports none
    reported: bool = False
    retries: int = 0

    def add(self, tokens: int | None) -> None:
        self.calls += 1
        if tokens is not None:
            self.tokens += int(tokens)
            self.reported = True


@dataclass
class Endpoint:
    """Where a model is served and how to call it."""

    url: str
    model: str | None = None
    key_env: str | None = None  # the environment variable that holds the key (never the key itself)
    retries: int = 3
    timeout_s: float = 30.0
    usage: Usage = field(default_factory=Usage)

    @property
    def label(self) -> str:
        return f"endpoint {self.url}" + (f" (model {self.model})" if self.model else "")

    def headers(self) -> dict:
        if not self.key_env:
            return {}
        key = os.environ.get(self.key_env)
        if not key:
            raise EndpointError(f"{self.label}: its key variable {self.key_env} is not set")
        return {"Authorization": f"Bearer {key}"}

    def post(self, path: str, payload: dict, client=None):
        """The JSON answer to `payload` at `path`, retried on 429, 5xx and timeouts."""
        import httpx

        url = self.url.rstrip("/") + path
        for attempt in range(self.retries + 1):
            try:
                answer = (client or httpx).post(url, json=payload, headers=self.headers(), timeout=self.timeout_s)
            except httpx.TimeoutException:
                why = f"no answer within {self.timeout_s:g} s"
            except httpx.TransportError as exc:
                why = f"unreachable ({type(exc).__name__}: {exc})"
            else:
                if answer.status_code == 200:
                    try:
                        return answer.json()
                    except ValueError:
                        raise EndpointError(f"{self.label}: answered 200 with a body that is not JSON") from None
                why = f"HTTP {answer.status_code}: {answer.text[:200].strip()}"
                if answer.status_code not in RETRIED:
                    raise EndpointError(f"{self.label}: {why}")
            if attempt < self.retries:
                self.usage.retries += 1
                time.sleep(BACKOFF_S * 2**attempt)
        raise EndpointError(f"{self.label}: {why} (after {self.retries + 1} attempts)")


class EndpointEmbedder:
    """Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint, unit-normalised here (the
    dot product is the cosine, as for every local model), in batches sent `concurrency` at a time."""

    def __init__(
        self,
        endpoint: Endpoint,
        record: Path | None = None,
        batch_size: int = BATCH,
        concurrency: int = 2,
        query_prefix: str = "",
        passage_prefix: str = "",
        keep_record: bool = True,
    ):
        """`keep_record=False` compares the probe with `record` without writing it (`check`)."""
        self.endpoint, self.record, self.keep_record = endpoint, record, keep_record
        self.batch_size, self.concurrency = batch_size, concurrency
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.name = endpoint.model
        self.dim = 0
        self.recorded_dim: int | None = None  # the dimension at the last run that recorded a probe
        vectors = self._raw(list(PROBE))
        self.dim = vectors.shape[1]
        self.identity, self.moved = self._identity(vectors)

    def _identity(self, vectors: np.ndarray) -> tuple[str, str | None]:
        """(identity, how the model moved since the record, or None)."""
        setting = {"prefixes": [self.query_prefix, self.passage_prefix], "normalised": True}
        fresh = hashlib.sha256(vectors.tobytes() + json.dumps(setting, sort_keys=True).encode()).hexdigest()[:16]
        identity = f"{self.endpoint.model}@{self.endpoint.url}#probe:{fresh}"
        moved = None
        if self.record and self.record.exists():
            kept = json.loads(self.record.read_text())
            old = np.asarray(kept["vectors"], dtype=np.float32)
            self.recorded_dim = old.shape[1]
            if kept.get("setting") == setting and old.shape == vectors.shape:
                drift = float(1 - (old * vectors).sum(axis=1).min())
                if drift <= PROBE_TOLERANCE:
                    return kept["identity"], None
                moved = f"its probe vectors moved (largest 1 - cos {drift:.3g})"
            elif old.shape != vectors.shape:
                moved = f"its vectors changed dimension, {old.shape[1]} -> {vectors.shape[1]}"
            else:
                moved = "its prefixes changed"
        if self.record and self.keep_record:
            payload = {"identity": identity, "setting": setting, "vectors": vectors.tolist(), "dim": self.dim}
            storage.write_text(self.record, json.dumps(payload))
        return identity, moved

    def _batch(self, texts: list[str], client) -> np.ndarray:
        answer = self.endpoint.post(
            "/embeddings",
            {"model": self.endpoint.model, "input": texts, "encoding_format": "float"},
            client,
        )
        label = self.endpoint.label
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != len(texts) or not all(isinstance(d, dict) for d in data):
            got = len(data) if isinstance(data, list) else "no"
            raise EndpointError(f"{label}: {got} vectors for {len(texts)} texts")
        rows = [d.get("embedding") for d in sorted(data, key=lambda d: d.get("index", 0))]
        lengths = {len(r) if isinstance(r, list) else -1 for r in rows}
        if len(lengths) != 1 or -1 in lengths or (self.dim and lengths != {self.dim}):
            raise EndpointError(
                f"{label}: vectors of length {sorted(lengths)}, expected {self.dim or 'one length'} "
                "(did the model change?)"
            )
        vectors = np.asarray(rows, dtype=np.float64)
        if not np.isfinite(vectors).all():
            raise EndpointError(f"{label}: returned vectors holding NaN or infinity")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EndpointError(f"{label}: returned a zero vector")
        usage = answer.get("usage") or {}
        self.endpoint.usage.add(usage.get("prompt_tokens", usage.get("total_tokens")))
        return (vectors / norms).astype(np.float32)

    def _raw(self, texts: list[str]) -> np.ndarray:
        import httpx

        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        with httpx.Client() as client, ThreadPoolExecutor(self.concurrency) as pool:
            parts = list(pool.map(lambda b: self._batch(b, client), batches))
        return np.concatenate(parts) if parts else np.zeros((0, self.dim), np.float32)

    def encode(self, texts: list[str], progress: bool = False, query: bool = False) -> np.ndarray:
        prefix = self.query_prefix if query else self.passage_prefix
        return self._raw([prefix + t for t in texts])


class EndpointReranker:
    """A reranker behind `POST /rerank` in the Cohere / infinity shape ({model, query, documents}
    -> results of {index, relevance_score}; an answer that is a bare list of {index, score}, as
    TEI's, is read too)."""

    name = "rerank"

    def __init__(self, endpoint: Endpoint, depth: int = 25):
        self.endpoint, self.depth = endpoint, depth
        self.model = f"{endpoint.model or 'rerank'}@{endpoint.url}"

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        payload = {"query": query, "documents": passages, "return_documents": False}
        if self.endpoint.model:
            payload["model"] = self.endpoint.model
        answer = self.endpoint.post("/rerank", payload)
        results = answer.get("results") if isinstance(answer, dict) else answer
        scores = np.full(len(passages), math.nan)
        for r in results if isinstance(results, list) else []:
            if isinstance(r, dict) and isinstance(r.get("index"), int) and 0 <= r["index"] < len(passages):
                scores[r["index"]] = float(r.get("relevance_score", r.get("score", math.nan)))
        if not np.isfinite(scores).all():
            raise EndpointError(f"{self.endpoint.label}: no finite score for every one of {len(passages)} passages")
        usage = answer.get("usage") or {} if isinstance(answer, dict) else {}
        self.endpoint.usage.add(usage.get("total_tokens", usage.get("prompt_tokens")))
        return scores
