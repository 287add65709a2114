"""The hostile cases against `serve`, `serve-model`, `keys`, the endpoint clients and the experiment
file, re-run: each HELD or FAILED, with what it tried and what came back.

    python bench/hostile.py [--group NAME]

A small dataset is materialised for strategy E, then real processes are started on loopback as
each group needs them: `rag-assets serve` (extractive only, and with the generator), `rag-assets
serve-model`, PostgreSQL (for /readyz with the database gone) and tests/bad_endpoint.py, an
OpenAI-compatible server that drips, answers megabytes or the wrong shapes. A refusal holds when it is
one line on stderr with exit code 2 and no traceback; a bound holds when the process comes back in
time with memory to spare. Printed last: how many held and failed.
"""

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.append(str(Path(__file__).parent.parent / "tests"))  # after PYTHONPATH: the checkout measured wins
from conftest import TINY_DOCS, write_dataset  # noqa: E402
from servers import CLI, free_port, misbehaving_endpoint, model_server, postgres_server, running_process  # noqa: E402

QUESTION = "Which way should the inlet valve face?"
MARKED = "The drain plug sits under the pump.[2][3] Loosen it a quarter turn."
SECRET = "Falcon-code-4471"  # a question text that must never reach a log
RESULTS: list[tuple[str, str, bool, str]] = []


def cli(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [*CLI, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, -9, exc.stdout or "", f"still running after {timeout:.0f} s")


def refused(done: subprocess.CompletedProcess, *words: str) -> tuple[bool, str]:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    held = (
        done.returncode == 2
        and len(lines) == 1
        and "Traceback" not in done.stderr
        and all(w in lines[0] for w in words)
    )
    return held, f"rc {done.returncode}: {(lines or ['(nothing)'])[-1][:150]}"


def case(group: str, name: str, check: Callable[[], tuple[bool, str]]) -> None:
    try:
        held, detail = check()
    except Exception as exc:  # the bench's own failure is the case's
        held, detail = False, f"{type(exc).__name__}: {exc}"
    RESULTS.append((group, name, held, detail))
    print(f"{'HELD  ' if held else 'FAILED'} [{group}] {name}: {detail}", flush=True)


def started(command: list[str], ready: str, seconds: float = 240, env=None):
    return running_process(command, ready, command[3] if len(command) > 3 else "process", seconds, env)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Lab:
    """The dataset, its data dir (materialised for strategy E) and a keys file."""

    def __init__(self, root: Path):
        docs = dict(TINY_DOCS)
        docs["drain.md"] = f"# Drain\n\n{MARKED}\n"
        self.dataset = write_dataset(root / "dataset", docs)
        self.data_dir, self.keys = root / "data", root / "keys.json"
        self.where = ["--dataset", str(self.dataset), "--data-dir", str(self.data_dir)]
        done = cli("run", *self.where, "--strategies", "E", "--no-llm", timeout=900)
        if done.returncode != 0:
            sys.exit(f"the lab run failed:\n{done.stderr[-2000:]}")
        self.key = cli("keys", "add", "--keys", str(self.keys), "--id", "ops", "--operator").stdout.strip()


def serving(lab: Lab, *extra: str, log: Path | None = None, env=None):
    port = free_port()
    command = [*CLI, "serve", *lab.where, "--keys", str(lab.keys), "--port", str(port), "--check-every", "0.5", *extra]
    base = f"http://127.0.0.1:{port}"

    class Server:
        def __enter__(self):
            self.log = open(log, "w") if log else subprocess.DEVNULL
            self.process = subprocess.Popen(command, start_new_session=True, stdout=self.log, stderr=self.log, env=env)
            deadline = time.time() + 300
            while time.time() < deadline:
                try:
                    if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                        return base, self.process
                except httpx.HTTPError:
                    time.sleep(0.5)
            raise RuntimeError("serve did not start")

        def __exit__(self, *exc):
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
            if log:
                self.log.close()

    return Server()


def ask(base: str, key: str, body, timeout: float = 120) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(base + "/v1/ask", content=data, headers=headers, timeout=timeout)


def load_and_admission(lab: Lab, tmp: Path) -> None:
    g = "load and admission"
    with serving(lab, "--answerers", "extractive") as (base, process):
        before = rss_mb(process.pid)
        r = ask(base, lab.key, {"question": QUESTION, "retriever": "rerank-llm"})
        grown = rss_mb(process.pid) - before
        case(
            g,
            "rerank-llm on an extractive-only serve",
            lambda: (
                r.status_code == 400 and grown < 200,
                f"HTTP {r.status_code}, RSS +{grown:.0f} MB: {r.text[:100]}",
            ),
        )
    with serving(lab, "--generating", "1", "--queue", "2") as (base, process):
        ask(base, lab.key, {"question": QUESTION, "retriever": "rerank-llm"})  # the generator warm

        def one(_):
            return ask(base, lab.key, {"question": QUESTION, "retriever": "rerank-llm"}).status_code

        with ThreadPoolExecutor(12) as pool:
            codes = list(pool.map(one, range(12)))
        case(g, "12 concurrent rerank-llm pass the gate", lambda: (codes.count(429) >= 1, f"codes {sorted(codes)}"))
        times = []

        def extractive_meanwhile():
            for _ in range(3):
                t0 = time.perf_counter()
                ask(base, lab.key, {"question": QUESTION})
                times.append(time.perf_counter() - t0)

        with ThreadPoolExecutor(4) as pool:
            busy = [pool.submit(one, i) for i in range(3)]
            extractive_meanwhile()
            [b.result() for b in busy]
        case(
            g,
            "an extractive answer is not held behind reranking",
            lambda: (max(times) < 2.0, f"slowest {max(times):.2f} s"),
        )
    case(
        g,
        "serve-model on all interfaces without keys",
        lambda: refused(cli("serve-model", "--host", "0.0.0.0", "--port", str(free_port())), "--keys"),
    )
    cli("keys", "add", "--keys", str(tmp / "model-keys.json"), "--id", "m", "--operator")
    port = free_port()
    model_key = cli("keys", "add", "--keys", str(tmp / "model-keys2.json"), "--id", "m", "--operator").stdout.strip()
    command = [*CLI, "serve-model", "--port", str(port), "--keys", str(tmp / "model-keys2.json"), "--queue", "1"]
    base = f"http://127.0.0.1:{port}/v1"
    with subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as process:
        try:
            auth = {"Authorization": f"Bearer {model_key}"}
            deadline = time.time() + 240
            while time.time() < deadline:
                try:
                    if httpx.get(base + "/models", headers=auth, timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            r = httpx.get(base + "/models", timeout=5)
            case(g, "serve-model without a key", lambda: (r.status_code == 401, f"HTTP {r.status_code}"))
            before = rss_mb(process.pid)
            big = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "x" * 20_000_000}]}
            r = httpx.post(base + "/chat/completions", json=big, headers=auth, timeout=60)
            grown = rss_mb(process.pid) - before
            case(
                g,
                "serve-model, a 20 MB prompt",
                lambda: (r.status_code == 413 and grown < 100, f"HTTP {r.status_code}, RSS +{grown:.0f} MB"),
            )
            many = {"query": "valve", "documents": ["a passage"] * 200}
            r = httpx.post(base + "/rerank", json=many, headers=auth, timeout=60)
            case(
                g,
                "serve-model, a 200-document rerank",
                lambda: (r.status_code == 422, f"HTTP {r.status_code}: {r.text[:100]}"),
            )
            chat = {
                "model": "smollm2-135m-instruct",
                "messages": [{"role": "user", "content": "Say hi."}],
                "max_tokens": 40,
            }

            def one(_):
                return httpx.post(base + "/chat/completions", json=chat, headers=auth, timeout=120).status_code

            with ThreadPoolExecutor(6) as pool:
                codes = list(pool.map(one, range(6)))
            case(
                g,
                "serve-model admits one at a time and a queue",
                lambda: (429 in codes and 200 in codes, f"codes {sorted(codes)}"),
            )
        finally:
            os.killpg(process.pid, signal.SIGTERM)
    for flag, value in [
        ("--check-every", "0"),
        ("--check-every", "-1"),
        ("--check-every", "nan"),
        ("--check-every", "inf"),
        ("--timeout", "nan"),
        ("--timeout", "-1"),
        ("--timeout", "0"),
        ("--queue", "-5"),
    ]:
        done = cli("serve", *lab.where, "--keys", str(lab.keys), flag, value, "--port", str(free_port()), timeout=60)
        case(g, f"serve {flag} {value}", lambda d=done, f=flag: refused(d, f))


