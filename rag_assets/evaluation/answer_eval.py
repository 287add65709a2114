"""Answers on a fixed sample through the path `rag-assets ask` takes (gate, context budget,
generator, citation check), scored: what `generation_eval` materialises. The Dagster asset
only hands in its inputs and records the result's metadata."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from rag_assets.answering import scoring
from rag_assets.answering.answerer import build_answerer, with_titles
from rag_assets.evaluation.provenance import of_table as provenance_of_table
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.access import ALL_TENANTS
from rag_assets.retrieval.search import ChunkIndex


@dataclass
class AnswerEvaluation:
    table: pd.DataFrame  # one row per sampled question: the answer, its sources and citations, its scores
    scored: pd.DataFrame
    summary: pd.DataFrame
    latency: dict
    retriever: str


def evaluate_answers(
    layout,
    strategy: str,
    chunks: pd.DataFrame,
    embeddings: pd.DataFrame,
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    sample: pd.DataFrame,
    model,
    lm,
    threshold: float,
    budget: int,
    batch: int,
    log: Callable[[str], None] = print,
) -> AnswerEvaluation:
    """`sample` (one phrasing per question) answered from `strategy`'s index for all tenants,
    decoded `batch` answers at a time, each scored (SQuAD EM and F1, abstention, citation
    validity, the failure decomposition) and stamped with the models and inputs it came from."""
    index = ChunkIndex.open(layout, strategy, chunks, embeddings, model.identity, snapshot)
    answerer = build_answerer(
        index, with_titles(chunks, snapshot), model, lm, threshold=threshold, budget=budget, tenant=ALL_TENANTS
    )
    answers = answerer.ask_many(
        sample["query"].tolist(), batch, lambda done, total: log(f"decoded {done}/{total} answers past the gate")
    )
    rows = []
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
        log(f"[{i}/{len(sample)}] {q.kind}: " + ("refused by the gate" if a["refused"] else f"{a['answer'][:80]!r}"))
    scored = scoring.score_answers(pd.DataFrame(rows))
    table = scored.assign(
        citations=[json.dumps(c) for c in scored["citations"]],
        sources=[json.dumps(s) for s in scored["sources"]],
        dangling=[json.dumps(d) for d in scored["dangling"]],
        omitted=[json.dumps(o) for o in scored["omitted"]],
        generator=lm.identity,
        embedding_model=model.identity,
        corpus_hash=provenance_of_table(chunks, ["corpus_hash"])["corpus_hash"],
        ground_truth_hash=gt.ground_truth_hash(truth),
    )
    return AnswerEvaluation(table, scored, scoring.summary(scored), scoring.latency(scored), answerer.retriever)
