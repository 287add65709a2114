"""Does the hybrid list keep dense's nearest chunk? The gate reads hybrid's distances, so its
refusals are dense's only if it does (docs/answering.md, "Gate").

    python bench/hybrid_keeps_nearest.py --data-dir DIR

`--data-dir`: where `rag-assets run` materialised retrieval_runs. Prints, for the first model's
dense and hybrid runs, how many (query, strategy) pairs there are and in how many the hybrid list
holds the chunk dense ranked first, per strategy and in all.
"""

import argparse
from pathlib import Path

from rag_assets.layout import DataDir


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    args = p.parse_args()
    runs = DataDir(Path(args.data_dir)).read_table("retrieval_runs")
    dense = runs[runs["retriever"] == "dense"].set_index(["query_id", "strategy"])["chunk_ids"]
    hybrid = runs[runs["retriever"] == "hybrid"].set_index(["query_id", "strategy"])["chunk_ids"]
    pairs = dense.index.intersection(hybrid.index)
    kept = {key: len(dense[key]) == 0 or dense[key][0] in set(hybrid[key]) for key in pairs}
    print("| strategy | (query, strategy) pairs | hybrid holds dense's nearest |\n|---|---|---|")
    for strategy in sorted({s for _, s in pairs}):
        mine = [v for (_, s), v in kept.items() if s == strategy]
        print(f"| {strategy} | {len(mine)} | {sum(mine)} |")
    print(f"| all | {len(kept)} | {sum(kept.values())} |")


if __name__ == "__main__":
    main()
