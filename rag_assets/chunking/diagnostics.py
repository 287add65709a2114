"""What a chunk set costs and what it destroys, before any retrieval runs.

- header share: word-pieces spent on the `[Title > Section]` lines over all embedded ones;
- over window: chunks whose embedded text exceeds the encoder window (silently truncated);
- answers destroyed: answerable questions whose needle no chunk's embedded text holds
  whole; their recall ceiling is zero whatever the retriever (docs/design.md §6). The
  stricter "not citable" count asks the same of `content`, the quoted part.
"""

from __future__ import annotations

import pandas as pd

from rag_assets.chunking import strategies
from rag_assets.ingest import corpus
from rag_assets.report import Outcome


def needle_holders(chunks: pd.DataFrame, truth: pd.DataFrame) -> dict[str, tuple[set[str], set[str]]]:
    """question_id -> (chunk ids whose text holds the needle, those whose content does).

    A validated needle occurs once in the corpus, in its question's document, and never
    in a heading, so only that document's chunks can hold it."""
    answerable = truth[(truth["kind"] == "answerable") & truth["needle"].notna()].drop_duplicates("question_id")
    by_doc = {d: g for d, g in chunks.groupby("document_id")}
    holders = {}
    for q in answerable.itertuples():
        group = by_doc.get(q.document_id)
        if group is None:
            holders[q.question_id] = (set(), set())
            continue
        in_text = group["text"].str.contains(q.needle, regex=False)
        in_content = group["content"].str.contains(q.needle, regex=False)
        holders[q.question_id] = (set(group["chunk_id"][in_text]), set(group["chunk_id"][in_content]))
    return holders


def destroyed_questions(chunks: pd.DataFrame, truth: pd.DataFrame, column: str = "text") -> list[str]:
    """Answerable question ids whose needle is whole in no chunk's `column`."""
    return _lost(needle_holders(chunks, truth), column)


def _lost(holders: dict[str, tuple[set[str], set[str]]], column: str) -> list[str]:
    which = 0 if column == "text" else 1
    return sorted(q for q, held in holders.items() if not held[which])


def chunk_set_stats(chunks: pd.DataFrame, truth: pd.DataFrame) -> dict:
    """What a chunk set destroys, whatever model embeds it."""
    n_answerable = int(truth.loc[truth["kind"] == "answerable", "question_id"].nunique())
    holders = needle_holders(chunks, truth)
    destroyed, not_citable = _lost(holders, "text"), _lost(holders, "content")
    content_chars = chunks["content"].str.len()
    return {
        "chunks": len(chunks),
        "documents": int(chunks["document_id"].nunique()),
        "mean_content_chars": float(content_chars.mean()) if len(chunks) else 0.0,
        "answerable_questions": n_answerable,
        "answers_destroyed": len(destroyed),
        "answers_not_citable": len(not_citable),
        "destroyed_question_ids": destroyed,
    }


def token_stats(chunks: pd.DataFrame, embedder) -> dict:
    """What a chunk set costs the model that embeds it, counted with that model's tokenizer:
    the share of embedded tokens spent on header lines, and the chunks over its window."""
    embedded = embedder.count_tokens(chunks["text"].tolist())
    headers = embedder.count_tokens([h.rstrip("\n") for h in chunks["header"]], special_tokens=False)
    return {
        "embedded_tokens": int(embedded.sum()),
        "header_tokens": int(headers.sum()),
        "header_share": float(headers.sum() / embedded.sum()) if embedded.sum() else 0.0,
        "over_window": int((embedded > embedder.window).sum()),
        "max_tokens": int(embedded.max()) if len(embedded) else 0,
        "encoder_window": embedder.window,
    }


def chunk_set(snapshot: pd.DataFrame, truth: pd.DataFrame, strategy, stamp: str) -> Outcome:
    """One strategy's chunks with their provenance (the corpus hash, and `stamp`: what made
    them), their figures (answers destroyed among them), and the three checks a chunk set must
    pass: offsets slice back, ids unique, every extracted document chunked."""
    chunks = strategies.chunk_corpus(snapshot, strategy)
    chunks["corpus_hash"] = corpus.corpus_hash(snapshot)  # provenance travels with the data,
    chunks["chunker"] = stamp  # and says what made it, whatever today's code says
    stats = chunk_set_stats(chunks, truth)
    destroyed = stats.pop("destroyed_question_ids")
    bad_offsets = strategies.offset_violations(chunks, snapshot)
    duplicate_ids = chunks["chunk_id"][chunks["chunk_id"].duplicated()].tolist()
    coverage = corpus.chunk_coverage(snapshot, chunks)
    figures = {
        **stats,
        "settings": strategy.settings(),
        "destroyed_question_ids": destroyed,
        "chunks_per_document": coverage["chunks_per_document"],
    }
    checks = {
        "offsets_slice_back": (not bad_offsets, {"violations": len(bad_offsets), "examples": bad_offsets[:10]}),
        "chunk_ids_unique": (not duplicate_ids, {"duplicates": duplicate_ids[:10]}),
        "every_ok_document_chunked": (
            not coverage["ok_without_chunks"] and not coverage["chunks_of_other_documents"],
            {k: coverage[k] for k in ("ok_without_chunks", "chunks_of_other_documents")},
        ),
    }
    note = f"strategy {strategy.id}: {stats['chunks']} chunks, {stats['answers_destroyed']} answers destroyed"
    return Outcome(chunks, figures, checks, strategies.chunk_table_hash(chunks), notes=[note])
