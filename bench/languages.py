"""Embedding models across languages: XQuAD English and German (the same 240 paragraphs and
1,190 questions, professionally translated) and the Bulgarian chapter (data/bulgarian_chapter).
Each is materialised by the product itself,

    rag-assets run --dataset D --data-dir W/D-data --strategies E --no-llm --full-ground-truth --models MODELS

and then measured:
1. R@4 and MRR per language x model x retriever; German paired against English by question
   (exact sign tests, Holm across the table);
2. BM25 with each language's own analyzer (the default) against plain tokens, paired;
3. Bulgarian: BulStem's three rule sets; me5-small's hybrid against plain-token BM25 and against
   English-only MiniLM's dense;
4. each model against its published MTEB XQuADRetrieval figure (nDCG@10, the 240 paragraphs as the
   corpus, each question's own paragraph relevant);
5. each model's cost on 200 real chunks: chunks/s, vector MB per 1,000 chunks, ms per query.

    python bench/languages.py [--work DIR] [--models minilm,mpnet,me5-small]
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from common import XQUAD, bm25_runs, imported_xquad, materialise_e  # noqa: E402

from rag_assets import catalog  # noqa: E402
from rag_assets.catalog import PROJECT_ROOT  # noqa: E402
from rag_assets.evaluation import comparisons, metric_tables  # noqa: E402
from rag_assets.evaluation.retrieval_run import retriever_name  # noqa: E402
from rag_assets.layout import DataDir  # noqa: E402
from rag_assets.retrieval import lexical, packaged  # noqa: E402

BULGARIAN = PROJECT_ROOT / "data" / "bulgarian_chapter"
# MTEB XQuADRetrieval nDCG@10 (shared/datasets/xquad/README.md): of the fp32 models, which the int8
# MiniLM and the 4-bit e5 are measured against too
PUBLISHED = {
    **{(m, "en"): 0.944 for m in ("minilm", "minilm-fp32")},
    **{(m, "de"): 0.703 for m in ("minilm", "minilm-fp32")},
    ("me5-small", "en"): 0.975,
}


def materialise(work: Path, name: str, dataset: Path, models: str) -> DataDir:
    t0 = time.perf_counter()
    layout, _ = materialise_e(dataset, work / f"{name}-data", models)
    print(f"{name}: materialised in {time.perf_counter() - t0:.0f} s ({layout.root})", flush=True)
    return layout


def hits_of(layout: DataDir) -> pd.DataFrame:
    """The run's hits, plus BM25 on plain tokens (`bm25-plain`) on the same chunks and questions."""
    hits = layout.read_table("query_hits")
    chunks, truth = layout.read_table("chunk_sets", "E"), layout.read_table("ground_truth")
    truth = truth[truth["kind"] == "answerable"]
    plain = bm25_runs(chunks, truth, "plain").assign(retriever="bm25-plain")
    return pd.concat([hits, metric_tables.query_hits(plain, {"E": chunks}, truth)], ignore_index=True)


def figures(hits: pd.DataFrame) -> pd.DataFrame:
    table = metric_tables.metric_table(hits, {})
    table = table[((table["metric"] == "recall") & (table["k"] == 4)) | (table["metric"] == "mrr")]
    return table.pivot_table(index="retriever", columns="metric", values="value")


