"""The corpus snapshot as `corpus_snapshot` records it: one row per document file, extracted here
or in batches as Ray tasks (the same rows), with its figures, what to warn about, and the two
checks a snapshot must pass (ids unique, counts that add up)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

from rag_assets.ingest import corpus
from rag_assets.ingest.access import names_differing_by_case
from rag_assets.report import Markdown, Outcome, table_markdown


def take(documents: Path, max_bytes: float, engine=None) -> Outcome:
    started = time.perf_counter()
    listing = corpus.list_folder(documents)
    frame = corpus.snapshot_of(listing, max_bytes, engine)
    seconds = time.perf_counter() - started
    failed = frame[frame["status"] == "failed"]
    counts = corpus.ledger(frame)
    by_case = names_differing_by_case(frame)
    warnings = [f"document failed: {row.path}: {row.error}" for row in failed.itertuples()]
    warnings += [
        f"tenant names {', '.join(names)} differ only by case: names are case-sensitive, so these are "
        "different tenants; write them alike if they are one"
        for names in by_case
    ]
    notes = {r.path: json.loads(r.notes) for r in frame.itertuples() if r.status == "ok" and json.loads(r.notes)}
    duplicates = frame["document_id"][frame["document_id"].duplicated()].tolist()
    skipped = listing.skipped
    figures = {
        "corpus_hash": corpus.corpus_hash(frame),
        "documents_seen": counts["seen"],
        "documents_ok": counts["ok"],
        "documents_failed": counts["failed"],
        "entries_skipped": len(skipped),
        "skipped": table_markdown(pd.DataFrame(skipped), rows=len(skipped)) if skipped else Markdown("none"),
        "failed_by_reason": counts["failed_by_reason"],
        "characters": int(frame["text"].str.len().sum()),
        "megabytes_per_second": float(frame["bytes"].sum()) / 2**20 / seconds if seconds else 0.0,
        "failures": table_markdown(failed[["path", "reason", "error"]], rows=len(failed))
        if len(failed)
        else Markdown("none"),
        "extraction_notes": notes,
        "restricted_documents": int(frame["access"].notna().sum()),
        "tenant_names_differing_by_case": by_case,
        "engine": "ray" if engine else "local",
    }
    adds_up = (
        counts["seen"] == counts["ok"] + counts["failed"]
        and counts["failed"] == sum(counts["failed_by_reason"].values())
        and not counts["other_status"]
        and not counts["ok_without_text"]
        and not counts["failed_without_reason"]
    )
    checks = {"document_ids_unique": (not duplicates, {"duplicates": duplicates}), "counts_add_up": (adds_up, counts)}
    return Outcome(
        frame,
        figures,
        checks,
        corpus.corpus_hash(frame),
        notes=[f"skipped: {entry['path']}: {entry['why']}" for entry in skipped],
        warnings=warnings,
    )
