"""Each packaged model's refusal threshold, calibrated on a fixed public set the lab's figures are
never reported on: XQuAD (../shared/datasets/xquad), the paragraphs of the 38 articles that are
not in the bundled corpus (which holds 10 of SQuAD's dev articles), English for the English-only
models, English and German for the multilingual ones.

    python bench/calibrate_thresholds.py [--refuse 0.04]

Each set is imported by the product (`import_squad`), chunked by strategy E, embedded whole; a
question's distance is its nearest chunk's cosine distance (exact search), what the gate compares.
The threshold is the distance under which all but `--refuse` of the questions fall: the gate then
refuses that share of answerable questions on text like this. Prints, per model, the threshold
and the share refused in each language at it; rag_assets/catalog.py holds the printed values.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rag_assets import catalog
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest.squad import import_squad
from rag_assets.retrieval import packaged

XQUAD = catalog.PROJECT_ROOT.parent / "shared" / "datasets" / "xquad"
BUNDLED_ARTICLES = {
    "Normans",
    "Computational_complexity_theory",
    "Steam_engine",
    "Oxygen",
    "European_Union_law",
    "Packet_switching",
    "Geology",
    "Immune_system",
    "Prime_number",
    "Force",
}


def calibration_set(language: str, work: Path) -> tuple[list[str], list[str]]:
    """(chunk texts, questions) of XQuAD `language` without the bundled corpus's articles."""
    english = json.loads((XQUAD / "xquad.en.json").read_text(encoding="utf-8"))
    kept = [i for i, a in enumerate(english["data"]) if a["title"] not in BUNDLED_ARTICLES]
    source = json.loads((XQUAD / f"xquad.{language}.json").read_text(encoding="utf-8"))
    source["data"] = [source["data"][i] for i in kept]  # the files hold the same articles in one order
    squad = work / f"xquad-{language}.json"
    squad.write_text(json.dumps(source, ensure_ascii=False), encoding="utf-8")
    import_squad(squad, work / language)
    chunks = chunk_corpus(corpus.snapshot(work / language / "documents"), STRATEGIES["E"])
    lines = (work / language / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [q["phrasings"][0] for q in map(json.loads, lines) if q["kind"] == "answerable"]
    return chunks["text"].tolist(), questions


def nearest(model, texts: list[str], questions: list[str]) -> np.ndarray:
    vectors = model.encode(texts)
    return 1.0 - (model.encode(questions, query=True) @ vectors.T).max(axis=1)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--refuse", type=float, default=0.04)
    p.add_argument("--models", default=",".join(catalog.PACKAGED))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sets = {lang: calibration_set(lang, Path(tmp)) for lang in ("en", "de")}
        for lang, (texts, questions) in sets.items():
            print(f"XQuAD {lang} without the bundled articles: {len(texts)} chunks (E), {len(questions)} questions")
        for name in catalog.model_names(args.models):
            spec, t0 = catalog.PACKAGED[name], time.perf_counter()
            model = packaged.embedder(name)
            languages = ("en",) if spec.languages == ("en",) else ("en", "de")
            distances = {lang: nearest(model, *sets[lang]) for lang in languages}
            pooled = np.concatenate(list(distances.values()))
            threshold = float(np.quantile(pooled, 1 - args.refuse))
            refused = ", ".join(f"{lang} {(d >= threshold).mean():.3f}" for lang, d in distances.items())
            print(
                f"{name}: threshold {threshold:.3f} (calibrated on {'+'.join(languages)}, {len(pooled)} questions; "
                f"refused at it: {refused}; catalog now {spec.threshold}) [{time.perf_counter() - t0:.0f} s]",
                flush=True,
            )
    sys.exit(0)


if __name__ == "__main__":
    main()
