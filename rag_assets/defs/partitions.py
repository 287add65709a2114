"""One partition per chunking strategy, shared by every per-strategy asset."""

from dagster import StaticPartitionsDefinition

from rag_assets.chunking.strategies import STRATEGIES

strategy_partitions = StaticPartitionsDefinition(list(STRATEGIES))
