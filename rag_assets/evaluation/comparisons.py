"""Paired comparisons on the same questions: wins and losses by question, the exact sign test
(`paired`), Holm's adjustment across a whole table (`with_holm`). These two serve every report:
hits at k (the significance report, the regression report) and the answerers' scores."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rag_assets import stats
from rag_assets.evaluation.metrics import KS
from rag_assets.evaluation.retrieval_run import retriever_name


@dataclass(frozen=True)
class Comparison:
    id: str  # what reports and headlines find it by
    label: str  # what a reader sees
    a: tuple[str, str]  # (strategy, retriever) of the system that should win
    b: tuple[str, str]


STRATEGY_COMPARISONS = [  # the chapter's ablation, each ingredient alone, under dense retrieval
    ("overlap_on_blind", "overlap on blind cuts", "B", "A"),
    ("boundaries_vs_blind", "boundaries instead of blind cuts", "C", "A"),
    ("header_on_boundaries", "header on boundaries", "E", "C"),
    ("overlap_on_header", "overlap on header", "F", "E"),
    ("overlap_on_boundaries", "overlap on boundaries", "D", "C"),
    ("header_and_boundaries", "header and boundaries together", "E", "A"),
]
RETRIEVER_COMPARISONS = [
    ("hybrid_vs_dense", "hybrid vs dense", "hybrid", "dense"),
    ("hybrid_vs_bm25", "hybrid vs BM25", "hybrid", "bm25"),
    ("rerank_vs_hybrid", "rerank vs hybrid", "rerank", "hybrid"),
    ("rerank_llm_vs_hybrid", "LLM rerank vs hybrid", "rerank-llm", "hybrid"),  # on the LLM reranker's sample only
]


def default_comparisons(strategy_retriever: str = "dense", retriever_strategy: str = "E") -> list[Comparison]:
    out = [
        Comparison(cid, f"{label}: {a} vs {b} ({strategy_retriever})", (a, strategy_retriever), (b, strategy_retriever))
        for cid, label, a, b in STRATEGY_COMPARISONS
    ]
    out += [
        Comparison(cid, f"{label} (strategy {retriever_strategy})", (retriever_strategy, a), (retriever_strategy, b))
        for cid, label, a, b in RETRIEVER_COMPARISONS
    ]
    return out


MODEL_RETRIEVERS = ("dense", "hybrid")  # where embedding models are compared


def model_comparisons(models: list[str], strategies: list[str]) -> list[Comparison]:
    """Every pair of embedding models, per strategy, under dense and hybrid retrieval; the first
    model's retrievers carry no suffix (retrieval_run.retriever_name)."""
    out = []
    for strategy in strategies:
        for base in MODEL_RETRIEVERS:
            for i, a in enumerate(models):
                for b in models[i + 1 :]:
                    out.append(
                        Comparison(
                            f"models_{base}_{strategy}_{a}_vs_{b}",
                            f"{base}, strategy {strategy}: {a} vs {b}",
                            (strategy, retriever_name(base, a, models[0])),
                            (strategy, retriever_name(base, b, models[0])),
                        )
                    )
    return out


PAIRED_COLUMNS = [
    "k",
    "wins",
    "losses",
    "ties_hit",
    "ties_miss",
    "recall_a",
    "recall_b",
    "p_value",
    "p_holm",
    "n_questions",
    "n_queries",
]
SIGNIFICANCE_COLUMNS = ["comparison_id", "comparison", "a", "b", *PAIRED_COLUMNS]


def paired(a: pd.Series, b: pd.Series) -> dict:
    """a against b on per-question values aligned by question: a win is a question where a's value
    is higher, a loss one where it is lower, and the exact sign test runs on those (ties dropped).
    Every comparison of every report goes through here."""
    wins, losses = int((a > b).sum()), int((a < b).sum())
    return {"wins": wins, "losses": losses, "p_value": stats.sign_test(wins, losses)}


def with_holm(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with `p_holm`: Holm's adjustment of its `p_value`s, the whole table one family."""
    return table.assign(p_holm=stats.holm(table["p_value"].tolist()) if len(table) else [])


def paired_at(a: pd.Series, b: pd.Series, questions: pd.Series, k: int) -> dict:
    """a against b at k, paired by question: a question's hit share is the share of its
    phrasings with a hit in the top k (first-hit ranks aligned by query; NA = no hit); the
    shares are compared by `paired`, never the phrasings, which are not independent of each other."""
    share_a = (a.fillna(k + 1) <= k).astype(float).groupby(questions).mean()
    share_b = (b.fillna(k + 1) <= k).astype(float).groupby(questions).mean()
    tie = share_a == share_b
    return {
        **paired(share_a, share_b),
        "ties_hit": int((tie & (share_a > 0)).sum()),
        "ties_miss": int((tie & (share_a == 0)).sum()),
        "recall_a": float(share_a.mean()),
        "recall_b": float(share_b.mean()),
    }


def compare_paired(pairs, id_columns: list[str], ks=KS) -> pd.DataFrame:
    """Hits at k compared pair by pair. `pairs`: (ids, a, b), where `ids` maps each of
    `id_columns` to what names the pair, and a and b are per-query hit tables (query_id,
    question_id, hit_rank). Per pair and k: `paired_at` on the queries both have, and Holm's
    adjustment across the whole table."""
    rows = []
    for ids, a, b in pairs:
        joined = a.merge(b, on=["query_id", "question_id"], suffixes=("_a", "_b"))
        counts = {"n_questions": int(joined["question_id"].nunique()), "n_queries": len(joined)}
        for k in ks:
            tested = paired_at(joined["hit_rank_a"], joined["hit_rank_b"], joined["question_id"], k)
            rows.append({**ids, "k": k, **tested, **counts})
    return with_holm(pd.DataFrame(rows, columns=[*id_columns, *PAIRED_COLUMNS]))


def system_hits(hits: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """(strategy, retriever) -> its per-query hits (query_id, question_id, hit_rank)."""
    return {system: g[["query_id", "question_id", "hit_rank"]] for system, g in hits.groupby(["strategy", "retriever"])}


def paired_tests(hits: pd.DataFrame, comparisons: list[Comparison], ks=KS) -> tuple[pd.DataFrame, list[str]]:
    """The report's comparisons on the same queries. Returns (table, comparisons skipped
    because a system has no results, with why)."""
    systems = system_hits(hits)
    pairs, skipped = [], []
    for c in comparisons:
        missing = [s for s in (c.a, c.b) if s not in systems]
        if missing:
            skipped.append(f"{c.label}: no results for {', '.join('/'.join(m) for m in missing)}")
            continue
        ids = {"comparison_id": c.id, "comparison": c.label, "a": "/".join(c.a), "b": "/".join(c.b)}
        pairs.append((ids, systems[c.a], systems[c.b]))
    return compare_paired(pairs, SIGNIFICANCE_COLUMNS[:4], ks), skipped
