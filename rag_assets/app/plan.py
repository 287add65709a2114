"""How `rag-assets run` materialises the whole graph: one run per partition.

Dagster's IO manager cannot write several partitions in one run, so the graph is
materialised in three stages derived from the graph itself (new assets need no edit):
unpartitioned roots, then every partitioned asset once per partition key, then the
unpartitioned assets downstream of partitions.
"""

from dataclasses import dataclass

from dagster import AssetKey, Definitions


@dataclass(frozen=True)
class Step:
    label: str
    job: str  # the job of defs/__init__.py that runs this stage
    keys: tuple[AssetKey, ...]
    partition_key: str | None = None


def materialization_steps(defs: Definitions, partition_keys: list[str]) -> list[Step]:
    graph = defs.resolve_asset_graph()
    order = [k for k in graph.toposorted_asset_keys if graph.get(k).is_materializable]
    partitioned = {k for k in order if graph.get(k).partitions_def is not None}
    downstream: set[AssetKey] = set()
    for k in order:  # topological order: parents are classified before their children
        if k not in partitioned and graph.get(k).parent_keys & (partitioned | downstream):
            downstream.add(k)
    roots = tuple(k for k in order if k not in partitioned and k not in downstream)
    steps = [Step("unpartitioned roots", "corpus", roots)] if roots else []
    if partitioned:
        keys = tuple(k for k in order if k in partitioned)
        steps += [Step(f"partition {p}", "strategy_indexes", keys, p) for p in partition_keys]
    if downstream:
        steps.append(Step("downstream of partitions", "evaluation", tuple(k for k in order if k in downstream)))
    return steps
