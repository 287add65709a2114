"""BM25's build time at 10k and 100k texts, with Python's garbage collector on and off.

    python bench/bm25_build.py [--sizes 10000,100000]

Each size in this process, in the state `bench/scaling.py` builds BM25 in: the corpus (as
`scaling.build_dataset` writes it) snapshotted, its questions validated and strategy C chunked,
all held. Then the index is built three times: collector on, off, on again. Whether the build grows
linearly, and whether the collector's passes over the live objects are what makes it grow.
"""

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import scaling  # noqa: E402

from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus  # noqa: E402
from rag_assets.ingest import corpus  # noqa: E402
from rag_assets.ingest import ground_truth as gt  # noqa: E402
from rag_assets.retrieval.lexical import BM25Index  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="10000,100000")
    args = p.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            scaling.build_dataset(root, size, 1000)
            snap = corpus.snapshot(root / "documents")
            truth, _ = gt.validate(gt.read_questions(root / "questions.jsonl")[0], snap)
            texts = chunk_corpus(snap, STRATEGIES["C"])["text"].tolist()
            times = []
            for collector in (True, False, True):
                gc.enable() if collector else gc.disable()
                t0 = time.perf_counter()
                BM25Index.build(texts)
                times.append(time.perf_counter() - t0)
            gc.enable()
            print(
                f"{size} texts, {len(texts)} chunks ({len(truth)} questions held): build "
                f"{times[0]:.2f} s, collector off {times[1]:.2f} s, on again {times[2]:.2f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
