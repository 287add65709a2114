"""The refusal gate: the one part of a RAG system that can say no.

Keep at most `keep` retrieved chunks whose cosine distance is under the threshold; none left
means NO ANSWER, and no model is called. What each threshold costs is measured by the sweep
(`rag_assets.evaluation.threshold_sweep`).
"""

from __future__ import annotations

from rag_assets.catalog import DEFAULT_EMBEDDER, PACKAGED

KEEP = 4
THRESHOLD = PACKAGED[DEFAULT_EMBEDDER].threshold  # the default model's: cosine distance (the sweep shows what it costs)


def gate(chunk_ids: list[str], distances: list[float], threshold: float, keep: int = KEEP) -> list[str]:
    """The chunks an answer may use: at most `keep`, each strictly under the threshold."""
    return [c for c, d in zip(chunk_ids, distances) if d < threshold][:keep]
