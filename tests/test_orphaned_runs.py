"""A killed `rag-assets run` leaves runs STARTED; the next command marks failed only the runs
of this host whose process is gone, never another machine's runs in a shared history."""

import socket
import subprocess
import sys

from dagster import DagsterRun, DagsterRunStatus, instance_for_test

from rag_assets.app.instance import BOOT_TAG, HOST_TAG, PID_TAG, START_TAG, boot_id, fail_orphaned_runs, run_tags
from rag_assets.locking import process_start


def _started(instance, run_id: str, tags: dict) -> None:
    instance.add_run(DagsterRun(job_name="corpus", run_id=run_id, status=DagsterRunStatus.STARTED, tags=tags))


def test_only_this_hosts_dead_runs_are_marked_failed():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid now names no process (or a later one, with another start time)
    here = {HOST_TAG: socket.gethostname(), BOOT_TAG: boot_id()}
    with instance_for_test() as instance:
        _started(instance, "a" * 8 + "-dead-here", {**here, PID_TAG: str(dead.pid), START_TAG: "1"})
        _started(instance, "b" * 8 + "-alive-here", run_tags())
        _started(instance, "c" * 8 + "-elsewhere", {**here, HOST_TAG: "another-host", PID_TAG: str(dead.pid)})
        _started(instance, "d" * 8 + "-no-host", {PID_TAG: str(dead.pid), START_TAG: "1"})
        _started(
            instance,
            "e" * 8 + "-earlier-boot",
            {**here, BOOT_TAG: "an-earlier-boot", PID_TAG: "1", START_TAG: process_start(1) or ""},
        )
        assert sorted(fail_orphaned_runs(instance)) == ["aaaaaaaa-dead-here", "eeeeeeee-earlier-boot"]
        status = {r.run_id[:1]: r.status for r in instance.get_runs()}
        assert status == {
            "a": DagsterRunStatus.FAILURE,
            "b": DagsterRunStatus.STARTED,
            "c": DagsterRunStatus.STARTED,
            "d": DagsterRunStatus.STARTED,
            "e": DagsterRunStatus.FAILURE,
        }


def test_runs_left_queued_by_a_stopped_ui_are_cancelled_at_the_next_ui_start(tmp_path):
    from dagster import DagsterInstance

    from rag_assets.app.instance import cancel_abandoned_queue, instance_yaml

    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(postgres=False))
    with DagsterInstance.from_config(str(home)) as instance:
        # what the UI's run queue holds: a run with the origin a daemon would launch it from
        from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin

        origin = RemoteJobOrigin(
            RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("rag_assets"), "__repository__"), "corpus"
        )
        instance.add_run(
            DagsterRun(job_name="corpus", run_id="queued-1", status=DagsterRunStatus.QUEUED, remote_job_origin=origin)
        )
        _started(instance, "started-1", run_tags())
        assert cancel_abandoned_queue(instance, home) == ["queued-1"]
        status = {r.run_id: r.status for r in instance.get_runs()}
    assert status == {"queued-1": DagsterRunStatus.CANCELED, "started-1": DagsterRunStatus.STARTED}
