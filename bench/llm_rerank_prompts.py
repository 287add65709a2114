"""How well the generator's yes/no log-odds separate relevant passages, for three wordings.

    rag-assets run --rerank-llm   (first: the materialised runs and chunk set are read)
    python bench/llm_rerank_prompts.py [--data-dir data] [--queries 12]

For the first queries of the LLM reranker's sample (strategy E), scores the top 10 of the
hybrid ranking with each wording and prints R@1 after reranking and the AUC between passages
that hold the needle and those that do not (0.5: no better than chance). The first wording
is the one `rerank-llm` uses.
"""

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rag_assets.answering.generation import LocalLM
from rag_assets.retrieval.rerank import RELEVANCE_PROMPT

WORDINGS = {
    "passage first (rerank-llm)": RELEVANCE_PROMPT,
    "query first": "Query: {query}\n\nPassage:\n{passage}\n\nDoes the passage answer the query? Reply with yes or no.",
    "question quoted": (
        'Does the following passage contain the answer to the question "{query}"?\n\n{passage}\n\nAnswer yes or no.'
    ),
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default="data")
    p.add_argument("--queries", type=int, default=12)
    args = p.parse_args()
    assets = Path(args.data_dir) / "assets"
    runs = pd.read_parquet(assets / "retrieval_runs.parquet")
    truth = pd.read_parquet(assets / "ground_truth.parquet").set_index("query_id")
    texts = pd.read_parquet(assets / "chunk_sets" / "E.parquet").set_index("chunk_id")["text"]
    sample = runs[(runs["strategy"] == "E") & (runs["retriever"] == "rerank-llm")]["query_id"].tolist()[: args.queries]
    if not sample:
        raise SystemExit(f"no rerank-llm runs in {assets}: run `rag-assets run --rerank-llm` first")
    hybrid = runs[(runs["strategy"] == "E") & (runs["retriever"] == "hybrid")].set_index("query_id")
    lm = LocalLM()
    print(f"{len(sample)} queries, top 10 of hybrid each; model {lm.identity}")
    print(f"{'wording':>28} {'R@1':>6} {'AUC':>6} {'seconds':>8}")
    for name, template in WORDINGS.items():
        t0, top1, aucs = time.perf_counter(), 0, []
        for query_id in sample:
            passages = [texts[c] for c in hybrid.loc[query_id, "chunk_ids"][:10]]
            query, needle = truth.loc[query_id, "query"], truth.loc[query_id, "needle"]
            scores = lm.log_odds([template.format(passage=t, query=query) for t in passages])
            relevant = np.array([needle in t for t in passages])
            top1 += int(relevant[int(np.argmax(scores))])
            if relevant.any() and (~relevant).any():
                aucs.append(float((scores[relevant][:, None] > scores[~relevant][None, :]).mean()))
        print(f"{name:>28} {top1:>3}/{len(sample):<2} {np.mean(aucs):>6.3f} {time.perf_counter() - t0:>8.0f}")


if __name__ == "__main__":
    main()
