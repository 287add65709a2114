"""The writers' lock between processes: a failed upgrade keeps the shared hold it had, and a
Dagster run that meets an exclusive holder waits for it instead of failing."""

import os
import subprocess
import sys
import time

import pytest

from rag_assets import locking

HOLD = """
import sys, time
from rag_assets import locking
mode, data_dir, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
if mode == "shared":
    locking.shared(data_dir, wait_s=0)
    print("held", flush=True)
    time.sleep(seconds)
else:
    with locking.exclusive(data_dir, "rag-assets run (test)"):
        print("held", flush=True)
        time.sleep(seconds)
"""


def hold(mode: str, data_dir, seconds: float) -> subprocess.Popen:
    """Another process holding the lock; returns once it holds it (it prints, then sleeps)."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, mode, str(data_dir), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "held"
    return child


def can_take_exclusive(data_dir) -> bool:
    probe = subprocess.run(
        [sys.executable, "-c", HOLD, "exclusive", str(data_dir), "0"], capture_output=True, text=True
    )
    return probe.returncode == 0


def test_a_failed_upgrade_keeps_the_shared_hold(tmp_path):
    other = hold("shared", tmp_path, 60)
    try:
        locking.shared(tmp_path, wait_s=0)
        with pytest.raises(locking.DataDirBusy), locking.exclusive(tmp_path, "upgrade"):
            pass
        other.kill()
        other.wait()
        assert not can_take_exclusive(tmp_path)  # this process still holds it shared, as it believes
    finally:
        other.kill()
        held = locking._held.pop(str(locking._lock_file(tmp_path)), None)
        if held:
            os.close(held.fd)
    assert can_take_exclusive(tmp_path)


def test_a_shared_holder_waits_for_an_exclusive_one_and_says_so(tmp_path):
    said = []
    run = hold("exclusive", tmp_path, 3)
    try:
        with pytest.raises(locking.DataDirBusy, match="waited 0 s"):
            locking.shared(tmp_path, wait_s=0)
        t0 = time.monotonic()
        locking.shared(tmp_path, wait_s=60, log=said.append)
        waited = time.monotonic() - t0
    finally:
        run.kill()
        held = locking._held.pop(str(locking._lock_file(tmp_path)), None)
        if held:
            os.close(held.fd)
    assert waited > 0.5 and said and "rag-assets run (test)" in said[0]
