"""Runs and qrels in the TREC formats, so trec_eval, ranx and ir-measures read them as they are.

    run:   qid Q0 docid rank score tag        (one line per retrieved item)
    qrels: qid 0 docid relevance              (one line per judged item)

Two levels, each with its own files:
- chunks, for needle questions: an item is a chunk id, relevant (1) when its embedded text holds
  the whole needle. Our R@k is trec_eval's success@k (ranx `hit_rate@k`: any relevant item in the
  top k), our MRR is `recip_rank` (ranx `mrr`).
- documents, for graded (BEIR) questions: the chunk ranking collapsed to documents by best chunk
  rank, as our metrics do; relevance is the grade. Our nDCG@10 is `ndcg_cut_10` (ranx `ndcg@10`,
  linear gains) and our document R@100 is `recall_100`.

A run file and its qrels hold the same queries, so the tools average over the queries we do and
ranx's `evaluate` takes them as written:
- a question whose needle no chunk holds (an answer the chunking destroyed) is judged all the same,
  with one line `qid 0 NOTHING_RELEVANT 0`: it counts as a miss there, as in our figures (without
  it trec_eval would leave it out of its means, and ranx refuse the pair);
- a query that retrieved nothing (BM25 finds no query term in the corpus) has one line
  `qid Q0 NOTHING_RETRIEVED 1 0 tag`, a miss in every measure (trec_eval's num_ret counts it).
Neither name can be an item: chunk ids hold `::` and document ids are lower case.

`qrels.<strategy>.<level>.txt` judges the queries of the strategy's runs; a run over fewer of them
(the LLM reranker scores a sample) has its own `qrels.<strategy>.<retriever>.<level>.txt`.

A qid is a query id (one phrasing). Our figures average per question first (the mean over its
phrasings), so they equal the tools' per-query mean when each question has one phrasing (as in
the bundled sample), and the mean over questions of the tools' per-query scores otherwise.

The score column is rank-derived (depth + 1 - rank): every tool re-sorts a run by score, and
breaks ties its own way, so a retriever's raw scores (ties included) would not always give back
our order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from rag_assets.chunking.diagnostics import needle_holders
from rag_assets.evaluation.metrics import collapse_to_documents
from rag_assets.retrieval.search import document_of

NOTHING_RELEVANT = "NOTHING_RELEVANT"
NOTHING_RETRIEVED = "NOTHING_RETRIEVED"
LEVELS = ("chunks", "documents")


def _run_lines(qid: str, items: list[str], tag: str) -> list[str]:
    if not items:
        return [f"{qid} Q0 {NOTHING_RETRIEVED} 1 0 {tag}"]
    depth = len(items)
    return [f"{qid} Q0 {item} {rank} {depth + 1 - rank} {tag}" for rank, item in enumerate(items, start=1)]


def holders_of(chunk_sets: dict[str, pd.DataFrame], truth: pd.DataFrame) -> dict[str, dict[str, set[str]]]:
    """strategy -> question id -> the chunks whose embedded text holds its needle whole."""
    return {s: {q: held[0] for q, held in needle_holders(chunks, truth).items()} for s, chunks in chunk_sets.items()}


def _write(path: Path, lines: list[str], written: list[Path]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    written.append(path)


def export(runs: pd.DataFrame, holders: dict[str, dict[str, set[str]]], truth: pd.DataFrame, out: Path) -> list[Path]:
    """Write `<strategy>.<retriever>.<level>.run` files and their qrels under `out` for the
    answerable questions; returns the paths written. `holders`: per strategy (or experiment
    configuration), each needle question's relevant chunks (`holders_of`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    answerable = truth[truth["kind"] == "answerable"].set_index("query_id")
    graded = answerable["relevant"].notna() if "relevant" in answerable else pd.Series(False, index=answerable.index)
    level_of = {qid: LEVELS[int(g)] for qid, g in graded.items()}
    written = []
    for strategy, by_strategy in runs[runs["query_id"].isin(answerable.index)].groupby("strategy", sort=True):
        held = holders[strategy]

        def judged(qid: str) -> list[str]:
            if graded[qid]:
                return [f"{qid} 0 {d} {g}" for d, g in sorted(json.loads(answerable.loc[qid, "relevant"]).items())]
            chunks = sorted(held.get(answerable.loc[qid, "question_id"], ()))
            return [f"{qid} 0 {c} 1" for c in chunks] or [f"{qid} 0 {NOTHING_RELEVANT} 0"]

        def qrels(queries: set[str], name: str) -> None:
            for level in LEVELS:
                lines = [line for qid in sorted(queries) if level_of[qid] == level for line in judged(qid)]
                if lines:
                    _write(out / f"qrels.{name}.{level}.txt", lines, written)

        every = set(by_strategy["query_id"])
        qrels(every, strategy)
        for retriever, group in by_strategy.groupby("retriever", sort=True):
            tag = f"{strategy}.{retriever}"
            if set(group["query_id"]) != every:
                qrels(set(group["query_id"]), tag)
            lines = {level: [] for level in LEVELS}
            for r in group.sort_values("query_id").itertuples():
                items = list(r.chunk_ids)
                if graded[r.query_id]:
                    items = collapse_to_documents(items, {c: document_of(c) for c in items})
                lines[level_of[r.query_id]] += _run_lines(r.query_id, items, tag)
            for level, run_lines in lines.items():
                if run_lines:
                    _write(out / f"{tag}.{level}.run", run_lines, written)
    return written
