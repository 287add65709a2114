"""Writes that a reader never sees half done, on a local disk or on object storage: every
file the project writes goes through here, and every data-dir path is a `Path` or a `UPath`.

Locally, a file is written to a temporary name beside its final one and renamed into place, so
a run killed at any moment (SIGKILL included) leaves either the previous file or the new one,
whole; a folder (a BM25 index) is a link to a versioned folder, and a new version is swapped in
by replacing the link (`replace_dir`). What a killed writer leaves (its temporary names) is
removed by the next `rag-assets run` or `ui` (`sweep_leftovers`).

Object storage (any fsspec URL, `s3://bucket/prefix`) has no rename. There each file is written
whole under its final key, as one object: S3 shows an object only once its upload completes, so
a reader sees the previous object or the new one, and a writer killed mid-way leaves the
previous one. A folder is one object there too (a tar archive under the folder's key), written
whole and read back whole with `local_dir`, so its files can never mix two versions.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time
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


RECORD_LIMIT = 64 * 1024  # bytes: a record a command writes into the data dir is a few hundred
RECORD_DEPTH = 16  # levels of nesting: a record holds a few, a crafted one 60,000 (past the parser's recursion)


class RecordError(ValueError):
    """A record that cannot be read as one: the message names the file and why, in one line."""


class NotAFile(RecordError):
    """What stands at a record's place is no regular file (a folder, a FIFO, a device, a dangling link)."""


_JSON_TYPES = {
    str: "a string",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    dict: "an object",
    list: "a list",
}
_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


def read_record(path: AnyPath, fields: dict[str, type | tuple[type, ...]] | None = None, limit: int = RECORD_LIMIT):
    """A JSON object a command wrote into the data dir (models.json, served.json, dataset.json, a
    probe record), read one way for all of them: None when nothing is there (no file, no link);
    NotAFile when something else is (a folder, a FIFO, a device, a link to nothing: opened without
    blocking, never waited on or read from); RecordError when it is larger than `limit` bytes, nested
    deeper than RECORD_DEPTH, not a JSON object, or holds one of `fields` as another type."""
    if is_remote(path):
        if not path.exists():
            return None
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    else:
        data = _read_file(Path(path), limit)
        if data is None:
            return None
    if len(data) > limit:
        raise RecordError(f"{path} cannot be read: it is larger than {limit:,} bytes")
    try:
        record = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise RecordError(f"{path} cannot be read: it is nested too deeply") from None
    except ValueError:  # UnicodeDecodeError included
        raise RecordError(f"{path} cannot be read: it is not JSON") from None
    if not isinstance(record, dict):
        raise RecordError(f"{path} cannot be read: it is not a JSON object")
    if _depth(record) > RECORD_DEPTH:
        raise RecordError(f"{path} cannot be read: it is nested too deeply")
    for name, kind in (fields or {}).items():
        value = record.get(name)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool)):
            names = " or ".join(_JSON_TYPES[k] for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise RecordError(f"{path} cannot be read: {name} is not {names}")
    return record


def _read_file(path: Path, limit: int) -> bytes | None:
    """Up to `limit` + 1 bytes of the regular file at `path`; None when nothing is there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if os.path.islink(path):
            raise NotAFile(f"{path} cannot be read: it is a link to nothing ({os.readlink(path)})") from None
        return None
    except NotADirectoryError:  # a folder on the way is a file: nothing is there (the caller says what it needs)
        return None
    except OSError as exc:
        raise NotAFile(f"{path} cannot be read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(f"{path} cannot be read: it is {_KINDS.get(stat.S_IFMT(mode), 'no file')}, not a file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def _depth(value) -> int:
    """How deeply lists and objects nest in a parsed JSON value (1: a flat object), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            stack += [(child, level + 1) for child in (item.values() if isinstance(item, dict) else item)]
    return deepest


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


def _version_prefix(path: Path) -> str:
    return f".{path.name}.v-"


def replace_dir(path: AnyPath, fill: Callable[[Path], None]) -> AnyPath:
    """`fill(tmp)` writes the folder's contents; the folder then takes `path`'s place (on object
    storage: one tar object under `path`'s key).

    Locally `path` is a symbolic link to a versioned sibling folder (`.<name>.v-<pid>-<ns>`):
    a new version is filled beside it and the link is replaced by one `os.replace`, so a
    reader finds the previous folder or the new one, never none, whenever a writer is killed.
    The version the link pointed to before is kept (a reader may be in it); older ones go."""
    if is_remote(path):
        with tempfile.TemporaryDirectory(prefix="rag-assets-dir-") as tmp:
            fill(Path(tmp))
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as archive:
                for item in sorted(Path(tmp).iterdir()):
                    archive.add(item, arcname=item.name)
            return write_bytes(path, buffer.getvalue())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    version = path.with_name(f"{_version_prefix(path)}{os.getpid()}-{time.time_ns()}")
    version.mkdir()
    fill(version)
    previous = path.resolve() if path.is_symlink() else None
    if path.is_dir() and not path.is_symlink():  # a folder from before versioning: made a version once
        previous = path.with_name(f"{_version_prefix(path)}{os.getpid()}-0")
        path.rename(previous)
    link = _temporary(path)
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(version.name)
    os.replace(link, path)
    for old in path.parent.glob(f"{_version_prefix(path)}*"):
        if old not in (version, previous):
            shutil.rmtree(old, ignore_errors=True)
    return path


def sweep_leftovers(root: AnyPath, folders=("assets", "reports", "cache")) -> list[str]:
    """Remove what writers killed mid-write left in `folders` of a local data dir: temporary
    files and folders (`.<name>.tmp-<pid>`) whose process is gone, and folder versions nothing
    points to that a dead process wrote. Returns what was removed, relative to `root`."""
    if is_remote(root):
        return []
    removed = []
    found = (item for name in folders if (Path(root) / name).is_dir() for item in (Path(root) / name).rglob(".*"))
    for item in sorted(found):
        match = _LEFTOVER.fullmatch(item.name)
        if not match or _alive(int(match.group("pid"))):
            continue
        if match.group("kind") == "v" and any(
            sibling.is_symlink() and sibling.resolve() == item.resolve() for sibling in item.parent.iterdir()
        ):
            continue  # a version that a folder's link points to
        shutil.rmtree(item, ignore_errors=True) if item.is_dir() and not item.is_symlink() else item.unlink()
        removed.append(item.relative_to(root).as_posix())
    return removed


_LEFTOVER = re.compile(r"\..+\.(?P<kind>tmp|v)-(?P<pid>\d+)(-\d+)?")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != 0


@contextlib.contextmanager
def local_dir(path: AnyPath) -> Iterator[Path]:
    """A folder written by `replace_dir`, as a local folder for the block: the version its link
    points to now (resolved once, so every file comes from one version), else its object
    unpacked into a temporary folder removed afterwards. FileNotFoundError when there is none."""
    if not is_remote(path):
        folder = Path(path).resolve()
        if not folder.is_dir():
            raise FileNotFoundError(f"no folder at {path}")
        yield folder
        return
    if not path.is_file():
        raise FileNotFoundError(f"no folder at {path}")
    with tempfile.TemporaryDirectory(prefix="rag-assets-dir-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(path.read_bytes()), mode="r") as archive:
            archive.extractall(tmp, filter="data")
        yield Path(tmp)


def sha256_of(files, prefix: bytes = b"") -> str:
    """sha256 of `prefix` and then the bytes of each local file in turn, read 1 MiB at a time."""
    digest = hashlib.sha256(prefix)
    for path in files:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
