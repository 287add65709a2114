"""A dataset folder an importer writes whole or not at all: everything goes to a hidden folder
beside `out`, which takes `out`'s name only once the import succeeded; a failed or killed
import leaves no half-written dataset behind (a killed one leaves its hidden folder, which the
next import to the same `out` removes)."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path


class ImportRefused(ValueError):
    """The import cannot start or cannot finish: one line that says why."""


@contextlib.contextmanager
def staged_folder(out: Path):
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ImportRefused(f"{out} already exists and is not an empty folder: choose a new --out, or remove it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        for leftover in out.parent.glob(f".{out.name}.importing-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        tmp = out.with_name(f".{out.name}.importing-{os.getpid()}")
        tmp.mkdir()
    except OSError as exc:
        raise ImportRefused(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        yield tmp
        if out.exists():
            out.rmdir()
        os.rename(tmp, out)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
