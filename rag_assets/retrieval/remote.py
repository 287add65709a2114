"""Models behind HTTP: an OpenAI-compatible embeddings endpoint (vLLM, TEI, Ollama, infinity, hosted
ones) and a rerank endpoint (the Cohere / infinity request shape). `url` is the base URL as an
OpenAI client takes it (`http://host:8000/v1` for vLLM; infinity serves at its root): requests go
to `url + "/embeddings"` and `url + "/rerank"`, through one kept-alive client per endpoint.

A model behind a URL can change without its name changing, so an endpoint model's identity is not
its name: it is a fingerprint of what it returns for a fixed probe (vectors for an embedder, scores
for a reranker). The probe runs when the model is made; what it returned is kept in a small record,
keyed by everything that changes it (URL, model, prefixes), and the next probe that agrees with it
(within PROBE_TOLERANCE) keeps the recorded identity, so float noise between calls never stales
anything, while a model that moved gets a new identity: a new embedding cache folder, a new source
version, stale results. An embedder probes again after each batch of passages it embeds, in one request
with a sample of those passages, so a model that moves while it embeds, or an endpoint that answers
probes with one model and batches with another, is an error, never vectors of one model under the
other's identity.

Every failure is an `EndpointError` naming the endpoint: refused keys and unknown models at once,
429, 5xx and timeouts after `retries` attempts with exponential backoff; an answer past its deadline
or its size, one that is not the shape asked for (each field checked), vectors of the wrong count or
length, NaN. An error body is cut and scrubbed of anything that looks like a key before it is shown.

Costs count tokens: the server's count when it reports tokens; where it reports none, or reports
characters (infinity does, unless started with --lengths-via-tokenize), the project counts them, with
the model's tokenizer when the arm names one, else with the reference tokenizer (an estimate, said so).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rag_assets import environment, storage
from rag_assets.retrieval import bounded
from rag_assets.retrieval.embedding import REFERENCE_TOKENIZER, reference_tokens
from rag_assets.retrieval.specs import EmbeddingEndpoint, RerankEndpoint
from rag_assets.retrieval.specs import Endpoint as EndpointSettings

PROBE = (
    "The quick brown fox jumps over the lazy dog.",
    "query: how many moons does Mars have?",
    "passage: Phobos and Deimos are the two moons of Mars.",
    "Ein Satz auf Deutsch, damit mehrsprachige Modelle auffallen.",
    "1234567890",
)
RERANK_PROBE = ("how many moons does Mars have?", PROBE[2:])
PROBE_TOLERANCE = 1e-4
MAX_DIM = 16_384
MAX_RESPONSE_BYTES = 64 << 20  # an embeddings answer of 2,048 texts of 1,024 floats is about 40 MiB
BYTES_PER_VECTOR = MAX_DIM * 24  # a vector as JSON, at most: what an answer for n texts may need
PROBE_RECORD_BYTES = len(PROBE) * BYTES_PER_VECTOR + (64 << 10)  # a probe's vectors and its settings
RETRIED = {408, 409, 425, 429, 500, 502, 503, 504}
BACKOFF_S = 0.5
SHOWN = 160  # characters of an error body shown
_SECRETISH = re.compile(
    r"(?i)(bearer\s+\S+|sk-[a-z0-9_-]{8,}|(?:api[_-]?key|token|secret|password)[\"']?\s*[:=]\s*\S+)"
)


class EndpointError(RuntimeError):
    """An endpoint that cannot give what was asked; the message names it."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=True)


class _Usage(_Shape):
    prompt_tokens: int | None = Field(None, ge=0)
    total_tokens: int | None = Field(None, ge=0)


class _Vector(_Shape):
    index: int = Field(ge=0)
    embedding: list[float] = Field(min_length=1, max_length=MAX_DIM)


class _Embeddings(_Shape):
    data: list[_Vector] = Field(max_length=4096)
    usage: _Usage | None = None


class _Score(_Shape):
    index: int = Field(ge=0)
    relevance_score: float | None = None
    score: float | None = None


class _Ranked(_Shape):
    results: list[_Score] = Field(max_length=4096)
    usage: _Usage | None = None


@dataclass
class Usage:
    calls: int = 0
    tokens: int = 0
    retries: int = 0
    sources: set = field(default_factory=set)  # where the token counts came from, in words

    def add(self, reported: int | None, texts: list[str], counter=None, counter_name: str = "") -> None:
        """One call: the server's token count, unless it gave none or its count is the texts'
        characters; then the project's (`counter`, else the reference tokenizer's estimate)."""
        self.calls += 1
        if reported is not None and reported != sum(len(t) for t in texts):
            self.tokens += int(reported)
            self.sources.add("the endpoint's count")
        elif counter is not None:
            self.tokens += int(counter(texts).sum())
            self.sources.add(f"counted here with {counter_name}")
        else:
            self.tokens += int(reference_tokens(texts).sum())
            self.sources.add(f"estimated here with {REFERENCE_TOKENIZER}")

    @property
    def source(self) -> str:
        return "; ".join(sorted(self.sources)) or "no calls"


