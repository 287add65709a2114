"""What a command costs before it does anything: `rag-assets --help`, and a cold `rag-assets ask`
(a new process, the index read from disk, one question), for this checkout and, given one, another
checkout of the project, alternated so that both meet the same machine.

    python bench/startup.py --data-dir DIR [--other CHECKOUT] [--rounds 7]

DIR is a data dir materialised by `rag-assets run` (either checkout reads it: ask writes nothing).
Printed per command and checkout: the median and the range of the wall-clock seconds.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUESTION = "What is an example of a rotary engine without pistons?"
HERE = Path(__file__).resolve().parent.parent


def seconds(command: list[str], checkout: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} in {checkout} failed:\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--other", type=Path, help="another checkout to compare with")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    cli = [sys.executable, "-m", "rag_assets.app.cli"]
    commands = {
        "rag-assets --help": [*cli, "--help"],
        "rag-assets ask (cold)": [*cli, "ask", "--data-dir", str(Path(args.data_dir).resolve()), QUESTION],
    }
    checkouts = {"this checkout": HERE, **({f"{args.other}": args.other.resolve()} if args.other else {})}
    for name, command in commands.items():
        timings: dict[str, list[float]] = {c: [] for c in checkouts}
        for _ in range(args.rounds):
            for checkout, root in checkouts.items():
                timings[checkout].append(seconds(command, root))
        for checkout, values in timings.items():
            print(
                f"{name}, {checkout}: median {statistics.median(values):.2f} s "
                f"(min {min(values):.2f}, max {max(values):.2f}, {args.rounds} rounds)"
            )


if __name__ == "__main__":
    main()
