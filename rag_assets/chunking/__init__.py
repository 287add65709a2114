"""Chunking strategies A-F, word windows and whole documents, with the offsets that slice back,
what a chunk set costs and destroys before any retrieval runs, and library chunks placed back
with the passages a hit returns (parent document, sentence window), and chunkers as typed settings."""

__all__ = ["diagnostics", "placed", "specs", "strategies"]
