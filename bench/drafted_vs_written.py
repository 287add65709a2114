"""How far drafted questions can be trusted: the same documents evaluated on their written
questions and on a set the packaged generator drafts from them.

    python bench/drafted_vs_written.py [--dataset DIR ...] [--out DIR [--reuse]] [--draft-questions N]

For each dataset (default: the bundled corpus) it runs `rag-assets run` twice into two data
dirs under --out (default: a temporary folder): `--questions written` and `--questions
drafted`, both with --no-llm (generation_eval is not compared). Then it prints, for the 24
configurations (8 strategies x dense, BM25, hybrid): Kendall's tau between their orderings by
R@4 and by MRR with a 95 % bootstrap interval over questions; how many of the significance
report's verdicts agree or flip; the absolute R@4 gap and the BM25-versus-dense gap under each
set beside the content-word overlap of each set's questions with their needles; the drafting
time and the filter counts. The data dirs are kept when --out is given, so a rerun drafts
nothing again (the reply cache) and re-evaluates only what changed.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd
from dagster import AssetKey, DagsterInstance

from rag_assets.app.cli import main as cli
from rag_assets.drafting import agreement
from rag_assets.drafting.filters import overlap
from rag_assets.ingest.dataset import BUNDLED_DATASET
from rag_assets.layout import DataDir


def _run(dataset: Path, data_dir: Path, questions: str, draft: int, reuse: bool) -> float:
    if reuse and (data_dir / "assets" / "evaluation_tables.parquet").exists():
        return 0.0  # --reuse: evaluated by an earlier call with the same --out
    t0 = time.perf_counter()
    args = ["run", "--dataset", str(dataset), "--data-dir", str(data_dir), "--no-llm", "--questions", questions]
    code = cli(args + (["--draft-questions", str(draft)] if questions == "drafted" else []))
    if code != 0:
        raise SystemExit(f"rag-assets run --questions {questions} on {dataset} exited {code}")
    return time.perf_counter() - t0


def _mean_overlap(truth: pd.DataFrame) -> float:
    answerable = truth[truth["kind"] == "answerable"]
    return float(sum(overlap(q, n) for q, n in zip(answerable["query"], answerable["needle"])) / len(answerable))


def _gaps(per_question: pd.DataFrame) -> dict:
    recall = per_question["recall"].mean()
    strategies = sorted({c.split("/")[0] for c in recall.index})
    bm25_minus_dense = [recall[f"{s}/bm25"] - recall[f"{s}/dense"] for s in strategies]
    return {"mean_r4": float(recall.mean()), "bm25_minus_dense_r4": float(sum(bm25_minus_dense) / len(strategies))}


def compare(dataset: Path, root: Path, draft: int, reuse: bool) -> dict:
    written, drafted = DataDir(root / "written"), DataDir(root / "drafted")
    seconds = {"written": _run(dataset, written.root, "written", draft, reuse)}
    seconds["drafted"] = _run(dataset, drafted.root, "drafted", draft, reuse)
    hits = {name: agreement.per_question(d.read_table("query_hits")) for name, d in (("w", written), ("d", drafted))}
    truth = {name: d.read_table("ground_truth") for name, d in (("w", written), ("d", drafted))}
    table = drafted.read_table("drafted_questions")
    meta = {
        "needles": int(table["question_id"].nunique()),
        "kept_questions": int(table.groupby("question_id")["kept"].any().sum()),
        "phrasings_by_verdict": table["verdict"].value_counts().to_dict(),
    }
    with DagsterInstance.from_config(str(drafted.dagster_home)) as instance:  # the timing is the asset's metadata
        event = instance.get_latest_materialization_event(AssetKey("drafted_questions"))
        stats = event.asset_materialization.metadata["drafting"].value
    return {
        "dataset": str(dataset),
        "questions": {"written": len(hits["w"]), "drafted": len(hits["d"])},
        "tau_r4": agreement.tau_with_interval(hits["w"], hits["d"], "recall"),
        "tau_mrr": agreement.tau_with_interval(hits["w"], hits["d"], "rr"),
        "verdicts": agreement.verdicts(
            written.read_table("significance_report"), drafted.read_table("significance_report")
        ),
        "written": {**_gaps(hits["w"]), "mean_overlap": _mean_overlap(truth["w"])},
        "drafted": {**_gaps(hits["d"]), "mean_overlap": _mean_overlap(truth["d"])},
        "drafting": meta,
        "drafting_stats": stats,
        "run_seconds": seconds,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", action="append", type=Path)
    p.add_argument("--out", type=Path)
    p.add_argument("--draft-questions", type=int, default=400)
    p.add_argument("--reuse", action="store_true", help="keep the evaluations already under --out")
    args = p.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in args.dataset or [BUNDLED_DATASET]:
            root = (args.out or Path(tmp)) / dataset.name
            results.append(compare(dataset, root, args.draft_questions, args.reuse))
    for r in results:
        print(
            f"\n== {r['dataset']}: {r['questions']['written']} written, {r['questions']['drafted']} drafted questions"
        )
        for name in ("tau_r4", "tau_mrr"):
            t = r[name]
            print(
                f"  Kendall tau ({name[4:]}) over {t['configurations']} configurations: {t['tau']:.3f} "
                f"[{t['ci_low']:.3f}, {t['ci_high']:.3f}]"
            )
        v = r["verdicts"]
        print(
            f"  significance verdicts: {v['same_verdict']}/{v['comparisons']} the same "
            f"({v['same_significant']} significant in both), {v['significant_in_one_only']} significant in one "
            f"only, {v['flipped']} flipped"
        )
        for name in ("written", "drafted"):
            g = r[name]
            print(
                f"  {name:8s} mean R@4 {g['mean_r4']:.3f}, BM25 - dense R@4 {g['bm25_minus_dense_r4']:+.3f}, "
                f"question-needle overlap {g['mean_overlap']:.3f}"
            )
        print(f"  drafting: {json.dumps(r['drafting'])}")
        print(f"  drafting stats: {json.dumps(r['drafting_stats'])}")
        print(f"  run seconds: {json.dumps({k: round(s, 1) for k, s in r['run_seconds'].items()})}")


if __name__ == "__main__":
    main()
