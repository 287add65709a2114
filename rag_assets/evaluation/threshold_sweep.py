"""The refusal sweep: the gate (`rag_assets.answering.refusal`) over a grid of thresholds,
against answerable questions (which should be answered, with the needle) and unanswerable or
out-of-domain ones (which should be refused; answering them is a bluff)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rag_assets import stats
from rag_assets.answering.refusal import gate
from rag_assets.retrieval.lexical import Tokenizer


def grid_around(threshold: float, steps: int = 25) -> tuple[float, ...]:
    """The thresholds swept for a model operated at `threshold`: half of it to 1.5 times it, in
    25 steps (0.314 to 0.942 around MiniLM's 0.628): distances mean different things per model."""
    return tuple(round(float(x), 4) for x in np.linspace(threshold / 2, threshold * 1.5, steps))


SWEEP_COLUMNS = ["threshold", "group", "outcome", "count", "n", "rate", "ci_low", "ci_high", "ci_method"]


def outcomes(runs: pd.DataFrame, truth: pd.DataFrame, texts: dict[str, str], thresholds) -> pd.DataFrame:
    """Per threshold, each outcome's share of questions, with its interval.

    Counted by question, as every other table: a question's outcome is the share of its
    phrasings with that outcome, `count` is the sum of those shares over `n` questions, and
    the interval is Wilson's with one phrasing per question, else a bootstrap over questions
    (its phrasings are not independent). `runs`: one ranked list per query (query_id,
    chunk_ids, distances), best first; `texts`: chunk id -> embedded text, to tell whether a
    kept chunk holds the needle."""
    columns = ["query_id", "question_id", "kind", "needle", *(["relevant"] if "relevant" in truth else [])]
    q = runs.merge(truth[columns], on="query_id")
    questions = q["question_id"]
    rows = []
    for t in thresholds:
        kept = [gate(r.chunk_ids, r.distances, t) for r in q.itertuples()]
        answered = np.array([bool(k) for k in kept])
        with_needle = np.array([_holds_answer(r, k, texts) for k, r in zip(kept, q.itertuples())])
        groups = {
            "answerable": {
                "answered with the needle": with_needle,
                "answered without it": answered & ~with_needle,
                "refused": ~answered,
            },
            "unanswerable": {"refused": ~answered, "answered (bluff)": answered},
            "out_of_domain": {"refused": ~answered, "answered (bluff)": answered},
        }
        for group, cases in groups.items():
            mask = (q["kind"] == group).to_numpy()
            one_each = bool(questions[mask].is_unique)
            for outcome, hit in cases.items():
                shares = pd.Series(hit[mask].astype(float)).groupby(questions[mask].to_numpy()).mean()
                low, high, method, _ = stats.interval_of_shares(shares, one_each)
                rows.append(
                    {
                        "threshold": t,
                        "group": group,
                        "outcome": outcome,
                        "count": float(shares.sum()),
                        "n": len(shares),
                        "rate": float(shares.mean()) if len(shares) else np.nan,
                        "ci_low": low,
                        "ci_high": high,
                        "ci_method": method,
                    }
                )
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def _holds_answer(query, kept: list[str], texts: dict[str, str]) -> bool:
    """A kept chunk holds the whole needle, or (document-level questions) belongs to a
    relevant document; chunk ids start with their document id (`{document_id}::...`)."""
    if isinstance(query.needle, str):
        return any(query.needle in texts[c] for c in kept)
    relevant = getattr(query, "relevant", None)
    if isinstance(relevant, str):
        documents = {d for d, g in json.loads(relevant).items() if g > 0}
        return any(c.split("::")[0] in documents for c in kept)
    return False


def best_distances(runs: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """Each query's nearest chunk distance, with its kind."""
    best = runs.assign(best=[min(d) if len(d) else np.nan for d in runs["distances"]])[["query_id", "best"]]
    return best.merge(truth[["query_id", "kind", "query"]], on="query_id")


def answer_distances(runs: pd.DataFrame, truth: pd.DataFrame, texts: dict[str, str]) -> pd.Series:
    """For answerable needle queries: distance to the nearest chunk that holds the needle (NaN if none returned)."""
    q = runs.merge(
        truth[(truth["kind"] == "answerable") & truth["needle"].notna()][["query_id", "needle"]], on="query_id"
    )
    return pd.Series(
        [next((d for c, d in zip(r.chunk_ids, r.distances) if r.needle in texts[c]), np.nan) for r in q.itertuples()],
        index=q["query_id"],
    )


def bluff_examples(runs: pd.DataFrame, truth: pd.DataFrame, texts: dict[str, str], threshold: float) -> dict:
    """Two bluffs at `threshold`, picked from the data: the nearest miss (smallest distance
    among queries that must be refused) and the most literal match (largest share of the
    query's words present in the chunk it would be answered from)."""
    q = runs.merge(truth[truth["kind"] != "answerable"][["query_id", "kind", "query"]], on="query_id")
    words_of = Tokenizer()  # the BM25 tokenisation: what "the same words" means elsewhere too
    bluffs = []
    for r in q.itertuples():
        kept = gate(r.chunk_ids, r.distances, threshold)
        if kept:
            words, chunk_words = set(words_of(r.query)), set(words_of(texts[kept[0]]))
            overlap = len(words & chunk_words) / len(words) if words else 0.0
            bluffs.append(
                {
                    "query": r.query,
                    "kind": r.kind,
                    "chunk_id": kept[0],
                    "distance": round(float(r.distances[0]), 3),
                    "word_overlap": round(overlap, 3),
                    "excerpt": texts[kept[0]][:200],
                }
            )
    if not bluffs:
        return {}
    return {
        "near_miss": min(bluffs, key=lambda b: b["distance"]),
        "literal_match": max(bluffs, key=lambda b: (b["word_overlap"], -b["distance"])),
    }
