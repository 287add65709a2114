"""A chunk set's vectors by one model, through the embedding cache (here or by Ray workers), with
the figures and the two checks `embeddings` reports: unit norm and distance identity, and every
row the configured model's own encoding (a sample re-encoded, drawn anew by every run)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_assets.chunking import diagnostics
from rag_assets.report import Outcome, Significant
from rag_assets.retrieval import dense
from rag_assets.retrieval.embedding import Embedder, embedding_frame, reencoding_error
from rag_assets.retrieval.embedding_cache import EmbeddingCache

UNIT_TOLERANCE = 1e-5
IDENTITY_SAMPLE = 32  # vectors re-encoded by single_model_identity, a new sample every run
SAME_VECTOR = 1e-4  # largest 1 - cos between a stored vector and its re-encoding


def embed_chunks(chunks: pd.DataFrame, model: Embedder, cache_root, engine, progress, seed: int) -> Outcome:
    """Only texts the cache (model identity x text hash) lacks are encoded: here, or in shards
    by Ray workers (`engine`), the same vectors either way. `seed` draws the re-encoded sample."""
    texts = chunks["text"].tolist()
    vectors, stats = EmbeddingCache(cache_root, model).encode(texts, progress, engine)
    frame = embedding_frame(chunks, vectors, model.identity)
    figures = {
        "model_id": model.identity,
        "dim": model.dim,
        "chunks": len(texts),
        "index_mb": vectors.nbytes / 2**20,  # the vectors alone, float32
        "encoded": stats.encoded,
        "cache_hits": stats.hits,
        "cache_hit_rate": stats.hit_rate,
        "chunks_per_second": stats.encoded / stats.seconds if stats.encoded else 0.0,
        **_spread(engine),
        **diagnostics.token_stats(chunks, model),
    }
    summary = f"{stats.encoded} texts encoded, {stats.hits} from the cache ({stats.hit_rate:.0%})"
    return Outcome(frame, figures, _checks(model, texts, vectors, frame, seed), notes=[summary])


def _spread(engine) -> dict:
    """Where the vectors were made, and what the Ray pool did (nothing when every text was cached)."""
    if not engine:
        return {"engine": "local"}
    if not engine.stats:
        return {"engine": "ray"}
    return {
        "engine": "ray",
        **{k: engine.stats[k] for k in ("workers", "shards", "restarts", "retried_shards_already_written")},
        "chunks_per_second_per_worker": {
            pid: round(rate, 1) for pid, rate in engine.stats["chunks_per_second_per_worker"].items()
        },
    }


def _checks(model: Embedder, texts: list[str], vectors: np.ndarray, frame: pd.DataFrame, seed: int) -> dict:
    norm_err = dense.norm_error(vectors)
    identity_err = dense.distance_identity_error(vectors) if len(vectors) else 0.0
    identities = sorted(frame["model_id"].unique())
    drift, sampled = reencoding_error(model, texts, vectors, IDENTITY_SAMPLE, seed)
    return {
        "unit_norm_and_distance_identity": (
            norm_err < UNIT_TOLERANCE and identity_err < UNIT_TOLERANCE,
            {"max_norm_error": Significant(norm_err), "max_identity_error_200x200": Significant(identity_err)},
        ),
        "single_model_identity": (
            set(identities) <= {model.identity} and drift <= SAME_VECTOR,
            {
                "identities": identities,
                "configured": model.identity,
                "reencoded_sample": len(sampled),
                "sample_seed": str(seed),  # drawn anew by every run (its id and the partition)
                "sampled_rows": sampled,
                "max_reencoding_distance": Significant(drift),
                "tolerance": Significant(SAME_VECTOR),
            },
        ),
    }
