"""Chunks/s of every packaged embedding model, in one run on the same texts.

    python bench/encoder_speed.py [--chunks 200] [--rounds 3] [--models minilm,me5-small,...]

The texts are real chunks (strategy E) of the bundled corpus (English) and of the Bulgarian
chapter, embedded as passages; each round embeds them with every model in turn (the machine is
shared and noisy: the rounds alternate, the medians and their ratio to the default English model
are what to read). Weights load, and int8 files build, before the first round.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import bundled_chunks  # noqa: E402

from rag_assets import catalog  # noqa: E402
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus  # noqa: E402
from rag_assets.ingest import corpus  # noqa: E402
from rag_assets.retrieval import packaged  # noqa: E402

BULGARIAN = catalog.PROJECT_ROOT / "data" / "bulgarian_chapter" / "documents"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--chunks", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--models", default=",".join(catalog.PACKAGED))
    args = p.parse_args()
    names = catalog.model_names(args.models)
    english = bundled_chunks("E")[1]["text"].tolist()[: args.chunks]
    bulgarian = (chunk_corpus(corpus.snapshot(BULGARIAN), STRATEGIES["E"])["text"].tolist() * 8)[: args.chunks]
    models = {name: packaged.embedder(name) for name in names}
    for model in models.values():
        model.encode(english[:8])  # load and warm up
    rates = {(name, lang): [] for name in names for lang in ("en", "bg")}
    for _ in range(args.rounds):
        for name, model in models.items():
            for lang, texts in (("en", english), ("bg", bulgarian)):
                t0 = time.perf_counter()
                model.encode(texts)
                rates[name, lang].append(len(texts) / (time.perf_counter() - t0))
    base = {lang: statistics.median(rates[catalog.DEFAULT_EMBEDDER, lang]) for lang in ("en", "bg")}
    print(f"{args.chunks} chunks each (strategy E), median of {args.rounds} alternating rounds:")
    print("| model | backend | chunks/s en | chunks/s bg | against minilm en | against minilm bg |")
    print("|---|---|---|---|---|---|")
    for name in names:
        en, bg = (statistics.median(rates[name, lang]) for lang in ("en", "bg"))
        print(
            f"| {name} | {catalog.PACKAGED[name].backend} | {en:.1f} | {bg:.1f} | "
            f"{en / base['en']:.2f} | {bg / base['bg']:.2f} |"
        )


if __name__ == "__main__":
    main()
