"""Incremental re-run after a one-document edit vs a full rebuild, on the bundled corpus.

    python bench/incremental.py

1. copies the bundled dataset to a temporary folder and runs `rag-assets run` (full build);
2. edits one paragraph of one document;
3. runs again into the same data dir (embedding cache warm) and reports, per strategy,
   chunks encoded against chunks whose embedded text is new. Target: equal, exactly. It also
   reports how many of generation_eval's generated answers the answer cache reused, and how
   many prompts (changed by the edit) were decoded again.
"""

import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd
from dagster import AssetKey, DagsterInstance

from rag_assets.app.cli import main as cli
from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.chunking.strategies import STRATEGIES


def _texts(data_dir: Path) -> dict[str, set[str]]:
    return {s: set(pd.read_parquet(data_dir / "assets" / "chunk_sets" / f"{s}.parquet")["text"]) for s in STRATEGIES}


def _encoded(data_dir: Path) -> dict[str, int]:
    with DagsterInstance.from_config(str(data_dir / "dagster_home")) as instance:
        records = instance.fetch_materializations(AssetKey("embeddings"), limit=len(STRATEGIES)).records
        # `embeddings` is partitioned by `model|strategy`: the table is by strategy
        return {r.partition_key.split("|")[-1]: r.asset_materialization.metadata["encoded"].value for r in records}


def _answer_cache(data_dir: Path) -> dict:
    with DagsterInstance.from_config(str(data_dir / "dagster_home")) as instance:
        event = instance.get_latest_materialization_event(AssetKey("generation_eval"))
        return event.asset_materialization.metadata["answer_cache"].value


def _run(dataset: Path, data_dir: Path) -> float:
    t0 = time.perf_counter()
    assert cli(["run", "--dataset", str(dataset), "--data-dir", str(data_dir)]) == 0
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dataset, data_dir = Path(tmp) / "dataset", Path(tmp) / "data"
        shutil.copytree(BUNDLED_DATASET, dataset)
        full = _run(dataset, data_dir)
        before = _texts(data_dir)
        doc = dataset / "documents" / "oxygen.md"
        text = doc.read_text(encoding="utf-8")
        paragraph_end = text.index("\n\n", len(text) // 2)
        doc.write_text(
            text[:paragraph_end] + " This sentence was added by the incremental benchmark." + text[paragraph_end:],
            encoding="utf-8",
        )
        incremental = _run(dataset, data_dir)
        after, encoded, answers = _texts(data_dir), _encoded(data_dir), _answer_cache(data_dir)
    seen: set[str] = set()
    print(f"\n{'strategy':>8} {'chunks':>7} {'new texts':>10} {'encoded':>8}")
    for s in STRATEGIES:
        new = after[s] - before[s] - seen  # a text already encoded for an earlier strategy is a cache hit
        seen |= after[s] - before[s]
        print(f"{s:>8} {len(after[s]):>7} {len(new):>10} {encoded[s]:>8}")
    print(
        f"full build {full:.1f} s, re-run after a one-paragraph edit {incremental:.1f} s "
        f"({incremental / full:.0%} of the full build)"
    )
    print(f"generation_eval after the edit: {answers['reused']} answers reused, {answers['decoded']} decoded again")


if __name__ == "__main__":
    main()
