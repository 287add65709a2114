"""The int8 encoder against its fp32 twin, in one run: speed, closeness, and retrieval quality.

    python bench/int8_encoder.py [--rounds 3]

1. Chunks/s on every chunk text of strategy E of the bundled corpus: `LocalEmbedder(backend="onnx-int8")`
   against plain `SentenceTransformer.encode` (batch 32, the fp32 default), alternating in each
   round (the machine is shared and noisy) and comparing medians.
2. Cosine of each int8 vector to its fp32 twin: min, p01, median.
3. `rag-assets run --strategies E --no-llm` once per encoder into fresh data dirs, then R@1, R@4,
   R@20 of dense and hybrid for both, paired by question with the exact sign test and Holm's
   adjustment (`compare_paired`, as the significance report does).
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from common import bundled_chunks  # noqa: E402

from rag_assets.app.cli import main as cli  # noqa: E402
from rag_assets.evaluation.comparisons import compare_paired  # noqa: E402
from rag_assets.retrieval.embedding import LocalEmbedder  # noqa: E402


def speed_and_closeness(rounds: int) -> None:
    from sentence_transformers import SentenceTransformer

    _, chunks = bundled_chunks("E")
    texts = chunks["text"].tolist()
    int8 = LocalEmbedder(backend="onnx-int8")
    plain = SentenceTransformer(str(int8.path), device="cpu")
    int8.encode(texts[:32]), plain.encode(texts[:32])  # warm-up
    rates = {"int8": [], "fp32": []}
    for _ in range(rounds):
        t0 = time.perf_counter()
        a = int8.encode(texts)
        rates["int8"].append(len(texts) / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        b = plain.encode(texts, batch_size=32, normalize_embeddings=True)
        rates["fp32"].append(len(texts) / (time.perf_counter() - t0))
    q, f = statistics.median(rates["int8"]), statistics.median(rates["fp32"])
    cos = (a * b).sum(axis=1)
    print(f"{len(texts)} chunks of strategy E, median of {rounds} rounds:")
    print(f"  onnx-int8 {q:.0f} chunks/s, SentenceTransformer.encode (fp32) {f:.0f} chunks/s: ratio {q / f:.2f}")
    print(
        f"  cosine to the fp32 twin: min {cos.min():.4f}, p01 {np.quantile(cos, 0.01):.4f}, median {np.median(cos):.4f}"
    )


def paired_recall() -> None:
    with tempfile.TemporaryDirectory() as tmp:  # one run, both models side by side: dense is int8's
        args = ["run", "--data-dir", tmp, "--strategies", "E", "--no-llm", "--models", "minilm,minilm-fp32"]
        if cli(args) != 0:
            raise SystemExit(f"rag-assets {' '.join(args)} failed")
        hits = pd.read_parquet(Path(tmp) / "assets" / "query_hits.parquet")
    pairs = []
    columns = ["query_id", "question_id", "hit_rank"]
    for retriever in ("dense", "hybrid"):
        a, b = (hits[hits["retriever"] == r][columns] for r in (retriever, f"{retriever}@minilm-fp32"))
        pairs.append(({"retriever": retriever}, a, b))
    table = compare_paired(pairs, ["retriever"], ks=(1, 4, 20))
    print("\nint8 (a) against fp32 (b), strategy E, paired by question:")
    print(
        table[["retriever", "k", "recall_a", "recall_b", "wins", "losses", "p_value", "p_holm"]].to_string(
            index=False, float_format=lambda x: f"{x:.3g}"
        )
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    speed_and_closeness(args.rounds)
    paired_recall()


if __name__ == "__main__":
    main()