def bad_requests(lab: Lab, tmp: Path) -> None:
    g = "bad requests"
    log = tmp / "serve.log"
    with serving(lab, "--answerers", "extractive", log=log) as (base, _):
        for name, body in [
            ("a whitespace-only question", json.dumps({"question": " \t\n  "})),
            ("strategy NaN", '{"question": "' + SECRET + '", "strategy": NaN}'),
            ("retriever Infinity", '{"question": "' + SECRET + '", "retriever": Infinity}'),
            ("answerer -Infinity", '{"question": "' + SECRET + '", "answerer": -Infinity}'),
            ("a lone surrogate", '{"question": "' + SECRET + ' \\ud800"}'),
        ]:
            r = ask(base, lab.key, body)
            case(
                g,
                name,
                lambda r=r: (
                    r.status_code in (400, 422) and SECRET not in r.text,
                    f"HTTP {r.status_code}: {r.text[:100]}",
                ),
            )
    logged = log.read_text()
    case(
        g,
        "no question text in serve's log",
        lambda: (SECRET not in logged and "Traceback" not in logged, f"{len(logged)} bytes logged"),
    )
    with model_server() as base:
        for name, path, body in [
            (
                "serve-model, a lone surrogate",
                "/chat/completions",
                '{"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "\\ud800"}]}',
            ),
            ("serve-model, a NaN rerank query", "/rerank", '{"query": NaN, "documents": ["a"]}'),
        ]:
            r = httpx.post(base + path, content=body, headers={"Content-Type": "application/json"}, timeout=60)
            case(g, name, lambda r=r: (r.status_code == 422, f"HTTP {r.status_code}: {r.text[:100]}"))


