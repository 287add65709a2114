"""The Ray engine: embeddings encoded in shards by Ray actors on a cluster the tests start
(servers.py), equal to local work; a worker killed with -9 mid-way costs nothing but time."""

import json
import os
import re
import signal
import subprocess
import time
import urllib.request

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from mixed_folder import write_mixed_folder
from servers import CLI, create_database, descendants, free_port, ray_cluster, running_ui

from rag_assets import storage
from rag_assets.answering.citations import fragment_range
from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.layout import DataDir
from rag_assets.retrieval.embedding import LocalEmbedder
from rag_assets.retrieval.embedding_cache import EmbeddingCache
from rag_assets.retrieval.ray_engine import RayEngine

CLEAN_ENV = {
    **{name: "" for name in ("DAGSTER_HOME", "RAG_ASSETS_DATA_DIR", "RAG_ASSETS_DATASET", "RAG_ASSETS_ENGINE")},
    "RAG_ASSETS_POSTGRES_URL": "",
}
BUCKET = "s3://rag-assets/ray-run"


@pytest.fixture(scope="module")
def cluster(s3):
    """The tests' Ray head; its workers reach the S3 server the way a cluster's nodes reach a bucket."""
    import ray

    with ray_cluster(cpus=2, env=s3) as (address, group):
        yield address, group
        ray.shutdown()  # this process's driver leaves before its cluster stops


@pytest.fixture(scope="module")
def texts():
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    return chunk_corpus(snap, STRATEGIES["C"])["text"].tolist()[:480]


