"""The Dagster instance of a data dir: where it lives, how a reader opens it, and the runs a
killed `rag-assets run` left behind."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from rag_assets import environment, storage
from rag_assets.layout import DataDir
from rag_assets.locking import process_alive, process_start

POSTGRES_ENV = environment.POSTGRES_URL
POSTGRES_SCHEMES = ("postgres", "postgresql", "postgresql+psycopg2")


class InstanceMismatch(ValueError):
    """The instance asked for is not where this data dir's run history is."""


def redacted(url: str) -> str:
    """`url` with its password hidden, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL: nothing of it is shown (it may be a file that holds other secrets)
        return "(a value that is not a URL, not shown)"


def postgres_url(given: str | None) -> str | None:
    """The PostgreSQL instance's URL: `given`, else $RAG_ASSETS_POSTGRES_URL; None for SQLite.
    Returned naming the psycopg2 driver that dagster-postgres installs (a plain postgresql://
    makes SQLAlchemy look for psycopg 3), after checking that the server answers."""
    url = given or environment.value(POSTGRES_ENV)
    if url is None:
        return None
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in POSTGRES_SCHEMES or any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError(
            "a PostgreSQL URL is one line that starts with postgresql://; the value given is not (not shown)"
        )
    url = "postgresql+psycopg2://" + rest
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": 10})
    try:
        with engine.connect():
            pass
    except Exception as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise ValueError(f"cannot open the PostgreSQL instance at {redacted(url)}: {reason}") from None
    finally:
        engine.dispose()
    return url


def instance_yaml(postgres: bool) -> str:
    """dagster.yaml: no telemetry; on a small machine at most two runs at once when the
    automation sensor fans out over strategies; run, event-log and schedule storage in
    PostgreSQL when asked, its URL read from the environment (never written to disk)."""
    text = "telemetry:\n  enabled: false\nrun_queue:\n  max_concurrent_runs: 2\n"
    if postgres:
        text += f"storage:\n  postgres:\n    postgres_url:\n      env: {POSTGRES_ENV}\n"
    return text


def instance_kind(home: Path) -> str | None:
    """Where the run history of a Dagster home lives: "postgres", "sqlite", or None (no home yet)."""
    import yaml

    config = home / "dagster.yaml"
    if not config.is_file():
        return None
    configured = (yaml.safe_load(config.read_text()) or {}).get("storage") or {}
    return "postgres" if "postgres" in configured else "sqlite"


def check_instance(home: Path, postgres: str | None) -> None:
    """Refuse to open a data dir's history anywhere but where it is."""
    kind = instance_kind(home)
    if kind == "postgres" and postgres is None:
        raise InstanceMismatch(
            f"the run history of {home.parent} is in PostgreSQL: give --instance-postgres URL or set {POSTGRES_ENV}"
        )
    if kind == "sqlite" and postgres and (home / "history").exists():
        raise InstanceMismatch(
            f"the run history of {home.parent} is in SQLite ({home / 'history'}): "
            "use another data dir for an instance on PostgreSQL"
        )


def check_bucket(layout: DataDir) -> None:
    """Refuse at once a data dir on object storage whose bucket cannot be reached."""
    if not layout.remote:
        return
    bucket = layout.root.path.split("/", 1)[0]
    try:
        found = layout.root.fs.exists(bucket)
    except Exception as exc:
        raise ValueError(f"cannot reach the data dir {layout.root}: {type(exc).__name__}: {exc}") from None
    if not found:
        raise ValueError(f"the data dir {layout.root} is in a bucket that does not exist or is not visible: {bucket}")


def use_data_dir(data_dir: str | Path, postgres: str | None = None) -> Path:
    """Make the data dir's Dagster home, so run history survives the process (in SQLite there,
    or in PostgreSQL when `postgres` is a URL); return it. A data dir on object storage needs
    PostgreSQL: its home is this machine's (see `DataDir.dagster_home`), and the history must
    be everyone's."""
    layout = DataDir(data_dir)
    if layout.remote and postgres is None:
        raise InstanceMismatch(
            f"a data dir on object storage ({layout.root}) keeps its run history in PostgreSQL: "
            f"give --instance-postgres URL or set {POSTGRES_ENV}"
        )
    check_bucket(layout)
    home = layout.dagster_home
    check_instance(home, postgres)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    wanted = instance_yaml(postgres is not None)
    if not config.exists() or config.read_text() != wanted:
        storage.write_text(config, wanted)
    nux = home / ".nux" / "nux.yaml"  # Dagster's own record that the first-visit dialog was seen
    if not nux.exists():
        nux.parent.mkdir(exist_ok=True)
        nux.write_text("seen: 1\n")
    return home


def open_instance(home: Path, postgres: str | None):
    """The Dagster instance of a home, its PostgreSQL URL given here rather than through the
    environment that dagster.yaml names (which only the processes `rag-assets ui` starts read)."""
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    overrides = {"storage": {"postgres": {"postgres_url": postgres}}} if postgres else None
    return DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=overrides))


