"""The one factory of embedding models: a packaged model by name, a sentence-transformers folder, or
a model behind an OpenAI-compatible endpoint, each as rag_assets.retrieval.specs names it. Every one
it makes is an `Embedder` (rag_assets.retrieval.embedding). Local models are made once per process
(their weights are hashed for their identity, and loaded on first use); an endpoint is probed each
time it is made, since the model behind it may have moved.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from rag_assets.retrieval.embedding import Embedder, LocalEmbedder
from rag_assets.retrieval.specs import EmbedderSpec, PackagedModel


def make(spec: EmbedderSpec, records: Path | None = None, keep_record: bool = True, endpoint=None) -> Embedder:
    """The model `spec` names. `records`: where an endpoint's probe is kept between runs
    (`keep_record=False`: compared, not written); `endpoint`: its endpoint called otherwise."""
    if spec.kind == "url":
        from rag_assets.retrieval.remote import EndpointEmbedder

        return EndpointEmbedder(spec, records, keep_record, endpoint)
    return _local(spec)


def packaged(name: str) -> Embedder:
    """A packaged model by its name (rag_assets.catalog.PACKAGED)."""
    return _local(PackagedModel(packaged=name))


@lru_cache(maxsize=8)
def _local(spec) -> LocalEmbedder:
    if spec.kind == "packaged":
        from rag_assets.retrieval import packaged as packages

        return packages.embedder(spec.packaged)
    folder = Path(spec.path)
    return LocalEmbedder(
        folder,
        spec.name or folder.name,
        spec.batch_size,
        query_prefix=spec.query_prefix,
        passage_prefix=spec.passage_prefix,
    )
