"""generation_eval: the ask path (gate, context, answerer, citation and support checks) on a fixed
sample, once per answerer, compared paired by question."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from rag_assets import storage
from rag_assets.defs.automation import AFTER_RETRIEVAL
from rag_assets.defs.glue import LazyTables, all_strategies_lazily, decimals, questions_metadata
from rag_assets.defs.partitions import model_strategy_key
from rag_assets.defs.resources import DataDirResource, EmbedderResource, GeneratorResource, RetrievalSettings
from rag_assets.evaluation.answer_eval import comparison_markdown, evaluate_answers
from rag_assets.ingest import ground_truth as gt


def _summary_markdown(summary: pd.DataFrame) -> str:
    lines = ["| answerer | metric | group | value | 95 % interval | count / n |", "|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        interval = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if pd.notna(r.ci_low) else ""
        count = f"{r.count}/{r.n}" if pd.notna(r.count) else f"n={r.n}"
        value = f"{r.value:.3f}" if pd.notna(r.value) else ""
        lines.append(f"| {r.answerer} | {r.metric} | {r.group} | {value} | {interval} | {count} |")
    return "\n".join(lines)


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
    sample = gt.sample(ground_truth, generator.eval_sample()).drop_duplicates("question_id")  # one phrasing each
    if sample.empty:
        return Output(
            pd.DataFrame(columns=["query_id", "kind", "answer"]),
            metadata={
                "skipped": "no questions sampled (eval_answerable, eval_unanswerable and eval_out_of_domain are 0): "
                "nothing was generated or measured"
            },
        )
    model = embedder.primary  # the model `ask` serves from
    strategy = retrieval.serving({s for s in chunk_sets if model_strategy_key(model, s) in embeddings})
    answerers = generator.answerer_names()
    lm = generator.get()
    result = evaluate_answers(
        data_dir.layout,
        strategy,
        chunk_sets[strategy](),  # the serving strategy's tables only
        embeddings[model_strategy_key(model, strategy)](),
        corpus_snapshot,
        ground_truth,
        sample,
        embedder.get(model),
        lm,
        retrieval.threshold(model),
        generator.input_budget,
        generator.eval_batch,
        answerers,
        context.log.info,
    )
    table, scored, summary, latency = result.table, result.scored, result.summary, result.latency
    shown = scored[scored["kind"] == "answerable"].head(3)
    comparison = comparison_markdown(result.comparison, latency)
    origin = questions_metadata(ground_truth)
    warning = f"> **{origin['drafted_questions_warning']}**\n\n" if "drafted_questions_warning" in origin else ""
    report = data_dir.layout.reports / "answerers.md"
    storage.write_text(
        report,
        f"# Answerers, paired by question\n\n{warning}- questions: `{origin['questions']}`\n"
        f"- generator: `{lm.identity}`\n- strategy {strategy}, retriever {result.retriever}\n\n{comparison}\n\n"
        f"## Each answerer\n\n{_summary_markdown(summary)}\n",
    )
    return Output(
        table,
        metadata={
            **questions_metadata(ground_truth),
            "generator": lm.identity,
            "strategy": strategy,
            "retriever": result.retriever,
            "threshold": decimals(retrieval.threshold(model)),
            "input_budget_tokens": generator.input_budget,
            "sampled": MetadataValue.json(sample["kind"].value_counts().to_dict()),
            "answerers": ", ".join(answerers),
            "summary": MetadataValue.md(_summary_markdown(summary)),
            "comparison": MetadataValue.md(comparison),
            "comparison_path": MetadataValue.path(data_dir.layout.relative(report)),
            "answer_cache": MetadataValue.json(result.cache),
            "endpoint_failures": MetadataValue.json(result.failures),
            "latency_ms": MetadataValue.json(latency),
            "decoding": f"greedy, {generator.eval_batch} answers at a time"
            + (
                ": generation_ms is each batch's time divided by its size, not one question's latency"
                if generator.eval_batch > 1
                else ", as `ask` decodes"
            ),
            "examples": MetadataValue.json(
                [
                    {
                        "answerer": r.answerer,
                        "query": r.question,
                        "answer": r.answer,
                        "gold": r.answers,
                        "outcome": r.outcome,
                        "supported": r.supported,
                    }
                    for r in shown.itertuples()
                ]
            ),
        },
    )
