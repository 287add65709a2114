"""`rag-assets serve` under load: K concurrent clients on loopback, each answerer, then a soak.

    python bench/serve_load.py --data-dir data [--seconds 20] [--clients 1,4,16,64] [--soak 600] [--cold]

`--data-dir`: a data dir where `rag-assets run` materialised the bundled corpus. The script makes
a keys file with one tenant key, starts `rag-assets serve` (`--workers` processes, default 2; per
worker 1 answer decoding at once and a queue of 8) on a free loopback port, and for each answerer
and each K runs K clients (asyncio and aiohttp, one process, a keep-alive connection each) that ask
the bundled answerable questions in turn for `--seconds`. Printed per cell: requests answered per
second, p50/p95/p99 latency of the 200s, counts of 429, 5xx and other errors, and the server's peak
resident memory (VmHWM, summed over its processes). With `--soak S`, the extractive answerer at
K = 16 for S seconds, the server's resident memory sampled every 10 s: first, last and largest.
The clients share the machine with the server (2 cores here): latencies include that contention.
With `--cold`, each cell first asks questions the server has not been asked (every phrasing of the
ground truth's questions, each at most once in the whole run, so no cache of any kind has seen it;
a cell ends early when they run out, and says how many it asked), then the warm cell as above.
"""

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import aiohttp
import httpx
import numpy as np

from rag_assets.app.keys import add_key

sys.path.insert(0, str(Path(__file__).parent))
from common import answerable_questions, every_phrasing  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory(pid: int, field: str) -> float:
    """MB of /proc/PID/status's `field` (VmRSS now, VmHWM the peak), summed over the process and
    its children (the workers)."""
    total = 0.0
    for each in [pid, *_children(pid)]:
        for line in Path(f"/proc/{each}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                total += int(line.split()[1]) / 1024
    return total


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


async def _load(base: str, key: str, answerer: str, clients: int, seconds: float, questions, fresh=None) -> dict:
    """K clients, each with a keep-alive connection of its own (aiohttp: a fraction of httpx's CPU
    per request, which matters when the clients share the server's two cores). `fresh`: an
    iterator of questions never asked, each taken once (the cell ends when it runs out)."""
    latencies, codes = [], []
    deadline = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {key}"}

    async def client(i: int) -> None:
        n = i
        connector = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as http:
            while time.monotonic() < deadline:
                question = next(fresh, None) if fresh is not None else questions[n % len(questions)]
                if question is None:
                    return
                t0 = time.perf_counter()
                body = {"question": question, "answerer": answerer}
                try:
                    async with http.post(f"{base}/v1/ask", json=body, headers=headers) as r:
                        await r.read()
                        codes.append(r.status)
                        if r.status == 200:
                            latencies.append((time.perf_counter() - t0) * 1000)
                        elif r.status == 429:
                            await asyncio.sleep(min(float(r.headers.get("retry-after", 1)), 2.0))
                except aiohttp.ClientError:
                    codes.append(-1)
                n += clients

    t0 = time.monotonic()
    await asyncio.gather(*(client(i) for i in range(clients)))
    elapsed = time.monotonic() - t0
    codes_arr = np.array(codes)
    pct = (lambda q: float(np.percentile(latencies, q))) if latencies else (lambda q: float("nan"))
    return {
        "ok": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50": pct(50),
        "p95": pct(95),
        "p99": pct(99),
        "429": int((codes_arr == 429).sum()),
        "5xx": int((codes_arr >= 500).sum()),
        "other": int(((codes_arr != 200) & (codes_arr != 429) & (codes_arr < 500)).sum()),
        "asked": len(codes),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--clients", default="1,4,16,64")
    p.add_argument("--answerers", default="extractive,generate")
    p.add_argument("--soak", type=float, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cold", action="store_true", help="also each cell with questions never asked before")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    questions = answerable_questions(args.data_dir)
    unseen = iter(every_phrasing(args.data_dir)) if args.cold else None
    with tempfile.TemporaryDirectory() as tmp:
        key = add_key(Path(tmp) / "keys.json", "bench", "bench-tenant", False)
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "rag_assets.app.cli", "serve", "--data-dir", args.data_dir]
            + ["--keys", str(Path(tmp) / "keys.json"), "--port", str(port), "--queue", "8", "--generating", "1"]
            + ["--workers", str(args.workers)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.time() + 300
            while time.time() < deadline:
                try:
                    if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(1)
            else:
                raise SystemExit("rag-assets serve did not become ready")
            print(f"server ready, {_memory(server.pid, 'VmRSS'):.0f} MB resident; {len(questions)} questions")
            print(
                "| answerer | K | questions | asked | answered/s | p50 ms | p95 ms | p99 ms | 429 | 5xx | other "
                "| peak RSS MB |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for answerer in args.answerers.split(","):
                for k in [int(c) for c in args.clients.split(",")]:
                    for kind in (["cold"] if unseen is not None else []) + ["warm"]:
                        fresh = unseen if kind == "cold" else None
                        r = asyncio.run(_load(base, key, answerer, k, args.seconds, questions, fresh))
                        print(
                            f"| {answerer} | {k} | {kind} | {r['asked']} | {r['rps']:.1f} | {r['p50']:.0f} | "
                            f"{r['p95']:.0f} | {r['p99']:.0f} | {r['429']} | {r['5xx']} | {r['other']} | "
                            f"{_memory(server.pid, 'VmHWM'):.0f} |",
                            flush=True,
                        )
            if args.soak:
                samples = []

                async def soak() -> dict:
                    task = asyncio.create_task(_load(base, key, "extractive", 16, args.soak, questions))
                    while not task.done():
                        samples.append(_memory(server.pid, "VmRSS"))
                        await asyncio.sleep(10)
                    return await task

                r = asyncio.run(soak())
                print(
                    f"soak: extractive, K = 16, {args.soak:.0f} s: {r['ok']} answered ({r['rps']:.1f}/s, p95 "
                    f"{r['p95']:.0f} ms, 5xx {r['5xx']}); resident memory first {samples[0]:.0f} MB, last "
                    f"{samples[-1]:.0f} MB, largest {max(samples):.0f} MB over {len(samples)} samples"
                )
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
