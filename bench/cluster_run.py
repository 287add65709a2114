"""The whole graph on the bundled corpus, locally and on the cluster path, table by table.

    python bench/cluster_run.py [--no-llm]

Starts a Ray head (2 CPUs), moto's S3 server and a PostgreSQL 15 server of its own on loopback
(tests/servers.py), then runs `rag-assets run` twice into empty data dirs: locally, and with
`--engine ray --data-dir s3://rag-assets/cluster --instance-postgres URL`. Prints each run's
wall time and, for every Parquet table the local run wrote, whether the cluster's copy is equal:
vectors by their largest difference, every other column exactly. Columns that measure time
(names ending in `_ms`, `_s` or `seconds`) are reported apart: they are expected to differ.
Stops everything it started.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from servers import CLI, create_database, postgres_server, ray_cluster, s3_server  # noqa: E402

from rag_assets import storage  # noqa: E402
from rag_assets.layout import DataDir  # noqa: E402

BUCKET = "s3://rag-assets/cluster"
TIMING_SUFFIXES = ("_ms", "_s", "seconds")


def run(arguments: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([*CLI, "run", *arguments], env=env, capture_output=True, text=True)
    if done.returncode != 0 or "all asset checks passed" not in done.stdout:
        sys.exit(f"rag-assets run {' '.join(arguments)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - t0


def compare(a: pd.DataFrame, b: pd.DataFrame) -> tuple[str, list[str]]:
    """The verdict on one table, and its timing columns."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return f"DIFFERENT shape or columns: {a.shape} {b.shape}", []
    timing = [c for c in a.columns if c.endswith(TIMING_SUFFIXES)]
    verdict = []
    for column in a.columns:
        if column in timing:
            continue
        if column == "embedding":
            diff = float(np.abs(np.stack(a[column]) - np.stack(b[column])).max()) if len(a) else 0.0
            verdict.append(f"vectors max |diff| {diff:.1e}")
        elif not a[column].equals(b[column]):
            try:
                pd.testing.assert_series_equal(a[column], b[column])
            except AssertionError:
                return f"DIFFERENT in {column}", timing
    return "equal" + (f" ({', '.join(verdict)})" if verdict else ""), timing


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--no-llm", action="store_true", help="skip generation_eval's answers (both runs)")
    args = p.parse_args()
    common = ["--no-llm"] if args.no_llm else []
    with (
        tempfile.TemporaryDirectory(prefix="rag-assets-cluster-") as tmp,
        s3_server() as s3,
        postgres_server() as postgres,
        ray_cluster(cpus=2, env=s3) as (address, _),
    ):
        env = {**os.environ, **s3, "RAG_ASSETS_STATE_DIR": f"{tmp}/state", "DAGSTER_HOME": "", "RAG_ASSETS_ENGINE": ""}
        env.update(RAG_ASSETS_DATA_DIR="", RAG_ASSETS_POSTGRES_URL="")
        local_s = run(["--data-dir", f"{tmp}/local", *common], env)
        url = create_database(postgres, "cluster_run")
        cluster = ["--data-dir", BUCKET, "--engine", "ray", "--ray-address", address, "--instance-postgres", url]
        cluster_s = run([*cluster, *common], env)
        print(f"local run {local_s:.1f} s; --engine ray, data dir in S3, instance in PostgreSQL {cluster_s:.1f} s")
        os.environ.update(s3)
        here, there = DataDir(f"{tmp}/local"), DataDir(BUCKET)
        print("| table | rows | cluster against local | timing columns (not compared) |\n|---|---|---|---|")
        for path in sorted(here.assets.rglob("*.parquet")):
            relative = path.relative_to(here.assets)
            if relative.parts[0] == "evaluation_history":
                continue  # one entry per run, named by its run id
            a = storage.read_parquet(path).to_pandas()
            b = storage.read_parquet(there.assets / relative.as_posix()).to_pandas()
            verdict, timing = compare(a, b)
            print(f"| {relative.as_posix()} | {len(a)} | {verdict} | {', '.join(timing) or '-'} |")
        for report in ("significance_report.md", "regression_report.md"):
            same = (here.reports / report).read_text() == (there.reports / report).read_text()
            print(f"| reports/{report} | - | {'equal' if same else 'DIFFERENT'} | - |")


if __name__ == "__main__":
    main()
