"""How the extractive answerer should choose its sentence: each scoring rule on the same sources.

    python bench/extractive_scoring.py --data-dir data [--strategy E] [--questions 400]

`--data-dir`: where `rag-assets run` materialised the serving strategy. Every answerable
question with reference answers (one phrasing each) is retrieved with hybrid and gated as `ask`
does; each rule (`dense`, `lexical`, `hybrid`, `first`) then picks one sentence of the same
sources. Printed per rule: the share of questions whose sentence contains a reference answer
(SQuAD normalisation), with its Wilson interval; the share whose sentence overlaps the needle;
mean token F1; ms per question; and each rule paired against the best one (exact sign test on the
questions where exactly one of the two contains the answer).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

from rag_assets import stats
from rag_assets.answering import scoring
from rag_assets.answering.answerer import Answerer
from rag_assets.answering.extractive import SCORINGS, Extractive
from rag_assets.ingest.access import ALL_TENANTS
from rag_assets.layout import DataDir

sys.path.insert(0, str(Path(__file__).parent))
from common import served_index  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--strategy", default="E")
    p.add_argument("--questions", type=int, default=400)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    index, chunks, embedder = served_index(args.data_dir, args.strategy)
    truth = DataDir(Path(args.data_dir)).read_table("ground_truth")
    asked = truth[(truth["kind"] == "answerable") & truth["answers"].map(lambda a: a is not None and len(a) > 0)]
    asked = asked.drop_duplicates("question_id").head(args.questions)
    rows = {}
    for rule in SCORINGS:
        writer = Extractive(embedder, rule)
        answerer = Answerer(index, chunks, embedder, writer, tenant=ALL_TENANTS)
        t0 = time.perf_counter()
        answers = answerer.ask_many(asked["query"].tolist())
        ms = (time.perf_counter() - t0) * 1000 / len(asked)
        got = []
        for q, a in zip(asked.itertuples(), answers):
            text = "" if a.answer is None else a.answer.removesuffix(" [1]")
            quote = a.citations[0].quote if a.citations else ""
            got.append(
                {
                    "contains": scoring.contains_answer(text, list(q.answers)),
                    "needle": bool(quote) and (quote in q.needle or q.needle in quote),
                    "f1": scoring.token_f1(text, list(q.answers)),
                    "answered": a.answer is not None,
                }
            )
        rows[rule] = (pd.DataFrame(got), ms)
    best = max(rows, key=lambda r: rows[r][0]["contains"].mean())
    n = len(asked)
    print(f"{n} answerable questions, strategy {args.strategy}, hybrid retrieval, gate as `ask`")
    print("| rule | contains answer | 95 % interval | sentence is the needle | F1 | ms/question", end="")
    print(" | vs best: wins/losses, p |")
    print("|---|---|---|---|---|---|---|")
    for rule, (got, ms) in rows.items():
        hits = int(got["contains"].sum())
        low, high = stats.wilson(hits, n)
        versus = ""
        if rule != best:
            b = rows[best][0]["contains"]
            wins, losses = int((got["contains"] & ~b).sum()), int((~got["contains"] & b).sum())
            versus = f"{wins}/{losses}, p = {stats.sign_test(wins, losses):.3g}"
        print(
            f"| {rule} | {hits / n:.3f} ({hits}/{n}) | [{low:.3f}, {high:.3f}] | {got['needle'].mean():.3f} | "
            f"{got['f1'].mean():.3f} | {ms:.0f} | {versus} |"
        )
    print(f"answered (past the gate): {int(rows[best][0]['answered'].sum())}/{n}; best rule: {best}")


if __name__ == "__main__":
    main()
