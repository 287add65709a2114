"""The support check's false alarms and detections, on the packaged generator's real answers.

    python bench/support_check.py --data-dir data [--answerable 100] [--unanswerable 40] [--out-of-domain 36]

`--data-dir`: where `rag-assets run` materialised the serving strategy. A seeded sample of the
ground truth (one phrasing per question; defaults: 100 answerable, 40 unanswerable and every
out-of-domain question) is answered by the generator through the `ask` path (answers cached in the
data dir, so a rerun decodes nothing). Each answer is checked again with long words from 7, 8, 9,
10 letters and with no long words at all, and the script prints for each setting:
- false alarms: the share of answers that contain a reference answer and cite the chunk holding
  the needle ("correct with evidence") that the check flags; the flagged ones are listed for the
  default setting, to read by hand (a correct answer may still add an invented detail);
- miscited: flags whose every missing claim another shown source holds;
- detections: the share flagged among bluffs (answers to unanswerable and out-of-domain questions)
  and among wrong answers to answerable questions.
"""

import argparse
import json
import warnings
from pathlib import Path

from rag_assets.answering.generation import LocalLM
from rag_assets.answering.support import LONG_WORD, check_support
from rag_assets.defs.partitions import model_strategy_key
from rag_assets.defs.resources import embedder_from_env
from rag_assets.evaluation import significance
from rag_assets.evaluation.answer_eval import evaluate_answers
from rag_assets.ingest import ground_truth as gt
from rag_assets.layout import DataDir

SETTINGS = [7, 8, 9, 10, 10_000]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--strategy", default="E")
    p.add_argument("--answerable", type=int, default=100)
    p.add_argument("--unanswerable", type=int, default=40)
    p.add_argument("--out-of-domain", type=int, default=36)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    layout = DataDir(Path(args.data_dir))
    truth = layout.read_table("ground_truth")
    sample = gt.sample(truth, gt.Sample(args.answerable, args.unanswerable, args.out_of_domain, 11))
    sample = sample.drop_duplicates("question_id")
    lm = LocalLM()
    result = evaluate_answers(
        layout,
        args.strategy,
        layout.read_table("chunk_sets", args.strategy),
        layout.read_table("embeddings", model_strategy_key(embedder_from_env().primary, args.strategy)),
        layout.read_table("corpus_snapshot"),
        truth,
        sample,
        embedder_from_env().get(),
        lm,
        0.6,
        1024,
        8,
        ["generate"],
        log=lambda line: None,
    )
    answered = result.scored[result.scored["answer"].map(lambda a: isinstance(a, str)) & ~result.scored["declined"]]
    groups = {
        "correct with evidence (false alarms)": answered[answered["outcome"] == "correct with evidence"],
        "bluffs (unanswerable, out-of-domain)": answered[answered["kind"] != "answerable"],
        "wrong answers to answerable questions": answered[
            answered["outcome"].isin(["generation failure", "retrieval failure"])
        ],
    }
    print(f"{len(sample)} questions, {len(answered)} answered by {lm.identity}; answer cache {result.cache}")
    print("| long words from | " + " | ".join(groups) + " | miscited among false alarms |")
    print("|---|" + "---|" * (len(groups) + 1))
    flagged_examples = []
    for setting in SETTINGS:
        cells, miscited = [], 0
        for name, rows in groups.items():
            flags = 0
            for r in rows.itertuples():
                quotes = {s["index"]: s["quote"] for s in r.sources}
                checked = check_support(r.answer, [r.question, lm.answer_prefix], quotes, long_word=setting)
                bad = [s for s in checked if not s.supported]
                flags += bool(bad)
                if bad and name.startswith("correct"):
                    miscited += all(set(s.missing) == set(s.elsewhere) for s in bad)
                    if setting == LONG_WORD:
                        flagged_examples.append((r.question, r.answer, [s.missing for s in bad]))
            low, high = significance.wilson(flags, len(rows))
            cells.append(f"{flags}/{len(rows)} = {flags / max(len(rows), 1):.2f} [{low:.2f}, {high:.2f}]")
        label = "off" if setting == 10_000 else f"{setting} letters" + (" (default)" if setting == LONG_WORD else "")
        print(f"| {label} | " + " | ".join(cells) + f" | {miscited} |")
    print(f"\nflagged correct-with-evidence answers (long words from {LONG_WORD} letters):")
    for question, answer, missing in flagged_examples:
        print(json.dumps({"question": question, "answer": answer, "missing": missing}, ensure_ascii=False))


if __name__ == "__main__":
    main()