@pytest.fixture(scope="module")
def runs(cluster, s3, postgres, tmp_path_factory):
    """The bundled corpus's serving strategy materialised twice, each by `rag-assets run` in a
    process of its own: locally, and with the heavy work on the Ray cluster, the data dir in
    the S3 bucket and the run history in PostgreSQL."""
    address, _ = cluster
    root = tmp_path_factory.mktemp("runs")
    url = create_database(postgres, "rag_assets_scale_out")
    env = {**os.environ, **CLEAN_ENV, **s3, "RAG_ASSETS_STATE_DIR": str(root / "state")}
    common = ["--strategies", "E", "--no-llm"]
    local = subprocess.run([*CLI, "run", "--data-dir", str(root / "local"), *common], env=env, capture_output=True)
    assert local.returncode == 0, local.stderr[-3000:]
    scale_out = ["--engine", "ray", "--ray-address", address, "--instance-postgres", url]
    driver = subprocess.Popen(
        [*CLI, "run", "--data-dir", BUCKET, *common, *scale_out],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = (stream.decode() for stream in driver.communicate(timeout=900))
    assert driver.returncode == 0, out[-2000:] + err[-3000:]
    assert "all asset checks passed" in out
    return {"local": DataDir(root / "local"), "url": url, "env": env, "driver": driver.pid}


@pytest.fixture
def reader(runs, monkeypatch):
    """This process, pointed at the bucket and the PostgreSQL instance as the run was."""
    for name in ("RAG_ASSETS_STATE_DIR", *(k for k in runs["env"] if k.startswith("AWS_"))):
        monkeypatch.setenv(name, runs["env"][name])
    monkeypatch.setenv("RAG_ASSETS_POSTGRES_URL", "postgresql+psycopg2://" + runs["url"].split("://")[1])
    return DataDir(BUCKET)


def test_a_run_on_ray_into_a_bucket_materialises_the_same_tables_as_a_local_one(runs, reader):
    """Chunk ids, vectors, the snapshot, retrieval rankings and evaluation tables; the workers
    wrote the embedding cache's shards straight to the bucket; the history is in PostgreSQL."""
    here, there = runs["local"], reader
    assert there.remote and not (there.dagster_home / "history").exists()  # nothing in SQLite

    a, b = (d.read_table("embeddings", "minilm|E") for d in (here, there))
    assert a["chunk_id"].tolist() == b["chunk_id"].tolist() and len(a) > 800
    assert np.abs(np.stack(a["embedding"]) - np.stack(b["embedding"])).max() <= 1e-6
    for table in ("corpus_snapshot", "evaluation_tables"):
        pd.testing.assert_frame_equal(*(d.read_table(table) for d in (here, there)))
    ranked = ["query_id", "strategy", "retriever", "chunk_ids", "scores", "distances"]
    pd.testing.assert_frame_equal(*(d.read_table("retrieval_runs")[ranked] for d in (here, there)))
    assert (there.reports / "significance_report.md").read_text() == (
        here.reports / "significance_report.md"
    ).read_text()

    shards = [p.name for p in storage.listing(next(iter(storage.listing(there.embedding_cache, "*"))), "shard-*")]
    writers = {int(name.split("-")[2]) for name in shards}
    assert len(shards) == -(-len(b) // 256) and runs["driver"] not in writers  # written by the workers

    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.from_config(str(there.dagster_home)) as instance:
        metadata = instance.get_latest_materialization_event(AssetKey("embeddings")).asset_materialization.metadata
        retrieval = instance.get_latest_materialization_event(AssetKey("retrieval_runs")).asset_materialization
    assert retrieval.metadata["engine"].value == "ray"  # query batches searched on Ray, the same tables
    assert metadata["engine"].value == "ray" and metadata["workers"].value == 2
    assert metadata["shards"].value == len(shards) and metadata["restarts"].value == 0
    assert len(metadata["chunks_per_second_per_worker"].value) == 2
    assert metadata["path"].value == "assets/embeddings/minilm/E.parquet"  # relative to the data dir, wherever it is


def graphql(base: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(base + "/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["data"]


LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""


def test_ask_answers_and_the_ui_launches_a_run_from_the_data_dir_in_the_bucket(runs, reader):
    env = {**runs["env"], "RAG_ASSETS_POSTGRES_URL": runs["url"]}
    ask = [*CLI, "ask", "In what country is Normandy located?", "--data-dir", BUCKET, "--json"]
    answered = subprocess.run(ask, env=env, capture_output=True, text=True, timeout=600)
    assert answered.returncode == 0, answered.stderr[-3000:]
    answer = json.loads(answered.stdout)
    assert not answer["refused"] and answer["answer"] and answer["sources"]
    texts = dict(reader.read_table("corpus_snapshot")[["document_id", "text"]].values)
    for source in answer["sources"]:  # every quote is the document's own text, read from the bucket
        assert texts[source["document_id"]][slice(*fragment_range(source["fragment"]))] == source["quote"]

    from dagster import AssetKey, DagsterInstance

    with running_ui(["--data-dir", BUCKET], env) as base:
        selector = {"repositoryLocationName": "rag_assets", "repositoryName": "__repository__", "jobName": "corpus"}
        launched = graphql(base, LAUNCH, {"params": {"selector": selector}})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id, status = launched["run"]["runId"], None
        deadline = time.time() + 240
        while status not in ("SUCCESS", "FAILURE", "CANCELED") and time.time() < deadline:
            time.sleep(2)
            status = graphql(base, f'{{ runOrError(runId: "{run_id}") {{ ... on Run {{ status }} }} }}')["runOrError"]
            status = status.get("status")
    assert status == "SUCCESS"
    with DagsterInstance.from_config(str(reader.dagster_home)) as instance:
        event = instance.get_latest_materialization_event(AssetKey("corpus_snapshot"))
    assert event.run_id == run_id  # the UI's run wrote the snapshot into the bucket
    pd.testing.assert_frame_equal(reader.read_table("corpus_snapshot"), runs["local"].read_table("corpus_snapshot"))


def test_a_worker_killed_mid_way_is_restarted_and_nothing_written_is_encoded_again(cluster, texts, tmp_path):
    address, group = cluster
    model = LocalEmbedder(backend="onnx-int8")
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


def _in_group(pgid: int) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid=,pgid="], capture_output=True, text=True).stdout.split()
    return [int(p) for p, g in zip(out[::2], out[1::2]) if int(g) == pgid]


def test_engine_ray_without_an_address_starts_its_own_cluster_on_a_fresh_machine(tmp_path):
    """As a new user runs it: no cluster, no ~/.ray, no Ray settings in the environment. The
    cluster started for the run goes with it."""
    from conftest import write_dataset

    dataset = write_dataset(tmp_path / "dataset")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(CLEAN_ENV, HOME=str(tmp_path / "home"))  # the int8 encoder is built from the packaged weights there
    driver = subprocess.Popen(
        [
            *CLI,
            "run",
            "--dataset",
            str(dataset),
            "--data-dir",
            str(tmp_path / "data"),
            "--strategies",
            "E",
            "--no-llm",
            "--engine",
            "ray",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = (stream.decode() for stream in driver.communicate(timeout=900))
        deadline = time.time() + 30
        while _in_group(driver.pid) and time.time() < deadline:  # Ray's own processes stop after the driver
            time.sleep(0.5)
        leftover = _in_group(driver.pid)
    finally:
        if _in_group(driver.pid):
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode == 0, out[-2000:] + err[-3000:]
    assert "all asset checks passed" in out and "Authentication" not in err
    snapshot = pd.read_parquet(tmp_path / "data" / "assets" / "corpus_snapshot.parquet")
    assert (snapshot["status"] == "ok").sum() == 2
    assert leftover == [], f"processes of the run's own cluster outlived it: {leftover}"
