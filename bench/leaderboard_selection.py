"""How often identical configurations are called "worse than the best": the leaderboard's test
(the best chosen on one half of the questions, tested against on the other) against choosing and
testing on the same questions, on simulated leaderboards where every configuration is the same
system.

    python bench/leaderboard_selection.py [--draws 1000] [--questions 400] [--configs 12 30] [--p 0.9 0.7]

Each draw: `configs` configurations whose every question is a hit with probability `p`,
independently per configuration and question. Printed per setting: the share of draws in which any
configuration is called worse (the family's error rate, which Holm bounds by α = 0.05 when the test
is valid), and the share of all comparisons called worse. The same-data test is written here, not
taken from the project: the sign test and Holm are scipy's and the textbook's.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).parent.parent))
from rag_assets.experiment.leaderboard import against_best  # noqa: E402

ALPHA = 0.05


def holm(p: list[float]) -> np.ndarray:
    order = np.argsort(p)
    adjusted, running = np.empty(len(p)), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def same_data(scores: pd.DataFrame) -> int:
    """Comparisons called worse when the best is chosen on, and tested on, every question."""
    best = scores.mean().idxmax()
    p, worse = [], []
    for c in scores.columns:
        if c == best:
            continue
        wins, losses = int((scores[c] > scores[best]).sum()), int((scores[c] < scores[best]).sum())
        p.append(binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0)
        worse.append(losses > wins)
    return int(((holm(p) < ALPHA) & np.array(worse)).sum())


def split(scores: pd.DataFrame) -> int:
    _, tests = against_best(scores)
    return int(((tests["p_holm"] < ALPHA) & (tests["losses"] > tests["wins"])).sum())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument("--configs", type=int, nargs="+", default=[12, 30])
    ap.add_argument("--p", type=float, nargs="+", default=[0.9, 0.7])
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    index = pd.Index([f"q{i}" for i in range(args.questions)])
    print(f"{args.draws} draws of {args.questions} questions, every configuration the same system")
    print("configs  p(hit)  test        draws with a false 'worse'  comparisons called worse")
    for n in args.configs:
        for p in args.p:
            counts = {"same questions": [], "split (ours)": []}
            for _ in range(args.draws):
                columns = [f"c{i:02d}" for i in range(n)]
                scores = pd.DataFrame((rng.random((args.questions, n)) < p).astype(float), index=index, columns=columns)
                counts["same questions"].append(same_data(scores))
                counts["split (ours)"].append(split(scores))
            for test, worse in counts.items():
                worse = np.array(worse)
                share = worse.sum() / (args.draws * (n - 1))
                print(f"{n:7d}  {p:6.2f}  {test:14s}  {np.mean(worse > 0):26.3f}  {share:.4f}")


if __name__ == "__main__":
    main()
