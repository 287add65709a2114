"""One module per command of `rag-assets`, each adding its parser (`add`) and its function."""

from rag_assets.app.commands import ask, experiments, export, imports, keys, run, serve, ui

COMMANDS = (run, experiments, ask, serve, keys, ui, export, imports)  # in the order `rag-assets --help` lists them

__all__ = ["COMMANDS"]
