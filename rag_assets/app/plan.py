"""How `rag-assets run` materialises the whole graph: one run per partition.

Dagster's IO manager cannot write several partitions in one run, and one run cannot mix
partitions definitions, so the graph is materialised in three stages derived from the graph
itself (new assets need no edit): unpartitioned roots; then, per strategy, its per-strategy
assets and after them its per-(model, strategy) assets once for each model; then the
unpartitioned assets downstream of partitions. An experiment runs apart (`experiment_steps`):
its configurations that are fresh are not run again.
"""

from dataclasses import dataclass

from dagster import AssetKey, Definitions, MultiPartitionsDefinition

from rag_assets.defs.experiment import sources
from rag_assets.defs.partitions import model_strategy_key


@dataclass(frozen=True)
class Step:
    label: str
    job: str  # the job of defs/__init__.py that runs this stage
    keys: tuple[AssetKey, ...]
    partition_key: str | None = None
    fails_alone: bool = False  # a failure is reported and the steps after it still run


def materialization_steps(defs: Definitions, strategies: list[str]) -> list[Step]:
    """The steps for `strategies` and the embedding models the definitions' embedder names."""
    models = defs.resources["embedder"].names()
    graph = defs.resolve_asset_graph()
    order = [
        k
        for k in graph.toposorted_asset_keys
        if graph.get(k).is_materializable and graph.get(k).group_name != sources.GROUP
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


def corpus_steps(defs: Definitions) -> list[Step]:
    """The unpartitioned roots (corpus snapshot, questions) that an experiment reads."""
    return [s for s in materialization_steps(defs, []) if s.job == "corpus"]


def experiment_steps(experiment, configurations: list[str]) -> list[Step]:
    """`run --experiment`, once the corpus steps ran: one step per configuration of
    `configurations` (each may fail alone), then the leaderboard over every configuration."""
    steps = [
        Step(f"configuration {c}", sources.CONFIGS_JOB, (sources.RUNS,), c, fails_alone=True) for c in configurations
    ]
    return steps + [Step("leaderboard", sources.LEADERBOARD_JOB, (AssetKey("experiment_leaderboard"),))]
