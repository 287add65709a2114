"""Shared inputs for the benchmarks: real text from the bundled corpus, timing helpers."""

import time

import numpy as np

from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.dataset import BUNDLED_DATASET


def bundled_chunks(strategy: str = "C"):
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    return snap, chunk_corpus(snap, STRATEGIES[strategy])


def bundled_queries(n: int | None = None) -> list[str]:
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snap)[0], gt.Sample())
    queries = truth["query"].tolist()
    return queries[:n] if n else queries


def synthetic_chunks(n: int, seed: int = 0) -> list[str]:
    """n chunk texts of 2-5 real sentences drawn (seeded) from the bundled corpus."""
    import re

    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    sentences = [
        s for t in snap["text"] for s in re.split(r"(?<=[.!?])\s+", t) if len(s) > 20 and not s.startswith("#")
    ]
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 6, size=n)
    picks = rng.integers(0, len(sentences), size=int(sizes.sum()))
    out, at = [], 0
    for size in sizes:
        out.append(" ".join(sentences[i] for i in picks[at : at + size]))
        at += size
    return out


def timed(fn, *args):
    t0 = time.perf_counter()
    result = fn(*args)
    return result, (time.perf_counter() - t0) * 1000


def pct(values, q) -> float:
    return float(np.percentile(np.asarray(values), q))
