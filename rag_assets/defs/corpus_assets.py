"""corpus_snapshot and ground_truth: thin wrappers over rag_assets.ingest.corpus / ground_truth."""

import pandas as pd
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    asset,
)

from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import recorded
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.resources import ComputeResource, DatasetResource
from rag_assets.drafting import question_set
from rag_assets.ingest import snapshot
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
    engine = compute.runner(context.log.info)
    yield from recorded(context, snapshot.take(dataset.dataset().documents_dir, dataset.max_file_mb * 2**20, engine))


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
    truth = question_set.ground_truth(
        dataset.dataset().questions_path, corpus_snapshot, drafted_questions, dataset.sample()
    )
    yield from recorded(context, truth)
