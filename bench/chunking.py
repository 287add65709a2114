"""Chunking and chunk-statistics speed on the bundled corpus, per strategy.

    python bench/chunking.py

Prints characters/s for chunking and the time to compute the metadata (word-piece counts
with the real tokenizer, answers destroyed) that `chunk_sets` attaches to each partition.
"""

import time

from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.chunking import diagnostics
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt


def main() -> None:
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snap)[0], gt.Sample())
    chars = int(snap["text"].str.len().sum())
    print(f"corpus: {len(snap)} documents, {chars:,} characters; {truth['question_id'].nunique()} questions")
    print(f"{'strategy':>8} {'chunks':>7} {'chunk ms':>9} {'Mchar/s':>8} {'stats ms':>9}")
    for sid, strategy in STRATEGIES.items():
        t0 = time.perf_counter()
        chunks = chunk_corpus(snap, strategy)
        t1 = time.perf_counter()
        diagnostics.chunk_set_stats(chunks, truth)
        t2 = time.perf_counter()
        print(
            f"{sid:>8} {len(chunks):>7} {1e3 * (t1 - t0):>9.1f} {chars / (t1 - t0) / 1e6:>8.2f} {1e3 * (t2 - t1):>9.1f}"
        )


if __name__ == "__main__":
    main()
