"""A data dir on object storage: every kind of file the project writes, through a real S3 API
(moto's server, started by the tests: servers.py), written whole or not at all."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import s3fs
from barrier import wait_at_barrier
from servers import CLI

from rag_assets import locking, storage
from rag_assets.layout import DataDir
from rag_assets.retrieval.lexical import BM25Index, IndexUnreadable


@pytest.fixture
def bucket(s3, monkeypatch, tmp_path):
    """This process pointed at the S3 server; a fresh prefix in its bucket for each test."""
    for name, value in s3.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RAG_ASSETS_STATE_DIR", str(tmp_path / "state"))
    return DataDir(f"s3://rag-assets/{tmp_path.name}")


def test_every_kind_of_file_round_trips_through_the_bucket(bucket, tmp_path):
    frame = pd.DataFrame({"chunk_id": ["a", "b"], "score": [0.5, 0.25]})
    storage.write_parquet(bucket.table("chunk_sets", "E"), frame)
    pd.testing.assert_frame_equal(bucket.read_table("chunk_sets", "E"), frame)
    storage.write_text(bucket.reports / "report.md", "# héllo\n")
    assert (bucket.reports / "report.md").read_text(encoding="utf-8") == "# héllo\n"
    assert bucket.relative(bucket.table("chunk_sets", "E")) == "assets/chunk_sets/E.parquet"

    index = BM25Index.build(["the inlet valve faces north", "the pump weighs twelve kilograms"])
    index.save(bucket.bm25("E"))
    assert (bucket.bm25("E")).is_file()  # one object: its files can never mix two versions
    assert BM25Index.load(bucket.bm25("E")).top_k("valve", 2)[0].tolist() == [0]
    with pytest.raises(IndexUnreadable, match="no BM25 index"):
        BM25Index.load(bucket.bm25("F"))
    storage.write_bytes(bucket.bm25("D"), b"not a tar archive")
    with pytest.raises(IndexUnreadable, match="is damaged"):
        BM25Index.load(bucket.bm25("D"))

    folder = bucket.embedding_cache / "model"
    assert storage.listing(folder, "shard-*.parquet") == []  # this process has listed the folder once
    writer = "from rag_assets import storage; import sys; storage.write_text(storage.as_path(sys.argv[1]), 'x')"
    subprocess.run([sys.executable, "-c", writer, str(folder / "shard-1.parquet")], check=True)
    assert [p.name for p in storage.listing(folder, "shard-*.parquet")] == ["shard-1.parquet"]  # seen at once


def test_a_writer_killed_mid_upload_leaves_the_previous_object_whole(bucket):
    """A large object goes up in parts (a multipart upload); SIGKILL while they travel leaves
    the object as it was: S3 shows the new one only once the upload completes."""
    target = bucket.table("embeddings", "E")
    storage.write_bytes(target, b"previous")
    fs = s3fs.S3FileSystem()
    writer = subprocess.Popen(  # held once its first part is uploaded: the upload is under way
        [
            sys.executable,
            str(Path(__file__).parent / "barrier.py"),
            "s3fs.core:S3File._upload_chunk",
            "1",
            "--",
            "-c",
            "from rag_assets import storage; import sys; storage.write_bytes(storage.as_path(sys.argv[1]), "
            "bytes(300 * 2**20))",
            str(target),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    wait_at_barrier(writer)
    assert fs.list_multipart_uploads("rag-assets"), "no upload under way at the barrier"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert target.read_bytes() == b"previous"
    fs.clear_multipart_uploads("rag-assets")  # what a bucket's lifecycle rule does for abandoned parts


def test_two_runs_on_one_machine_never_write_to_the_same_bucket_prefix_at_once(bucket, postgres):
    """The lock of a data dir on object storage is a file in this machine's home for it."""
    env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": ""}
    with locking.exclusive(bucket.root, "rag-assets run (this test)"):
        second = subprocess.run([*CLI, "run", "--data-dir", str(bucket.root)], env=env, capture_output=True, text=True)
    assert second.returncode == 2 and "is in use: `rag-assets run (this test)` holds it" in second.stderr
    nothing = subprocess.run([*CLI, "run", "--data-dir", str(bucket.root)], env=env, capture_output=True, text=True)
    assert nothing.returncode == 2 and "keeps its run history in PostgreSQL" in nothing.stderr
    missing = ["--data-dir", "s3://no-such-bucket/data", "--instance-postgres", postgres + "/postgres"]
    refused = subprocess.run([*CLI, "ask", "Anything?", *missing], env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "in a bucket that does not exist or is not visible" in refused.stderr


def test_a_record_in_the_bucket_is_read_like_one_on_disk(bucket):
    record = bucket.root / "models.json"
    assert storage.read_record(record) is None  # none there: absent
    storage.write_text(record, '{"models": "minilm", "reason": "chosen"}')
    assert storage.read_record(record, fields={"models": str}) == {"models": "minilm", "reason": "chosen"}
    for text, words in [
        ('{"models": 7}', "models is not a string"),
        ('{"a": ' + "[" * 30_000 + "]" * 30_000 + "}", "nested too deeply"),
        (json.dumps({"pad": "x" * 70_000}), "larger than 65,536 bytes"),
    ]:
        storage.write_text(record, text)
        with pytest.raises(storage.RecordError, match=words):
            storage.read_record(record, fields={"models": str})
