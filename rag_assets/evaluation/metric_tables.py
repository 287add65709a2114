"""From retrieval runs to per-query hits, metric tables with intervals, and paired tests."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rag_assets.evaluation import significance
from rag_assets.evaluation.metrics import (
    KS,
    collapse_to_documents,
    first_relevant_rank,
    ndcg_at,
    needle_holders,
    recall_at,
    reciprocal_rank,
)

HIT_COLUMNS = [
    "query_id",
    "question_id",
    "strategy",
    "retriever",
    "hit_rank",
    "citable_rank",
    "depth",
    "holders",
    "citable_holders",
    "ndcg_10",
    "recall_100",
]
METRIC_COLUMNS = [
    "strategy",
    "retriever",
    "metric",
    "k",
    "value",
    "ci_low",
    "ci_high",
    "ci_method",
    "successes",
    "n_queries",
]


def query_hits(runs: pd.DataFrame, chunk_sets: dict[str, pd.DataFrame], truth: pd.DataFrame) -> pd.DataFrame:
    """One row per answerable query x strategy x retriever: rank of the first (citable) hit.

    Needle questions: a hit holds the whole needle. Document-level questions (`relevant`):
    a hit is any chunk of a relevant document, and the ranking collapsed to documents by
    best rank gives nDCG@10 and Recall@100 as trec_eval computes them."""
    answerable = truth[truth["kind"] == "answerable"].set_index("query_id")
    rows = []
    for strategy, group in runs[runs["query_id"].isin(answerable.index)].groupby("strategy", sort=True):
        chunks = chunk_sets[strategy]
        holders = needle_holders(chunks, truth)
        document_of = dict(zip(chunks["chunk_id"], chunks["document_id"]))
        chunks_of = chunks.groupby("document_id")["chunk_id"].apply(set).to_dict()
        for r in group.itertuples():
            q = answerable.loc[r.query_id]
            ndcg = recall100 = np.nan
            if isinstance(q.relevant, str):
                qrels = json.loads(q.relevant)
                in_text = in_content = set().union(*(chunks_of.get(d, set()) for d, g in qrels.items() if g > 0))
                ranked_documents = collapse_to_documents(r.chunk_ids, document_of)
                ndcg, recall100 = ndcg_at(ranked_documents, qrels, 10), recall_at(ranked_documents, qrels, 100)
            else:
                in_text, in_content = holders[q.question_id]
            rows.append(
                {
                    "query_id": r.query_id,
                    "question_id": q.question_id,
                    "strategy": strategy,
                    "retriever": r.retriever,
                    "hit_rank": first_relevant_rank(r.chunk_ids, in_text),
                    "citable_rank": first_relevant_rank(r.chunk_ids, in_content),
                    "depth": len(r.chunk_ids),
                    "holders": len(in_text),
                    "citable_holders": len(in_content),
                    "ndcg_10": ndcg,
                    "recall_100": recall100,
                }
            )
    frame = pd.DataFrame(rows, columns=HIT_COLUMNS)
    return frame.astype(
        {
            "hit_rank": "Int64",
            "citable_rank": "Int64",
            "depth": "int64",
            "holders": "int64",
            "citable_holders": "int64",
            "ndcg_10": "float64",
            "recall_100": "float64",
        }
    ).sort_values(["strategy", "retriever", "query_id"], ignore_index=True)


def _recall_rows(ranks: pd.Series, prefix: str) -> list[dict]:
    n = len(ranks)
    filled = ranks.fillna(np.iinfo(np.int64).max).astype(np.int64)
    out = []
    for k in KS:
        successes = int((filled <= k).sum())
        low, high = significance.wilson(successes, n)
        out.append(
            {
                "metric": f"{prefix}recall",
                "k": k,
                "value": successes / n if n else np.nan,
                "ci_low": low,
                "ci_high": high,
                "ci_method": "wilson",
                "successes": successes,
            }
        )
    rr = np.array([reciprocal_rank(None if pd.isna(x) else int(x)) for x in ranks])
    low, high = significance.bootstrap_mean_ci(rr)
    out.append(
        {
            "metric": f"{prefix}mrr",
            "k": None,
            "value": float(rr.mean()) if n else np.nan,
            "ci_low": low,
            "ci_high": high,
            "ci_method": "bootstrap",
            "successes": None,
        }
    )
    return out


def metric_table(hits: pd.DataFrame, destroyed: dict[str, int]) -> pd.DataFrame:
    """Long table: recall@k and MRR (and their citable twins) per strategy x retriever."""
    rows = []
    for (strategy, retriever), group in hits.groupby(["strategy", "retriever"], sort=True):
        n = len(group)
        for prefix, column in (("", "hit_rank"), ("citable_", "citable_rank")):
            for r in _recall_rows(group[column], prefix):
                rows.append({"strategy": strategy, "retriever": retriever, **r, "n_queries": n})
        for metric, k in (("ndcg", 10), ("doc_recall", 100)):  # document-level questions only
            values = group[f"{'ndcg_10' if metric == 'ndcg' else 'recall_100'}"].dropna().to_numpy()
            if len(values):
                low, high = significance.bootstrap_mean_ci(values)
                rows.append(
                    {
                        "strategy": strategy,
                        "retriever": retriever,
                        "metric": metric,
                        "k": k,
                        "value": float(values.mean()),
                        "ci_low": low,
                        "ci_high": high,
                        "ci_method": "bootstrap",
                        "successes": None,
                        "n_queries": len(values),
                    }
                )
        rows.append(
            {
                "strategy": strategy,
                "retriever": retriever,
                "metric": "answers_destroyed",
                "k": None,
                "value": float(destroyed.get(strategy, 0)),
                "ci_low": None,
                "ci_high": None,
                "ci_method": None,
                "successes": None,
                "n_queries": n,
            }
        )
    frame = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    return frame.astype({"k": "Int64", "successes": "Int64", "ci_low": "float64", "ci_high": "float64"})