def keys_and_secrets(lab: Lab, tmp: Path) -> None:
    g = "keys and secrets"
    keys = tmp / "live-keys.json"
    alice = cli("keys", "add", "--keys", str(keys), "--id", "alice", "--operator").stdout.strip()
    bob = cli("keys", "add", "--keys", str(keys), "--id", "bob", "--operator").stdout.strip()
    carol = cli("keys", "add", "--keys", str(keys), "--id", "carol", "--operator", "--expires", "1h").stdout.strip()
    case(
        g,
        "keys.json is readable by its owner only",
        lambda: (oct(keys.stat().st_mode & 0o777) == "0o600", oct(keys.stat().st_mode & 0o777)),
    )
    port = free_port()
    command = [*CLI, "serve", *lab.where, "--keys", str(keys), "--port", str(port), "--answerers", "extractive"]
    base = f"http://127.0.0.1:{port}"
    with started(command, base + "/healthz"):
        ok = ask(base, alice, {"question": QUESTION}).status_code
        cli("keys", "remove", "--keys", str(keys), "--id", "alice")
        time.sleep(2.5)
        after = ask(base, alice, {"question": QUESTION}).status_code
        case(g, "a removed key is refused within seconds", lambda: (ok == 200 and after == 401, f"{ok} then {after}"))
        rotated = cli("keys", "rotate", "--keys", str(keys), "--id", "bob").stdout.strip()
        time.sleep(2.5)
        codes = (
            ask(base, bob, {"question": QUESTION}).status_code,
            ask(base, rotated, {"question": QUESTION}).status_code,
        )
        case(g, "a rotated key: the old refused, the new answered", lambda: (codes == (401, 200), f"{codes}"))
        listing = cli("keys", "list", "--keys", str(keys))
        case(
            g,
            "keys list",
            lambda: (
                listing.returncode == 0 and "carol" in listing.stdout and "alice" not in listing.stdout,
                listing.stdout.strip().replace("\n", " | ")[:150],
            ),
        )
        keys.write_text(
            json.dumps({"keys": [{**json.loads(keys.read_text())["keys"][-1], "expires": "2020-01-01T00:00:00+00:00"}]})
        )
        time.sleep(2.5)
        case(
            g,
            "an expired key is refused",
            lambda: (lambda c: (c == 401, f"HTTP {c}"))(ask(base, carol, {"question": QUESTION}).status_code),
        )
    fifo = tmp / "fifo.json"
    os.mkfifo(fifo)
    case(
        g,
        "a keys file that is a FIFO: serve",
        lambda: refused(
            cli("serve", *lab.where, "--keys", str(fifo), "--port", str(free_port()), timeout=20), "not a regular file"
        ),
    )
    case(
        g,
        "a keys file that is a FIFO: keys add",
        lambda: refused(cli("keys", "add", "--keys", str(fifo), "--id", "x", "--operator", timeout=20), "regular file"),
    )
    for body in ("[]", "{}", '{"keys": 5}', "[5]", '"abc"'):
        bad = tmp / f"bad-{abs(hash(body))}.json"
        bad.write_text(body)
        case(
            g,
            f"keys add on {body}",
            lambda b=bad: refused(cli("keys", "add", "--keys", str(b), "--id", "x", "--operator"), "not a keys file"),
        )
    case(
        g,
        "a password on --instance-postgres",
        lambda: refused(
            cli("ask", *lab.where, "--instance-postgres", "postgresql://u:secretpw@127.0.0.1:1/db", QUESTION),
            "process list",
        ),
    )
    case(
        g,
        "a password in --generator-url",
        lambda: refused(
            cli("ask", *lab.where, "--generator-url", "http://u:pw@127.0.0.1:1/v1", "--generator-model", "m", QUESTION),
            "user or password",
        ),
    )
    with misbehaving_endpoint() as bad_base:
        path = tmp / "echo.yaml"
        path.write_text(
            f"chunkers: [E]\nembedders:\n  e: {{url: '{bad_base}', model: echokey, key_env: RAG_ASSETS_KEY_HOSTILE}}\n"
        )
        key = {"RAG_ASSETS_KEY_HOSTILE": "sk-hostile-secret-key-123"}
        done = cli("check", *lab.where, "--experiment", str(path), env=key)
        case(
            g,
            "an endpoint that echoes the key",
            lambda: (
                done.returncode == 2
                and "HTTP 400" in done.stderr  # the key was sent, and the answer quoting it scrubbed
                and "sk-hostile" not in done.stderr + done.stdout
                and "xxxxxxxx" not in done.stderr,
                done.stderr.strip()[:150],
            ),
        )
    with postgres_server() as url:
        from servers import create_database, stop_postgres

        database = create_database(url, "hostile")
        pg_data = tmp / "pg-data"
        env = {**os.environ, "RAG_ASSETS_POSTGRES_URL": database.replace("postgres@", "postgres:pw@")}
        done = cli(
            "run",
            "--dataset",
            str(lab.dataset),
            "--data-dir",
            str(pg_data),
            "--strategies",
            "E",
            "--no-llm",
            env=env,
            timeout=900,
        )
        port = free_port()
        command = [*CLI, "serve", "--dataset", str(lab.dataset), "--data-dir", str(pg_data), "--keys", str(lab.keys)]
        command += ["--port", str(port), "--workers", "2", "--answerers", "extractive", "--check-every", "0.5"]
        with started(command, f"http://127.0.0.1:{port}/healthz", env=env) as process:
            time.sleep(5)
            group = subprocess.run(["pgrep", "-g", str(process.pid)], capture_output=True, text=True).stdout.split()
            workers = [int(p) for p in group if int(p) != process.pid]
            leaking = [w for w in workers if b"postgres:pw@" in Path(f"/proc/{w}/environ").read_bytes()]
            case(
                g,
                "serve --workers: no password in the workers' environments",
                lambda: (
                    done.returncode == 0 and workers and not leaking,
                    f"run rc {done.returncode}; {len(workers)} workers, {len(leaking)} with the password",
                ),
            )
            stop_postgres(url)
            deadline = time.time() + 150  # Dagster retries a lost connection with back-off before it gives up
            while (r := httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)).status_code == 200:
                if time.time() > deadline:
                    break
                time.sleep(0.5)
            case(
                g,
                "/readyz with the database gone",
                lambda: (
                    r.status_code == 503
                    and "SELECT" not in r.text
                    and "[SQL" not in r.text
                    and "pw" not in r.text
                    and url.rsplit(":", 1)[1] not in r.text,  # no port: /readyz asks no key
                    r.text[:150],
                ),
            )


