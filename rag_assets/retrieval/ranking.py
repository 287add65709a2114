"""Top-k selection shared by every retriever: best score first, ties by position."""

from __future__ import annotations

import numpy as np


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; equal scores keep index order.

    O(n) selection plus a sort of the k winners, so a 100k-row index costs well under a
    millisecond more than its scoring; ties at the cut are resolved by index too."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    kth = scores[np.argpartition(-scores, k - 1)[k - 1]] if k < n else scores.min()
    greater = np.flatnonzero(scores > kth)
    greater = greater[np.lexsort((greater, -scores[greater]))]
    ties = np.flatnonzero(scores == kth)[: k - len(greater)]
    return np.concatenate([greater, ties]).astype(np.int64)


def top_k(scores: np.ndarray, k: int, candidates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows, scores) of the k best, best first. With `candidates` (sorted row indices),
    `scores` holds only their scores and the rows returned are theirs: a filter applied
    before ranking, so a row outside it can never be returned."""
    order = top_k_indices(scores, k)
    return (order if candidates is None else candidates[order]), scores[order]