def scrubbed(body: str) -> str:
    """An error body as it may be shown: one line, cut, without a key we sent or anything that looks
    like a key."""
    text = " ".join(bounded.masked(body).split())
    text = _SECRETISH.sub("[redacted]", text)
    return text[:SHOWN] + ("..." if len(text) > SHOWN else "")


class Endpoint:
    """Where a model is served and how to call it: one kept-alive client, calls bounded in time
    (`timeout_s` from the first byte sent to the last received) and in size."""

    def __init__(self, settings: EndpointSettings, retries: int | None = None, timeout_s: float | None = None):
        self.url, self.model, self.key_env = settings.url.rstrip("/"), settings.model, settings.key_env
        self.retries = settings.retries if retries is None else retries
        self.timeout_s = settings.timeout_s if timeout_s is None else timeout_s
        self.concurrency = settings.concurrency
        self.usage = Usage()
        self._client = None
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"endpoint {self.url}" + (f" (model {self.model})" if self.model else "")

    def _key(self) -> str | None:
        if not self.key_env:
            return None
        key = environment.secret(self.key_env)
        if not key:
            raise EndpointError(f"{self.label}: its key variable {self.key_env} is not set")
        return key

    @property
    def client(self):
        with self._lock:
            if self._client is None:
                self._client = bounded.client(self.timeout_s, MAX_RESPONSE_BYTES, self.concurrency)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def post(self, path: str, payload: dict, shape: type[BaseModel], max_bytes: int = MAX_RESPONSE_BYTES):
        """The answer to `payload` at `path`, read as `shape`; retried on 429, 5xx and timeouts.
        The answer is read within `timeout_s` and `max_bytes` (what this call can need)."""
        import httpx

        url, key = self.url + path, self._key()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        for attempt in range(self.retries + 1):
            try:
                with self.client.stream("POST", url, json=payload, headers=headers) as answer:
                    body = bytearray()
                    for part in answer.iter_bytes():
                        body += part
                        if len(body) > max_bytes:
                            raise bounded.Oversized(f"an answer larger than {max_bytes:,} bytes")
                    status = answer.status_code
            except bounded.Oversized:
                raise EndpointError(f"{self.label}: answered more than {max_bytes:,} bytes") from None
            except bounded.Refused as exc:
                raise EndpointError(f"{self.label}: {exc}") from None
            except httpx.TimeoutException:
                why = f"no whole answer within {self.timeout_s:g} s"
            except httpx.TransportError as exc:
                why = f"unreachable ({type(exc).__name__})"
            else:
                if status == 200:
                    return self._read(bytes(body), shape)
                why = f"HTTP {status}" + (f": {scrubbed(body.decode('utf-8', 'replace'))}" if body else "")
                if status not in RETRIED:
                    raise EndpointError(f"{self.label}: {why}")
            if attempt < self.retries:
                self.usage.retries += 1
                time.sleep(BACKOFF_S * 2**attempt)
        raise EndpointError(f"{self.label}: {why} (after {self.retries + 1} attempts)")

    def _read(self, body: bytes, shape: type[BaseModel]):
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            raise EndpointError(f"{self.label}: answered 200 with a body that is not JSON") from None
        if shape is _Ranked and isinstance(value, list):  # TEI answers a bare list
            value = {"results": value}
        try:
            return shape.model_validate(value)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "the answer"
            raise EndpointError(f"{self.label}: not the answer asked for: {where}: {error['msg']}") from None


def _record_path(records: Path | None, *parts: str) -> Path | None:
    if records is None:
        return None
    return Path(records) / (hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16] + ".json")


def _recorded(path: Path | None) -> dict | None:
    """A probe record, or None where there is none or what is there is no probe record (it is then
    written anew); EndpointError where something that is no file stands in its place."""
    if path is None:
        return None
    try:
        kept = storage.read_record(path, {"identity": str, "setting": dict, "answer": list}, PROBE_RECORD_BYTES)
        if kept is not None:
            np.asarray(kept["answer"], dtype=np.float64)  # numbers in a regular shape, or no record
    except storage.NotAFile as exc:
        raise EndpointError(f"{exc}: remove it, and the probe is recorded anew") from None
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return None
    return kept if kept is not None and isinstance(kept.get("identity"), str) else None


