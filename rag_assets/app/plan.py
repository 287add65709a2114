"""How `rag-assets run` materialises the whole graph: one run per partition.

Dagster's IO manager cannot write several partitions in one run, and one run cannot mix
partitions definitions, so the graph is materialised in three stages derived from the graph
itself (new assets need no edit): unpartitioned roots; then, per strategy, its per-strategy
assets and after them its per-(model, strategy) assets once for each model; then the
unpartitioned assets downstream of partitions. An experiment runs apart (`experiment_steps`).
"""

from dataclasses import dataclass

from dagster import AssetKey, Definitions, MultiPartitionsDefinition

from rag_assets.defs.partitions import model_strategy_key

EXPERIMENT_GROUP = "experiment"  # rag_assets.defs.experiment_assets.GROUP: run only by `run --experiment`


@dataclass(frozen=True)
class Step:
    label: str
    job: str  # the job of defs/__init__.py that runs this stage
    keys: tuple[AssetKey, ...]
    partition_key: str | None = None


def materialization_steps(defs: Definitions, strategies: list[str]) -> list[Step]:
    """The steps for `strategies` and the embedding models the definitions' embedder names."""
    models = defs.resources["embedder"].names()
    graph = defs.resolve_asset_graph()
    order = [
        k
        for k in graph.toposorted_asset_keys
        if graph.get(k).is_materializable and graph.get(k).group_name != EXPERIMENT_GROUP
    ]
    partitioned = {k for k in order if graph.get(k).partitions_def is not None}
    downstream: set[AssetKey] = set()
    for k in order:  # topological order: parents are classified before their children
        if k not in partitioned and graph.get(k).parent_keys & (partitioned | downstream):
            downstream.add(k)
    roots = tuple(k for k in order if k not in partitioned and k not in downstream)
    steps = [Step("unpartitioned roots", "corpus", roots)] if roots else []
    by_model = tuple(k for k in order if isinstance(graph.get(k).partitions_def, MultiPartitionsDefinition))
    by_strategy = tuple(k for k in order if k in partitioned and k not in by_model)
    for strategy in strategies:
        if by_strategy:
            steps.append(Step(f"partition {strategy}", "strategy_indexes", by_strategy, strategy))
        if by_model:
            for model in models:
                key = model_strategy_key(model, strategy)
                steps.append(Step(f"partition {key}", "model_indexes", by_model, key))
    if downstream:
        steps.append(Step("downstream of partitions", "evaluation", tuple(k for k in order if k in downstream)))
    return steps


def experiment_steps(defs: Definitions, experiment) -> list[Step]:
    """`run --experiment`: the corpus and questions, then one step per configuration (each may fail
    alone), then the leaderboard over whichever succeeded."""
    roots = materialization_steps(defs, [])
    steps = [s for s in roots if s.job == "corpus"]
    steps += [
        Step(f"configuration {c.id}", "experiment_configs", (AssetKey("experiment_runs"),), c.id)
        for c in experiment.configurations
    ]
    return steps + [Step("leaderboard", "experiment", (AssetKey("experiment_leaderboard"),))]
