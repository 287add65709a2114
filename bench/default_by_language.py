"""What the default settings (no `--models`) give per language, against the alternatives and
against English: XQuAD English and German (the same 1,190 questions, translated by professionals,
so German is paired with English by question) and the Bulgarian chapter (48 questions written for
it; no English twin exists, so its comparison with English is unpaired).

    python bench/default_by_language.py [--work DIR] [--alternatives minilm,me5-small,me5-small-int8]

Each set is materialised by the product twice, strategy E, every question:
    rag-assets run --dataset D --data-dir W/D-default --strategies E --no-llm --full-ground-truth
    rag-assets run ... --data-dir W/D-alternatives --models ALTERNATIVES
and prints: the model the default run chose and why; R@4 by question of every retriever of both runs;
German against English (default hybrid in each language, exact sign test by question); the default
against the English-only MiniLM's hybrid (the default before the model followed the corpus), paired.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from common import imported_xquad, materialise_e  # noqa: E402

from rag_assets.catalog import PROJECT_ROOT  # noqa: E402
from rag_assets.evaluation import comparisons, metric_tables  # noqa: E402
from rag_assets.layout import DataDir  # noqa: E402

BULGARIAN = PROJECT_ROOT / "data" / "bulgarian_chapter"


def materialise(dataset: Path, data: Path, models: str | None) -> DataDir:
    t0 = time.perf_counter()
    layout, printed = materialise_e(dataset, data, models)
    chosen = next((line for line in printed.splitlines() if line.startswith("embedding models:")), "")
    print(f"{data.name}: {time.perf_counter() - t0:.0f} s; {chosen}", flush=True)
    return layout


def hits_of(default: DataDir, alternatives: DataDir) -> dict[str, pd.DataFrame]:
    """retriever -> its per-query hits on strategy E; the default run's are `default:hybrid` and so on."""
    out = {}
    for prefix, layout in (("default:", default), ("", alternatives)):
        hits = layout.read_table("query_hits")
        for retriever, group in hits[hits["strategy"] == "E"].groupby("retriever"):
            out[prefix + retriever] = group
    return out


def recall(hits: pd.DataFrame) -> tuple[float, float, float]:
    """R@4 by question with its interval, as the lab's evaluation tables count it."""
    table = metric_tables.metric_table(hits, {})
    row = table[(table["metric"] == "recall") & (table["k"] == 4)].iloc[0]
    return float(row["value"]), float(row["ci_low"]), float(row["ci_high"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/rag-assets-default-languages"))
    p.add_argument("--alternatives", default="minilm,me5-small,me5-small-int8")
    args = p.parse_args()
    if not args.alternatives.startswith("minilm,"):
        sys.exit("--alternatives starts with minilm: its hybrid is the default before, `hybrid` in that run")
    args.work.mkdir(parents=True, exist_ok=True)
    sets = {"en": imported_xquad(args.work, "en"), "de": imported_xquad(args.work, "de"), "bg": BULGARIAN}
    hits = {}
    for lang, dataset in sets.items():
        default = materialise(dataset, args.work / f"{lang}-default", None)
        alternatives = materialise(dataset, args.work / f"{lang}-alternatives", args.alternatives)
        hits[lang] = hits_of(default, alternatives)
        record = json.loads((default.root / "models.json").read_text())
        print(f"  {lang}: default {record['models']} ({record['reason']})")

    print("\n## R@4 by question, strategy E (95 % interval); `default:` is the run with no --models\n")
    retrievers = sorted(set().union(*hits.values()))
    print("| retriever | " + " | ".join(sets) + " |\n|---|" + "---|" * len(sets))
    for r in retrievers:
        cells = ["{:.3f} [{:.2f}, {:.2f}]".format(*recall(hits[lang][r])) if r in hits[lang] else "—" for lang in sets]
        print(f"| {r} | " + " | ".join(cells) + " |")

    print("\n## German against English, default hybrid in each (paired by question, exact sign test)\n")
    pairs = [({"pair": "de default vs en default"}, hits["de"]["default:hybrid"], hits["en"]["default:hybrid"])]
    pairs += [({"pair": "de default vs en minilm hybrid"}, hits["de"]["default:hybrid"], hits["en"]["hybrid"])]
    table = comparisons.compare_paired(pairs, ["pair"], ks=(4,))
    table["net_loss"] = (table["losses"] - table["wins"]) / table["n_questions"]  # a share of the questions
    columns = ["pair", "wins", "losses", "n_questions", "recall_a", "recall_b", "net_loss", "p_value"]
    print(table[columns].round(4).to_string(index=False))

    print("\n## The default against English-only MiniLM's hybrid (the default before), same questions\n")
    pairs = [({"language": lang}, hits[lang]["default:hybrid"], hits[lang]["hybrid"]) for lang in sets]
    table = comparisons.compare_paired(pairs, ["language"], ks=(4,))
    print(
        table[["language", "wins", "losses", "recall_a", "recall_b", "p_value", "p_holm"]]
        .round(4)
        .to_string(index=False)
    )

    print("\n## Bulgarian against English, unpaired (no English twin of the chapter)\n")
    bg, en = recall(hits["bg"]["default:hybrid"]), recall(hits["en"]["default:hybrid"])
    print(f"default hybrid R@4: bg {bg[0]:.3f} [{bg[1]:.2f}, {bg[2]:.2f}], en {en[0]:.3f} [{en[1]:.2f}, {en[2]:.2f}]")


if __name__ == "__main__":
    main()
