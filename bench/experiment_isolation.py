"""What an experiment file costs the commands that answer: requests to an endpoint it names.

    python bench/experiment_isolation.py [--serve-seconds 60]

A copy of the bundled corpus gets an `experiment.yaml` whose embedder is an endpoint on loopback
(tests/bad_endpoint.py, which counts the requests it is sent). The lab is materialised for strategy
E (`run --strategies E --no-llm`, no `--experiment`), then `rag-assets ask` answers one question and
`rag-assets serve` runs for a minute, checking freshness every 5 s as it does by default (one
question asked at its start). Printed: the requests the endpoint got during each. Run it with
PYTHONPATH pointing at another checkout (from a folder outside both) to compare two versions of the code.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.append(str(Path(__file__).parent.parent / "tests"))  # after PYTHONPATH: the checkout measured wins
from servers import CLI, free_port, misbehaving_endpoint, running_process  # noqa: E402

BUNDLED_DATASET = Path(__file__).parent.parent / "data" / "default_corpus"
QUESTION = "What is an example of a rotary engine without pistons?"


def count(base: str) -> int:
    with urllib.request.urlopen(base + "/count", timeout=5) as answer:
        return json.loads(answer.read())["requests"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--serve-seconds", type=float, default=60.0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, misbehaving_endpoint() as base:
        dataset, data_dir = Path(tmp) / "corpus", Path(tmp) / "data"
        shutil.copytree(BUNDLED_DATASET, dataset)
        (dataset / "experiment.yaml").write_text(
            f"chunkers: [E]\nembedders:\n  served: {{url: '{base}', model: counted}}\nretrievers: [hybrid]\n"
        )
        where = ["--dataset", str(dataset), "--data-dir", str(data_dir)]
        before = count(base)
        done = subprocess.run([*CLI, "run", *where, "--strategies", "E", "--no-llm"], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"the lab run failed:\n{done.stderr[-3000:]}")
        print(f"run (the lab, no --experiment): {count(base) - before} requests to the experiment's endpoint")
        before = count(base)
        t0 = time.perf_counter()
        done = subprocess.run([*CLI, "ask", *where, QUESTION], capture_output=True, text=True)
        strays = sum("unreachable" in line or "embedder" in line for line in done.stdout.splitlines())
        print(
            f"ask: {count(base) - before} requests (exit {done.returncode}, {time.perf_counter() - t0:.1f} s); "
            f"lines on stdout about the experiment's embedder: {strays}"
        )
        port = free_port()
        command = [*CLI, "serve", *where, "--port", str(port)]
        keys = Path(tmp) / "keys.json"
        key = subprocess.run(
            [*CLI, "keys", "add", "--keys", str(keys), "--id", "bench", "--operator"], capture_output=True, text=True
        ).stdout.strip()
        before = count(base)
        with running_process([*command, "--keys", str(keys)], f"http://127.0.0.1:{port}/healthz", "serve", 240):
            started = time.perf_counter()
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/ask",
                data=json.dumps({"question": QUESTION}).encode(),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=120) as answer:
                status = answer.status
            time.sleep(max(0.0, args.serve_seconds - (time.perf_counter() - started)))
            served = count(base) - before
        print(f"serve for {args.serve_seconds:.0f} s (one question, HTTP {status}): {served} requests")


if __name__ == "__main__":
    main()
