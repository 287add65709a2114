"""The embedding cache: only new texts are encoded, a model switch re-encodes everything,
and a run killed mid-way loses no finished batch."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from barrier import wait_at_barrier
from dagster import AssetKey, DagsterInstance

from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.retrieval.embedding import IdentityMismatch, LocalEmbedder, require_identity
from rag_assets.retrieval.embedding_cache import EmbeddingCache


@pytest.fixture(scope="module")
def embedder():
    return LocalEmbedder()


class CountingEmbedder:
    """The real model, counting the texts it is asked to encode."""

    def __init__(self, inner, identity=None):
        self.inner, self.identity, self.encoded = inner, identity or inner.identity, 0
        self.dim = inner.dim

    def encode(self, texts, progress=False, query=False):
        self.encoded += len(texts)
        return self.inner.encode(texts, query=query)


def test_only_new_texts_are_encoded_and_a_new_model_starts_over(tmp_path, embedder):
    texts = [f"Sentence number {i} about pumps and valves." for i in range(40)]
    counting = CountingEmbedder(embedder)
    first, stats = EmbeddingCache(tmp_path, counting, flush_every=16).encode(texts + texts[:5])
    assert (stats.unique, stats.hits, stats.encoded, counting.encoded) == (40, 0, 40, 40)
    assert np.allclose(first, embedder.encode(texts + texts[:5]), atol=1e-5)
    edited = texts[:39] + ["A brand new sentence."]
    again, stats = EmbeddingCache(tmp_path, counting, flush_every=16).encode(edited)
    assert (stats.hits, stats.encoded, counting.encoded) == (39, 1, 41) and stats.hit_rate == 39 / 40
    assert np.array_equal(again[:39], first[:39])
    other = CountingEmbedder(embedder, identity="another-model@sha256:0")
    _, stats = EmbeddingCache(tmp_path, other).encode(edited)
    assert stats.encoded == 40 and other.encoded == 40
    assert len(list(tmp_path.iterdir())) == 2  # one folder per model identity


def test_a_lookup_reads_the_vectors_of_the_shards_holding_its_texts_only(tmp_path, embedder):
    texts = [f"Pump {i} needs a new valve every {i + 3} months." for i in range(48)]
    counting = CountingEmbedder(embedder)
    cache = EmbeddingCache(tmp_path, counting, flush_every=16)
    cache.encode(texts[:16])  # one shard
    cache.encode(texts[16:])  # two more
    vectors, stats = cache.encode(texts[:3] + texts[:1])
    assert (stats.hits, stats.encoded, counting.encoded) == (3, 0, 48)
    assert cache.vector_bytes_read == 16 * 384 * 4  # the one shard that holds them, not all three
    assert np.allclose(vectors, embedder.encode(texts[:3] + texts[:1]), atol=1e-5)
    _, stats = cache.encode(texts)
    assert stats.hits == 48 and cache.vector_bytes_read == 48 * 384 * 4


def test_identity_checks_name_both_models():
    require_identity(["m@1", "m@1"], "m@1", "embeddings[C]")
    with pytest.raises(IdentityMismatch, match=r"embeddings\[C\] mixes vectors of 2 models \(m@1, m@2\)"):
        require_identity(["m@1", "m@2"], "m@1", "embeddings[C]")
    with pytest.raises(IdentityMismatch, match="built with m@2 but queries are embedded with m@1"):
        require_identity(["m@2"], "m@1", "embeddings[C]")


def test_a_run_killed_while_embedding_resumes_from_the_cache(tmp_path):
    """SIGKILL the whole `rag-assets run` once the first embedding batches are on disk; the
    rerun reuses them and gives the table an uninterrupted run gives. The bundled documents
    with a few of its questions: embedding is what is killed, not the evaluation after it."""
    env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
    dataset = tmp_path / "dataset"
    shutil.copytree(BUNDLED_DATASET / "documents", dataset / "documents")
    lines = (BUNDLED_DATASET / "questions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (dataset / "questions.jsonl").write_text("".join(lines[:40]), encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "rag_assets.app.cli",
        "run",
        "--dataset",
        str(dataset),
        "--strategies",
        "A",
        "--no-llm",
    ]  # 643 chunks: 3 batches of 256
    killed = tmp_path / "killed"
    held = [
        sys.executable,
        str(Path(__file__).parent / "barrier.py"),
        f"{EmbeddingCache.__module__}:EmbeddingCache._write_shard",
        "1",
        "--",
    ]
    proc = subprocess.Popen(
        held + cmd[3:] + ["--data-dir", str(killed)],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    shards = lambda: list((killed / "cache" / "embeddings").glob("*/shard-*.parquet"))  # noqa: E731
    wait_at_barrier(proc)  # held just after its first shard is on disk
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(shards())
    assert done_before == 1 and not (killed / "assets" / "embeddings" / "A.parquet").exists()
    assert not list(killed.rglob("*.tmp*"))  # no half-written file took the place of a real one

    resumed = subprocess.run(cmd + ["--data-dir", str(killed)], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    with DagsterInstance.from_config(str(killed / "dagster_home")) as instance:
        record = instance.fetch_materializations(AssetKey("embeddings"), limit=1).records[0]
        meta = {k: v.value for k, v in record.asset_materialization.metadata.items()}
    assert (meta["cache_hits"], meta["encoded"]) == (256 * done_before, 643 - 256 * done_before)
    clean = tmp_path / "clean"
    assert subprocess.run(cmd + ["--data-dir", str(clean)], env=env, capture_output=True).returncode == 0
    a = pd.read_parquet(killed / "assets" / "embeddings" / "minilm" / "A.parquet")
    b = pd.read_parquet(clean / "assets" / "embeddings" / "minilm" / "A.parquet")
    assert a.drop(columns="embedding").equals(b.drop(columns="embedding"))
    assert np.allclose(np.stack(a["embedding"]), np.stack(b["embedding"]), atol=1e-6)


def test_the_identity_check_draws_a_new_sample_each_run_so_no_row_hides_for_ever():
    """A stored vector that is wrong (a bad cache shard) outside one run's sample is found by a
    later run: the sample is drawn from the run's own seed, not the same rows every time."""
    from rag_assets.retrieval.embedding import reencoding_error

    rng = np.random.default_rng(1)
    true = rng.normal(size=(200, 8)).astype(np.float32)
    true /= np.linalg.norm(true, axis=1, keepdims=True)
    texts = [f"t{i}" for i in range(200)]

    class Model:  # encodes as the true model would: the vector each text should have
        def encode(self, batch):
            return true[[int(t[1:]) for t in batch]]

    stored = true.copy()
    stored[150] = -stored[150]  # one wrong vector
    runs = [reencoding_error(Model(), texts, stored, 32, seed) for seed in range(12)]
    assert len({tuple(rows) for _, rows in runs}) == 12  # every run draws its own rows
    caught = [drift > 1e-4 for drift, _ in runs]
    assert any(caught) and all(c == (150 in rows) for c, (_, rows) in zip(caught, runs))
