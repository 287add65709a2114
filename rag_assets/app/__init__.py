"""The shell: the `rag-assets` command (one module per command under `commands`, sharing `options`),
the Dagster instance of a data dir, the served index, the HTTP service and its keys."""

__all__ = [
    "cli",
    "commands",
    "dataset_record",
    "instance",
    "keys",
    "model_server",
    "options",
    "plan",
    "progress",
    "service",
    "serving",
]
