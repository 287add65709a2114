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

A qid is a query id (one phrasing). Our figures average per question first (the mean over its
phrasings), so they equal the tools' per-query mean when each question has one phrasing, and the
mean over questions of the tools' per-query scores otherwise. A question whose needle no chunk
holds (an answer the chunking destroyed) has no relevant chunk and so no qrels line: the tools
leave it out of their means, while our R@k and MRR count it as a miss. Ours are therefore the
tools' means times (questions with a relevant chunk / all questions).

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


def _run_lines(qid: str, items: list[str], tag: str) -> list[str]:
    depth = len(items)
    return [f"{qid} Q0 {item} {rank} {depth + 1 - rank} {tag}" for rank, item in enumerate(items, start=1)]


def holders_of(chunk_sets: dict[str, pd.DataFrame], truth: pd.DataFrame) -> dict[str, dict[str, set[str]]]:
    """strategy -> question id -> the chunks whose embedded text holds its needle whole."""
    return {s: {q: held[0] for q, held in needle_holders(chunks, truth).items()} for s, chunks in chunk_sets.items()}


def export(runs: pd.DataFrame, holders: dict[str, dict[str, set[str]]], truth: pd.DataFrame, out: Path) -> list[Path]:
    """Write `<strategy>.<retriever>.<level>.run` files and `qrels.<strategy>.<level>.txt` under
    `out` for the answerable questions; returns the paths written. `holders`: per strategy (or
    experiment configuration), each needle question's relevant chunks (`holders_of`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    answerable = truth[truth["kind"] == "answerable"].set_index("query_id")
    graded = answerable["relevant"].notna() if "relevant" in answerable else pd.Series(False, index=answerable.index)
    written = []
    for strategy, by_strategy in runs[runs["query_id"].isin(answerable.index)].groupby("strategy", sort=True):
        held = holders[strategy]
        qrels = {"chunks": [], "documents": []}
        for qid, q in answerable.iterrows():
            if graded[qid]:
                qrels["documents"] += [f"{qid} 0 {d} {g}" for d, g in sorted(json.loads(q.relevant).items())]
            else:
                qrels["chunks"] += [f"{qid} 0 {c} 1" for c in sorted(held.get(q.question_id, ()))]
        for level, lines in qrels.items():
            if lines:
                path = out / f"qrels.{strategy}.{level}.txt"
                path.write_text("\n".join(lines) + "\n", encoding="utf-8")
                written.append(path)
        for retriever, group in by_strategy.groupby("retriever", sort=True):
            tag = f"{strategy}.{retriever}"
            lines = {"chunks": [], "documents": []}
            for r in group.sort_values("query_id").itertuples():
                if graded[r.query_id]:
                    documents = collapse_to_documents(r.chunk_ids, {c: document_of(c) for c in r.chunk_ids})
                    lines["documents"] += _run_lines(r.query_id, documents, tag)
                else:
                    lines["chunks"] += _run_lines(r.query_id, list(r.chunk_ids), tag)
            for level, run_lines in lines.items():
                if run_lines:
                    path = out / f"{tag}.{level}.run"
                    path.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
                    written.append(path)
    return written
