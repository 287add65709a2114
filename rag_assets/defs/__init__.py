"""The Dagster layer: assets, checks and resources over the core library. No algorithm here."""

from pathlib import Path

from dagster import AssetSelection, Definitions, define_asset_job

from rag_assets.defs.automation import automation_sensor
from rag_assets.defs.chunk_assets import chunk_sets
from rag_assets.defs.corpus_assets import corpus_snapshot, ground_truth
from rag_assets.defs.drafting_assets import drafted_questions
from rag_assets.defs.evaluation_assets import (
    evaluation_tables,
    query_hits,
    refusal_sweep,
    retrieval_runs,
    significance_report,
)
from rag_assets.defs.external_sources import SOURCES, source_versions_sensor
from rag_assets.defs.generation_assets import generation_eval
from rag_assets.defs.index_assets import bm25_index, embeddings, hnsw_index
from rag_assets.defs.io_manager import ParquetIOManagerFactory
from rag_assets.defs.nightly import (
    evaluation_history,
    nightly_evaluation_job,
    nightly_evaluation_schedule,
    regression_report,
)
from rag_assets.defs.partitions import model_strategy_partitions
from rag_assets.defs.resources import (
    LLM_RERANK_SAMPLE,
    ComputeResource,
    DataDirResource,
    DatasetResource,
    EmbedderResource,
    GeneratorResource,
    RetrievalSettings,
    ann_settings_from_env,
    compute_from_env,
    data_dir_from_env,
    dataset_from_env,
    embedder_from_env,
)
from rag_assets.layout import DataDir

ASSETS = [
    corpus_snapshot,
    drafted_questions,
    ground_truth,
    chunk_sets,
    embeddings,
    bm25_index,
    hnsw_index,
    retrieval_runs,
    query_hits,
    evaluation_tables,
    significance_report,
    refusal_sweep,
    generation_eval,
    evaluation_history,
    regression_report,
]


PARTITIONED = AssetSelection.assets(*[a for a in ASSETS if a.partitions_def])
BY_MODEL = AssetSelection.assets(*[a for a in ASSETS if a.partitions_def == model_strategy_partitions])
# The jobs `rag-assets run` launches, one per stage of its plan, so that its runs carry a job name.
RUN_JOBS = [
    define_asset_job(
        "corpus",
        AssetSelection.assets(*ASSETS) - PARTITIONED.downstream(),
        description="The unpartitioned roots: corpus snapshot, drafted questions and ground truth.",
    ),
    define_asset_job(
        "strategy_indexes",
        PARTITIONED - BY_MODEL,
        description="One strategy's chunk set and BM25 index (one run per strategy).",
    ),
    define_asset_job(
        "model_indexes",
        BY_MODEL,
        description="One (model, strategy) partition's embeddings and HNSW graph (one run per partition).",
    ),
    define_asset_job(
        "evaluation",
        PARTITIONED.downstream() - PARTITIONED,
        description="Everything downstream of the strategies: runs, tables, reports, history.",
    ),
]


def build_definitions(
    data_dir: Path | str | None = None,
    dataset_dir: Path | None = None,
    full_ground_truth: bool = False,
    embedder: EmbedderResource | None = None,
    max_file_mb: float | None = None,
    llm: bool = True,
    rerank_llm: bool = False,
    compute: ComputeResource | None = None,
    bm25_analyzer: str | None = None,
    questions: str = "auto",
    draft_questions: int | None = None,
    generator_model: str | None = None,
    generator_url: str | None = None,
    generator_url_model: str | None = None,
    answerers: str | None = None,
) -> Definitions:
    """Definitions over one dataset and one data dir (defaults: env vars, then the bundled ones).
    `llm=False` samples no questions for generation_eval (minutes on a CPU); `rerank_llm=True`
    turns on the opt-in LLM reranker for `LLM_RERANK_SAMPLE` answerable questions; `bm25_analyzer`
    replaces the default BM25 analyzer (a new version of the `bm25_settings` source); `questions`
    chooses the written or a drafted question set (auto: drafted when there is no written one),
    `draft_questions` how many needles a drafted set asks about; `generator_model` (a .gguf file or
    model folder) replaces the packaged generator that drafts and answers; `generator_url` and
    `generator_url_model` answer through an OpenAI-compatible endpoint instead; `answerers` are
    what generation_eval compares (default: generate,extractive)."""
    if rerank_llm and not llm:
        raise ValueError("the LLM reranker needs the language model: rerank_llm=True with llm=False")
    data_dir = DataDir(data_dir or data_dir_from_env()).root
    return Definitions(
        assets=[*SOURCES, *ASSETS],
        sensors=[source_versions_sensor, automation_sensor],
        jobs=[nightly_evaluation_job, *RUN_JOBS],
        schedules=[nightly_evaluation_schedule],
        resources={
            "io_manager": ParquetIOManagerFactory(base_path=str(DataDir(data_dir).assets)),
            "dataset": DatasetResource(
                root=str(dataset_dir or dataset_from_env()),
                full_ground_truth=full_ground_truth,
                questions=questions,
                **({"draft_questions": draft_questions} if draft_questions else {}),
                **({"max_file_mb": max_file_mb} if max_file_mb else {}),
            ),
            "data_dir": DataDirResource(root=str(data_dir)),
            "embedder": embedder or embedder_from_env(),
            "compute": compute or compute_from_env(),
            "retrieval": RetrievalSettings(
                llm_rerank_questions=LLM_RERANK_SAMPLE if rerank_llm else 0,
                **({"bm25_analyzer": bm25_analyzer} if bm25_analyzer else {}),
                **ann_settings_from_env(),
            ),
            "generator": GeneratorResource(
                model=generator_model or "",
                url=generator_url or "",
                url_model=generator_url_model or "",
                **({"answerers": answerers} if answerers else {}),
                **({} if llm else {"eval_answerable": 0, "eval_unanswerable": 0, "eval_out_of_domain": 0}),
            ),
        },
    )


defs = build_definitions()
