"""Writes that a reader never sees half done: every file the project writes goes through here.

A file is written to a temporary name beside its final one and renamed into place, so a run
killed at any moment (SIGKILL included) leaves either the previous file or the new one, whole.
A folder (a BM25 index) is filled under a temporary name and swapped in the same way.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def write_bytes(path: Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_parquet(path: Path, table: pa.Table | pd.DataFrame) -> Path:
    path = Path(path)
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def replace_dir(path: Path, fill: Callable[[Path], None]) -> Path:
    """`fill(tmp)` writes the folder's contents; the folder then takes `path`'s place."""
    path = Path(path)
    tmp, old = _temporary(path), path.with_name(f".{path.name}.old-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    fill(tmp)
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)
    return path
