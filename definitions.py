"""Code location entry point for `dg dev` / `dagster dev` (see workspace.yaml and [tool.dg])."""

from rag_assets.defs import defs

__all__ = ["defs"]
