"""retrieval_runs, query_hits, evaluation_tables and significance_report over all strategies."""

from collections.abc import Mapping

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from rag_assets import storage
from rag_assets.defs.automation import ACROSS_MODELS, AFTER_RETRIEVAL, AUTOMATION
from rag_assets.defs.glue import (
    LazyTables,
    OnDemand,
    all_strategies_lazily,
    columns_of,
    metadata,
    recorded,
)
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.partitions import model_and_strategy
from rag_assets.defs.resources import (
    ComputeResource,
    DataDirResource,
    EmbedderResource,
    GeneratorResource,
    RetrievalSettings,
)
from rag_assets.evaluation import metric_tables, refusal_figures, retrieval_run, significance
from rag_assets.evaluation.provenance import of_runs as provenance_of_runs
from rag_assets.ingest import ground_truth as gt
from rag_assets.report import Link


@asset(
    kinds={"parquet"},
    group_name="evaluation",
    code_version="retrieval3",
    automation_condition=ACROSS_MODELS,
    metadata={PREVIEW_KEY: ["query_id", "strategy", "retriever", "model", "chunk_ids", "distances", "total_ms"]},
    ins={"chunk_sets": all_strategies_lazily(), "embeddings": all_strategies_lazily()},
    deps=["bm25_index"],
)
def retrieval_runs(
    context: AssetExecutionContext,
    embedder: EmbedderResource,
    retrieval: RetrievalSettings,
    generator: GeneratorResource,
    compute: ComputeResource,
    data_dir: DataDirResource,
    corpus_snapshot: pd.DataFrame,
    ground_truth: pd.DataFrame,
    chunk_sets: LazyTables,
    embeddings: LazyTables,
):
    """Every query x strategy x retriever, for each embedding model: ranked chunk ids (100 deep),
    scores, cosine distances, latencies. The first model's retrievers keep their names (dense,
    hybrid, rerank); every other model's carry its name (`dense@me5-small`); BM25 runs once.
    Strategies are read and searched one at a time; with the Ray engine, a strategy's queries
    are searched in batches as Ray tasks (the same rows), unless a reranker runs on it. The
    opt-in LLM reranker runs on the serving strategy only, for a fixed sample of answerable
    questions."""
    made = retrieval_run.evaluate(
        data_dir.layout,
        chunk_sets,
        {model_and_strategy(key): read for key, read in embeddings.items()},
        corpus_snapshot,
        ground_truth,
        {m: embedder.get(m) for m in embedder.names()},
        retrieval.serving,
        (retrieval.cross_encoder, retrieval.llm_rerank_questions, retrieval.llm_rerank_depth),
        generator.get,
        compute.runner(context.log.info),
        context.log.info,
    )
    yield from recorded(context, made)


@asset(
    kinds={"parquet"},
    group_name="evaluation",
    code_version="hits1",
    automation_condition=AFTER_RETRIEVAL,
    metadata={PREVIEW_KEY: ["query_id", "strategy", "retriever", "hit_rank", "citable_rank", "holders", "ndcg_10"]},
    ins={"chunk_sets": all_strategies_lazily()},
)
def query_hits(retrieval_runs: pd.DataFrame, chunk_sets: LazyTables, ground_truth: pd.DataFrame):
    """Per answerable query x strategy x retriever: rank of the first hit and first citable hit.
    Chunk sets are read one strategy at a time."""
    check_same_inputs(retrieval_runs, columns_of(chunk_sets, "corpus_hash"), ground_truth)
    hits = metric_tables.query_hits(retrieval_runs, OnDemand(chunk_sets), ground_truth)
    return Output(
        hits,
        metadata={
            "queries": int(hits["query_id"].nunique()),
            "systems": int(hits.groupby(["strategy", "retriever"]).ngroups),
        },
    )


def check_same_inputs(
    retrieval_runs: pd.DataFrame, chunk_sets: Mapping[str, pd.DataFrame], ground_truth: pd.DataFrame
) -> None:
    """Score runs only against the chunks and questions they were computed from (`chunk_sets`
    needs only its `corpus_hash` column)."""
    if len(retrieval_runs) and set(retrieval_runs["ground_truth_hash"]) != {gt.ground_truth_hash(ground_truth)}:
        raise ValueError(
            "retrieval_runs were computed on other questions than the current ground_truth: "
            "rematerialise retrieval_runs first"
        )
    for strategy, runs in retrieval_runs.groupby("strategy"):  # an empty chunk set stamps no corpus hash
        if strategy not in chunk_sets or set(runs["corpus_hash"].dropna()) != set(chunk_sets[strategy]["corpus_hash"]):
            raise ValueError(
                f"retrieval_runs for strategy {strategy} were computed on another version of its chunk "
                "set: rematerialise retrieval_runs first"
            )


