"""The support check on sentences written as a model writes them, which the check was not built from.

    python bench/support_realistic.py [--language en]

`bench/data/support_realistic_<language>.jsonl` holds answers hand-written against the source
paragraphs of `bench/data/support_realistic_sources.json`, each labelled supported (a correct
paraphrase: an abbreviation, a unit's symbol, a number in words, a pronoun resolved, a voice
changed, ...) or unsupported (an antonym, a wrong short word, a comparative, an ordinal, a
frequency or quantifier changed, a claim only the question holds, content the source does not
mention, ...), with the kind and the reason. Each answer is checked as `ask` checks it, against its
source cited as [1], with its question. Prints per kind and overall: the share of unsupported
answers flagged and of supported answers passed, with Wilson 95 % intervals, and each miss.

This bench imports nothing of rag_assets.answering.support but `check_support`
(tests/test_support_bench.py holds it to that): its inputs are written by hand, not from the
check's word lists.
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path

from rag_assets.answering.support import check_support
from rag_assets.stats import wilson

DATA = Path(__file__).resolve().parent / "data"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--language", default="en")
    args = p.parse_args()
    sources = json.loads((DATA / "support_realistic_sources.json").read_text(encoding="utf-8"))
    lines = (DATA / f"support_realistic_{args.language}.jsonl").read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines if line.strip()]
    right = defaultdict(list)  # (label, kind) -> [the check agreed with the label]
    misses = []
    for case in cases:
        source = sources[case["source"]]
        verdicts = check_support(case["answer"], [], {1: source["text"]}, source["language"], question=case["question"])
        flagged = any(not v.supported for v in verdicts)
        agreed = flagged == (case["label"] == "unsupported")
        right[case["label"], case["kind"]].append(agreed)
        if not agreed:
            missing = "; ".join(m for v in verdicts for m in v.missing)
            misses.append(
                f"  {case['id']} ({case['kind']}): {case['answer']}  -- {case['reason']}"
                + (f" [check: {missing}]" if missing else "")
            )
    print(f"| {args.language} | kind | n | share right | 95 % interval |\n|---|---|---|---|---|")
    for label, what in (("unsupported", "flagged"), ("supported", "passed")):
        kinds = sorted(k for lab, k in right if lab == label)
        for kind in kinds:
            agreed = right[label, kind]
            low, high = wilson(sum(agreed), len(agreed))
            print(f"| {label} | {kind} | {len(agreed)} | {sum(agreed)}/{len(agreed)} | [{low:.2f}, {high:.2f}] |")
        every = [a for (lab, _), agreed in right.items() if lab == label for a in agreed]
        low, high = wilson(sum(every), len(every))
        share = f"**{sum(every) / len(every):.2f}** ({sum(every)}/{len(every)})"
        print(f"| **{label}, all: {what}** | | {len(every)} | {share} | [{low:.2f}, {high:.2f}] |")
    print("\nwhere the check and the label disagree:\n" + "\n".join(misses))


if __name__ == "__main__":
    main()
