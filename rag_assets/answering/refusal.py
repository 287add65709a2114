"""The refusal gate and its sweep: the one part of a RAG system that can say no.

Gate: keep at most `keep` retrieved chunks whose cosine distance is under the threshold;
none left means NO ANSWER, and no model is called. The sweep runs the gate over a grid
of thresholds against answerable queries (which should be answered, with the needle)
and unanswerable or out-of-domain ones (which should be refused; answering them is a bluff).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rag_assets.evaluation import significance
from rag_assets.evaluation.plots import png_bytes, pyplot
from rag_assets.retrieval.lexical import Tokenizer

KEEP = 4
THRESHOLD = 0.6  # the operating threshold: cosine distance (the sweep shows what it costs)
GRID = tuple(round(x, 3) for x in np.arange(0.30, 0.901, 0.025))
SWEEP_COLUMNS = ["threshold", "group", "outcome", "count", "n", "rate", "ci_low", "ci_high"]


def gate(chunk_ids: list[str], distances: list[float], threshold: float, keep: int = KEEP) -> list[str]:
    """The chunks an answer may use: at most `keep`, each strictly under the threshold."""
    return [c for c, d in zip(chunk_ids, distances) if d < threshold][:keep]


def outcomes(runs: pd.DataFrame, truth: pd.DataFrame, texts: dict[str, str], thresholds=GRID) -> pd.DataFrame:
    """Per threshold, counts and Wilson-interval rates of each outcome.

    `runs`: one ranked list per query (query_id, chunk_ids, distances), best first;
    `texts`: chunk id -> embedded text, to tell whether a kept chunk holds the needle."""
    q = runs.merge(truth[["query_id", "kind", "needle", *(["relevant"] if "relevant" in truth else [])]], on="query_id")
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
            n = int(mask.sum())
            for outcome, hit in cases.items():
                count = int((hit & mask).sum())
                low, high = significance.wilson(count, n)
                rows.append(
                    {
                        "threshold": t,
                        "group": group,
                        "outcome": outcome,
                        "count": count,
                        "n": n,
                        "rate": count / n if n else np.nan,
                        "ci_low": low,
                        "ci_high": high,
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


def distance_histogram_png(best: pd.DataFrame, threshold: float) -> bytes:
    fig, ax = pyplot().subplots(figsize=(7, 3.6))
    bins = np.linspace(0, 1.2, 49)
    for kind, label in (
        ("answerable", "answerable"),
        ("unanswerable", "unanswerable (in domain)"),
        ("out_of_domain", "out of domain"),
    ):
        values = best.loc[best["kind"] == kind, "best"].dropna()
        if len(values):
            ax.hist(values, bins=bins, alpha=0.5, label=f"{label} (n={len(values)})")
    ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold}")
    ax.set_xlabel("cosine distance of the nearest chunk")
    ax.set_ylabel("queries")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def sweep_table(sweep: pd.DataFrame, thresholds) -> str:
    """Markdown: one row per threshold, the rates that matter side by side."""
    cols = [
        ("answerable", "answered with the needle"),
        ("answerable", "answered without it"),
        ("answerable", "refused"),
        ("unanswerable", "answered (bluff)"),
        ("out_of_domain", "answered (bluff)"),
    ]
    head = (
        "| threshold | answered with needle | answered without | refused (answerable) | bluffs (unanswerable) "
        "| bluffs (out of domain) |"
    )
    lines = [head, "|---|---|---|---|---|---|"]
    keyed = sweep.set_index(["threshold", "group", "outcome"])
    for t in thresholds:
        cells = []
        for g, o in cols:
            r = keyed.loc[(t, g, o)]
            cells.append(f"{int(r['count'])}/{int(r['n'])} ({r['rate']:.3f})" if r["n"] else "—")
        lines.append(f"| {t:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
