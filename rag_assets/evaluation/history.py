"""evaluation_history: every evaluation's per-query hits with full provenance, appended as
Parquet files partitioned by date (`date=YYYY-MM-DD/<time>-<run>.parquet`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from rag_assets import storage
from rag_assets.evaluation.provenance import INPUTS, of_table

PROVENANCE = [*INPUTS, "code_version"]  # the inputs, and the code that computed the evaluation


def append(folder: Path, hits: pd.DataFrame, provenance: dict, run_id: str, when: datetime | None = None) -> Path:
    """Write one entry atomically (temporary file renamed into place) and return its path."""
    when = (when or datetime.now(UTC)).astimezone(UTC)
    entry = hits.copy()
    for key in PROVENANCE:
        entry[key] = provenance[key]
    entry["run_id"] = run_id
    entry["evaluated_at"] = when.isoformat()
    return storage.write_parquet(
        Path(folder) / f"date={when:%Y-%m-%d}" / f"{when:%H%M%S%f}-{run_id[:8]}.parquet", entry
    )


def entries(folder: Path) -> list[Path]:
    """All entries, oldest first (file names sort by date, then time)."""
    return sorted(Path(folder).glob("date=*/*.parquet"), key=lambda p: (p.parent.name, p.name))


def provenance_of(entry: pd.DataFrame) -> dict:
    return of_table(entry, PROVENANCE)


def label(path: Path) -> str:
    return f"{path.parent.name.removeprefix('date=')} {path.stem}"
