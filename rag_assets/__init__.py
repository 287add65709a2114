"""rag_assets: a Dagster project that measures retrieval and answers on your own documents.

Layers: the core (this package's floors: ingest, chunking, retrieval, answering, evaluation,
drafting; beneath them the top-level modules, above them `settings`), the Dagster layer (`defs`)
and the shell (`app`)."""

__all__ = [
    "answering",
    "app",
    "catalog",
    "chunking",
    "columns",
    "defs",
    "drafting",
    "environment",
    "evaluation",
    "ingest",
    "layout",
    "locking",
    "progress_bars",
    "report",
    "retrieval",
    "settings",
    "stats",
    "storage",
]
