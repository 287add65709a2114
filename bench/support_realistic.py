"""The support check on sentences written as a model writes them, which the check was not built from.

    python bench/support_realistic.py [--set en] [--judge-url URL --judge-model NAME]
    python bench/support_realistic.py --summary heldout3     # every language's held-out set 3, one row each
    python bench/support_realistic.py --summary heldout4 --tolerate 1   # what a paraphrase budget would cost

`bench/data/support_realistic_<set>.jsonl` holds answers hand-written against the source paragraphs
of `bench/data/support_realistic_sources.json`, each labelled supported (a correct paraphrase: an
abbreviation, a unit's symbol, a number in words, a pronoun resolved, a voice changed, ...) or
unsupported (an antonym, a wrong short word, a comparative, an ordinal, a frequency or quantifier
changed, a claim only the question holds, content the source does not mention, ...), with the kind
and the reason. Sets: en, bg, de (written while the check was rebuilt, and read then); ru, el,
en_unseen, bg_unseen, de_unseen (written by helpers that never saw the check, first run once it was
written, then read); en_heldout, bg_heldout, de_heldout, ru_heldout, el_heldout (written the same
way after those were read, on three new paragraphs per language; docs/answering.md gives their first
run); <language>_heldout2 for all five (written the same way for issue 49, on three more paragraphs
per language y_<language>_1..3, run once unfitted after its rules were committed, then read and
fitted); <language>_heldout3 for all five (written by a helper that saw neither the check nor its
output, on paragraphs z_<language>_1..3, after the first round of issue 49's rules; run once, then
read and fitted); <language>_heldout4 (w_<language>_1..3; the same after the second round) and
<language>_heldout5 (v_<language>_1..3; the same after the last rule, run once and not read). Each answer is
checked as `ask` checks it, against its source cited as [1], with its question. Prints per kind and
overall the share of unsupported answers flagged and of supported answers passed, with Wilson 95 %
intervals; how many were flagged at the upper level (UNSUPPORTED, a contradiction); and each miss.
--summary GROUP prints one row per language for the sets <language>_GROUP (GROUP `fitted`: en, bg,
de, ru, el): correct answers passed, UNSUPPORTED on correct answers, falsehoods flagged at either level
and at UNSUPPORTED, without the misses. --tolerate K counts as passed a sentence whose only misses
are at most K single words NOT IN SOURCE (no number, name or annotation): the budget a rule would
need to pass paraphrased verbs and nouns, and what it would let through.
With --judge-url each sentence is also put to that OpenAI-compatible endpoint's model
(rag_assets.answering.judge), whose own shares are printed too.

This bench imports nothing of rag_assets.answering.support but `check_support`
(tests/test_support_bench.py holds it to that): its inputs are written by hand, not from the
check's word lists.
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path

from rag_assets.answering.judge import Judge
from rag_assets.answering.support import check_support
from rag_assets.stats import wilson

DATA = Path(__file__).resolve().parent / "data"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--set",
        default="en",
        help="which set: en, bg, de, ru, el, <language>_unseen (en, bg, de), <language>_heldout and "
        "<language>_heldout2 to <language>_heldout5 (all five)",
    )
    p.add_argument("--summary", metavar="GROUP", help="one row per language for <language>_GROUP (or `fitted`)")
    p.add_argument("--tolerate", type=int, default=0, help="with --summary: pass up to K plain words NOT IN SOURCE")
    p.add_argument("--judge-url", help="also ask the model at this OpenAI-compatible API base, per sentence")
    p.add_argument("--judge-model", help="its name on --judge-url")
    args = p.parse_args()
    if args.summary:
        return summary(args.summary, args.tolerate)
    judge = Judge(args.judge_url, args.judge_model, 120) if args.judge_url else None
    judged = defaultdict(list)  # label -> [the judge agreed with the label]
    sources = json.loads((DATA / "support_realistic_sources.json").read_text(encoding="utf-8"))
    lines = (DATA / f"support_realistic_{args.set}.jsonl").read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines if line.strip()]
    right = defaultdict(list)  # (label, kind) -> [the check agreed with the label]
    contradicted = defaultdict(list)  # label -> [some sentence was UNSUPPORTED, the upper level]
    misses = []
    for case in cases:
        verdicts = checked(case, sources)
        source = sources[case["source"]]
        flagged = any(not v.supported for v in verdicts)
        contradicted[case["label"]].append(any(v.verdict == "UNSUPPORTED" for v in verdicts))
        agreed = flagged == (case["label"] == "unsupported")
        if judge:
            said = judge.verdicts([v.text for v in verdicts], [[source["text"]]] * len(verdicts))
            judged[case["label"]].append(
                any(j["verdict"] != "entailed" for j in said) == (case["label"] == "unsupported")
            )
        right[case["label"], case["kind"]].append(agreed)
        if not agreed:
            missing = "; ".join(f"{v.verdict}: {', '.join(v.missing)}" for v in verdicts if v.missing)
            misses.append(
                f"  {case['id']} ({case['kind']}): {case['answer']}  -- {case['reason']}"
                + (f" [check: {missing}]" if missing else "")
            )
    print(f"| {args.set} | kind | n | share right | 95 % interval |\n|---|---|---|---|---|")
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
    for label in ("unsupported", "supported"):
        said = contradicted[label]
        low, high = wilson(sum(said), len(said))
        share = f"{sum(said)}/{len(said)} | [{low:.2f}, {high:.2f}]"
        print(f"| {label}, all: UNSUPPORTED (a contradiction) | | {len(said)} | {share} |")
    if judge:
        print(f"\njudge: {judge.identity}")
        for label, what in (("unsupported", "flagged"), ("supported", "passed")):
            said = judged[label]
            low, high = wilson(sum(said), len(said))
            print(f"| {label}, judge: {what} | | {len(said)} | {sum(said)}/{len(said)} | [{low:.2f}, {high:.2f}] |")
    print("\nwhere the check and the label disagree:\n" + "\n".join(misses))


def checked(case: dict, sources: dict) -> list:
    source = sources[case["source"]]
    return check_support(case["answer"], [], {1: source["text"]}, source["language"], question=case["question"])


def summary(group: str, tolerate: int = 0) -> None:
    """One row per language: the shares the issue's bars are set on, with Wilson intervals."""

    def passes(said: list) -> bool:
        plain = [m for v in said for m in v.not_in_source if m.isalpha() and m[:1].islower()]
        return not any(v.contradicted for v in said) and sum(len(v.not_in_source) for v in said) <= min(
            len(plain), tolerate
        )

    sources = json.loads((DATA / "support_realistic_sources.json").read_text(encoding="utf-8"))
    print(f"| {group} | correct passed | UNSUPPORTED on correct | falsehoods flagged | falsehoods UNSUPPORTED |")
    print("|---|---|---|---|---|")
    total: dict[str, list] = defaultdict(list)
    for language in ("en", "de", "bg", "ru", "el"):
        path = DATA / f"support_realistic_{language if group == 'fitted' else f'{language}_{group}'}.jsonl"
        if not path.exists():
            continue
        cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        row: dict[str, list] = defaultdict(list)
        for case in cases:
            said = checked(case, sources)
            if case["label"] == "supported":
                row["passed"].append(passes(said))
                row["strong on correct"].append(any(v.verdict == "UNSUPPORTED" for v in said))
            else:
                row["flagged"].append(not passes(said))
                row["strong on false"].append(any(v.verdict == "UNSUPPORTED" for v in said))
        for key, values in row.items():
            total[key] += values
        print(f"| {language} | " + " | ".join(_share(row[k]) for k in _COLUMNS) + " |")
    print("| **all** | " + " | ".join(_share(total[k]) for k in _COLUMNS) + " |")


_COLUMNS = ("passed", "strong on correct", "flagged", "strong on false")


def _share(values: list) -> str:
    low, high = wilson(sum(values), len(values))
    return f"{sum(values) / len(values):.2f} ({sum(values)}/{len(values)}) [{low:.2f}, {high:.2f}]"


if __name__ == "__main__":
    main()
