"""Chunks/s of our LocalEmbedder against plain SentenceTransformer.encode on the same texts.

    python bench/embedding_throughput.py [--chunks 1000] [--rounds 3]

Alternates the two in each round (the machine is shared and noisy) and compares medians.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import bundled_chunks  # noqa: E402

from rag_assets.retrieval.embedding import LocalEmbedder  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--chunks", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    from sentence_transformers import SentenceTransformer

    _, chunks = bundled_chunks("E")
    texts = (chunks["text"].tolist() * 4)[: args.chunks]
    ours = LocalEmbedder()
    plain = SentenceTransformer(str(ours.path), device="cpu")
    ours.encode(texts[:32]), plain.encode(texts[:32])  # warm-up
    rates = {"ours": [], "plain": []}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        a = ours.encode(texts)
        rates["ours"].append(len(texts) / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        b = plain.encode(texts, batch_size=32, normalize_embeddings=True)
        rates["plain"].append(len(texts) / (time.perf_counter() - t0))
    assert np.allclose(a, b, atol=1e-5)
    o, q = statistics.median(rates["ours"]), statistics.median(rates["plain"])
    print(
        f"{len(texts)} chunks of strategy E: ours {o:.0f} chunks/s (batch {ours.batch_size}), "
        f"plain SentenceTransformer.encode {q:.0f} chunks/s (default batch 32): ratio {o / q:.2f}"
    )


if __name__ == "__main__":
    main()
