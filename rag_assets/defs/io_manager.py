"""Parquet materialisations through one UPath-based IO manager.

Layout: `<base>/<asset>.parquet`, and `<base>/<asset>/<partition>.parquet` for
partitioned assets; `base` may be any fsspec URL (`s3://...`). Every write goes through
`storage`, so a killed run leaves the previous file readable, locally and on object storage.
"""

from functools import partial

import pandas as pd
import pyarrow as pa
from dagster import (
    ConfigurableIOManagerFactory,
    InputContext,
    MetadataValue,
    OutputContext,
    TableColumn,
    TableSchema,
    UPathIOManager,
)
from upath import UPath

from rag_assets import locking, storage
from rag_assets.columns import COLUMNS
from rag_assets.layout import DataDir
from rag_assets.report import table_markdown

# An asset's definition metadata: the columns its preview shows (a reader's view of the table).
PREVIEW_KEY = "preview_columns"
# An input's metadata: load each partition as a function that reads it when called.
LAZY_KEY = "lazy"


def table_metadata(frame: pd.DataFrame, preview_columns: list[str] | None = None) -> dict:
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    return {
        "dagster/row_count": MetadataValue.int(len(frame)),
        "dagster/column_schema": MetadataValue.table_schema(
            TableSchema(
                columns=[TableColumn(name=f.name, type=str(f.type), description=COLUMNS.get(f.name)) for f in schema]
            )
        ),
        "preview": MetadataValue.md(table_markdown(frame, columns=preview_columns)),
    }


def _read(path: UPath, columns: list[str] | None = None) -> pd.DataFrame:
    return storage.read_parquet(path, columns).to_pandas()


class ParquetIOManager(UPathIOManager):
    """pandas DataFrames as Parquet files."""

    extension = ".parquet"

    def dump_to_path(self, context: OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        locking.shared(self._base_path.parent)  # the data dir: never beside an exclusive writer
        storage.write_parquet(path, pa.Table.from_pandas(obj, preserve_index=False))

    def load_from_path(self, context: InputContext, path: UPath):
        """The table; for an input whose metadata sets LAZY_KEY, a function that reads it, or only
        the `columns` it is given (its existence is checked now, so a missing partition is
        skipped or reported as usual)."""
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: materialise {context.asset_key.to_user_string()} first")
        if (context.definition_metadata or {}).get(LAZY_KEY):
            return partial(_read, path)
        return _read(path)

    def get_metadata(self, context: OutputContext, obj: pd.DataFrame) -> dict:
        """The table's metadata, and its `path` relative to the data dir (it may move)."""
        layout = DataDir(self._base_path.parent)
        partition = context.asset_partition_key if context.has_asset_partitions else None
        relative = layout.relative(layout.table(context.asset_key.to_user_string(), partition))
        preview = (context.definition_metadata or {}).get(PREVIEW_KEY)
        return {**table_metadata(obj, preview), "path": MetadataValue.path(relative)}


class ParquetIOManagerFactory(ConfigurableIOManagerFactory):
    """Configurable entry point: `base_path` is `<data dir>/assets` or any fsspec URL."""

    base_path: str

    def create_io_manager(self, context) -> ParquetIOManager:
        return ParquetIOManager(base_path=UPath(self.base_path))
