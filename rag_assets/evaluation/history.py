"""evaluation_history: every evaluation's per-query hits with full provenance, appended as
Parquet files partitioned by date (`date=YYYY-MM-DD/<time>-<run>.parquet`), each with the
manifest of the documents it was computed on (`date=.../documents/<time>-<run>.parquet`:
document id and sha256), so the next comparison can say which documents changed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from rag_assets import storage
from rag_assets.evaluation.provenance import INPUTS, of_table

PROVENANCE = [*INPUTS, "code_version"]  # the inputs, and the code that computed the evaluation


def append(
    folder: Path,
    hits: pd.DataFrame,
    provenance: dict,
    run_id: str,
    when: datetime | None = None,
    documents: pd.DataFrame | None = None,
) -> Path:
    """Write one entry atomically (the manifest first, so an entry never lacks it) and return its path."""
    when = (when or datetime.now(UTC)).astimezone(UTC)
    entry = hits.copy()
    for key in PROVENANCE:
        entry[key] = provenance[key]
    entry["run_id"] = run_id
    entry["evaluated_at"] = when.isoformat()
    path = folder / f"date={when:%Y-%m-%d}" / f"{when:%H%M%S%f}-{run_id[:8]}.parquet"
    if documents is not None:
        storage.write_parquet(_manifest(path), documents[["document_id", "sha256"]].reset_index(drop=True))
    return storage.write_parquet(path, entry)


def _manifest(entry: Path) -> Path:
    return entry.parent / "documents" / entry.name


def documents_of(entry: Path) -> pd.DataFrame | None:
    """The documents an entry was computed on (document_id, sha256); None for entries written
    before manifests were kept."""
    path = _manifest(entry)
    return read(path) if path.exists() else None


def read(entry: Path) -> pd.DataFrame:
    return storage.read_parquet(entry).to_pandas()


def entries(folder: Path) -> list[Path]:
    """All entries, oldest first (file names sort by date, then time)."""
    return sorted(storage.listing(folder, "date=*/*.parquet"), key=lambda p: (p.parent.name, p.name))


def provenance_of(entry: pd.DataFrame) -> dict:
    return of_table(entry, PROVENANCE)


def label(path: Path) -> str:
    return f"{path.parent.name.removeprefix('date=')} {path.stem}"
