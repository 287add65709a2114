"""generation_eval: the ask path (gate, context, generator, citation check) on a fixed sample."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from rag_assets.defs.automation import AFTER_RETRIEVAL
from rag_assets.defs.glue import LazyTables, all_strategies_lazily, decimals, questions_metadata
from rag_assets.defs.resources import DataDirResource, EmbedderResource, GeneratorResource, RetrievalSettings
from rag_assets.evaluation.answer_eval import evaluate_answers
from rag_assets.ingest import ground_truth as gt


def _summary_markdown(summary: pd.DataFrame) -> str:
    lines = ["| metric | group | value | 95 % interval | count / n |", "|---|---|---|---|---|"]
    for r in summary.itertuples():
        interval = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if pd.notna(r.ci_low) else ""
        count = f"{r.count}/{r.n}" if pd.notna(r.count) else f"n={r.n}"
        lines.append(f"| {r.metric} | {r.group} | {r.value:.3f} | {interval} | {count} |")
    return "\n".join(lines)


@asset(
    kinds={"parquet"},
    group_name="evaluation",
    code_version="generation2",
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
    """Answers on a fixed sample through the same path as `rag-assets ask`: SQuAD exact match and
    token F1, abstention, citation validity, the failure decomposition and latency per stage."""
    sample = gt.sample(ground_truth, generator.eval_sample()).drop_duplicates("question_id")  # one phrasing each
    if sample.empty:
        return Output(
            pd.DataFrame(columns=["query_id", "kind", "answer"]),
            metadata={
                "skipped": "no questions sampled (eval_answerable, eval_unanswerable and eval_out_of_domain are 0): "
                "nothing was generated or measured"
            },
        )
    strategy = retrieval.serving(set(chunk_sets) & set(embeddings))
    lm = generator.get()
    result = evaluate_answers(
        data_dir.layout,
        strategy,
        chunk_sets[strategy](),  # the serving strategy's tables only
        embeddings[strategy](),
        corpus_snapshot,
        ground_truth,
        sample,
        embedder.get(),
        lm,
        retrieval.refusal_threshold,
        generator.input_budget,
        generator.eval_batch,
        context.log.info,
    )
    table, scored, summary, latency = result.table, result.scored, result.summary, result.latency
    shown = scored[scored["kind"] == "answerable"].head(3)
    return Output(
        table,
        metadata={
            **questions_metadata(ground_truth),
            "generator": lm.identity,
            "strategy": strategy,
            "retriever": result.retriever,
            "threshold": decimals(retrieval.refusal_threshold),
            "input_budget_tokens": generator.input_budget,
            "sampled": MetadataValue.json(sample["kind"].value_counts().to_dict()),
            "summary": MetadataValue.md(_summary_markdown(summary)),
            "latency_ms": MetadataValue.json(latency),
            "decoding": f"greedy, {generator.eval_batch} answers at a time"
            + (
                ": generation_ms is each batch's time divided by its size, not one question's latency"
                if generator.eval_batch > 1
                else ", as `ask` decodes"
            ),
            "examples": MetadataValue.json(
                [
                    {"query": r.question, "answer": r.answer, "gold": r.answers, "outcome": r.outcome}
                    for r in shown.itertuples()
                ]
            ),
        },
    )