class _Probed:
    """An identity from a probe's answer, kept between runs in a record (see the module's doc)."""

    def identify(self, answer: np.ndarray, setting: dict, prefix: str) -> tuple[str, str | None]:
        """(identity, how the model moved since the record, or None)."""
        fresh = hashlib.sha256(answer.tobytes() + json.dumps(setting, sort_keys=True).encode()).hexdigest()[:16]
        identity = f"{prefix}#probe:{fresh}"
        kept, moved = _recorded(self.record), None
        if kept is not None:
            old = np.asarray(kept.get("answer", []), dtype=np.float64)
            self.recorded_shape = old.shape
            if kept.get("setting") == setting and old.shape == answer.shape:
                drift = self.drift(old, answer)
                if drift <= PROBE_TOLERANCE:
                    return kept["identity"], None
                moved = f"its probe answer moved (largest difference {drift:.3g})"
            elif old.ndim == answer.ndim == 2 and old.shape[1:] != answer.shape[1:]:
                moved = f"its vectors changed dimension, {old.shape[1]} -> {answer.shape[1]}"
            else:
                moved = "its settings changed"
        if self.record is not None and self.keep_record:
            payload = {"identity": identity, "setting": setting, "answer": answer.tolist()}
            storage.write_text(self.record, json.dumps(payload))
        return identity, moved

    @staticmethod
    def drift(old: np.ndarray, new: np.ndarray) -> float:
        raise NotImplementedError


