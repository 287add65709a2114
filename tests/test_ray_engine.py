"""The Ray engine: embeddings encoded in shards by Ray actors on a cluster the tests start
(servers.py), equal to local work; a worker killed with -9 mid-way costs nothing but time."""

import os
import re
import signal
import subprocess

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from mixed_folder import write_mixed_folder
from servers import CLI, descendants, free_port, ray_cluster

from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest.dataset import BUNDLED_DATASET
from rag_assets.layout import DataDir
from rag_assets.retrieval.embedding import Embedder
from rag_assets.retrieval.embedding_cache import EmbeddingCache
from rag_assets.retrieval.ray_engine import RayEngine

CLEAN_ENV = {"DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": "", "RAG_ASSETS_ENGINE": ""}


@pytest.fixture(scope="module")
def cluster():
    import ray

    with ray_cluster(cpus=2) as (address, group):
        yield address, group
        ray.shutdown()  # this process's driver leaves before its cluster stops


@pytest.fixture(scope="module")
def texts():
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    return chunk_corpus(snap, STRATEGIES["C"])["text"].tolist()[:480]


def test_a_run_on_ray_materialises_the_same_tables_as_a_local_one(cluster, tmp_path):
    """The bundled corpus, its serving strategy: chunk ids, vectors and evaluation tables."""
    address, _ = cluster
    env = {**os.environ, **CLEAN_ENV}
    common = ["--strategies", "E", "--no-llm"]
    local = subprocess.run([*CLI, "run", "--data-dir", str(tmp_path / "local"), *common], env=env, capture_output=True)
    assert local.returncode == 0, local.stderr[-3000:]
    ray_run = [*CLI, "run", "--data-dir", str(tmp_path / "ray"), *common, "--engine", "ray", "--ray-address", address]
    remote = subprocess.run(ray_run, env=env, capture_output=True, text=True)
    assert remote.returncode == 0, remote.stdout[-2000:] + remote.stderr[-3000:]
    here, there = DataDir(tmp_path / "local"), DataDir(tmp_path / "ray")

    a, b = (d.read_table("embeddings", "E") for d in (here, there))
    assert a["chunk_id"].tolist() == b["chunk_id"].tolist() and len(a) > 800
    assert np.abs(np.stack(a["embedding"]) - np.stack(b["embedding"])).max() <= 1e-6
    for table in ("corpus_snapshot", "evaluation_tables"):
        pd.testing.assert_frame_equal(*(d.read_table(table) for d in (here, there)))

    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.from_config(str(there.dagster_home)) as instance:
        event = instance.get_latest_materialization_event(AssetKey("embeddings"))
        metadata = event.asset_materialization.metadata
        runs = instance.get_latest_materialization_event(AssetKey("retrieval_runs")).asset_materialization
    assert runs.metadata["engine"].value == "ray"  # query batches searched on Ray, the same tables
    ranked = ["query_id", "strategy", "retriever", "chunk_ids", "scores", "distances"]
    pd.testing.assert_frame_equal(*(d.read_table("retrieval_runs")[ranked] for d in (here, there)))
    assert metadata["engine"].value == "ray" and metadata["workers"].value == 2
    assert metadata["shards"].value == -(-len(b) // 256) and metadata["restarts"].value == 0
    assert len(metadata["chunks_per_second_per_worker"].value) == 2


def test_a_worker_killed_mid_way_is_restarted_and_nothing_written_is_encoded_again(cluster, texts, tmp_path):
    address, group = cluster
    model = Embedder(backend="onnx-int8")
    clean, _ = EmbeddingCache(tmp_path / "clean", model, flush_every=32).encode(texts)

    messages, killed = [], []

    def progress(done, total):
        if not killed:  # after the first shard: kill -9 the worker that wrote it
            pid = int(re.search(r"worker pid (\d+)", messages[0]).group(1))
            assert pid in descendants(group)  # a worker of the cluster this test started
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    engine = RayEngine(address=address, log=messages.append)
    cache = EmbeddingCache(tmp_path / "ray", model, flush_every=32)
    vectors, stats = cache.encode(texts, progress, engine)

    assert killed and engine.stats["restarts"] >= 1 and stats.encoded == len(set(texts))
    assert np.abs(vectors - clean).max() <= 1e-6
    keys = [k for f in sorted(cache.folder.glob("shard-*.parquet")) for k in pq.read_table(f)["key"].to_pylist()]
    assert len(keys) == len(set(keys)) == len(set(texts))  # every text written once, none twice
    assert engine.stats["shards"] == -(-len(set(texts)) // 32) == len(list(cache.folder.glob("shard-*.parquet")))


def test_extraction_on_ray_gives_the_same_rows_and_each_bad_file_fails_alone(cluster, tmp_path):
    address, _ = cluster
    listing = corpus.list_folder(write_mixed_folder(tmp_path / "documents"))
    here = corpus.snapshot_of(listing, 1 << 20)
    engine = RayEngine(address=address, log=lambda m: None)
    there = corpus.snapshot_of(listing, 1 << 20, engine)
    pd.testing.assert_frame_equal(here, there)
    assert engine.stats["batches"] == -(-len(listing.documents) // corpus.EXTRACTION_BATCH)
    assert (here["status"] == "failed").sum() >= 5 and (here["status"] == "ok").sum() >= 5


def test_an_address_where_no_cluster_answers_is_refused_at_once(tmp_path):
    """ray.init would wait minutes on it; the CLI refuses before anything starts."""
    address = f"127.0.0.1:{free_port()}"
    arguments = ["run", "--data-dir", str(tmp_path / "data"), "--engine", "ray", "--ray-address", address]
    refused = subprocess.run([*CLI, *arguments], env={**os.environ, **CLEAN_ENV}, capture_output=True, text=True)
    assert refused.returncode == 2 and f"no Ray cluster answers at {address}" in refused.stderr
    assert not (tmp_path / "data" / "dagster_home").exists()  # nothing started
