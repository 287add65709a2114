"""Parquet materialisations through one UPath-based IO manager.

Layout: `<base>/<asset>.parquet`, and `<base>/<asset>/<partition>.parquet` for
partitioned assets; `base` may be any fsspec URL (`s3://...`). Local writes go to a
temporary file renamed into place, so a killed run leaves the previous file readable.
"""

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
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

PREVIEW_ROWS = 5
PREVIEW_CELL_CHARS = 80


def _cell(value) -> str:
    text = str(value).replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= PREVIEW_CELL_CHARS else text[: PREVIEW_CELL_CHARS - 1] + "…"


def markdown_preview(frame: pd.DataFrame, rows: int = PREVIEW_ROWS) -> str:
    """First rows as a Markdown table, long cells cut so the UI stays readable."""
    head = frame.head(rows)
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in head.itertuples(index=False)]
    return "\n".join(lines)


def table_metadata(frame: pd.DataFrame) -> dict:
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    return {
        "dagster/row_count": MetadataValue.int(len(frame)),
        "dagster/column_schema": MetadataValue.table_schema(
            TableSchema(columns=[TableColumn(name=f.name, type=str(f.type)) for f in schema])
        ),
        "preview": MetadataValue.md(markdown_preview(frame)),
    }


class ParquetIOManager(UPathIOManager):
    """pandas DataFrames as Parquet files."""

    extension = ".parquet"

    def dump_to_path(self, context: OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        table = pa.Table.from_pandas(obj, preserve_index=False)
        if path.protocol in ("", "file", "local"):
            locking.shared(Path(self._base_path.path).parent)  # the data dir: never beside an exclusive writer
            storage.write_parquet(Path(path.path), table)
        else:
            with path.open("wb") as fh:
                pq.write_table(table, fh)

    def load_from_path(self, context: InputContext, path: UPath) -> pd.DataFrame:
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: materialise {context.asset_key.to_user_string()} first")
        with path.open("rb") as fh:
            return pq.read_table(fh).to_pandas()

    def get_metadata(self, context: OutputContext, obj: pd.DataFrame) -> dict:
        return table_metadata(obj)


class ParquetIOManagerFactory(ConfigurableIOManagerFactory):
    """Configurable entry point: `base_path` is `<data dir>/assets` or any fsspec URL."""

    base_path: str

    def create_io_manager(self, context) -> ParquetIOManager:
        return ParquetIOManager(base_path=UPath(self.base_path))