def endpoints(lab: Lab, tmp: Path) -> None:
    g = "endpoints"
    with misbehaving_endpoint() as base:

        def asked(model: str, timeout: str = "5"):
            return cli(
                "ask",
                *lab.where,
                "--generator-url",
                base,
                "--generator-model",
                model,
                "--generator-timeout",
                timeout,
                "--answerer",
                "generate",
                "--json",
                QUESTION,
                timeout=120,
            )

        t0 = time.perf_counter()
        done = asked("drip")
        took = time.perf_counter() - t0
        case(
            g,
            "a generator that drips bytes",
            lambda: (
                took < 60 and "Traceback" not in done.stderr and '"failure"' in done.stdout,
                f"{took:.1f} s, rc {done.returncode}",
            ),
        )
        for model in ("huge", "choices5", "list5", "message5"):
            done = asked(model)
            failure = json.loads(done.stdout).get("failure") if done.returncode == 0 and done.stdout.strip() else None
            case(
                g,
                f"a generator answering {model}",
                lambda d=done, f=failure: (bool(f) and "Traceback" not in d.stderr, f"rc {d.returncode}, failure: {f}"),
            )
        for model, words in (
            ("drip", "within"),
            ("huge10", "more than"),
            ("huge200", "more than"),
            ("strvec", "valid number"),
            ("strindex", "valid integer"),
            ("usage5", "usage"),
        ):
            path = tmp / f"{model}.yaml"
            path.write_text(f"chunkers: [E]\nembedders:\n  e: {{url: '{base}', model: {model}}}\n")
            t0 = time.perf_counter()
            done = cli("check", *lab.where, "--experiment", str(path), timeout=150)
            took = time.perf_counter() - t0
            case(
                g,
                f"check, an embedding endpoint answering {model}",
                lambda d=done, w=words, t=took: (refused(d, w)[0] and t < 60, refused(d)[1] + f" ({t:.1f} s)"),
            )
        path = tmp / "strscore.yaml"
        path.write_text(
            "chunkers: [E]\nembedders: [minilm]\nrerankers:\n"
            f"  r: {{url: '{base.removesuffix('/v1')}', model: strscore}}\n"
        )
        case(
            g,
            "check, a reranker answering string scores",
            lambda: refused(cli("check", *lab.where, "--experiment", str(path)), "valid number"),
        )
    for seed in ("html", "data5"):
        with misbehaving_endpoint(seed=seed) as base:
            done = cli("ask", *lab.where, "--generator-url", base, "--generator-model", "flaky", QUESTION)
            case(g, f"a generator whose /models is {seed}", lambda d=done: refused(d, "model list"))
    records = lab.data_dir / "cache" / "endpoints"
    records.mkdir(parents=True, exist_ok=True)
    with misbehaving_endpoint() as base:
        path = tmp / "good.yaml"
        path.write_text(f"chunkers: [E]\nembedders:\n  e: {{url: '{base}', model: good}}\n")
        cli("check", *lab.where, "--experiment", str(path))
        for record in records.glob("*.json"):
            record.write_text("{not json")
        done = cli("check", *lab.where, "--experiment", str(path))
        case(
            g,
            "a corrupt record in cache/endpoints",
            lambda: (done.returncode == 0 and "Traceback" not in done.stderr, f"rc {done.returncode}"),
        )


def experiment_file(lab: Lab, tmp: Path) -> None:
    g = "experiment file"
    base = "chunkers: [E]\nembedders: [minilm]\n"
    for name, text, words in [
        ("HNSW m: 0", base + "retrievers:\n  h: {dense: true, index: hnsw, m: 0}\n", "m:"),
        ("HNSW m: 1", base + "retrievers:\n  h: {dense: true, index: hnsw, m: 1}\n", "m:"),
        ("k: empty", base + "k:\n", "unknown key 'k'"),
        ("llm: false", base + "rerankers:\n  l: {llm: false}\n", "llm:"),
        ("dense: false", base + "retrievers:\n  d: {dense: false}\n", "dense:"),
        ("BM25 b: 7", base + "retrievers:\n  b: {bm25: true, b: 7}\n", "b:"),
        (
            "timeout_s: 0",
            "chunkers: [E]\nembedders:\n  s: {url: 'http://127.0.0.1:9/v1', model: m, timeout_s: 0}\n",
            "timeout_s",
        ),
        (
            "retries: 100000",
            "chunkers: [E]\nembedders:\n  s: {url: 'http://127.0.0.1:9/v1', model: m, retries: 100000}\n",
            "retries",
        ),
        ("path: /", "chunkers: [E]\nembedders:\n  s: {path: /}\n", "holds no model"),
        ("~nonexistentuser/x", "chunkers: [E]\nembedders:\n  s: {path: ~nonexistentuser/x}\n", "home directory"),
    ]:
        path = tmp / f"exp-{abs(hash(name))}.yaml"
        path.write_text(text)
        case(g, name, lambda p=path, w=words: refused(cli("check", *lab.where, "--experiment", str(p)), w))
    deep = tmp / "deep.yaml"
    deep.write_text("chunkers: " + "[" * 100_000 + "]" * 100_000 + "\n")
    case(g, "a 100,000-deep YAML", lambda: refused(cli("check", *lab.where, "--experiment", str(deep)), "nested"))
    many = tmp / "many.yaml"
    chunkers = "\n".join(f"  c{i}: {{cut: blind, size: {i + 10}}}" for i in range(100))
    embedders = "\n".join(f"  e{i}: minilm" for i in range(100))
    retrievers = "\n".join(f"  r{i}: {{hybrid: true, rrf_k: {i + 1}}}" for i in range(1000))
    many.write_text(f"search: grid\nchunkers:\n{chunkers}\nembedders:\n{embedders}\nretrievers:\n{retrievers}\n")
    case(
        g,
        "10 million configurations (a grid)",
        lambda: refused(cli("check", *lab.where, "--experiment", str(many)), "at most 500"),
    )
    target = tmp / "elsewhere.yaml"
    link = lab.dataset / "experiment.yaml"
    link.symlink_to(target)
    case(
        g,
        "init through a dangling experiment.yaml link",
        lambda: refused(cli("init", *lab.where), "link") if not target.exists() else (False, "wrote through"),
    )
    done = cli("init", *lab.where, "--force")
    case(
        g, "init --force through the link", lambda: (refused(done, "link")[0] and not target.exists(), refused(done)[1])
    )
    link.unlink()
    for out in (str(tmp), "/proc/rag.yaml", "/dev/full"):
        case(g, f"init --out {out}", lambda o=out: refused(cli("init", *lab.where, "--out", o, "--force")))
    readonly = tmp / "readonly"
    readonly.mkdir()
    (readonly / "documents").mkdir()
    (readonly / "documents" / "a.md").write_text("# A\n\nA sentence about pumps.\n")
    readonly.chmod(0o555)
    done = cli("init", "--dataset", str(readonly), "--data-dir", str(tmp / "ro-data"))
    readonly.chmod(0o755)
    writable_anyway = os.geteuid() == 0  # root writes into a read-only folder: nothing to refuse there
    case(
        g,
        "init into a read-only dataset",
        lambda: (True, "root ignores the mode") if writable_anyway else refused(done, "cannot write"),
    )


