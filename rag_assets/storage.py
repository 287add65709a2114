"""Writes that a reader never sees half done, on a local disk or on object storage: every
file the project writes goes through here, and every data-dir path is a `Path` or a `UPath`.

Locally, a file is written to a temporary name beside its final one and renamed into place, so
a run killed at any moment (SIGKILL included) leaves either the previous file or the new one,
whole; a folder (a BM25 index) is filled under a temporary name and swapped in the same way.

Object storage (any fsspec URL, `s3://bucket/prefix`) has no rename. There each file is written
whole under its final key, as one object: S3 shows an object only once its upload completes, so
a reader sees the previous object or the new one, and a writer killed mid-way leaves the
previous one. A folder is one object there too (a tar archive under the folder's key), written
whole and read back whole with `local_dir`, so its files can never mix two versions.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

AnyPath = Path | UPath


def is_remote(path: AnyPath) -> bool:
    """Whether `path` is on object storage (a UPath that is not a local path)."""
    return not isinstance(path, Path)


def as_path(value: str | AnyPath) -> AnyPath:
    """A local path as an absolute `Path`; any other fsspec URL (`s3://bucket/prefix`) as a UPath."""
    text = str(value)
    if "://" in text and not text.startswith("file://"):
        return UPath(text)
    return Path(text.removeprefix("file://")).resolve()


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def write_bytes(path: AnyPath, data: bytes) -> AnyPath:
    if is_remote(path):
        path.write_bytes(data)  # one object, shown only once whole
        return path
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def write_text(path: AnyPath, text: str) -> AnyPath:
    return write_bytes(path, text.encode("utf-8"))


def write_parquet(path: AnyPath, table: pa.Table | pd.DataFrame) -> AnyPath:
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if is_remote(path):
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        return write_bytes(path, buffer.getvalue())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def read_parquet(path: AnyPath, columns: list[str] | None = None) -> pa.Table:
    if not is_remote(path):
        return pq.read_table(path, columns=columns)
    with path.open("rb") as fh:
        return pq.read_table(fh, columns=columns)


def listing(folder: AnyPath, pattern: str) -> list[AnyPath]:
    """The files under `folder` that match `pattern`, sorted, as they are now: on object
    storage the file system's cached listing is dropped first (other processes, Ray workers
    among them, may have written since this one last looked)."""
    if is_remote(folder):
        folder.fs.invalidate_cache(folder.path)
    return sorted(folder.glob(pattern))


def replace_dir(path: AnyPath, fill: Callable[[Path], None]) -> AnyPath:
    """`fill(tmp)` writes the folder's contents; the folder then takes `path`'s place (on object
    storage: one tar object under `path`'s key)."""
    if is_remote(path):
        with tempfile.TemporaryDirectory(prefix="rag-assets-dir-") as tmp:
            fill(Path(tmp))
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as archive:
                for item in sorted(Path(tmp).iterdir()):
                    archive.add(item, arcname=item.name)
            return write_bytes(path, buffer.getvalue())
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


@contextlib.contextmanager
def local_dir(path: AnyPath) -> Iterator[Path]:
    """A folder written by `replace_dir`, as a local folder for the block: itself when local,
    else its object unpacked into a temporary folder removed afterwards.
    FileNotFoundError when there is none."""
    if not is_remote(path):
        if not Path(path).is_dir():
            raise FileNotFoundError(f"no folder at {path}")
        yield Path(path)
        return
    if not path.is_file():
        raise FileNotFoundError(f"no folder at {path}")
    with tempfile.TemporaryDirectory(prefix="rag-assets-dir-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(path.read_bytes()), mode="r") as archive:
            archive.extractall(tmp, filter="data")
        yield Path(tmp)