class EndpointEmbedder(_Probed):
    """Embeddings from an OpenAI-compatible `/embeddings` endpoint, unit-normalised here (the dot
    product is the cosine, as for every local model), in batches sent `concurrency` at a time."""

    def __init__(
        self,
        settings: EmbeddingEndpoint,
        records: Path | None = None,
        keep_record: bool = True,
        endpoint: Endpoint | None = None,
    ):
        """`keep_record=False` compares the probe with the record without writing it (`check`);
        `endpoint`: this model's endpoint called otherwise (fewer retries, a shorter timeout)."""
        self.settings, self.keep_record = settings, keep_record
        self.endpoint = endpoint or Endpoint(settings)
        self.batch_size, self.concurrency = settings.batch_size, settings.concurrency
        self.query_prefix, self.passage_prefix = settings.query_prefix, settings.passage_prefix
        self.record = _record_path(
            records, settings.url.rstrip("/"), settings.model, self.query_prefix, self.passage_prefix
        )
        self.name, self.dim = settings.model, 0
        self.recorded_shape: tuple | None = None
        self.tokenizer = Tokenizer(settings.tokenizer) if settings.tokenizer else None
        self.probe = self._raw(list(PROBE))
        self.dim = self.probe.shape[1]
        setting = {"prefixes": [self.query_prefix, self.passage_prefix], "normalised": True}
        self.identity, self.moved = self.identify(self.probe, setting, f"{settings.model}@{self.endpoint.url}")

    @property
    def recorded_dim(self) -> int | None:
        """The vectors' length at the last run that recorded a probe."""
        return self.recorded_shape[1] if self.recorded_shape and len(self.recorded_shape) == 2 else None

    @staticmethod
    def drift(old: np.ndarray, new: np.ndarray) -> float:
        return float(1 - (old * new).sum(axis=1).min())

    @property
    def window(self) -> int | None:
        return self.tokenizer.window if self.tokenizer else None

    def count_tokens(self, texts: list[str], special_tokens: bool = True) -> np.ndarray | None:
        return self.tokenizer.count_tokens(texts, special_tokens) if self.tokenizer else None

    def _batch(self, texts: list[str]) -> np.ndarray:
        answer = self.endpoint.post(
            "/embeddings",
            {"model": self.endpoint.model, "input": texts, "encoding_format": "float"},
            _Embeddings,
            min(MAX_RESPONSE_BYTES, (1 << 16) + len(texts) * BYTES_PER_VECTOR),
        )
        label = self.endpoint.label
        indexes = sorted(v.index for v in answer.data)
        if len(indexes) != len(texts):
            raise EndpointError(f"{label}: {len(indexes)} vectors for {len(texts)} texts")
        if indexes != list(range(len(texts))):
            raise EndpointError(f"{label}: vectors indexed {indexes[:5]}..., not 0 to {len(texts) - 1}")
        rows = [v.embedding for v in sorted(answer.data, key=lambda v: v.index)]
        lengths = {len(r) for r in rows}
        if len(lengths) != 1 or (self.dim and lengths != {self.dim}):
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
        usage = answer.usage or _Usage()
        reported = usage.prompt_tokens if usage.prompt_tokens is not None else usage.total_tokens
        counter = (lambda t: self.count_tokens(t, special_tokens=False)) if self.tokenizer else None
        self.endpoint.usage.add(reported, texts, counter, self.settings.tokenizer or "")
        return (vectors / norms).astype(np.float32)

    def _raw(self, texts: list[str]) -> np.ndarray:
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        if len(batches) == 1:
            return self._batch(batches[0])
        with ThreadPoolExecutor(self.concurrency) as pool:
            parts = list(pool.map(self._batch, batches))
        return np.concatenate(parts) if parts else np.zeros((0, self.dim), np.float32)

    def encode(self, texts: list[str], progress: bool = False, query: bool = False) -> np.ndarray:
        """Unit vectors of `texts`. After passages, the probe again, sent with a sample of the passages
        in the same request: a model that moved while they were embedded, or an endpoint that answers
        its probes with one model and its batches with another (a request that holds both cannot be
        told apart), is an EndpointError, and their vectors are never returned."""
        prefix = self.query_prefix if query else self.passage_prefix
        sent = [prefix + t for t in texts]
        vectors = self._raw(sent) if texts else np.zeros((0, self.dim), np.float32)
        if not query and texts:
            picks = sorted({0, len(texts) // 2, len(texts) - 1})
            again = self._raw([sent[i] for i in picks] + list(PROBE)).astype(np.float64)
            probe_moved = self.drift(self.probe.astype(np.float64), again[len(picks) :])
            batch_moved = self.drift(vectors[picks].astype(np.float64), again[: len(picks)])
            if probe_moved > PROBE_TOLERANCE:
                raise EndpointError(
                    f"{self.endpoint.label}: the model behind it changed while it embedded (its probe moved "
                    f"{probe_moved:.3g}): these vectors are not kept; run again to embed everything with the new model"
                )
            if batch_moved > PROBE_TOLERANCE:
                raise EndpointError(
                    f"{self.endpoint.label}: passages embedded again beside the probe came back other vectors "
                    f"(moved {batch_moved:.3g}): its batches are not from the model its probe identifies; "
                    "these vectors are not kept"
                )
        return vectors


class EndpointReranker(_Probed):
    """A reranker behind `POST /rerank` in the Cohere / infinity shape ({model, query, documents}
    -> results of {index, relevance_score}; an answer that is a bare list of {index, score}, as
    TEI's, is read too). Its identity is its scores for a fixed probe (see the module's doc)."""

    name = "rerank"

    def __init__(
        self,
        settings: RerankEndpoint,
        records: Path | None = None,
        keep_record: bool = True,
        endpoint: Endpoint | None = None,
    ):
        self.settings, self.keep_record, self.depth = settings, keep_record, settings.depth
        self.endpoint = endpoint or Endpoint(settings)
        self.record = _record_path(records, "rerank", settings.url.rstrip("/"), settings.model or "")
        self.recorded_shape = None
        scores = self.score(*RERANK_PROBE)
        self.model, self.moved = self.identify(
            scores, {"rerank": True}, f"{settings.model or 'rerank'}@{self.endpoint.url}"
        )
        self.identity = self.model

    @staticmethod
    def drift(old: np.ndarray, new: np.ndarray) -> float:
        return float(np.max(np.abs(old - new) / np.maximum(1.0, np.abs(old)))) if len(old) else 0.0

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        payload = {"query": query, "documents": list(passages), "return_documents": False}
        if self.endpoint.model:
            payload["model"] = self.endpoint.model
        answer = self.endpoint.post("/rerank", payload, _Ranked, (1 << 16) + 512 * len(passages))
        scores = np.full(len(passages), math.nan)
        for r in answer.results:
            value = r.relevance_score if r.relevance_score is not None else r.score
            if r.index < len(passages) and value is not None:
                scores[r.index] = value
        if not np.isfinite(scores).all():
            raise EndpointError(f"{self.endpoint.label}: no finite score for every one of {len(passages)} passages")
        usage = answer.usage or _Usage()
        reported = usage.total_tokens if usage.total_tokens is not None else usage.prompt_tokens
        self.endpoint.usage.add(reported, [query, *passages])
        return scores


class Tokenizer:
    """A model's tokenizer.json (or a folder holding one), here: what the model behind an endpoint
    reads, counted without asking it; and the window its folder declares (None: not declared)."""

    def __init__(self, where: str):
        from tokenizers import Tokenizer as Loaded

        path = Path(where).expanduser()
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise EndpointError(f"no tokenizer.json at {where}")
        self.tokenizer = Loaded.from_file(str(file))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        config = file.parent / "sentence_bert_config.json"
        try:
            self.window = int(json.loads(config.read_text())["max_seq_length"]) if config.is_file() else None
        except (OSError, ValueError, KeyError, TypeError):
            self.window = None

    def count_tokens(self, texts: list[str], special_tokens: bool = True) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(list(texts), add_special_tokens=special_tokens)
        return np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(texts))
