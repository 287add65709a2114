"""The experiment domain of the Dagster layer: an experiment file's source (`sources`), its assets
(`assets`) and the definitions that hold them with its jobs and sensor (`definitions`). Built only
when a command names an experiment (`run --experiment`, `ui` on a dataset with one): the lab's
definitions, and what `ask` and `serve` build and check, hold none of it."""

__all__ = ["assets", "definitions", "sources"]
