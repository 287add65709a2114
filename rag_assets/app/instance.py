"""The Dagster instance of a data dir: where it lives, how a reader opens it, and the runs a
killed `rag-assets run` left behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from rag_assets.layout import DataDir
from rag_assets.locking import process_alive, process_start


def use_data_dir(data_dir: Path, dataset: Path) -> Path:
    """Point Dagster at `<data dir>/dagster_home` so run history survives the process,
    and export the paths so `dg dev` started from the same shell sees the same data."""
    data_dir = data_dir.resolve()
    home = DataDir(data_dir).dagster_home
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():  # explicit: no "defaulting" notice, no telemetry calls, and on a small
        # machine at most two runs at once when the automation sensor fans out over strategies
        config.write_text("telemetry:\n  enabled: false\nrun_queue:\n  max_concurrent_runs: 2\n")
    nux = home / ".nux" / "nux.yaml"  # Dagster's own record that the first-visit dialog was seen
    if not nux.exists():
        nux.parent.mkdir(exist_ok=True)
        nux.write_text("seen: 1\n")
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ["RAG_ASSETS_DATA_DIR"] = str(data_dir)
    os.environ["RAG_ASSETS_DATASET"] = str(dataset.resolve())
    return data_dir


PID_TAG, START_TAG = "rag_assets/pid", "rag_assets/process_start"


def fail_orphaned_runs(instance) -> list[str]:
    """Mark failed the runs a `rag-assets run` started whose process is gone (killed with -9,
    say): they would stay STARTED for ever and count against the run queue's cap."""
    from dagster import DagsterRunStatus, RunsFilter

    unfinished = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
    orphans = [
        r
        for r in instance.get_runs(RunsFilter(statuses=unfinished))
        if PID_TAG in r.tags and not process_alive(int(r.tags[PID_TAG]), r.tags.get(START_TAG) or None)
    ]
    for run in orphans:
        instance.report_run_failed(
            run,
            f"its process (pid {run.tags[PID_TAG]}) is gone: it was killed before "
            "the run finished; marked failed by the next rag-assets command",
        )
    return [r.run_id for r in orphans]


# The code location's label, as the UI tags the runs it launches (`.dagster/repository`): the
# Overview timeline and a job's Runs tab show only runs that carry it.
REPOSITORY_TAG = ".dagster/repository"
REPOSITORY_LABEL = "__repository__@rag_assets"  # Definitions' repository @ the location in [tool.dg]


def run_tags() -> dict[str, str]:
    """Tags for a run this process executes: its code location, as a UI-launched run has, and
    this process's pid and start time, so a later command can tell whether the run is an orphan."""
    return {REPOSITORY_TAG: REPOSITORY_LABEL, PID_TAG: str(os.getpid()), START_TAG: process_start(os.getpid()) or ""}


INSTANCE_FILES = ["dagster.yaml", "history/runs.db", "history/runs/index.db", "schedules/schedules.db"]


@contextlib.contextmanager
def readable_home(home: Path):
    """The Dagster home to read from: `home` itself where this process may write (SQLite's
    write-ahead log needs its side files even to read), else a private copy of the instance's
    databases (no run logs) in a temporary folder, removed afterwards."""
    if os.access(home, os.W_OK) and all(os.access(p, os.W_OK) for p in (home / "history").rglob("*.db")):
        yield home
        return
    with tempfile.TemporaryDirectory(prefix="rag-assets-ask-") as tmp:
        for name in INSTANCE_FILES:
            if (home / name).exists():
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(home / name, Path(tmp) / name)
        yield Path(tmp)
