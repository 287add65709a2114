"""One writer per data dir: an advisory lock on the data dir's lock file (`.rag-assets.lock`).

`rag-assets run` holds it exclusively for its whole life and writes its pid, the process's
start time and its command into the file, so a second run refuses and says who holds it.
Dagster runs launched from the UI, a schedule or a sensor take it shared when they first
write, so they run side by side but never beside an exclusive holder: one that starts while
`rag-assets run` holds it waits for it (`shared`), up to an hour by default. Readers (`ask`, the
UI) take nothing.

The lock is an flock(2) lock: the kernel drops it when its holder exits, SIGKILL included,
so a dead holder can never block anyone. Its record stays behind; the next holder finds it
and reports the lock it took over as stale. Object storage has no such lock: a data dir there
is locked through a file in this machine's home for it (see `DataDir.lock`), which keeps two
writers on one machine apart but not two writers on two machines.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rag_assets import environment
from rag_assets.layout import DataDir


class DataDirBusy(RuntimeError):
    """Another process holds the data dir's lock in a mode that excludes this one."""


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22): with the
    pid it names one process, even after the pid is reused. None where /proc has no such pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


def process_alive(pid: int, start: str | None) -> bool:
    """Whether the process `pid` that started at `start` still runs (None: any start)."""
    now = process_start(pid)
    return now is not None and (start is None or now == start)


@dataclass
class _Held:
    fd: int
    mode: int  # fcntl.LOCK_SH or fcntl.LOCK_EX
    depth: int = 0  # nested exclusive holds


_held: dict[str, _Held] = {}  # lock file -> what this process holds


def _lock_file(data_dir) -> str:
    return str(DataDir(data_dir).lock)


def _record(fd: int) -> dict | None:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 4096)
    try:
        return json.loads(raw) if raw.strip() else None
    except ValueError:
        return None


def describe_holder(record: dict | None) -> str:
    if not record:
        return (
            "Dagster runs launched from the UI, a schedule or a sensor are writing to it; wait for them to "
            "finish (the UI's Runs page shows them)"
        )
    return (
        f"`{record.get('command', 'rag-assets')}` holds it (pid {record.get('pid')} on {record.get('host')}, "
        f"started {record.get('started')}); wait for it to finish, or stop it"
    )


def _flock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _open(path: str) -> int:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


@contextmanager
def exclusive(data_dir: Path, command: str):
    """Hold the data dir alone for the block; DataDirBusy names the holder otherwise.
    Yields the record of a previous holder that died holding it (a stale lock), or None."""
    path = _lock_file(data_dir)
    held = _held.get(path)
    if held and held.mode == fcntl.LOCK_EX:
        held.depth += 1
        try:
            yield None
        finally:
            held.depth -= 1
        return
    fd = held.fd if held else _open(path)
    if not _flock(fd, fcntl.LOCK_EX):
        record = _record(fd)
        if not held:
            os.close(fd)
        elif not _flock(fd, fcntl.LOCK_SH):  # flock converts by releasing: the shared hold may be gone
            os.close(fd)
            del _held[path]
            raise DataDirBusy(
                f"the data dir {data_dir} is in use: {describe_holder(record)}; this process lost its shared "
                "hold on it while trying to hold it alone, and holds nothing now"
            )
        raise DataDirBusy(f"the data dir {data_dir} is in use: {describe_holder(record)}")
    stale = _record(fd)
    if stale and stale.get("pid") == os.getpid():
        stale = None
    mine = {
        "pid": os.getpid(),
        "process_start": process_start(os.getpid()),
        "host": socket.gethostname(),
        "command": command,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(mine).encode(), 0)
    previous = held
    _held[path] = _Held(fd, fcntl.LOCK_EX, 1)
    try:
        yield stale
    finally:
        os.ftruncate(fd, 0)
        if previous:  # this process wrote before it ran the command: keep its shared hold
            fcntl.flock(fd, fcntl.LOCK_SH)
            _held[path] = previous
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            del _held[path]


@contextmanager
def file_lock(lock: Path, wait_s: float = 30.0):
    """The lock file `lock` (made 0600 when missing, never through a link) held exclusively for the
    block, so that a read-modify-write of the file it guards is one step across processes (the keys
    file). TimeoutError when another process holds it for more than `wait_s` seconds."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"the lock file {lock} is not a regular file")
        deadline = time.monotonic() + wait_s
        while not _flock(fd, fcntl.LOCK_EX):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"another process has held the lock {lock} for {wait_s:g} s")
            time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing it lets the lock go


WAIT_ENV = environment.LOCK_WAIT
WAIT_S = 3600.0  # how long a Dagster run waits for an exclusive holder before it fails


def shared(data_dir: Path, wait_s: float | None = None, log=None) -> None:
    """Hold the data dir shared until this process exits (a no-op when it already holds it).
    While an exclusive holder (`rag-assets run`) has it, wait for it, up to `wait_s` seconds
    ($RAG_ASSETS_LOCK_WAIT_S, else an hour), saying so through `log` every 30 s: a run that
    automation starts during a CLI run waits for it instead of failing. DataDirBusy names the
    holder when the wait runs out."""
    path = _lock_file(data_dir)
    if path in _held:
        return
    if wait_s is None:
        wait_s = float(environment.value(WAIT_ENV) or WAIT_S)
    fd = _open(path)
    deadline, said = time.monotonic() + wait_s, None
    while not _flock(fd, fcntl.LOCK_SH):
        record = _record(fd)
        now = time.monotonic()
        if now >= deadline:
            os.close(fd)
            raise DataDirBusy(
                f"the data dir {data_dir} is in use: {describe_holder(record)} (waited {wait_s:.0f} s for it)"
            )
        if log and (said is None or now - said >= 30):
            log(f"waiting for the data dir {data_dir}: {describe_holder(record)}")
            said = now
        time.sleep(min(1.0, max(deadline - now, 0.0)))
    _held[path] = _Held(fd, fcntl.LOCK_SH)
