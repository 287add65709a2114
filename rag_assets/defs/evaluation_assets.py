"""retrieval_runs, query_hits, evaluation_tables and significance_report over all strategies."""

from collections.abc import Mapping

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from rag_assets import stats, storage
from rag_assets.defs.automation import ACROSS_MODELS, AFTER_RETRIEVAL, AUTOMATION
from rag_assets.defs.glue import (
    LazyTables,
    OnDemand,
    all_strategies_lazily,
    columns_of,
    decimals,
    questions_metadata,
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
from rag_assets.evaluation import (
    comparisons,
    metric_tables,
    plots,
    refusal_figures,
    significance_markdown,
    threshold_sweep,
)
from rag_assets.evaluation.provenance import of_runs as provenance_of_runs
from rag_assets.evaluation.provenance import of_table as provenance_of_table
from rag_assets.evaluation.retrieval_run import Rerankers, retrieve_models, retriever_name
from rag_assets.ingest import ground_truth as gt
from rag_assets.retrieval.rerank import LLMRelevanceReranker


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
    names = embedder.names()
    tables = {model_and_strategy(key): read for key, read in embeddings.items()}
    strategies = sorted(s for s in chunk_sets if all((m, s) in tables for m in names))
    skipped = sorted(set(chunk_sets) - set(strategies))
    if skipped:
        context.log.warning(f"strategies {', '.join(skipped)} lack the embeddings of a model of {', '.join(names)}")
    serving = retrieval.serving(strategies)
    rerankers = Rerankers.configure(
        retrieval.cross_encoder,
        retrieval.llm_rerank_questions,
        retrieval.llm_rerank_depth,
        generator.get,
        ground_truth,
        serving,
    )
    context.log.info(f"reranker: {rerankers.cross_encoder_status}")
    context.log.info(f"{LLMRelevanceReranker.name}: {rerankers.llm_status}")
    engine = compute.runner(context.log.info)
    runs, encode_ms = retrieve_models(
        data_dir.layout,
        strategies,
        chunk_sets,
        tables,
        corpus_snapshot,
        ground_truth,
        {m: embedder.get(m) for m in names},
        rerankers,
        serving,
        engine,
        context.log.info,
    )
    latency = {
        r: {"stage_ms": stats.percentiles(g["stage_ms"]), "total_ms": stats.percentiles(g["total_ms"])}
        for r, g in runs.groupby("retriever")
    }
    yield Output(
        runs,
        metadata={
            "models": MetadataValue.json({m: embedder.identity(m) for m in names}),
            "strategies": MetadataValue.json(sorted(runs["strategy"].unique())),
            "retrievers": MetadataValue.json(sorted(runs["retriever"].unique())),
            "rerank": rerankers.cross_encoder_status,
            "rerank_llm": rerankers.llm_status,
            "query_encode_ms": MetadataValue.json({m: stats.percentiles(ms) for m, ms in encode_ms.items()}),
            "engine": "ray" if engine else "local",
            "latency_ms": MetadataValue.json(latency),
        },
    )


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
            **questions_metadata(str(provenance["question_origin"])),
            **{k: MetadataValue.text(str(v)) for k, v in provenance.items()},
            "recall": MetadataValue.md(significance_markdown.recall_table(table)),
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
    tests, skipped = comparisons.paired_tests(query_hits, comparisons.default_comparisons())
    models = embedder.names()
    strategies = sorted(set(query_hits["strategy"]))
    model_tests, model_skipped = comparisons.paired_tests(query_hits, comparisons.model_comparisons(models, strategies))
    skipped += model_skipped
    destroyed = (
        evaluation_tables[evaluation_tables["metric"] == "answers_destroyed"]
        .drop_duplicates("strategy")
        .set_index("strategy")["value"]
        .astype(int)
        .to_dict()
    )
    answerable = int(query_hits["question_id"].nunique())
    provenance = provenance_of_table(evaluation_tables)
    png = significance_markdown.recall_plot_png(evaluation_tables)
    out = data_dir.layout.reports
    if png:
        storage.write_bytes(out / "recall_at_k.png", png)
    else:  # an older run's plot must not pass for this one's
        (out / "recall_at_k.png").unlink(missing_ok=True)
    markdown = significance_markdown.render(
        evaluation_tables,
        tests,
        skipped,
        destroyed,
        answerable,
        provenance,
        "recall_at_k.png" if png else None,
        model_tests,
        models,
    )
    storage.write_text(out / "significance_report.md", markdown)
    context.log.info(f"report written to {out / 'significance_report.md'}")
    tests = pd.concat([tests.assign(family="chapter"), model_tests.assign(family="models")], ignore_index=True)
    return Output(
        tests,
        metadata={
            **questions_metadata(str(provenance.get("question_origin"))),
            "models": MetadataValue.json(models),
            "report": MetadataValue.md(
                markdown.replace("](recall_at_k.png)", f"]({plots.data_uri(png)})") if png else markdown
            ),
            "report_path": MetadataValue.path(data_dir.layout.relative(out / "significance_report.md")),
            "not_compared": MetadataValue.json(skipped),
        },
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
            pd.DataFrame(columns=["model", *threshold_sweep.SWEEP_COLUMNS]),
            metadata={"skipped": "no retrieval runs (no chunk was indexed, or no question was kept): nothing to sweep"},
        )
    strategy = retrieval.serving(set(retrieval_runs["strategy"]))
    if strategy != retrieval.serving_strategy:
        context.log.warning(f"serving_strategy {retrieval.serving_strategy} has no retrieval runs; using {strategy}")
    chunks = chunk_sets[strategy]()
    texts = dict(zip(chunks["chunk_id"], chunks["text"]))
    names, sweeps, per_model, measured = embedder.names(), [], {}, {}
    for name in names:  # each model's dense distances, swept around its own threshold
        dense = retriever_name("dense", name, names[0])
        runs = retrieval_runs[(retrieval_runs["strategy"] == strategy) & (retrieval_runs["retriever"] == dense)]
        threshold = retrieval.threshold(name)
        thresholds = sorted(set(threshold_sweep.grid_around(threshold)) | {threshold})
        sweeps.append(threshold_sweep.outcomes(runs, ground_truth, texts, thresholds).assign(model=name))
        best = threshold_sweep.best_distances(runs, ground_truth)
        answer = threshold_sweep.answer_distances(runs, ground_truth, texts)
        measured[name] = runs, thresholds, best, answer
        per_model[name] = {
            "operating_threshold": round(threshold, 4),
            "worst_in_domain_answer_distance": round(float(answer.max()), 3) if len(answer) else None,
            "best_must_refuse_distance": round(float(best.loc[best["kind"] != "answerable", "best"].min()), 3)
            if (best["kind"] != "answerable").any()
            else None,
        }
    sweep = pd.concat(sweeps, ignore_index=True)[["model", *threshold_sweep.SWEEP_COLUMNS]]
    # the figures below are the serving (first) model's
    name, threshold = names[0], retrieval.threshold(names[0])
    sweep_of = sweep[sweep["model"] == name]
    runs, grid, best, answer = measured[name]
    png = refusal_figures.distance_histogram_png(best, threshold)
    storage.write_bytes(data_dir.layout.reports / "refusal_distances.png", png)
    step = threshold / 6  # 0.1 around MiniLM's 0.6
    targets = (threshold - step, threshold, threshold + step)
    shown = sorted({min(grid, key=lambda t: abs(t - target)) for target in targets})
    ood = best.loc[best["kind"] != "answerable", "best"]
    must_refuse = ground_truth[ground_truth["kind"] != "answerable"].drop_duplicates("question_id")
    return Output(
        sweep,
        metadata={
            **questions_metadata(ground_truth),
            "must_refuse_questions_by_origin": MetadataValue.json(must_refuse["origin"].value_counts().to_dict()),
            "strategy": strategy,
            "configured_strategy": retrieval.serving_strategy,
            "model": name,
            "operating_threshold": decimals(threshold),
            "models": MetadataValue.json(per_model),
            "at_three_thresholds": MetadataValue.md(refusal_figures.sweep_table(sweep_of, shown)),
            "distances": MetadataValue.md(f"![best distances]({plots.data_uri(png)})"),
            "worst_in_domain_answer_distance": decimals(answer.max()),
            "best_out_of_domain_distance": decimals(float(best.loc[best["kind"] == "out_of_domain", "best"].min())),
            "best_unanswerable_distance": decimals(float(best.loc[best["kind"] == "unanswerable", "best"].min())),
            "must_refuse_queries": len(ood),
            "bluff_examples": MetadataValue.json(threshold_sweep.bluff_examples(runs, ground_truth, texts, threshold)),
        },
    )
