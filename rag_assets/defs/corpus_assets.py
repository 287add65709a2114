"""corpus_snapshot and ground_truth: thin wrappers over rag_assets.corpus / ground_truth."""


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

from rag_assets import corpus
from rag_assets import ground_truth as gt
from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.io_manager import markdown_preview
from rag_assets.defs.resources import DatasetResource
from rag_assets.defs.sources import corpus_files

EXTRACTORS_VERSION = "-".join(sorted({f"{n}{v}" for n, v in corpus.EXTRACTORS.values()}))


@asset(
    group_name="corpus",
    code_version=f"snapshot1+{EXTRACTORS_VERSION}",
    deps=[corpus_files],
    automation_condition=AUTOMATION,
    check_specs=[AssetCheckSpec("document_ids_unique", asset="corpus_snapshot")],
)
def corpus_snapshot(context: AssetExecutionContext, dataset: DatasetResource):
    """One row per document file: canonical text, sha256, extractor, ok or failed with a reason."""
    frame = corpus.snapshot(dataset.dataset().documents_dir)
    failed = frame[frame["status"] == "failed"]
    for row in failed.itertuples():
        context.log.warning(f"document failed: {row.path}: {row.error}")
    duplicates = frame["document_id"][frame["document_id"].duplicated()].tolist()
    yield Output(
        frame,
        data_version=DataVersion(corpus.corpus_hash(frame)),
        metadata={
            "corpus_hash": corpus.corpus_hash(frame),
            "documents_seen": len(frame),
            "documents_ok": int((frame["status"] == "ok").sum()),
            "documents_failed": len(failed),
            "characters": int(frame["text"].str.len().sum()),
            "failures": MetadataValue.md(markdown_preview(failed[["path", "error"]], rows=len(failed)))
            if len(failed) else MetadataValue.md("none"),
        },
    )
    yield AssetCheckResult(passed=not duplicates, metadata={"duplicates": MetadataValue.json(duplicates)})


@asset(
    group_name="corpus",
    code_version="ground_truth1",
    automation_condition=AUTOMATION,
    check_specs=[AssetCheckSpec("needles_unique_outside_headings", asset="ground_truth")],
)
def ground_truth(context: AssetExecutionContext, dataset: DatasetResource, corpus_snapshot: pd.DataFrame):
    """Validated queries (one row per phrasing); rejected questions listed with reasons."""
    records, unreadable = gt.read_questions(dataset.dataset().questions_path)
    truth, invalid = gt.validate(records, corpus_snapshot)
    rejects = pd.DataFrame(unreadable + invalid.to_dict("records"), columns=gt.REJECT_COLUMNS)
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
            "questions_in_file": len(records) + len(unreadable),
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

