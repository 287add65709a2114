"""How far drafted questions can be trusted: the same documents evaluated on their written
questions and on a set the packaged generator drafts from them.

    python bench/drafted_vs_written.py [--dataset DIR ...] [--out DIR [--reuse]] [--draft-questions N]

For each dataset (default: the bundled corpus) it runs `rag-assets run` into data dirs under
--out (default: a temporary folder): `--questions written`, `--questions drafted`, and the
drafted set without its judge (below), all with --no-llm (generation_eval is not compared).
Then it prints, for the 24 configurations (8 strategies x dense, BM25, hybrid): Kendall's tau
between their orderings by R@4 and by MRR with a 95 % bootstrap interval over questions, over
all of them and over the 12 close ones (C-F, whose recall is not set by needles destroyed at
chunk boundaries); the same
with the judge's filter undone (a third run on every phrasing the other filters kept, those the
judge dropped included); the tau that as many written questions as were drafted reach against
the other written ones (a disjoint split: the cost of the question count alone), and the tau of
a quarter, a half and all of the drafted set (what more drafted questions buy); how many of
the significance report's verdicts agree or flip; the absolute R@4 gap and the BM25-versus-dense
gap under each set beside the word overlap of each set's questions with their needles (mean and
10th/50th/90th percentiles: the written 90th is the drafting filter's cap); the judge on
--judge-sample written questions (how many it would keep, and whether its margin tracks overlap)
and on the drafted set; the drafting time, the filter counts, and drafted questions beside the
written question for the same needle. The data dirs are kept when --out is given, so a rerun
drafts nothing again (the reply cache) and re-evaluates only what changed.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from dagster import AssetKey, DagsterInstance
from scipy.stats import spearmanr

from rag_assets.answering.output_cache import OutputCache
from rag_assets.app.cli import main as cli
from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.defs.resources import GeneratorResource
from rag_assets.drafting import agreement
from rag_assets.drafting.drafter import Drafter, decoys
from rag_assets.drafting.filters import overlap
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


def _answerable(truth: pd.DataFrame) -> pd.DataFrame:
    return truth[truth["kind"] == "answerable"]


def _overlaps(truth: pd.DataFrame) -> dict:
    answerable = _answerable(truth)
    values = [overlap(q, n) for q, n in zip(answerable["query"], answerable["needle"])]
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    return {"mean_overlap": float(np.mean(values)), "overlap_p10_p50_p90": [float(p10), float(p50), float(p90)]}


def _judge_written(truth: pd.DataFrame, drafter: Drafter, n: int, seed: int = 0) -> dict:
    """The judge on n written questions (first phrasing), each against its needle and a decoy:
    the next distinct needle of the same document, as the drafter picks decoys."""
    first = _answerable(truth)
    first = first[first["phrasing"] == 0].drop_duplicates("question_id")
    decoy_of = decoys(first.drop_duplicates("needle"))
    first = first[first["needle"].isin(decoy_of)]  # a needle alone in its document has no decoy
    chosen = first.sample(min(n, len(first)), random_state=seed)
    margins = drafter.margins(
        chosen["query"].tolist(), chosen["needle"].tolist(), [decoy_of[n] for n in chosen["needle"]]
    )
    return agreement.judge_on_written(margins, [overlap(q, n) for q, n in zip(chosen["query"], chosen["needle"])])


def _judge_drafted(table: pd.DataFrame) -> dict:
    """On the drafted set: Spearman of the judge's margin with the judged phrasing's overlap."""
    judged = table[table["judge_margin"].notna() & (table["query"] != "")].drop_duplicates("question_id")
    rho = spearmanr(judged["judge_margin"], judged["overlap"]).statistic if len(judged) > 2 else float("nan")
    return {
        "judged": len(judged),
        "not_answered": int((table["verdict"] == "not_answered").sum()),
        "spearman_margin_overlap": float(rho),
    }


def _side_by_side(table: pd.DataFrame, truth: pd.DataFrame, n: int = 5) -> list[dict]:
    """Kept drafted questions beside a written question with the very same needle."""
    written = _answerable(truth)
    written = written[written["phrasing"] == 0].drop_duplicates("needle").set_index("needle")["query"]
    kept = table[table["kept"] & table["needle"].isin(written.index)]
    pairs = []
    for _, rows in kept.groupby("question_id"):
        needle = rows["needle"].iloc[0]
        pairs.append({"needle": needle, "written": written[needle], "drafted": dict(zip(rows["style"], rows["query"]))})
    pairs.sort(key=lambda p: p["needle"])
    step = max(1, len(pairs) // n)
    return pairs[::step][:n]


def _gaps(per_question: pd.DataFrame) -> dict:
    recall = per_question["recall"].mean()
    strategies = sorted({c.split("/")[0] for c in recall.index})
    bm25_minus_dense = [recall[f"{s}/bm25"] - recall[f"{s}/dense"] for s in strategies]
    return {"mean_r4": float(recall.mean()), "bm25_minus_dense_r4": float(sum(bm25_minus_dense) / len(strategies))}


def _unjudged(dataset: Path, table: pd.DataFrame, root: Path) -> Path:
    """The same documents with the drafted set as the judge found it: every phrasing the filters
    kept, those the judge dropped (`not_answered`) included, as a questions file."""
    out = root / "unjudged-dataset"
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "documents").exists():
        (out / "documents").symlink_to((dataset / "documents").resolve())
    passed = table[table["verdict"].isin(["kept", "not_answered"])]
    lines = [
        json.dumps(
            {"id": qid, "phrasings": rows["query"].tolist(), "needle": rows["needle"].iloc[0], "kind": "answerable"}
        )
        for qid, rows in passed.groupby("question_id", sort=True)
    ]
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n")
    return out


def compare(dataset: Path, root: Path, draft: int, reuse: bool, judge_sample: int) -> dict:
    written, drafted, unjudged = DataDir(root / "written"), DataDir(root / "drafted"), DataDir(root / "unjudged")
    seconds = {"written": _run(dataset, written.root, "written", draft, reuse)}
    seconds["drafted"] = _run(dataset, drafted.root, "drafted", draft, reuse)
    table = drafted.read_table("drafted_questions")
    seconds["unjudged"] = _run(_unjudged(dataset, table, root), unjudged.root, "written", draft, reuse)
    sets = (("w", written), ("d", drafted), ("u", unjudged))
    hits = {name: agreement.per_question(d.read_table("query_hits")) for name, d in sets}
    truth = {name: d.read_table("ground_truth") for name, d in (("w", written), ("d", drafted))}
    meta = {
        "needles": int(table["question_id"].nunique()),
        "kept_questions": int(table.groupby("question_id")["kept"].any().sum()),
        "phrasings_by_verdict": table["verdict"].value_counts().to_dict(),
    }
    with DagsterInstance.from_config(str(drafted.dagster_home)) as instance:  # the timing is the asset's metadata
        event = instance.get_latest_materialization_event(AssetKey("drafted_questions"))
        stats = event.asset_materialization.metadata["drafting"].value
        candidates = event.asset_materialization.metadata["candidates"].value
    lm = GeneratorResource().get()
    t0 = time.perf_counter()
    judge = _judge_written(truth["w"], Drafter(lm, OutputCache(drafted.draft_cache, lm.identity)), judge_sample)
    n = len(hits["d"])
    return {
        "dataset": str(dataset),
        "questions": {"written": len(hits["w"]), "drafted": n},
        "tau_r4": agreement.tau_with_interval(hits["w"], hits["d"], "recall"),
        "tau_mrr": agreement.tau_with_interval(hits["w"], hits["d"], "rr"),
        "close_tau": {
            m: agreement.tau_with_interval(agreement.close(hits["w"]), agreement.close(hits["d"]), m)
            for m in ("recall", "rr")
        },
        "unjudged_tau": {
            m: {
                "questions": len(hits["u"]),
                "all": agreement.tau_with_interval(hits["w"], hits["u"], m),
                "close": agreement.tau_with_interval(agreement.close(hits["w"]), agreement.close(hits["u"]), m),
            }
            for m in ("recall", "rr")
        },
        "written_subsets": {m: agreement.disjoint_tau(hits["w"], n, m) for m in ("recall", "rr")},
        "written_subsets_close": {
            m: agreement.disjoint_tau(agreement.close(hits["w"]), n, m) for m in ("recall", "rr")
        },
        "drafted_subsets": {
            m: [agreement.subsample_tau(hits["w"], hits["d"], k, m) for k in (n // 4, n // 2, n)]
            for m in ("recall", "rr")
        },
        "verdicts": agreement.verdicts(
            written.read_table("significance_report"), drafted.read_table("significance_report")
        ),
        "written": {**_gaps(hits["w"]), **_overlaps(truth["w"])},
        "drafted": {**_gaps(hits["d"]), **_overlaps(truth["d"])},
        "judge_written": {**judge, "seconds": time.perf_counter() - t0},
        "judge_drafted": _judge_drafted(table),
        "side_by_side": _side_by_side(table, truth["w"]),
        "drafting": meta,
        "candidates": candidates,
        "drafting_stats": stats,
        "run_seconds": seconds,
    }


def _tau(t: dict) -> str:
    return f"{t.get('tau', t.get('tau_median')):.3f} [{t['ci_low']:.3f}, {t['ci_high']:.3f}]"


def _report(r: dict) -> None:
    print(f"\n== {r['dataset']}: {r['questions']['written']} written, {r['questions']['drafted']} drafted questions")
    for name, metric in (("tau_r4", "recall"), ("tau_mrr", "rr")):
        t, w = r[name], r["written_subsets"][metric]
        trend = ", ".join(f"{d['questions']}: {_tau(d)}" for d in r["drafted_subsets"][metric])
        print(
            f"  Kendall tau ({name[4:]}) over {t['configurations']} configurations: drafted vs written {_tau(t)}; "
            f"{w['questions']} written vs the other {w['against']} written {_tau(w)}; drafted subsets vs all "
            f"written ({trend})"
        )
        c, wc = r["close_tau"][metric], r["written_subsets_close"][metric]
        print(
            f"    close configurations only ({'-'.join(agreement.CLOSE_STRATEGIES[::3])} x retrievers, "
            f"{c['configurations']}): drafted vs written {_tau(c)}; {wc['questions']} written vs the other "
            f"{wc['against']} {_tau(wc)}"
        )
        u = r["unjudged_tau"][metric]
        print(
            f"    without the judge ({u['questions']} questions, those it dropped kept): all {_tau(u['all'])}, "
            f"close {_tau(u['close'])}"
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
            f"question-needle overlap mean {g['mean_overlap']:.3f}, "
            f"p10/p50/p90 {'/'.join(f'{x:.2f}' for x in g['overlap_p10_p50_p90'])}"
        )
    j = r["judge_written"]
    print(
        f"  judge on {j['questions']} written questions: keeps {j['kept']} ({j['kept_share']:.2f} "
        f"[{j['ci_low']:.2f}, {j['ci_high']:.2f}]), Spearman(margin, overlap) {j['spearman_margin_overlap']:+.2f} "
        f"({j['seconds']:.0f} s)"
    )
    d = r["judge_drafted"]
    print(
        f"  judge on the drafted set: {d['judged']} judged, {d['not_answered']} phrasings dropped, "
        f"Spearman(margin, overlap) {d['spearman_margin_overlap']:+.2f}"
    )
    print(f"  candidates: {json.dumps(r['candidates'])}")
    print(f"  drafting: {json.dumps(r['drafting'])}")
    print(f"  drafting stats: {json.dumps(r['drafting_stats'])}")
    print(f"  run seconds: {json.dumps({k: round(s, 1) for k, s in r['run_seconds'].items()})}")
    for p in r["side_by_side"]:
        print(f"  needle: {p['needle']}\n    written: {p['written']}")
        for style, query in p["drafted"].items():
            print(f"    drafted ({style}): {query}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", action="append", type=Path)
    p.add_argument("--out", type=Path)
    p.add_argument("--draft-questions", type=int, default=400)
    p.add_argument("--judge-sample", type=int, default=120, help="written questions the judge is tried on")
    p.add_argument("--reuse", action="store_true", help="keep the evaluations already under --out")
    p.add_argument("--json", type=Path, help="also write every figure to this file")
    args = p.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in args.dataset or [BUNDLED_DATASET]:
            root = (args.out or Path(tmp)) / dataset.name
            results.append(compare(dataset, root, args.draft_questions, args.reuse, args.judge_sample))
    for r in results:
        _report(r)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
