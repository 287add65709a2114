"""`ask` cold and warm, with each answerer, on a materialised data dir.

    python bench/ask_latency.py --data-dir data [--cold 3] [--warm 30] [--answerers extractive,generate]

Cold: `rag-assets ask --json` as a new process, `--cold` times per answerer (the operating
system's file cache is warm after the first): wall time, and the stages the answer reports
(loading the generator, retrieval, context, answering); what is left of the wall time is the
process start (imports, reading the instance, the freshness check, opening the index).
Warm: one process, the index and models loaded once, `--warm` answerable questions of the
ground truth asked one at a time: p50 and p95 of each stage and of the whole answer.
"""

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from rag_assets.answering.answerer import build_answerer
from rag_assets.answering.generation import LocalLM
from rag_assets.ingest.access import ALL_TENANTS

sys.path.insert(0, str(Path(__file__).parent))
from common import answerable_questions, served_index  # noqa: E402

QUESTION = "What is an example of a rotary engine without pistons?"
STAGES = ("load_ms", "retrieval_ms", "context_ms", "generation_ms")  # generation_ms: the answerer's own time
NAMES = {"load_ms": "load", "retrieval_ms": "retrieval", "context_ms": "context", "generation_ms": "answer"}


def cold(data_dir: str, answerer: str, runs: int) -> None:
    walls, stages = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "rag_assets.app.cli", "ask", "--data-dir", data_dir, "--json", "--all-tenants"]
            + ["--answerer", answerer, QUESTION],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        walls.append(time.perf_counter() - t0)
        answer = json.loads(out)
        stages.append([answer[s] / 1000 for s in STAGES])
    wall, parts = float(np.median(walls)), np.median(np.array(stages), axis=0)
    named = ", ".join(f"{NAMES[s]} {v:.2f} s" for s, v in zip(STAGES, parts))
    start = wall - parts.sum()
    print(f"| {answerer} | cold | {wall:.1f} s wall (median of {runs}): {named}; process start {start:.1f} s |")


def warm(data_dir: str, answerer: str, questions: list[str], strategy: str) -> None:
    index, chunks, embedder = served_index(data_dir, strategy)
    asker = build_answerer(index, chunks, embedder, LocalLM(), answerer=answerer, tenant=ALL_TENANTS)
    asker.ask(questions[0])  # loads what this answerer needs
    totals, stages = [], []
    for q in questions:
        t0 = time.perf_counter()
        a = asker.ask(q)
        totals.append((time.perf_counter() - t0) * 1000)
        stages.append([getattr(a, s) for s in STAGES[1:]])
    parts = np.percentile(np.array(stages), 50, axis=0)
    named = ", ".join(f"{NAMES[s]} {v:.1f} ms" for s, v in zip(STAGES[1:], parts))
    print(
        f"| {answerer} | warm | answer p50 {np.percentile(totals, 50):.1f} ms, p95 {np.percentile(totals, 95):.1f} ms "
        f"over {len(questions)} questions; stage p50: {named} |"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--strategy", default="E")
    p.add_argument("--cold", type=int, default=3)
    p.add_argument("--warm", type=int, default=30, help="questions asked warm (0: cold only)")
    p.add_argument("--answerers", default="extractive,generate")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    questions = answerable_questions(args.data_dir)[: args.warm]
    print("| answerer | mode | figures |\n|---|---|---|")
    for answerer in args.answerers.split(","):
        cold(args.data_dir, answerer, args.cold)
        if questions:
            warm(args.data_dir, answerer, questions, args.strategy)


if __name__ == "__main__":
    main()
