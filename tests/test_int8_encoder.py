"""The int8 encoder: the packaged model, built deterministically, a model of its own, close to
its fp32 twin, and switching to it stales the embeddings through the graph."""

import json
import logging

import numpy as np
import pandas as pd
import pytest

from rag_assets.app.cli import main
from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.retrieval.embedding import LocalEmbedder


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture
def int8(model_cache, monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(model_cache))
    return LocalEmbedder(backend="onnx-int8")


def test_built_twice_the_same_file_and_identity_never_the_fp32_one(int8, tmp_path, monkeypatch, caplog):
    fp32 = LocalEmbedder()
    assert int8.identity != fp32.identity and int8.identity.startswith(fp32.name + "+onnx-int8@sha256:")
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(tmp_path))  # an empty cache: built again from the weights
    again = LocalEmbedder(backend="onnx-int8")
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]  # a first run's build is quiet
    assert again.onnx_file != int8.onnx_file and again.onnx_file.read_bytes() == int8.onnx_file.read_bytes()
    assert again.identity == int8.identity
    with pytest.raises(ValueError, match="unknown embedder backend 'onnx'"):
        LocalEmbedder(backend="onnx")


def test_vectors_are_unit_length_and_close_to_their_fp32_twins(int8):
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    texts = chunk_corpus(snap, STRATEGIES["E"])["text"].tolist()[::8]
    texts += ["", "x " * 2000]  # empty, and far past the window: truncated as sentence-transformers does
    a, b = int8.encode(texts), LocalEmbedder().encode(texts)
    assert a.shape == b.shape == (len(texts), 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cos = (a * b).sum(axis=1)
    assert cos.min() > 0.95 and np.quantile(cos, 0.5) > 0.98, (cos.min(), np.quantile(cos, 0.5))
    assert np.array_equal(int8.encode(texts[:5]), a[:5])  # batch composition does not change a vector


def test_each_model_has_its_own_partitions_and_ask_serves_from_the_one_it_names(
    tiny_dataset, tmp_path, model_cache, monkeypatch, capsys
):
    """The fp32 and int8 encoders are two models: each writes its own partitions, neither stales the
    other's, and `ask --embedder` searches the named model's vectors with that model's queries."""
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(model_cache))
    data_dir = tmp_path / "data"
    run = ["run", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir), "--strategies", "C", "--no-llm"]
    assert main([*run, "--models", "minilm-fp32"]) == 0
    fp32 = pd.read_parquet(data_dir / "assets" / "embeddings" / "minilm-fp32" / "C.parquet")
    assert fp32["model_id"].str.fullmatch(r"sentence-transformers/all-MiniLM-L6-v2@sha256:\w+").all()
    capsys.readouterr()
    assert main(run) == 0  # the default: int8
    out = capsys.readouterr().out
    assert "new source versions: embedding_model[minilm]" in out and "embeddings[minilm|C]" in out
    vectors = pd.read_parquet(data_dir / "assets" / "embeddings" / "minilm" / "C.parquet")
    assert vectors["model_id"].str.contains(r"\+onnx-int8@sha256:").all()
    assert pd.read_parquet(data_dir / "assets" / "embeddings" / "minilm-fp32" / "C.parquet").equals(fp32)
    ask = ["ask", "Which way must the valve face?", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir)]
    for model in ("minilm", "minilm-fp32"):
        assert main([*ask, "--strategy", "C", "--embedder", model, "--answerer", "extractive", "--json"]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert not answer["refused"] and "north" in answer["answer"], model
    assert main([*ask, "--strategy", "C", "--embedder", "me5-small"]) == 2  # never materialised: refused
    err = capsys.readouterr().err
    assert "embeddings[me5-small|C] has never been materialised" in err
    assert "--embedder minilm | minilm-fp32" in err  # the models that can answer