def smaller(lab: Lab, tmp: Path) -> None:
    g = "smaller"
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = cli("serve", *lab.where, "--keys", str(lab.keys), "--port", port, timeout=60)
        case(
            g,
            "serve on a port in use",
            lambda: (refused(done, "in use")[0] and "http://" not in done.stdout, refused(done)[1]),
        )
        done = cli("serve-model", "--port", port, timeout=60)
        case(
            g,
            "serve-model on a port in use",
            lambda: (refused(done, "in use")[0] and "serving" not in done.stdout, refused(done)[1]),
        )
    bad = tmp / "bad.gguf"
    bad.write_bytes(b"GGUF" + os.urandom(4096))
    case(
        g,
        "serve-model --generator with a bad file",
        lambda: refused(
            cli("serve-model", "--generator", str(bad), "--port", str(free_port()), timeout=120), "cannot be loaded"
        ),
    )
    folder_record = tmp / "folder-record"
    (folder_record / "dataset.json").mkdir(parents=True)
    case(
        g,
        "dataset.json a folder: ask",
        lambda: refused(cli("ask", "--data-dir", str(folder_record), QUESTION), "dataset.json"),
    )
    done = cli("run", "--data-dir", str(folder_record), "--no-llm", "--strategies", "E")
    left = [p.name for p in folder_record.iterdir() if p.name != "dataset.json"]
    case(
        g,
        "dataset.json a folder: run",
        lambda: (refused(done, "dataset.json")[0] and not left, refused(done)[1] + f"; left {left}"),
    )
    for value in ("", ","):
        case(
            g,
            f"--strategies {value!r}",
            lambda v=value: refused(cli("run", *lab.where, "--strategies", v), "strategies"),
        )
    done = cli("ask", *lab.where, "--json", "--all-tenants", "Where does the drain plug sit?")
    answer = json.loads(done.stdout) if done.returncode == 0 else {}
    case(
        g,
        "a document's own [2][3] are not citations",
        lambda: (
            done.returncode == 0 and not answer.get("dangling") and "[2]" not in (answer.get("answer") or ""),
            f"answer {answer.get('answer')!r}, dangling {answer.get('dangling')}",
        ),
    )