def systems(hits: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {r: g[["query_id", "question_id", "hit_rank"]] for r, g in hits.groupby("retriever")}


def ndcg_at_10(model: str, language: str) -> float:
    """MTEB XQuADRetrieval's figure: paragraphs as the corpus, a question's own paragraph relevant."""
    data = json.loads((XQUAD / f"xquad.{language}.json").read_text())["data"]
    paragraphs = [p["context"] for a in data for p in a["paragraphs"]]
    owner = [i for i, p in enumerate(p for a in data for p in a["paragraphs"]) for _ in p["qas"]]
    questions = [q["question"] for a in data for p in a["paragraphs"] for q in p["qas"]]
    embedder = packaged.embedder(model)
    scores = embedder.encode(questions, query=True) @ embedder.encode(paragraphs).T
    ranks = (scores > scores[np.arange(len(owner)), owner][:, None]).sum(axis=1) + 1
    return float(np.where(ranks <= 10, 1 / np.log2(ranks + 1), 0.0).mean())


def cost(model: str, texts: list[str], queries: list[str]) -> dict:
    embedder = packaged.embedder(model)
    embedder.encode(texts[:8]), embedder.encode(queries[:4], query=True)  # load and warm up
    t0 = time.perf_counter()
    vectors = embedder.encode(texts)
    per_chunk = time.perf_counter() - t0
    ms = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.encode([q], query=True)
        ms.append((time.perf_counter() - t0) * 1000)
    return {
        "chunks/s": round(len(texts) / per_chunk, 1),
        "MB per 1,000 chunks": round(vectors.shape[1] * 4 * 1000 / 2**20, 2),
        "ms per query (median)": round(float(np.median(ms)), 1),
        "window": embedder.window,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/rag-assets-languages"))
    p.add_argument("--models", default="minilm,mpnet,me5-small")
    args = p.parse_args()
    models = catalog.model_names(args.models)
    args.work.mkdir(parents=True, exist_ok=True)
    layouts = {
        lang: materialise(args.work, f"xquad-{lang}", imported_xquad(args.work, lang), args.models)
        for lang in ("en", "de")
    }
    layouts["bg"] = materialise(args.work, "bulgarian", BULGARIAN, args.models)
    hits = {lang: hits_of(layout) for lang, layout in layouts.items()}

    print("\n## R@4 and MRR, strategy E (German paired against English by question)\n")
    rows = []
    for lang, h in hits.items():
        for retriever, r in figures(h).iterrows():
            rows.append({"language": lang, "retriever": retriever, "R@4": r["recall"], "MRR": r["mrr"]})
    print(pd.DataFrame(rows).pivot_table(index="retriever", columns="language", values=["R@4", "MRR"]).round(3))

    en, de = systems(hits["en"]), systems(hits["de"])
    pairs = [({"retriever": r}, de[r], en[r]) for r in sorted(set(en) & set(de))]
    paired = comparisons.compare_paired(pairs, ["retriever"], ks=(4,))
    print("\nGerman against English, R@4 (wins: questions German finds and English misses)\n")
    print(paired[["retriever", "wins", "losses", "recall_a", "recall_b", "p_holm"]].round(4).to_string(index=False))

    print("\n## Each language's analyzer against plain tokens, BM25 R@4\n")
    pairs = [({"language": lang}, systems(h)["bm25"], systems(h)["bm25-plain"]) for lang, h in hits.items()]
    tests = comparisons.compare_paired(pairs, ["language"], ks=(4,))
    print(tests[["language", "wins", "losses", "recall_a", "recall_b", "p_holm"]].round(4).to_string(index=False))

    print("\n## BulStem's rule sets (letters of context) on the Bulgarian chapter, BM25 R@k and MRR\n")
    chunks, truth = layouts["bg"].read_table("chunk_sets", "E"), layouts["bg"].read_table("ground_truth")
    truth = truth[truth["kind"] == "answerable"]
    default = lexical.BULSTEM_CONTEXT
    for context in (1, 2, 3):
        lexical.BULSTEM_CONTEXT = context
        lexical._bulstem.cache_clear()
        table = metric_tables.metric_table(
            metric_tables.query_hits(bm25_runs(chunks, truth, "per-language"), {"E": chunks}, truth), {}
        )
        recall = table[table["metric"] == "recall"].set_index("k")["value"]
        mrr = table.loc[table["metric"] == "mrr", "value"].iloc[0]
        cells = ", ".join(f"R@{k} {v:.3f}" for k, v in recall.items())
        print(f"context {context}{' (the default)' if context == default else ''}: {cells}, MRR {mrr:.3f}")
    lexical.BULSTEM_CONTEXT = default
    lexical._bulstem.cache_clear()

    if "me5-small" in models:
        print("\n## Bulgarian: me5-small hybrid against plain BM25 and English-only MiniLM dense\n")
        bg, hybrid = systems(hits["bg"]), retriever_name("hybrid", "me5-small", models[0])
        pairs = [
            ({"against": other}, bg[hybrid], bg[other]) for other in ("bm25-plain", "bm25", "dense") if other in bg
        ]
        tests = comparisons.compare_paired(pairs, ["against"])
        print(tests[["against", "k", "wins", "losses", "recall_a", "recall_b", "p_value", "p_holm"]].round(4))

    print("\n## MTEB XQuADRetrieval nDCG@10 (paragraphs as the corpus)\n")
    for model in dict.fromkeys([*models, *(["minilm-fp32"] if "minilm" in models else [])]):  # fp32: as published
        for lang in ("en", "de"):
            ours, published = ndcg_at_10(model, lang), PUBLISHED.get((model, lang))
            against = (
                f"published {published:.3f}, difference {ours - published:+.3f}"
                if published
                else "no published figure here"
            )
            print(f"{model:10s} {lang}: {ours:.3f} ({against})", flush=True)

    print("\n## Cost on 200 chunks of XQuAD English (strategy E) and 50 of its questions\n")
    chunks = layouts["en"].read_table("chunk_sets", "E")["text"].tolist()[:200]
    queries = layouts["en"].read_table("ground_truth")["query"].tolist()[:50]
    print(pd.DataFrame({m: cost(m, chunks, queries) for m in models}).T.to_string())


if __name__ == "__main__":
    main()
