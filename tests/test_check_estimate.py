"""`check`'s estimate is the work sampled and extrapolated: a model that takes a fixed time per token
is estimated at that time for every distinct text the run will embed, less what the cache holds."""

import time

import numpy as np

from rag_assets.experiment import estimate, spec

PER_TOKEN_S = 0.0004


class Timed:
    """A model that takes PER_TOKEN_S for each word it encodes."""

    window = 256

    def count_tokens(self, texts, special_tokens=True):
        return np.array([len(t.split()) for t in texts])

    def encode(self, texts, query=False):
        time.sleep(PER_TOKEN_S * sum(len(t.split()) for t in texts))
        return np.zeros((len(texts), 4), dtype=np.float32)


def test_the_estimate_extrapolates_what_it_timed_to_every_text_not_cached(tmp_path):
    path = tmp_path / "experiment.yaml"
    path.write_text(
        "chunkers:\n  E: E\n  b512: {cut: boundaries, size: 512}\nembedders: [minilm]\nretrievers: [hybrid]\n"
    )
    experiment = spec.load(path)
    texts = {  # b512's chunks repeat two of E's: each distinct text is embedded once
        ("E", "minilm"): [f"passage {i} " + "word " * (20 + i % 60) for i in range(300)],
        ("b512", "minilm"): [f"passage {i} " + "word " * (20 + i % 60) for i in range(298, 400)],
    }
    distinct = set(texts["E", "minilm"]) | set(texts["b512", "minilm"])
    tokens = sum(len(t.split()) for t in distinct)
    made = estimate.estimate(experiment, texts, {"minilm": Timed()}, {}, ["a question?"], lambda m, t: set(), 400)
    embed = made.parts["embed with minilm"] - 400 * 16 * PER_TOKEN_S  # less its questions, at the shortest rate
    assert 0.8 < embed / (tokens * PER_TOKEN_S) < 1.6  # the sample's own overheads count against it
    half = set(sorted(distinct)[: len(distinct) // 2])
    cached = estimate.estimate(experiment, texts, {"minilm": Timed()}, {}, ["a question?"], lambda m, t: half, 400)
    assert cached.parts["embed with minilm"] < made.parts["embed with minilm"] * 0.75
    assert "configurations (chunk, index, rank, time 100 questions)" in made.parts and made.parts["slowdown"] > 0
    assert estimate.minutes(45) == "50 s" and estimate.minutes(600) == "10 min" and estimate.minutes(7200) == "2.0 h"
