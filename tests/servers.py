"""Servers the tests start and stop themselves, on loopback: PostgreSQL 15, a Ray head, moto's S3
server and `rag-assets ui`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from rag_assets.locking import process_alive, process_start

CLI = [sys.executable, "-m", "rag_assets.app.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tool(name: str) -> str:
    """A PostgreSQL program: on PATH, else where Debian's packages put it."""
    found = shutil.which(name) or next(iter(sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None)
    if found is None:
        raise RuntimeError(f"PostgreSQL is needed for these tests: {name} not found (apt-get install postgresql-15)")
    return str(found)


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def postgres_server():
    """A PostgreSQL 15 server of the tests' own: `initdb` into a temporary folder, `pg_ctl` on a
    free loopback port with its socket in that folder, stopped (and the folder removed) after.
    `initdb` refuses to run as root, so as root the server runs as the `postgres` user.
    Yields the server's base URL (`postgresql://postgres@127.0.0.1:PORT`)."""
    initdb, pg_ctl = _tool("initdb"), _tool("pg_ctl")
    folder = Path(tempfile.mkdtemp(prefix="rag-assets-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", free_port()
    subprocess.run(
        _as_owner([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {folder}"
    ctl = [pg_ctl, "-D", str(data), "-l", str(folder / "server.log")]
    subprocess.run(_as_owner([*ctl, "-w", "-o", options, "start"]), check=True, capture_output=True)
    url = f"postgresql://postgres@127.0.0.1:{port}"
    _PG_CONTROL[url] = (ctl, options)
    try:
        yield url
    finally:
        subprocess.run(_as_owner([*ctl, "-w", "-m", "fast", "stop"]), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


_PG_CONTROL: dict[str, tuple[list[str], str]] = {}  # server URL -> (pg_ctl and its data dir, start options)


def stop_postgres(base_url: str) -> None:
    """Stop a server postgres_server started (fast shutdown: open connections are cut)."""
    ctl, _ = _PG_CONTROL[base_url]
    subprocess.run(_as_owner([*ctl, "-w", "-m", "fast", "stop"]), check=True, capture_output=True)


def start_postgres(base_url: str) -> None:
    """Start it again on the same port and data."""
    ctl, options = _PG_CONTROL[base_url]
    subprocess.run(_as_owner([*ctl, "-w", "-o", options, "start"]), check=True, capture_output=True)


def create_database(base_url: str, name: str) -> str:
    """A fresh database on the server; returns its URL."""
    import psycopg2

    connection = psycopg2.connect(base_url + "/postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    return f"{base_url}/{name}"


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is alive (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(
        int(line.split()[0]) == pgid
        for line in subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True, text=True).stdout.splitlines()
        if "Z" not in line.split()[1]
    )


@contextmanager
def running_ui(arguments: list[str], env: dict[str, str]):
    """`rag-assets ui` in its own process group, started with SIGINT ignored as a shell's `&`
    does; yields its base URL once it answers; then sends SIGINT to `rag-assets ui` alone and
    fails unless its whole group (webserver, daemon, code servers) has stopped."""
    port = free_port()
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
    server = subprocess.Popen(
        [*CLI, "ui", *arguments, "--port", str(port)],
        env=env,
        start_new_session=True,
        preexec_fn=ignore_sigint,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/server_info", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(1)
    else:
        os.killpg(server.pid, signal.SIGKILL)
        raise AssertionError("rag-assets ui did not answer within 180 s")
    try:
        yield base
    finally:
        server.send_signal(signal.SIGINT)
        deadline = time.time() + 60
        while group_alive(server.pid) and time.time() < deadline:
            time.sleep(0.5)
        server.poll()
        stopped = not group_alive(server.pid)
        if not stopped:
            os.killpg(server.pid, signal.SIGKILL)
        assert stopped, "rag-assets ui left processes running after SIGINT"


@contextmanager
def ray_cluster(cpus: int = 2, env: dict[str, str] | None = None):
    """A Ray head node of the tests' own (`ray start --head --block` in its own process group,
    dashboard off, no usage reporting, its files in a temporary folder); yields its address and
    stops the group it started, never another Ray on the machine. Ray's ports listen on every
    interface whatever it is told; only its dashboard could be held to loopback. Its workers
    inherit `env` (how a real cluster's nodes get their object-storage endpoint and credentials).
    Yields (address, process group of the cluster's processes)."""
    ray = str(Path(sys.executable).parent / "ray")
    folder = Path(tempfile.mkdtemp(prefix="rag-assets-ray-"))
    port = free_port()
    env = {**os.environ, **(env or {}), "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen(
        [ray, "start", "--head", "--block", "--port", str(port), "--num-cpus", str(cpus)]
        + ["--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", str(folder)]
        + ["--node-ip-address", "127.0.0.1"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if head.poll() is not None:
                raise RuntimeError(f"ray start exited with {head.returncode}")
            time.sleep(0.5)
        yield address, head.pid
    finally:
        workers = {pid: process_start(pid) for pid in descendants(head.pid)}  # in sessions of their own
        for sig, wait in ((signal.SIGTERM, 8), (signal.SIGKILL, 5)):
            if not group_alive(head.pid):
                break
            os.killpg(head.pid, sig)
            deadline = time.time() + wait
            while group_alive(head.pid) and time.time() < deadline:
                time.sleep(0.5)
        head.wait(timeout=5)
        deadline = time.time() + 10
        while (left := [p for p, start in workers.items() if process_alive(p, start)]) and time.time() < deadline:
            time.sleep(0.5)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


def descendants(pid: int) -> set[int]:
    """Every live process under `pid` (children, their children, ...)."""
    table = [
        line.split()
        for line in subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout.splitlines()
    ]
    children: dict[int, list[int]] = {}
    for child, parent in table:
        children.setdefault(int(parent), []).append(int(child))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


@contextmanager
def s3_server():
    """moto's standalone S3 server of the tests' own, on a free loopback port, in its own
    process group, stopped after; with a bucket `rag-assets`. Yields the environment that
    points boto and s3fs at it (endpoint and dummy credentials), for this process or a child."""
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(env["AWS_ENDPOINT_URL"], timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.2)
        urllib.request.urlopen(urllib.request.Request(f"{env['AWS_ENDPOINT_URL']}/rag-assets", method="PUT")).close()
        yield env
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)


def _wait_http(url: str, process: subprocess.Popen, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before it answered")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{what} did not answer within {seconds:.0f} s")


@contextmanager
def running_process(command: list[str], ready_url: str, what: str, seconds: float = 180, env=None, log=None):
    """`command` in its own process group, yielded once `ready_url` answers 200; the group stopped
    after. `log`: a file its stdout and stderr go to (default: nowhere)."""
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below, after the process)
    process = subprocess.Popen(command, start_new_session=True, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_http(ready_url, process, seconds, what)
        yield process
    finally:
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if log:
            out.close()


@contextmanager
def model_server(name: str = "smollm2-135m-instruct"):
    """`rag-assets serve-model`: the packaged generator behind the OpenAI-compatible protocol on a
    free loopback port; yields its API base (`http://127.0.0.1:PORT/v1`)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    with running_process([*CLI, "serve-model", "--port", str(port), "--name", name], base + "/models", "serve-model"):
        yield base


@contextmanager
def misbehaving_endpoint(seed: str = "0", port: int | None = None, dim: int = 8):
    """tests/bad_endpoint.py on a free loopback port: an OpenAI-compatible server whose every model
    fails one way (see there), its embeddings seeded by `seed`, `dim` long; yields its API base."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}/v1"
    script = str(Path(__file__).parent / "bad_endpoint.py")
    with running_process([sys.executable, script, str(port), seed, str(dim)], base + "/count", "bad_endpoint.py", 30):
        yield base


INFINITY = Path(os.environ.get("RAG_ASSETS_INFINITY", Path(__file__).parent.parent / ".ci/infinity/bin/infinity_emb"))


@contextmanager
def infinity_server(model_folder: Path):
    """infinity-emb (an embedding server that is not ours, in its own virtual environment: .ci/run
    installs it) serving `model_folder` on a free loopback port; yields its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [
        str(INFINITY),
        "v2",
        "--model-id",
        str(model_folder),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--engine",
        "torch",
        "--device",
        "cpu",
        "--no-bettertransformer",
        "--batch-size",
        "32",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
    with running_process(command, base + "/models", "infinity_emb", 240, env=env):
        yield base
