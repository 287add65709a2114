"""Hits, recall@k, MRR and nDCG, computed from ranked lists and explicit relevance.

A hit is a returned chunk whose embedded `text` contains the whole needle; a citable hit
asks the same of `content`, the part quoted back (docs/design.md §6). Document-level
metrics (BEIR) collapse chunk rankings to documents by best rank and compute nDCG and
recall as trec_eval does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

KS = (1, 4, 8, 20)


def first_relevant_rank(ranked: Iterable[str], relevant: set[str]) -> int | None:
    """1-based rank of the first relevant id, None if none is returned."""
    for rank, item in enumerate(ranked, start=1):
        if item in relevant:
            return rank
    return None


def hit_at(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k


def reciprocal_rank(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / rank


def collapse_to_documents(chunk_ids: Iterable[str], document_of: Mapping[str, str]) -> list[str]:
    """Documents in order of their best-ranked chunk."""
    seen: dict[str, None] = {}
    for c in chunk_ids:
        seen.setdefault(document_of[c], None)
    return list(seen)


def ndcg_at(ranked: list[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """trec_eval's ndcg_cut: gain = graded relevance, discount log2(rank + 1), ideal from qrels."""
    dcg = sum(qrels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if qrels.get(d, 0) > 0)
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: list[str], qrels: Mapping[str, int], k: int = 100) -> float:
    """Share of the relevant documents (relevance > 0) found in the top k."""
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)
