"""generation_eval: the ask path (gate, context, answerer, citation and support checks) on a fixed
sample, once per answerer, compared paired by question."""

import pandas as pd
from dagster import AssetExecutionContext, Output, asset

from rag_assets.defs.automation import AFTER_RETRIEVAL
from rag_assets.defs.glue import LazyTables, all_strategies_lazily, metadata
from rag_assets.defs.partitions import model_strategy_key
from rag_assets.defs.resources import DataDirResource, EmbedderResource, GeneratorResource, RetrievalSettings
from rag_assets.evaluation.answer_eval import compare_answerers_on
from rag_assets.report import Link
from rag_assets.retrieval import model_choice


@asset(
    kinds={"parquet"},
    group_name="evaluation",
    code_version="generation3",
    automation_condition=AFTER_RETRIEVAL,
    ins={"chunk_sets": all_strategies_lazily(), "embeddings": all_strategies_lazily()},
    deps=["retrieval_runs", "bm25_index"],
)
def generation_eval(
    context: AssetExecutionContext,
    embedder: EmbedderResource,
    generator: GeneratorResource,
    retrieval: RetrievalSettings,
    data_dir: DataDirResource,
    corpus_snapshot: pd.DataFrame,
    ground_truth: pd.DataFrame,
    chunk_sets: LazyTables,
    embeddings: LazyTables,
):
    """Answers on a fixed sample through the same path as `rag-assets ask`, by each answerer (the
    generator and the extractive baseline): SQuAD exact match and token F1, abstention, bluffs,
    citation validity, support, the failure decomposition and latency per stage; the answerers
    paired by question (`comparison`, also written to the data dir's reports/answerers.md).
    Answers are cached by prompt, model and decoding settings: a rerun decodes only new prompts."""
    model = embedder.primary  # the model `ask` serves from
    strategy = retrieval.serving({s for s in chunk_sets if model_strategy_key(model, s) in embeddings})
    shares = model_choice.corpus_languages(corpus_snapshot)
    answerers, left_out = model_choice.answerers_for(generator.answerer_names(), generator.packaged, shares)
    sampled = generator.eval_answerable or generator.eval_unanswerable or generator.eval_out_of_domain
    if left_out and sampled:  # nothing is answered with --no-llm: nothing to say
        context.log.warning(left_out)
    report = compare_answerers_on(
        data_dir.layout,
        strategy,
        lambda: (chunk_sets[strategy](), embeddings[model_strategy_key(model, strategy)]()),  # its tables only
        corpus_snapshot,
        ground_truth,
        generator.eval_sample(),
        embedder.get(model),
        generator.get,
        retrieval.threshold(model),
        generator.input_budget,
        generator.eval_batch,
        answerers,
        context.log.info,
        left_out,
    )
    if report.markdown:
        report.figures["comparison_path"] = Link(data_dir.layout.relative(report.write(data_dir.layout.reports)))
    return Output(report.table, metadata=metadata(report.figures))
