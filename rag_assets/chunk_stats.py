"""What a chunk set costs and what it destroys, before any retrieval runs.

- header share: word-pieces spent on the `[Title > Section]` lines over all embedded ones;
- over window: chunks whose embedded text exceeds the encoder window (silently truncated);
- answers destroyed: answerable questions whose needle no chunk's embedded text holds
  whole; their recall ceiling is zero whatever the retriever (DESIGN.md §6). The
  stricter "not citable" count asks the same of `content`, the quoted part.
"""

from __future__ import annotations

import pandas as pd

from rag_assets.embedding import ENCODER_WINDOW, wordpiece_counts


def needle_holders(chunks: pd.DataFrame, needle: str, column: str = "text") -> pd.Series:
    """Boolean mask of the chunks whose `column` contains the whole needle."""
    return chunks[column].str.contains(needle, regex=False)


def destroyed_questions(chunks: pd.DataFrame, truth: pd.DataFrame, column: str = "text") -> list[str]:
    """Answerable question ids whose needle is whole in no chunk's `column`."""
    answerable = truth[truth["kind"] == "answerable"].drop_duplicates("question_id")
    by_doc = dict(tuple(chunks.groupby("document_id")))
    lost = []
    for q in answerable.itertuples():
        # A validated needle occurs once in the corpus, in q.document_id, and never in a
        # heading, so only that document's chunks can hold it.
        candidates = by_doc.get(q.document_id)
        if candidates is None or not needle_holders(candidates, q.needle, column).any():
            lost.append(q.question_id)
    return sorted(lost)


def chunk_set_stats(chunks: pd.DataFrame, truth: pd.DataFrame) -> dict:
    texts = chunks["text"].tolist()
    embedded = wordpiece_counts(texts)
    headers = wordpiece_counts([h.rstrip("\n") for h in chunks["header"]], special_tokens=False)
    n_answerable = int(truth.loc[truth["kind"] == "answerable", "question_id"].nunique())
    destroyed = destroyed_questions(chunks, truth, "text")
    not_citable = destroyed_questions(chunks, truth, "content")
    content_chars = chunks["content"].str.len()
    return {
        "chunks": len(chunks),
        "documents": int(chunks["document_id"].nunique()),
        "embedded_tokens": int(embedded.sum()),
        "header_tokens": int(headers.sum()),
        "header_share": float(headers.sum() / embedded.sum()) if len(embedded) else 0.0,
        "over_window": int((embedded > ENCODER_WINDOW).sum()),
        "max_tokens": int(embedded.max()) if len(embedded) else 0,
        "mean_content_chars": float(content_chars.mean()) if len(chunks) else 0.0,
        "answerable_questions": n_answerable,
        "answers_destroyed": len(destroyed),
        "answers_not_citable": len(not_citable),
        "destroyed_question_ids": destroyed,
    }
