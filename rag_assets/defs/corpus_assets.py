"""corpus_snapshot and ground_truth: thin wrappers over rag_assets.ingest.corpus / ground_truth."""

import json
import time

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    DataVersion,
    MetadataValue,
    Output,
    asset,
)

from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import decimals
from rag_assets.defs.io_manager import PREVIEW_KEY, markdown_preview
from rag_assets.defs.resources import ComputeResource, DatasetResource
from rag_assets.drafting import question_set
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.access import names_differing_by_case
from rag_assets.ingest.extractors import EXTRACTORS

EXTRACTORS_VERSION = "-".join(sorted({f"{e.name}{e.version}" for e in EXTRACTORS.values()}))


@asset(
    kinds={"parquet"},
    group_name="corpus",
    code_version=f"snapshot2+{EXTRACTORS_VERSION}",
    deps=["corpus_files"],
    metadata={PREVIEW_KEY: ["document_id", "path", "status", "reason", "extractor", "bytes", "title", "access"]},
    automation_condition=AUTOMATION,
    check_specs=[
        AssetCheckSpec("document_ids_unique", asset="corpus_snapshot", blocking=True),
        AssetCheckSpec("counts_add_up", asset="corpus_snapshot", blocking=True),
    ],
)
def corpus_snapshot(context: AssetExecutionContext, dataset: DatasetResource, compute: ComputeResource):
    """One row per document file: canonical text, sha256, extractor, ok or failed with a reason.
    Extracted here, or in batches as Ray tasks (the `compute` resource): the same rows."""
    started = time.perf_counter()
    listing = corpus.list_folder(dataset.dataset().documents_dir)
    engine = compute.runner(context.log.info)
    frame = corpus.snapshot_of(listing, dataset.max_file_mb * 2**20, engine)
    seconds = time.perf_counter() - started
    failed = frame[frame["status"] == "failed"]
    for row in failed.itertuples():
        context.log.warning(f"document failed: {row.path}: {row.error}")
    for entry in listing.skipped:
        context.log.info(f"skipped: {entry['path']}: {entry['why']}")
    counts = corpus.ledger(frame)
    by_case = names_differing_by_case(frame)
    for names in by_case:
        context.log.warning(
            f"tenant names {', '.join(names)} differ only by case: names are case-sensitive, so these are "
            "different tenants; write them alike if they are one"
        )
    notes = {r.path: json.loads(r.notes) for r in frame.itertuples() if r.status == "ok" and json.loads(r.notes)}
    duplicates = frame["document_id"][frame["document_id"].duplicated()].tolist()
    yield Output(
        frame,
        data_version=DataVersion(corpus.corpus_hash(frame)),
        metadata={
            "corpus_hash": corpus.corpus_hash(frame),
            "documents_seen": counts["seen"],
            "documents_ok": counts["ok"],
            "documents_failed": counts["failed"],
            "entries_skipped": len(listing.skipped),
            "skipped": MetadataValue.md(markdown_preview(pd.DataFrame(listing.skipped), rows=len(listing.skipped)))
            if listing.skipped
            else MetadataValue.md("none"),
            "failed_by_reason": MetadataValue.json(counts["failed_by_reason"]),
            "characters": int(frame["text"].str.len().sum()),
            "megabytes_per_second": decimals(float(frame["bytes"].sum()) / 2**20 / seconds if seconds else 0.0),
            "failures": MetadataValue.md(markdown_preview(failed[["path", "reason", "error"]], rows=len(failed)))
            if len(failed)
            else MetadataValue.md("none"),
            "extraction_notes": MetadataValue.json(notes),
            "restricted_documents": int(frame["access"].notna().sum()),
            "tenant_names_differing_by_case": MetadataValue.json(by_case),
            "engine": "ray" if engine else "local",
        },
    )
    yield AssetCheckResult(
        check_name="document_ids_unique", passed=not duplicates, metadata={"duplicates": MetadataValue.json(duplicates)}
    )
    yield AssetCheckResult(
        check_name="counts_add_up",
        passed=(
            counts["seen"] == counts["ok"] + counts["failed"]
            and counts["failed"] == sum(counts["failed_by_reason"].values())
            and not counts["other_status"]
            and not counts["ok_without_text"]
            and not counts["failed_without_reason"]
        ),
        metadata={k: MetadataValue.int(v) if isinstance(v, int) else MetadataValue.json(v) for k, v in counts.items()},
    )


@asset(
    kinds={"parquet"},
    group_name="corpus",
    code_version="ground_truth3",
    deps=["questions_file"],
    metadata={PREVIEW_KEY: ["query_id", "origin", "kind", "query", "needle", "document_id", "relevant", "drafted_by"]},
    automation_condition=AUTOMATION,
    check_specs=[AssetCheckSpec("needles_unique_outside_headings", asset="ground_truth", blocking=True)],
)
def ground_truth(
    context: AssetExecutionContext,
    dataset: DatasetResource,
    corpus_snapshot: pd.DataFrame,
    drafted_questions: pd.DataFrame,
):
    """Validated queries (one row per phrasing), from questions.jsonl or, when drafted_questions
    drafted a set, from it (with the written file's refusal questions, or the generic ones);
    rejected questions listed with reasons. Every row says where it came from (`origin`)."""
    records, unreadable = question_set.written_records(dataset.dataset().questions_path)
    in_file, refusals = len(records) + len(unreadable), "written"
    if len(drafted_questions):
        others, refusals = question_set.refusal_records(records)
        drafted, invalid_drafted = gt.validate(
            question_set.drafted_records(drafted_questions), corpus_snapshot, drafted=True
        )
        rest, invalid_rest = gt.validate(others, corpus_snapshot)
        truth = pd.concat([drafted, rest], ignore_index=True)
        invalid, unreadable = pd.concat([invalid_drafted, invalid_rest], ignore_index=True), []
        context.log.warning(
            f"evaluating on DRAFTED questions ({drafted['question_id'].nunique()}); the {in_file} lines of "
            f"questions.jsonl give only the refusal questions. Refusal questions: {refusals}"
        )
    else:
        truth, invalid = gt.validate(records, corpus_snapshot)
    rejects = pd.DataFrame(unreadable + invalid.to_dict("records"), columns=gt.REJECT_COLUMNS).sort_values(
        "line", kind="stable", ignore_index=True
    )
    spec = dataset.sample()
    kept = gt.sample(truth, spec)
    if len(rejects):
        context.log.warning(f"{len(rejects)} questions rejected; see the `rejected` metadata")
    per_kind = kept.drop_duplicates("question_id")["kind"].value_counts().to_dict()
    problems = gt.needle_problems(kept, corpus_snapshot)
    yield Output(
        kept,
        data_version=DataVersion(gt.ground_truth_hash(kept)),
        metadata={
            "ground_truth_hash": gt.ground_truth_hash(kept),
            "questions": gt.origin_label(kept),
            "refusal_questions": refusals,
            "questions_in_file": in_file,
            "questions_valid": int(truth["question_id"].nunique()),
            "questions_rejected": len(rejects),
            "sample": MetadataValue.json({k: spec.size(k) for k in gt.KINDS} | {"seed": spec.seed}),
            "questions_kept": MetadataValue.json({k: int(per_kind.get(k, 0)) for k in gt.KINDS}),
            "queries": len(kept),
            "rejected": MetadataValue.md(markdown_preview(rejects, rows=len(rejects)) if len(rejects) else "none"),
        },
    )
    yield AssetCheckResult(
        passed=not problems,
        metadata={"violations": len(problems), "examples": MetadataValue.json(problems[:10])},
    )
