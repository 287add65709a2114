"""The Dagster layer: assets, checks and resources over the core library. No algorithm here.

Importing it (or any of its modules) builds nothing: the definitions are made from a
`Settings` by `build_definitions` (the whole graph) or `build_served_definitions` (what `ask`
and `serve` read), imported on first use."""

__all__ = [
    "ASSETS",
    "build_definitions",
    "build_served_definitions",
    # what the shell reads besides: the source versions, partition keys, asset labels, the experiment domain
    "experiment",
    "external_sources",
    "glue",
    "graph",
    "partitions",
    "served",
]


def __getattr__(name: str):
    if name in ("ASSETS", "build_definitions"):
        from rag_assets.defs import graph

        return getattr(graph, name)
    if name == "build_served_definitions":
        from rag_assets.defs.served import build_served_definitions

        return build_served_definitions
    raise AttributeError(f"module 'rag_assets.defs' has no attribute {name!r}")
