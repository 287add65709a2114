"""Exact dense search: one matrix product over unit vectors, no approximate index."""

from __future__ import annotations

import numpy as np

from rag_assets.retrieval import ranking


def top_k(
    query: np.ndarray, matrix: np.ndarray, k: int, candidates: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosine similarities of the k nearest rows, best first; only rows in
    `candidates` (sorted row indices) are scored when given.

    Ties in similarity break by row index, so equal inputs give equal rankings."""
    if not len(matrix):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    return ranking.top_k((matrix if candidates is None else matrix[candidates]) @ query, k, candidates)


def cosine_distance(similarity: np.ndarray) -> np.ndarray:
    """1 - cos; for unit vectors this equals ||a - b||^2 / 2."""
    return 1.0 - similarity


def norm_error(matrix: np.ndarray) -> float:
    """Largest deviation of a row norm from 1."""
    if not len(matrix):
        return 0.0
    return float(np.abs(np.linalg.norm(matrix, axis=1) - 1.0).max())


def distance_identity_error(matrix: np.ndarray, pairs: int = 200, seed: int = 0) -> float:
    """max |L2^2/2 - (1 - cos)| over `pairs` x `pairs` real rows: zero only for unit vectors."""
    rng = np.random.default_rng(seed)
    rows = matrix[rng.choice(len(matrix), size=min(pairs, len(matrix)), replace=False)].astype(np.float64)
    dot = rows @ rows.T
    sq = (rows**2).sum(1)
    cos = dot / np.sqrt(sq[:, None] * sq[None, :])
    l2sq = sq[:, None] + sq[None, :] - 2 * dot
    return float(np.abs(l2sq / 2 - (1 - cos)).max())
