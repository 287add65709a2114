"""The partitions of the per-strategy and per-(model, strategy) assets.

Chunk sets and BM25 indexes depend on the strategy only; embeddings and HNSW graphs exist per
embedding model and strategy: a two-dimensional partition (Dagster's MultiPartitionsDefinition),
so the UI shows each model's state per strategy, adding a model materialises only its own
partitions, and each model's source version (its identity) stales only its own. The model
dimension lists every packaged model (rag_assets.retrieval.packaged): those a run does not name
stay unmaterialised, or keep what was materialised for them.
"""

from dagster import MultiPartitionKey, MultiPartitionsDefinition, StaticPartitionsDefinition

from rag_assets.chunking.strategies import STRATEGIES
from rag_assets.retrieval.packaged import PACKAGED

strategy_partitions = StaticPartitionsDefinition(list(STRATEGIES))
model_partitions = StaticPartitionsDefinition(list(PACKAGED))
model_strategy_partitions = MultiPartitionsDefinition({"model": model_partitions, "strategy": strategy_partitions})


def model_strategy_key(model: str, strategy: str) -> str:
    """The partition key of (model, strategy): `minilm|E`."""
    return str(MultiPartitionKey({"model": model, "strategy": strategy}))


def model_and_strategy(partition_key: str) -> tuple[str, str]:
    model, strategy = partition_key.split("|")
    return model, strategy
