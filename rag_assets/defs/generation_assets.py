"""generation_eval: the ask path (gate, context, generator, citation check) on a fixed sample."""

import json

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from rag_assets.answering import scoring
from rag_assets.answering.answerer import build_answerer, with_titles
from rag_assets.defs.automation import AFTER_RETRIEVAL
from rag_assets.defs.glue import LazyTables, all_strategies_lazily, decimals
from rag_assets.defs.resources import DataDirResource, EmbedderResource, GeneratorResource, RetrievalSettings
from rag_assets.evaluation.provenance import of_table as provenance_of_table
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.access import ALL_TENANTS
from rag_assets.retrieval.search import ChunkIndex


def _summary_markdown(summary: pd.DataFrame) -> str:
    lines = ["| metric | group | value | 95 % interval | count / n |", "|---|---|---|---|---|"]
    for r in summary.itertuples():
        interval = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if pd.notna(r.ci_low) else ""
        count = f"{r.count}/{r.n}" if pd.notna(r.count) else f"n={r.n}"
        lines.append(f"| {r.metric} | {r.group} | {r.value:.3f} | {interval} | {count} |")
    return "\n".join(lines)


@asset(
    kinds={"pandas", "parquet"},
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
    model = embedder.get()
    chunks = chunk_sets[strategy]()  # the serving strategy's tables only
    index = ChunkIndex.open(data_dir.layout, strategy, chunks, embeddings[strategy](), model.identity, corpus_snapshot)
    lm = generator.get()
    answerer = build_answerer(
        index,
        with_titles(chunks, corpus_snapshot),
        model,
        lm,
        threshold=retrieval.refusal_threshold,
        budget=generator.input_budget,
        tenant=ALL_TENANTS,
    )
    rows = []
    answers = answerer.ask_many(
        sample["query"].tolist(),
        generator.eval_batch,
        lambda done, total: context.log.info(f"decoded {done}/{total} answers past the gate"),
    )
    for i, (q, answer) in enumerate(zip(sample.itertuples(), answers), start=1):
        a = answer.as_dict()
        rows.append(
            {
                "query_id": q.query_id,
                "kind": q.kind,
                "needle": q.needle,
                "answers": [] if q.answers is None else list(q.answers),
                **a,
            }
        )
        context.log.info(
            f"[{i}/{len(sample)}] {q.kind}: " + ("refused by the gate" if a["refused"] else f"{a['answer'][:80]!r}")
        )
    scored = scoring.score_answers(pd.DataFrame(rows))
    summary = scoring.summary(scored)
    latency = scoring.latency(scored)
    table = scored.assign(
        citations=[json.dumps(c) for c in scored["citations"]],
        sources=[json.dumps(s) for s in scored["sources"]],
        dangling=[json.dumps(d) for d in scored["dangling"]],
        omitted=[json.dumps(o) for o in scored["omitted"]],
        generator=lm.identity,
        embedding_model=model.identity,
        corpus_hash=provenance_of_table(chunks, ["corpus_hash"])["corpus_hash"],
        ground_truth_hash=gt.ground_truth_hash(ground_truth),
    )
    shown = scored[scored["kind"] == "answerable"].head(3)
    return Output(
        table,
        metadata={
            "generator": lm.identity,
            "strategy": strategy,
            "retriever": answerer.retriever,
            "threshold": decimals(retrieval.refusal_threshold),
            "input_budget_tokens": generator.input_budget,
            "questions": MetadataValue.json(sample["kind"].value_counts().to_dict()),
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