@asset(
    kinds={"parquet"},
    group_name="evaluation",
    code_version="eval1",
    automation_condition=AUTOMATION,
    metadata={PREVIEW_KEY: ["strategy", "retriever", "metric", "k", "value", "ci_low", "ci_high", "n_questions"]},
)
def evaluation_tables(query_hits: pd.DataFrame, retrieval_runs: pd.DataFrame):
    """R@1/4/8/20 and MRR (and citable twins) with 95 % intervals, answers destroyed, provenance."""
    destroyed = query_hits[query_hits["holders"] == 0].groupby("strategy")["question_id"].nunique().to_dict()
    table = metric_tables.metric_table(query_hits, destroyed)
    provenance = provenance_of_runs(retrieval_runs)
    for key, value in provenance.items():
        table[key] = value
    return Output(
        table,
        metadata={
            **gt.origin_figures(str(provenance["question_origin"])),
            **{k: MetadataValue.text(str(v)) for k, v in provenance.items()},
            "recall": MetadataValue.md(significance.recall_table(table)),
        },
    )


@asset(
    kinds={"parquet"},
    group_name="evaluation",
    code_version="report2",
    automation_condition=AUTOMATION,
    metadata={PREVIEW_KEY: ["comparison", "k", "wins", "losses", "recall_a", "recall_b", "p_value", "p_holm"]},
)
def significance_report(
    context: AssetExecutionContext,
    embedder: EmbedderResource,
    data_dir: DataDirResource,
    query_hits: pd.DataFrame,
    evaluation_tables: pd.DataFrame,
):
    """Paired sign tests (Holm) for the chapter's comparisons and, with several embedding models,
    every pair of models per strategy under dense and hybrid retrieval (`family` models: a Holm
    family of its own). Where to read it: the `report` entry of the latest materialisation below
    ([Show Markdown]) holds the whole report, recall table, sign tests and plot; `report_path` is
    the same report in the data dir, with its plot beside it."""
    report = significance.compare_systems(query_hits, evaluation_tables, embedder.names())
    path = report.write(data_dir.layout.reports)
    context.log.info(f"report written to {path}")
    return Output(
        report.table,
        metadata=metadata(
            {**report.figures, "report": report.inline(), "report_path": Link(data_dir.layout.relative(path))}
        ),
    )


@asset(
    kinds={"parquet"},
    group_name="evaluation",
    code_version="refusal2",
    automation_condition=AFTER_RETRIEVAL,
    ins={"chunk_sets": all_strategies_lazily()},
)
def refusal_sweep(
    context: AssetExecutionContext,
    embedder: EmbedderResource,
    retrieval: RetrievalSettings,
    data_dir: DataDirResource,
    retrieval_runs: pd.DataFrame,
    chunk_sets: LazyTables,
    ground_truth: pd.DataFrame,
):
    """The refusal gate (at most 4 chunks under a cosine-distance threshold) over a grid of thresholds,
    for each embedding model around its own threshold (`model` column): answers with and without the
    needle, refusals, and bluffs on questions that must get no answer. The serving strategy only;
    the plot and the figures in the metadata are the first model's, `models` has each model's."""
    check_same_inputs(retrieval_runs, columns_of(chunk_sets, "corpus_hash"), ground_truth)
    if retrieval_runs.empty:
        return Output(
            pd.DataFrame(columns=refusal_figures.COLUMNS),
            metadata={"skipped": "no retrieval runs (no chunk was indexed, or no question was kept): nothing to sweep"},
        )
    strategy = retrieval.serving(set(retrieval_runs["strategy"]))
    if strategy != retrieval.serving_strategy:
        context.log.warning(f"serving_strategy {retrieval.serving_strategy} has no retrieval runs; using {strategy}")
    chunks = chunk_sets[strategy]()
    texts = dict(zip(chunks["chunk_id"], chunks["text"]))
    thresholds = {name: retrieval.threshold(name) for name in embedder.names()}
    sweep = refusal_figures.sweep_models(retrieval_runs, ground_truth, texts, strategy, thresholds)
    storage.write_bytes(data_dir.layout.reports / refusal_figures.PLOT_NAME, sweep.plot)
    figures = {**gt.origin_figures(ground_truth), **sweep.figures, "configured_strategy": retrieval.serving_strategy}
    return Output(sweep.table, metadata=metadata(figures))
