"""From retrieval runs to per-query hits, metric tables with intervals, and paired tests."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rag_assets import stats
from rag_assets.chunking.diagnostics import needle_holders
from rag_assets.evaluation.metrics import (
    KS,
    collapse_to_documents,
    first_relevant_rank,
    ndcg_at,
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
    "n_questions",
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


def _metric_rows(group: pd.DataFrame, prefix: str, column: str) -> list[dict]:
    """R@k and MRR by question: a question's value is the mean over its phrasings, and every
    figure and interval counts questions, not phrasings."""
    questions = group["question_id"]
    one_query_each = bool(questions.is_unique)
    filled = group[column].fillna(np.iinfo(np.int64).max).astype(np.int64)
    out = []
    for k in KS:
        shares = (filled <= k).astype(float).groupby(questions).mean()
        low, high, method, successes = stats.interval_of_shares(shares, one_query_each)
        out.append(
            {
                "metric": f"{prefix}recall",
                "k": k,
                "value": float(shares.mean()) if len(shares) else np.nan,
                "ci_low": low,
                "ci_high": high,
                "ci_method": method,
                "successes": successes,
            }
        )
    rr = pd.Series([reciprocal_rank(None if pd.isna(x) else int(x)) for x in group[column]], index=group.index)
    per_question = rr.groupby(questions).mean()
    low, high = stats.bootstrap_mean_ci(per_question.to_numpy())
    out.append(
        {
            "metric": f"{prefix}mrr",
            "k": None,
            "value": float(per_question.mean()) if len(rr) else np.nan,
            "ci_low": low,
            "ci_high": high,
            "ci_method": "bootstrap by question",
            "successes": None,
        }
    )
    return out


def metric_table(hits: pd.DataFrame, destroyed: dict[str, int]) -> pd.DataFrame:
    """Long table: recall@k and MRR (and their citable twins) per strategy x retriever, by question."""
    rows = []
    for (strategy, retriever), group in hits.groupby(["strategy", "retriever"], sort=True):
        counts = {"n_queries": len(group), "n_questions": int(group["question_id"].nunique())}
        for prefix, column in (("", "hit_rank"), ("citable_", "citable_rank")):
            for r in _metric_rows(group, prefix, column):
                rows.append({"strategy": strategy, "retriever": retriever, **r, **counts})
        for metric, k, column in (("ndcg", 10, "ndcg_10"), ("doc_recall", 100, "recall_100")):  # document level only
            values = group.dropna(subset=[column])
            if len(values):
                per_question = values[column].groupby(values["question_id"]).mean()
                low, high = stats.bootstrap_mean_ci(per_question.to_numpy())
                rows.append(
                    {
                        "strategy": strategy,
                        "retriever": retriever,
                        "metric": metric,
                        "k": k,
                        "value": float(per_question.mean()),
                        "ci_low": low,
                        "ci_high": high,
                        "ci_method": "bootstrap by question",
                        "successes": None,
                        "n_queries": len(values),
                        "n_questions": len(per_question),
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
                **counts,
            }
        )
    frame = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    return frame.astype({"k": "Int64", "successes": "Int64", "ci_low": "float64", "ci_high": "float64"})


def recall_by_language(hits: pd.DataFrame, truth: pd.DataFrame, languages: dict[str, str], k: int = 4) -> pd.DataFrame:
    """R@k by question per language of the question's document (`languages`: document_id -> code)
    and retriever, with its interval: what each language of a corpus gets from each retriever."""
    document_of = truth.drop_duplicates("question_id").set_index("question_id")["document_id"]
    language = hits["question_id"].map(document_of).map(languages).fillna("und")
    rows = []
    for (lang, retriever), group in hits.assign(language=language).groupby(["language", "retriever"], sort=True):
        row = next(r for r in _metric_rows(group, "", "hit_rank") if r["k"] == k)
        rows.append({"language": lang, "retriever": retriever, "questions": group["question_id"].nunique(), **row})
    return pd.DataFrame(rows)
