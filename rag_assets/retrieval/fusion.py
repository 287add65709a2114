"""Reciprocal rank fusion: ranks, not scores, so nothing needs calibrating."""

from __future__ import annotations

from rag_assets.catalog import RRF_K


def rrf(lists: list[list[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) into (id, fused score), best first.

    score(d) = sum over lists of 1 / (k + rank), rank from 1. Ties break by the better
    (smaller) best component rank, then by id, so the order is fully deterministic."""
    fused: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
            best[doc] = min(best.get(doc, rank), rank)
    order = sorted(fused, key=lambda d: (-fused[d], best[d], d))
    return [(d, fused[d]) for d in order]


def weighted(lists: list[tuple[list[str], list[float]]], weights: list[float]) -> list[tuple[str, float]]:
    """Fuse scored lists by a weighted sum of min-max normalised scores (an id a list lacks scores
    0 there), best first; ties break by id. Scores of different retrievers live on different
    scales: the weight is only meaningful after this normalisation."""
    fused: dict[str, float] = {}
    for (ids, scores), weight in zip(lists, weights):
        if not ids:
            continue
        low, high = min(scores), max(scores)
        for doc, score in zip(ids, scores):
            share = (score - low) / (high - low) if high > low else 1.0
            fused[doc] = fused.get(doc, 0.0) + weight * share
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
