"""A folder-valued asset (a BM25 index) is replaced without a moment where a reader finds none,
and what a killed writer leaves is swept by the next writer to start."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets import storage
from rag_assets.retrieval.lexical import BM25Index

TEXTS = ["the inlet valve faces north", "replace the filter every 300 hours", "the warranty covers two years"]


class Killed(BaseException):
    """Stands for SIGKILL at one step of a write: nothing after it runs."""


@pytest.fixture
def every_step(monkeypatch):
    """Wrap the calls that change what a path shows; `check()` runs before each, and `kill_at`
    (a step number) stops the writer there."""
    state = {"steps": 0, "kill_at": None, "check": None}

    def wrap(owner, name):
        real = getattr(owner, name)

        def step(*args, **kwargs):
            state["steps"] += 1
            if state["check"]:
                state["check"]()
            if state["steps"] == state["kill_at"]:
                raise Killed
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, step)

    for owner, name in ((os, "replace"), (os, "rename"), (Path, "rename"), (Path, "symlink_to"), (Path, "unlink")):
        wrap(owner, name)
    return state


def test_a_reader_finds_an_index_at_every_step_of_a_replacement(tmp_path, every_step):
    path = tmp_path / "E"
    BM25Index.build(TEXTS[:2]).save(path)
    seen = []
    every_step["check"] = lambda: seen.append(BM25Index.load(path).n_docs)  # IndexUnreadable fails the test
    BM25Index.build(TEXTS).save(path)
    assert seen and set(seen) <= {2, 3} and BM25Index.load(path).n_docs == 3


def test_a_writer_killed_at_any_step_of_a_replacement_leaves_a_whole_index(tmp_path, every_step):
    BM25Index.build(TEXTS[:1]).save(tmp_path / "probe")
    every_step["steps"] = 0
    BM25Index.build(TEXTS[:1]).save(tmp_path / "probe")  # the steps of a replacement
    steps = every_step["steps"]
    assert steps >= 2
    for kill_at in range(1, steps + 1):
        root = tmp_path / f"kill-{kill_at}"
        path = root / "assets" / "bm25_index" / "E"
        every_step.update(steps=0, kill_at=None)
        BM25Index.build(TEXTS[:2]).save(path)
        every_step.update(steps=0, kill_at=kill_at)
        with pytest.raises(Killed):
            BM25Index.build(TEXTS).save(path)
        every_step.update(kill_at=None)
        assert BM25Index.load(path).n_docs in (2, 3), kill_at
    every_step.update(steps=0, kill_at=None)


def test_the_sweep_removes_only_what_dead_writers_left(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assets = tmp_path / "assets"
    path = assets / "bm25_index" / "E"
    BM25Index.build(TEXTS).save(path)
    current = path.resolve()
    (assets / "bm25_index" / f".E.v-{dead.pid}-1").mkdir()  # a version a killed writer filled
    (assets / "bm25_index" / f".E.tmp-{dead.pid}").mkdir()  # a folder of the code before versions
    (assets / f".corpus_snapshot.parquet.tmp-{dead.pid}").write_bytes(b"half a file")
    (assets / f".ground_truth.parquet.tmp-{os.getpid()}").write_bytes(b"a live writer's")
    removed = storage.sweep_leftovers(tmp_path)
    assert sorted(removed) == sorted(
        [
            f"assets/bm25_index/.E.v-{dead.pid}-1",
            f"assets/bm25_index/.E.tmp-{dead.pid}",
            f"assets/.corpus_snapshot.parquet.tmp-{dead.pid}",
        ]
    )
    assert current.is_dir() and path.resolve() == current and BM25Index.load(path).n_docs == 3
    assert (assets / f".ground_truth.parquet.tmp-{os.getpid()}").exists()