def at_once(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    """`rag-assets` processes started together; each one's exit code, stdout and stderr."""
    started = [
        subprocess.Popen([*CLI, *c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands
    ]
    done = []
    for command, process in zip(commands, started):
        out, err = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(command, process.returncode, out, err))
    return done


def secrets_and_records(lab: Lab, tmp: Path) -> None:
    g = "secrets and records"
    keys = tmp / "race-keys.json"
    done = at_once(*(["keys", "add", "--keys", str(keys), "--id", f"k{i}", "--operator"] for i in range(10)))
    listed = cli("keys", "list", "--keys", str(keys)).stdout.splitlines()
    case(
        g,
        "10 concurrent keys add",
        lambda: (
            [d.returncode for d in done] == [0] * 10 and len(listed) == 10,
            f"{sum(d.returncode == 0 for d in done)} printed a key, {len(listed)} in the file",
        ),
    )
    undone = 0
    for trial in range(6):
        keys = tmp / f"race-{trial}.json"
        cli("keys", "add", "--keys", str(keys), "--id", "victim", "--operator")
        adds = (["keys", "add", "--keys", str(keys), "--id", f"a{i}", "--operator"] for i in range(5))
        at_once(["keys", "remove", "--keys", str(keys), "--id", "victim"], *adds)
        ids = [line.split("\t")[0] for line in cli("keys", "list", "--keys", str(keys)).stdout.splitlines()]
        undone += "victim" in ids or len(ids) != 5
    case(g, "keys remove racing 5 keys add, 6 trials", lambda: (undone == 0, f"revocation undone in {undone} of 6"))
    secret = "postgresql://postgres:hostile-pw@db:5432/rag"
    with misbehaving_endpoint() as base:
        for variable in ("RAG_ASSETS_POSTGRES_URL", "PATH", "AWS_SECRET_ACCESS_KEY", "RAG_ASSETS_JUDGE_KEY"):
            path = tmp / f"key-env-{variable}.yaml"
            path.write_text(f"chunkers: [E]\nembedders:\n  e: {{url: '{base}', model: echokey, key_env: {variable}}}\n")
            env = {} if variable == "PATH" else {variable: secret}
            done = cli("check", *lab.where, "--experiment", str(path), env=env)
            case(
                g,
                f"key_env: {variable}",
                lambda d=done, p=path: (
                    refused(d, f"{p}:3:", "key_env")[0] and secret not in d.stdout + d.stderr,
                    refused(d)[1],
                ),
            )
        records = lab.data_dir / "cache" / "endpoints"
        path = tmp / "probe.yaml"
        path.write_text(f"chunkers: [E]\nembedders:\n  e: {{url: '{base}', model: good}}\n")
        before = set(records.glob("*.json")) if records.is_dir() else set()
        made = subprocess.run(  # what a run does: probe the endpoint and keep the record
            [
                sys.executable,
                "-c",
                "import sys; from rag_assets.experiment import spec; from rag_assets.retrieval import embedders; "
                "embedders.make(spec.load(sys.argv[1]).arms['embedders'][0].spec, sys.argv[2])",
                str(path),
                str(records),
            ],
            capture_output=True,
            text=True,
        )
        record = next(iter(set(records.glob("*.json")) - before), None)
        if record is None:
            case(g, "a probe record in cache/endpoints", lambda: (False, f"no record made: {made.stderr[-150:]}"))
        else:
            record.write_text('{"a": ' + "[" * 30_000 + "]" * 30_000 + "}")
            done = cli("check", *lab.where, "--experiment", str(path))
            case(
                g,
                "a probe record nested 30,000 deep: check",
                lambda d=done: (d.returncode == 0 and "Traceback" not in d.stderr, f"rc {d.returncode}"),
            )
            record.unlink()
            os.mkfifo(record)
            done = cli("check", *lab.where, "--experiment", str(path), timeout=60)
            case(g, "a probe record that is a FIFO: check", lambda d=done: refused(d, record.name, "FIFO"))
            record.unlink()
    kept = {name: (lab.data_dir / name).read_bytes() for name in ("models.json", "dataset.json")}
    (lab.data_dir / "models.json").write_text(
        json.dumps({"models": "minilm", "reason": "ok\n\x1b[31mFORGED\x1b[0m\x1b]0;title\x07"})
    )
    done = cli("ask", *lab.where, QUESTION)
    case(
        g,
        "a reason in models.json with a newline and ANSI escapes",
        lambda: (
            done.returncode == 0 and "\x1b" not in done.stdout and "\\x1b[31mFORGED" in done.stdout,
            done.stdout.strip().splitlines()[-1][:150] if done.stdout.strip() else done.stderr[-150:],
        ),
    )
    with misbehaving_endpoint() as base:
        endpoint = ["--generator-url", base, "--generator-model", "ansi", "--answerer", "generate"]
        done = cli("ask", *lab.where, *endpoint, "--threshold", "1.5", QUESTION)
    case(
        g,
        "a generator answering a screen clear, a window title and a carriage return",
        lambda: (
            done.returncode == 0 and not any(c in done.stdout for c in "\x1b\r\x07") and "\\x1b[2J" in done.stdout,
            f"rc {done.returncode}: " + (done.stdout.strip().splitlines() or [done.stderr[-100:]])[0][:120],
        ),
    )
    damages = {
        "nested 30,000 deep": lambda p: p.write_text('{"a": ' + "[" * 30_000 + "]" * 30_000 + "}"),
        "a folder": lambda p: p.mkdir(),
        "a FIFO": os.mkfifo,
        "a link to /dev/zero": lambda p: p.symlink_to("/dev/zero"),
        "a dangling link": lambda p: p.symlink_to(p.parent / "nowhere.json"),
        "of the wrong type": lambda p: p.write_text('{"models": 7, "reason": 7, "dataset": 7, "chosen": 7}'),
    }
    for name in ("models.json", "served.json", "dataset.json"):
        for damage, make in damages.items():
            record = lab.data_dir / name
            if record.is_dir() and not record.is_symlink():
                record.rmdir()
            elif record.exists() or record.is_symlink():
                record.unlink()
            make(record)
            done = cli("ask", *lab.where, QUESTION, timeout=60)
            case(g, f"{name} {damage}: ask", lambda d=done, n=name: refused(d, n))
            shutil.rmtree(record) if record.is_dir() and not record.is_symlink() else record.unlink()
    for name, data in kept.items():
        (lab.data_dir / name).write_bytes(data)
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    view = tmp / "site-packages"  # this Python's packages less mpnet's
    view.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().replace("-", "_").startswith("all_mpnet_base_v2"):
            (view / entry.name).symlink_to(entry)
    start = f"import site, sys; site.addsitedir({str(view)!r}); from rag_assets.app.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-S", "-c", start, "ask", *lab.where, "--embedder", "mpnet", QUESTION],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAG_ASSETS_MODEL_CACHE": str(tmp / "models")},
    )
    case(g, "ask --embedder mpnet, not installed", lambda: refused(done, "pip install"))
    folder = tmp / "random-model"
    source = subprocess.run(
        [sys.executable, "-c", "from rag_assets.retrieval.embedding import model_path; print(model_path())"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.safetensors", "sentence_bert_config.json"))
    (folder / "model.safetensors").write_bytes(os.urandom(4096))
    path = tmp / "random-model.yaml"
    path.write_text(f"chunkers: [E]\nembedders:\n  r: {{path: {folder}}}\n")
    case(
        g,
        "check, a model folder with random weights",
        lambda: refused(cli("check", *lab.where, "--experiment", str(path)), "cannot be loaded as a model"),
    )


BOUNDED_S = 90  # a process's start on a busy machine and its 5 s deadlines; what drips, left alone, never ends


def peak(*args: str, timeout: float = 150, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float, float]:
    """`cli`, with the seconds it took and its peak resident memory in MB (the kernel's count at exit)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        process = subprocess.Popen([*CLI, *args], stdout=out, stderr=err, env={**os.environ, **(env or {})})
        killer = threading.Timer(timeout, process.kill)
        killer.start()
        _, status, usage = os.wait4(process.pid, 0)
        killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        took = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        texts = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    return subprocess.CompletedProcess(args, process.returncode, *texts), took, usage.ru_maxrss / 1024


def parsed(done: subprocess.CompletedProcess) -> dict:
    """What `ask --json` printed (an answer that failed too), or {} where it printed no JSON object."""
    try:
        value = json.loads(done.stdout)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def wire_and_state(lab: Lab, tmp: Path) -> None:
    """Bounds on the wire (headers dripped, a gzip bomb, two encodings) for every endpoint call, keys
    echoed by endpoints, the gate and the slot of a 504, errors that could show a file or an address,
    and state that could lie. Every output is kept, and the keys placed in the environment are
    counted in all of it last."""
    g = "wire and state"
    keys = {
        "RAG_ASSETS_GENERATOR_KEY": "sk-hostile-generator-4471",
        "RAG_ASSETS_JUDGE_KEY": "sk-hostile-judge-4471",
        "RAG_ASSETS_KEY_EMBEDDINGS": "sk-hostile-embeddings-4471",
    }
    outputs: list[str] = []  # every stdout, stderr, response body and log of this group

    def watched(*args: str, **kwargs):
        done, took, mb = peak(*args, **kwargs)
        outputs.extend([done.stdout, done.stderr])
        return done, took, mb

    def kept(*args: str, **kwargs):
        done = cli(*args, **kwargs)
        outputs.extend([done.stdout, done.stderr])
        return done

    with misbehaving_endpoint() as base:

        def embedder(model: str) -> Path:
            path = tmp / f"wire-{model}.yaml"
            path.write_text(
                f"chunkers: [E]\nembedders:\n  e: {{url: '{base}', model: {model}, "
                "key_env: RAG_ASSETS_KEY_EMBEDDINGS}\n"
            )
            return path

        _, _, without = watched("check", *lab.where, "--experiment", str(embedder("good")), env=keys)
        for model, words in (("driphead", "within"), ("bomb", "more than"), ("gzip2", "gzip, gzip")):
            done, took, mb = watched("check", *lab.where, "--experiment", str(embedder(model)), env=keys)
            case(
                g,
                f"check, an embedding endpoint answering {model}",
                lambda d=done, w=words, t=took, m=mb: (
                    refused(d, w)[0] and t < BOUNDED_S and m < without + 200,
                    refused(d)[1] + f" ({t:.1f} s, peak {m:.0f} MB; {without:.0f} MB for a good endpoint)",
                ),
            )
        for model, words in (("driphead", "within"), ("bomb", "more than")):
            path = tmp / f"wire-rerank-{model}.yaml"
            path.write_text(
                "chunkers: [E]\nembedders: [minilm]\nrerankers:\n"
                f"  r: {{url: '{base.removesuffix('/v1')}', model: {model}}}\n"
            )
            done, took, mb = watched("check", *lab.where, "--experiment", str(path), env=keys)
            case(
                g,
                f"check, a reranker answering {model}",
                lambda d=done, w=words, t=took, m=mb: (
                    refused(d, w)[0] and t < BOUNDED_S,
                    refused(d)[1] + f" ({t:.1f} s, peak {m:.0f} MB)",
                ),
            )

        def generated(model: str, *extra: str):
            generator = ["--generator-url", base, "--generator-model", model, "--generator-timeout", "5"]
            return watched(
                "ask", *lab.where, *generator, "--answerer", "generate", "--json", *extra, QUESTION, env=keys
            )

        done, _, without = generated("echokey")
        answer = parsed(done)
        case(
            g,
            "a generator that echoes its key",
            lambda d=done: (
                d.returncode == 0
                and "[key]" in (answer.get("answer") or "")
                and keys["RAG_ASSETS_GENERATOR_KEY"] not in d.stdout,
                f"rc {d.returncode}, answer {answer.get('answer')!r}"[:150],
            ),
        )
        for model in ("driphead", "bomb", "gzip2"):
            done, took, mb = generated(model)
            failure = parsed(done).get("failure")
            case(
                g,
                f"a generator answering {model}",
                lambda d=done, f=failure, t=took, m=mb: (
                    bool(f) and "Traceback" not in d.stderr and t < BOUNDED_S and m < without + 200,
                    f"rc {d.returncode}, failure: {f} ({t:.1f} s, peak {m:.0f} MB; {without:.0f} MB echoing)",
                ),
            )

        def judged(model: str):
            judge = ["--judge-url", base, "--judge-model", model, "--generator-timeout", "3"]
            return watched("ask", *lab.where, *judge, "--json", QUESTION, env=keys)

        done, took, _ = judged("driphead")
        verdicts = [str((s.get("judge") or {}).get("verdict")) for s in parsed(done).get("support") or []]
        case(
            g,
            "a judge whose headers drip",
            lambda d=done, t=took: (
                d.returncode == 0 and verdicts and all(v.startswith("failed") for v in verdicts) and t < BOUNDED_S,
                f"rc {d.returncode}, {verdicts} ({t:.1f} s)",
            ),
        )
        done, _, _ = judged("echokey")
        case(
            g,
            "a judge that echoes its key: ask",
            lambda d=done: (
                d.returncode == 0 and "[key]" in d.stdout and keys["RAG_ASSETS_JUDGE_KEY"] not in d.stdout,
                f"rc {d.returncode}, {d.stdout.count('[key]')} masked",
            ),
        )
        log = tmp / "judged-serve.log"
        judge = ["--judge-url", base, "--judge-model", "echokey", "--generating", "1", "--queue", "0"]
        judged_serve = serving(lab, "--answerers", "extractive", *judge, log=log, env={**os.environ, **keys})
        with judged_serve as (served, _), ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: ask(served, lab.key, {"question": QUESTION}), range(4)))
        outputs.extend([a.text for a in answers] + [log.read_text()])
        codes = sorted(a.status_code for a in answers)
        case(
            g,
            "serve with a judge: 4 extractive asks at once, 1 slot, no queue",
            lambda: (codes.count(429) >= 1 and 200 in codes, f"codes {codes}"),
        )
        case(
            g,
            "serve with a judge that echoes its key",
            lambda: (
                not any(keys["RAG_ASSETS_JUDGE_KEY"] in a.text for a in answers),
                f"{sum('[key]' in a.text for a in answers)} masked",
            ),
        )
        two = write_dataset(tmp / "twofaced", TINY_DOCS)
        (two / "experiment.yaml").write_text(f"chunkers: [C]\nembedders:\n  e: {{url: '{base}', model: twofaced}}\n")
        done = kept("run", "--dataset", str(two), "--data-dir", str(tmp / "twofaced-data"), "--experiment", timeout=900)
        case(
            g,
            "an endpoint that answers probes with one model and batches with another: run",
            lambda: (
                done.returncode == 1 and "not from the model its probe identifies" in done.stderr,
                f"rc {done.returncode}: {done.stderr.strip().splitlines()[-1][:150] if done.stderr.strip() else ''}",
            ),
        )
    with misbehaving_endpoint(seed="driphead") as base:
        done, took, _ = watched(
            "ask",
            *lab.where,
            "--generator-url",
            base,
            "--generator-model",
            "flaky",
            "--generator-timeout",
            "5",
            QUESTION,
            env=keys,
        )
        case(
            g,
            "a generator whose /models drips its headers",
            lambda d=done, t=took: (refused(d, "cannot reach")[0] and t < BOUNDED_S, refused(d)[1] + f" ({t:.1f} s)"),
        )
    port = free_port()
    command = [*CLI, "serve-model", "--port", str(port), "--queue", "0", "--timeout", "0.5"]
    chat = {
        "model": "smollm2-135m-instruct",
        "messages": [{"role": "user", "content": "Count to 500."}],
        "max_tokens": 4,
    }
    with started(command, f"http://127.0.0.1:{port}/v1/models"):
        first, second = (
            httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=chat, timeout=60) for _ in "12"
        )
        codes = (first.status_code, second.status_code)
    case(
        g, "serve-model: the request after a 504, while its decoding goes on", lambda: (codes == (504, 429), f"{codes}")
    )
    wrong = tmp / "credentials"
    wrong.write_text("aws_access_key_id = AKIAHOSTILE4471\naws_secret_access_key = hostile/secret/4471\n")
    wrong.chmod(0o600)
    done = kept("ask", *lab.where, "--instance-postgres-file", str(wrong), QUESTION)
    case(
        g,
        "--instance-postgres-file, a file of cloud credentials",
        lambda: (refused(done, "postgresql://")[0] and "4471" not in done.stderr + done.stdout, refused(done)[1]),
    )
    preface = "This edition was prepared from the translator's notes and checked against the original. "
    russian = "Насос следует устанавливать на ровной поверхности, впускные клапаны должны смотреть на север. "
    mixed = write_dataset(
        tmp / "mixed", {**TINY_DOCS, "book.md": (preface * 60)[:5200] + "\n\n" + (russian * 500)[:46_000]}
    )
    done = kept(
        "run",
        "--dataset",
        str(mixed),
        "--data-dir",
        str(tmp / "mixed-data"),
        "--strategies",
        "E",
        "--no-llm",
        timeout=900,
    )
    said = next((line for line in done.stdout.splitlines() if "Russian" in line or "English 100" in line), "")
    case(
        g,
        "5,200 English characters before 46,000 Russian",
        lambda: (done.returncode == 0 and "Russian" in said, said[:150] or f"rc {done.returncode}"),
    )
    with serving(lab, "--answerers", "extractive") as (served, _):
        before = ask(served, lab.key, {"question": QUESTION, "strategy": "C"}).status_code
        built = kept("run", *lab.where, "--strategies", "C", "--no-llm", timeout=900)
        deadline = time.time() + 60
        while (after := ask(served, lab.key, {"question": QUESTION, "strategy": "C"}).status_code) != 200:
            if time.time() > deadline:
                break
            time.sleep(0.5)
    case(
        g,
        "serve, a strategy materialised after it started",
        lambda: (
            before == 503 and built.returncode == 0 and after == 200,
            f"{before}, run rc {built.returncode}, then {after}",
        ),
    )
    counts = {name: sum(text.count(key) for text in outputs) for name, key in keys.items()}
    case(
        g,
        f"the keys placed in the environment, in {len(outputs)} outputs",
        lambda: (not any(counts.values()), ", ".join(f"{name}: {n}" for name, n in counts.items())),
    )


GROUPS = {
    "load": load_and_admission,
    "requests": bad_requests,
    "keys": keys_and_secrets,
    "endpoints": endpoints,
    "experiment": experiment_file,
    "smaller": smaller,
    "records": secrets_and_records,
    "wire": wire_and_state,
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--group", choices=list(GROUPS), action="append")
    args = p.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    with tempfile.TemporaryDirectory() as tmp:
        lab = Lab(Path(tmp))
        for name in args.group or GROUPS:
            folder = Path(tmp) / name
            folder.mkdir()
            GROUPS[name](lab, folder)
    held = sum(r[2] for r in RESULTS)
    print(f"\n{held} held, {len(RESULTS) - held} failed, of {len(RESULTS)} cases")
    for group, name, ok, detail in RESULTS:
        if not ok:
            print(f"  FAILED [{group}] {name}: {detail}")


if __name__ == "__main__":
    main()
