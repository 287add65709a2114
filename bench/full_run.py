"""Wall time of the whole default run (all strategies, dense, BM25, hybrid) from scratch.

    python bench/full_run.py

Runs `rag-assets run` on the bundled corpus into a fresh temporary data dir.
"""

import tempfile
import time
from pathlib import Path

from rag_assets.app.cli import main as cli


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        code = cli(["run", "--data-dir", str(Path(tmp) / "data")])
        seconds = time.perf_counter() - t0
    print(f"\nfull default run: exit {code}, {seconds:.1f} s wall ({seconds / 60:.2f} min)")


if __name__ == "__main__":
    main()
