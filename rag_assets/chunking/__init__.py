"""Chunking strategies A-F, word windows and whole documents, with the offsets that slice back,
and what a chunk set costs and destroys before any retrieval runs."""

__all__ = ["diagnostics", "strategies"]