PID_TAG, START_TAG = "rag_assets/pid", "rag_assets/process_start"
HOST_TAG, BOOT_TAG = "rag_assets/host", "rag_assets/boot_id"


def boot_id() -> str:
    """This boot of this machine (a pid and start time mean nothing across a reboot)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def fail_orphaned_runs(instance) -> list[str]:
    """Mark failed the runs a `rag-assets run` on this machine started whose process is gone
    (killed with -9, say): they would stay STARTED for ever and count against the run queue's
    cap. Only this host's runs are judged (a history in PostgreSQL is shared by machines whose
    processes this one cannot see); a run of an earlier boot of this host is gone for sure, and
    a run without a host tag is left alone."""
    from dagster import DagsterRunStatus, RunsFilter

    unfinished = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
    host, boot = socket.gethostname(), boot_id()

    def gone(tags) -> bool:
        if PID_TAG not in tags or tags.get(HOST_TAG) != host:
            return False
        if tags.get(BOOT_TAG) != boot:
            return True
        return not process_alive(int(tags[PID_TAG]), tags.get(START_TAG) or None)

    orphans = [r for r in instance.get_runs(RunsFilter(statuses=unfinished)) if gone(r.tags)]
    for run in orphans:
        instance.report_run_failed(
            run,
            f"its process (pid {run.tags[PID_TAG]} on {host}) is gone: it was killed before "
            "the run finished; marked failed by the next rag-assets command",
        )
    return [r.run_id for r in orphans]


def cancel_abandoned_queue(instance, home: Path) -> list[str]:
    """Cancel the runs left QUEUED in a SQLite history: only the daemon of a `rag-assets ui` on
    this data dir dequeues them, and a new one starting now would launch requests made before
    the last one stopped, against data that has moved on since. Nothing is lost: the automation
    sensor asks again for whatever is still stale. A history in PostgreSQL is left alone (another
    machine's daemon may be about to launch its queue)."""
    from dagster import DagsterRunStatus, RunsFilter

    if instance_kind(home) != "sqlite":
        return []
    queued = instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.QUEUED]))
    for run in queued:
        instance.report_run_canceled(
            run, "left queued when the UI that queued it stopped; cancelled by the next `rag-assets ui`"
        )
    return [r.run_id for r in queued]


# The code location's label, as the UI tags the runs it launches (`.dagster/repository`): the
# Overview timeline and a job's Runs tab show only runs that carry it.
REPOSITORY_TAG = ".dagster/repository"
REPOSITORY_LABEL = "__repository__@rag_assets"  # Definitions' repository @ the location in [tool.dg]


def run_tags() -> dict[str, str]:
    """Tags for a run this process executes: its code location, as a UI-launched run has, and
    this process's host, boot, pid and start time, so a later command on the same host can tell
    whether the run is an orphan."""
    return {
        REPOSITORY_TAG: REPOSITORY_LABEL,
        PID_TAG: str(os.getpid()),
        START_TAG: process_start(os.getpid()) or "",
        HOST_TAG: socket.gethostname(),
        BOOT_TAG: boot_id(),
    }


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


def storage_failure(exc: BaseException) -> BaseException | None:
    """The innermost cause of `exc` when it is the disk's or the database's (an OSError, a
    SQLite or PostgreSQL operational error), else None: those are reported in one line."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        below = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if below is None:
            break
        exc = below
    return exc if isinstance(exc, (OSError, *_database_errors())) else None


_ADDRESS = re.compile(
    r'"[^"]*"'  # psycopg2 quotes the host, the socket, the database and the user it could not reach
    r"|\bport \d+"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"  # an IPv4 address
    r"|\[[0-9a-fA-F:]*:[0-9a-fA-F:]*\](?::\d+)?"  # an IPv6 one
)
_AUTHORITY = re.compile(r"://[^\s/]*")  # what a URL names after its scheme: user, password, host and port


def described(exc: BaseException) -> str:
    """An error in words a reader may be shown (an unauthenticated /readyz body, a refusal): the type
    and first line of its innermost storage cause, or its own type, without a statement, its
    parameters, a password, or the database's address (host, port, socket)."""
    cause = storage_failure(exc) or exc
    lines = str(getattr(cause, "orig", None) or cause).split("[SQL:")[0].strip().splitlines()
    first = _ADDRESS.sub("[address]", _AUTHORITY.sub("://[address]", lines[0]))[:200] if lines else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


def _database_errors() -> tuple[type, ...]:
    import sqlite3

    errors: tuple[type, ...] = (sqlite3.OperationalError, sqlite3.DatabaseError)
    try:
        import psycopg2

        errors += (psycopg2.OperationalError,)
    except ImportError:
        pass
    return errors
