"""`rag-assets check`'s estimate of how long `run --experiment` takes, from the real work sampled on
this machine now: each local model encodes a few dozen of the corpus's own chunks (a dozen short,
middling and long ones each, as the run batches them by length) and a few questions one at a time,
and what it measured is extrapolated to every text the run will embed (the chunks of all its
chunkers, each distinct text once per model, less those its data dir's cache holds) and every
question each configuration ranks and times. What cannot be sampled cheaply (Dagster's steps,
chunking, indexing and ranking, the leaderboard) is a constant measured on the machine below,
scaled by how much slower a fixed CPU probe runs now than it did then. Endpoints and rerankers
are counted at nominal rates, and the estimate says so.

The constants come from a 2-core x86-64 VM (the machine of the docs' timings): START_S and CONFIG_S
from what `rag-assets run --experiment` of `rag-assets init`'s file on the bundled corpus spent
outside embedding (a configuration that embeds nothing took 3-5 s whole, at load average 4-5), the
probe's reference from the same machine quiet. docs/experiments.md ("Measured: the init file on the
bundled corpus") compares the estimate with runs.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

START_S = 10.0  # the run's start and end: Dagster, the corpus and questions, fingerprints, the leaderboard
CONFIG_S = 2.5  # one configuration's step beyond chunking and encoding: indexing, ranking, recording
SEARCH_S = 0.002  # one question searched alone (the latency sample), beside encoding it
PROBE_REFERENCE_S = 0.0087  # probe() on the calibration machine, quiet (load average under 1)
GROUP = 12  # consecutive texts (by length) encoded together, as the run batches them
GROUPS = 4  # at the quartiles of length
TIMED_QUERIES = 5
ENDPOINT_TEXTS_PER_S = 100  # nominal: an endpoint's speed is not sampled (it would cost calls)
ENDPOINT_QUERY_S = 0.05
RERANK_PAIRS_PER_S = {"cross_encoder": 100, "url": 50, "llm": 2}  # nominal (llm: bench/experiment.py)


@dataclass
class Estimate:
    seconds: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    nominal: list[str] = field(default_factory=list)  # what was not measured, in words

    def add(self, part: str, seconds: float) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + seconds
        self.seconds += seconds


def probe() -> float:
    """Seconds a fixed single-threaded workload (plain Python, as much of a step is) takes now: the
    median of 5. (A multi-threaded one is not steady enough on a shared machine: a small matrix
    product took from 3 to 130 ms here from one call to the next.)"""
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        sum(i * i for i in range(60_000))
        sorted(str(i * 7919 % 10_007) for i in range(20_000))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def encode_rate(model, texts: list[str]) -> tuple[list[float], float]:
    """Seconds per token of `model` now at each quartile of length of `texts` (distinct), from GROUP
    consecutive texts there encoded in one call (its weights loaded first, untimed); and the
    seconds that load took."""
    ordered = sorted(texts, key=lambda t: (len(t), t))
    t0 = time.perf_counter()
    model.encode(ordered[:1])
    load_s = time.perf_counter() - t0
    rates = []
    for q in range(GROUPS):
        start = min(max(0, len(ordered) - GROUP), (2 * q + 1) * len(ordered) // (2 * GROUPS))
        group = ordered[start : start + GROUP]
        tokens = max(1, int(np.sum(model.count_tokens(group))))
        t0 = time.perf_counter()
        model.encode(group)
        rates.append((time.perf_counter() - t0) / tokens)
    return rates, load_s


def query_seconds(model, questions: list[str]) -> float:
    """The median seconds of encoding one question alone, as the latency sample does."""
    times = []
    for q in (questions or ["What is the question?"])[:TIMED_QUERIES]:
        t0 = time.perf_counter()
        model.encode([q], query=True)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def embed_seconds(model, texts: list[str], rates: list[float]) -> float:
    """Seconds to encode `texts`: each quartile of length at its sampled rate."""
    ordered = sorted(texts, key=lambda t: (len(t), t))
    if not ordered:
        return 0.0
    tokens = np.asarray(model.count_tokens(ordered), dtype=np.float64)
    bounds = np.linspace(0, len(ordered), len(rates) + 1).astype(int)
    return float(sum(tokens[a:b].sum() * r for a, b, r in zip(bounds[:-1], bounds[1:], rates)))


def estimate(
    experiment, texts: dict, models: dict, chunk_s: dict, questions: list[str], cached, answerable: int, guard=None
):
    """The run's seconds, by part. `texts[(chunker, embedder)]`: the chunk texts of each pair the
    configurations embed; `models[embedder]`: the made models (local or endpoint); `chunk_s[chunker]`:
    the seconds chunking it took here (each configuration chunks again); `questions`: question texts
    to time; `cached(model, texts)`: how many of `texts` the data dir's cache holds for `model`;
    `answerable`: the questions each configuration ranks; `guard(embedder)`: a context the sampling of
    that model runs in (the command's refusal of a model whose weights do not load)."""
    import contextlib

    from rag_assets.experiment.measure import LATENCY_QUERIES, REPEATS, WARM_UP

    out = Estimate()
    slow = min(20.0, max(0.5, probe() / PROBE_REFERENCE_S))
    out.add("start, fingerprints and leaderboard", START_S * slow)
    timed = WARM_UP + min(LATENCY_QUERIES, answerable) * REPEATS
    per_query: dict[str, float] = {}
    by_model: dict[str, set[str]] = {}
    for (_, embedder), chunks in texts.items():
        by_model.setdefault(embedder, set()).update(chunks)
    for name, distinct in by_model.items():
        model, distinct = models[name], sorted(distinct)
        if next(a for a in experiment.arms["embedders"] if a.name == name).kind == "url":
            out.add(f"embed with {name}", (len(distinct) + answerable) / ENDPOINT_TEXTS_PER_S)
            per_query[name] = ENDPOINT_QUERY_S
            out.nominal.append(f"{name}: an endpoint, at a nominal {ENDPOINT_TEXTS_PER_S} texts/s")
            continue
        if not distinct:
            continue
        with guard(name) if guard else contextlib.nullcontext():
            held = cached(model, distinct)
            todo = [t for t in distinct if t not in held]
            rates, load_s = encode_rate(model, distinct)
            out.add(f"embed with {name}", load_s + embed_seconds(model, todo, rates) + answerable * 16 * rates[0])
            per_query[name] = query_seconds(model, questions)
    for c in experiment.configurations:
        seconds = CONFIG_S * slow + chunk_s.get(c.chunker.name, 0.0)
        seconds += timed * (per_query.get(c.embedder.name, 0.0) if c.embedder else 0.0) + timed * SEARCH_S * slow
        out.add("configurations (chunk, index, rank, time 100 questions)", seconds)
        if c.reranker.kind != "none":
            pairs = answerable * c.reranker.spec.depth
            out.add(f"rerank with {c.reranker.name}", pairs / RERANK_PAIRS_PER_S[c.reranker.kind])
            out.nominal.append(
                f"{c.reranker.name}: a reranker, at a nominal {RERANK_PAIRS_PER_S[c.reranker.kind]} pairs/s"
            )
    out.parts["slowdown"] = slow
    out.nominal = list(dict.fromkeys(out.nominal))
    return out


def minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, math.ceil(seconds / 10) * 10)} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
