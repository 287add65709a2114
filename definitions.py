"""Code location entry point for `dg dev` / `dagster dev` (see workspace.yaml and [tool.dg]): the
whole graph, built from the settings file `rag-assets ui` hands its code server, else from the
$RAG_ASSETS_* variables (rag_assets.settings)."""

from rag_assets.defs import build_definitions
from rag_assets.settings import Settings

defs = build_definitions(Settings.from_environment())
