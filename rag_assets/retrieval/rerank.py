"""Rerankers re-score a shortlist with the query and passage seen together.

Two kinds, each reported under its own name: a sentence-transformers CrossEncoder
(`rerank`), loaded from a local folder or the Hugging Face cache and never downloaded
(where none is on the machine the caller gets the reason in words), and the local
language model asked whether the passage answers the query (`rerank-llm`), which runs
wherever the generator does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import numpy as np

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"
CROSS_ENCODER_ENV = "RAG_ASSETS_CROSS_ENCODER"


class Reranker(Protocol):
    name: str  # the retriever label its results carry
    model: str  # what scored them
    depth: int  # how much of the hybrid ranking it re-scores

    def score(self, query: str, passages: list[str]) -> np.ndarray: ...


class CrossEncoderReranker:
    name = "rerank"
    depth = 25

    def __init__(self, cross_encoder, model: str):
        self.cross_encoder = cross_encoder
        self.model = model

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        return np.asarray(
            self.cross_encoder.predict([(query, p) for p in passages], show_progress_bar=False), dtype=np.float64
        )


def find_cross_encoder(spec: str | None = None) -> tuple[CrossEncoderReranker | None, str]:
    """(reranker, how it was found) or (None, why there is none).

    `spec` (or $RAG_ASSETS_CROSS_ENCODER) is a model folder or a hub name that must
    already be in the local cache; the default is ms-marco-MiniLM-L-6-v2."""
    spec = spec or os.environ.get(CROSS_ENCODER_ENV) or DEFAULT_CROSS_ENCODER
    from sentence_transformers import CrossEncoder

    if Path(spec).is_dir():
        return CrossEncoderReranker(CrossEncoder(spec, device="cpu"), str(spec)), f"loaded from {spec}"
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(spec, local_files_only=True)
    except Exception:  # not in the cache: the hub is never contacted
        return None, (
            f"no cross-encoder on this machine: {spec!r} is neither a folder nor in the local Hugging Face "
            f"cache, and models are never downloaded at run time; set {CROSS_ENCODER_ENV} to a local "
            "CrossEncoder folder to get rerank results"
        )
    return CrossEncoderReranker(CrossEncoder(local, device="cpu"), spec), f"loaded {spec} from the local cache"


RELEVANCE_PROMPT = "Passage:\n{passage}\n\nQuery: {query}\n\nDoes the passage answer the query? Reply with yes or no."


class LLMRelevanceReranker:
    """Score = log-odds of "yes" over "no" as the generator's first answer token."""

    name = "rerank-llm"

    def __init__(self, lm, depth: int = 10):
        self.lm = lm
        self.model = lm.identity
        self.depth = depth

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        return self.lm.log_odds([RELEVANCE_PROMPT.format(passage=p, query=query) for p in passages])
