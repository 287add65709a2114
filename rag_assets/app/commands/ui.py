"""`rag-assets ui`: the Dagster UI (`dg dev`) on the same data dir, dataset and settings."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rag_assets import environment
from rag_assets.app.options import (
    add_compute,
    add_data_dir,
    add_dataset,
    add_instance,
    add_models,
    check_compute,
    dataset_of,
    port,
    refusing,
    settings_of,
    sweep_leftovers,
    writable,
)
from rag_assets.catalog import PROJECT_ROOT

SETTINGS_FILE = "rag-assets-settings.json"  # in the Dagster home: what the code server builds from


def add(sub) -> None:
    ui = sub.add_parser("ui", help="start the Dagster UI (dg dev) on the same data dir and dataset")
    add_dataset(ui, switch=True)
    add_data_dir(ui)
    ui.add_argument("--port", type=port, default=3000)
    add_models(ui)
    add_instance(ui)
    add_compute(ui)
    ui.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    """`dg dev` as a child in its own process group that this command stops whole (webserver,
    daemon, code servers) on SIGINT or SIGTERM, in the foreground or in the background (where a
    shell starts it with SIGINT ignored). The child's code server builds its definitions from a
    settings file this command writes; only the instance's URL travels in its environment, where
    dagster.yaml tells Dagster to read it."""
    from rag_assets.app import dataset_record
    from rag_assets.app.instance import (
        POSTGRES_ENV,
        cancel_abandoned_queue,
        fail_orphaned_runs,
        open_instance,
        use_data_dir,
    )
    from rag_assets.experiment import spec
    from rag_assets.layout import DataDir

    dataset = dataset_of(args)
    found = spec.find(dataset.root)  # the dataset's experiment.yaml, shown beside the lab when there is one
    settings = settings_of(args, dataset, served=True, experiment=str(found) if found else "")
    if found:
        with refusing(spec.ExperimentError):
            spec.load(found)
    check_compute(settings)
    writable(settings.data_dir)
    with refusing(ValueError):
        home = use_data_dir(settings.data_dir, settings.postgres)
    dataset_record.record(DataDir(settings.data_dir), dataset.root)
    handed = settings.write(home / SETTINGS_FILE)
    with open_instance(home, settings.postgres) as instance:
        orphans = fail_orphaned_runs(instance)
        abandoned = cancel_abandoned_queue(instance, home)
    if orphans:
        print(f"marked {len(orphans)} runs failed whose process is gone: {', '.join(r[:8] for r in orphans)}")
    if abandoned:
        print(f"cancelled {len(abandoned)} runs left queued by a stopped UI (the automation asks again)")
    sweep_leftovers(settings.data_dir)
    print(f"Dagster UI on http://127.0.0.1:{args.port} (DAGSTER_HOME={home})", flush=True)
    venv = Path(sys.executable).parent  # the venv's own dg, whether or not the venv is activated
    child = subprocess.Popen(
        [str(venv / "dg"), "dev", "--port", str(args.port)],
        cwd=PROJECT_ROOT,
        env=environment.for_child(
            VIRTUAL_ENV=str(venv.parent),  # dg then knows its venv is the active one
            DAGSTER_HOME=str(home),
            **{environment.SETTINGS_FILE: str(handed)},
            **({POSTGRES_ENV: settings.postgres} if settings.postgres else {}),
        ),
        start_new_session=True,
        preexec_fn=_default_signals,
    )
    stop = lambda signum, frame: _stop_group(child)  # noqa: E731
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        return child.wait()
    finally:
        _stop_group(child)


def _default_signals() -> None:
    """In the child: default SIGINT and SIGTERM, whatever the shell left ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_group(child: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM to the child's whole process group, SIGKILL to what is left after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(child.pid, 0)
            except ProcessLookupError:
                return
            child.poll()
            time.sleep(0.2)
