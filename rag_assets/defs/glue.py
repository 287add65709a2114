"""Dagster glue shared by the asset modules (which never import each other)."""

from dagster import AssetKey

# Unpartitioned assets read whichever strategies were materialised (`run --strategies`).
ALL_STRATEGIES = {"allow_missing_partitions": True}


def label(key: AssetKey | str, partition: str | None = None) -> str:
    """`asset[partition]`, or `asset` for an unpartitioned one: how every message names an asset."""
    name = key if isinstance(key, str) else key.to_user_string()
    return f"{name}[{partition}]" if partition else name
