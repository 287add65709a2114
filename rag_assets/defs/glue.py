"""Dagster glue shared by the asset modules (which never import each other)."""

import numbers
from collections.abc import Callable, Iterator, Mapping

import pandas as pd
from dagster import Any, AssetCheckResult, AssetIn, AssetKey, DataVersion, MetadataValue, Output

from rag_assets.defs.io_manager import LAZY_KEY
from rag_assets.report import Link, Markdown, Outcome, Significant

# Unpartitioned assets read whichever strategies were materialised (`run --strategies`).
ALL_STRATEGIES = {"allow_missing_partitions": True}
# ... one at a time: each partition arrives as a function that reads it (or only the columns it
# is given), so an asset holds one strategy's table (e.g. its embedding matrix) at a time.
LazyTables = dict[str, Callable[..., pd.DataFrame]]


def all_strategies_lazily() -> AssetIn:
    return AssetIn(metadata={**ALL_STRATEGIES, LAZY_KEY: True}, dagster_type=Any)


class OnDemand(Mapping[str, pd.DataFrame]):
    """Lazily loaded partitions as the plain mapping the core library takes: each table is read
    when it is looked up and not kept, so a loop over strategies holds one at a time."""

    def __init__(self, tables: LazyTables):
        self._tables = tables

    def __getitem__(self, strategy: str) -> pd.DataFrame:
        return self._tables[strategy]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)


def columns_of(tables: LazyTables, *columns: str) -> dict[str, pd.DataFrame]:
    """Only `columns` of every lazily loaded partition: what a check over all strategies reads."""
    return {strategy: read(columns=list(columns)) for strategy, read in tables.items()}


def decimals(value: float, digits: int = 3) -> MetadataValue:
    """A rate, share, distance or duration as the UI should show it: 3 decimals."""
    return MetadataValue.float(round(float(value), digits))


def significant(value: float, digits: int = 3) -> MetadataValue:
    """A p-value or a tiny error as the UI should show it: 3 significant digits."""
    return MetadataValue.float(float(f"{float(value):.{digits}g}"))


def metadata(values: Mapping) -> dict:
    """Figures the core reports, as Dagster metadata: Markdown rendered, a Link as a path, a
    Significant to 3 significant digits, another number to 3 decimals, a dict or list as JSON;
    the rest as it is."""
    out = {}
    for key, value in values.items():
        if isinstance(value, Markdown):
            out[key] = MetadataValue.md(str(value))
        elif isinstance(value, Link):
            out[key] = MetadataValue.path(str(value))
        elif isinstance(value, Significant):
            out[key] = significant(value)
        elif isinstance(value, bool) or value is None:
            out[key] = value
        elif isinstance(value, numbers.Integral):
            out[key] = MetadataValue.int(int(value))
        elif isinstance(value, numbers.Real):
            out[key] = decimals(value)
        elif isinstance(value, (dict, list)):
            out[key] = MetadataValue.json(value)
        else:
            out[key] = value
    return out


def recorded(context, outcome: Outcome) -> Iterator:
    """An asset's Output and check results from the core's Outcome, its lines logged."""
    for line in outcome.notes:
        context.log.info(line)
    for line in outcome.warnings:
        context.log.warning(line)
    version = DataVersion(outcome.version) if outcome.version else None
    yield Output(outcome.table, data_version=version, metadata=metadata(outcome.figures))
    for check, (passed, figures) in outcome.checks.items():
        yield AssetCheckResult(check_name=check, passed=bool(passed), metadata=metadata(figures))


def label(key: AssetKey | str, partition: str | None = None) -> str:
    """`asset[partition]`, or `asset` for an unpartitioned one: how every message names an asset."""
    name = key if isinstance(key, str) else key.to_user_string()
    return f"{name}[{partition}]" if partition else name
