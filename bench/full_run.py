"""Wall time of the whole default run from scratch (cold embedding cache), per asset and in all.

    python bench/full_run.py

Runs `rag-assets run` on the bundled corpus into a fresh temporary data dir, then reads each
step's start and end from the run history (an asset's steps summed over its partitions) and
prints them with the process's peak RSS. The int8 encoder's file and the generator's conversion
from GGUF are built once per machine (~/.cache/rag_assets/models) and are not part of this time:
the machine's first run pays about 60 s more, once.
"""

import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance

from rag_assets.app.cli import main as cli


def step_seconds(dagster_home: Path) -> dict[str, float]:
    """Seconds per step key (an asset's op name), summed over every run of the instance."""
    totals: dict[str, float] = defaultdict(float)
    with DagsterInstance.from_config(str(dagster_home)) as instance:
        for run in instance.get_runs():
            started = {}
            for entry in instance.all_logs(run.run_id):
                event = entry.dagster_event
                if event is None or event.step_key is None:
                    continue
                if event.event_type == DagsterEventType.STEP_START:
                    started[event.step_key] = entry.timestamp
                elif event.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
                    totals[event.step_key] += entry.timestamp - started.pop(event.step_key, entry.timestamp)
    return dict(totals)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        t0 = time.perf_counter()
        code = cli(["run", "--data-dir", str(data_dir)])
        seconds = time.perf_counter() - t0
        steps = step_seconds(data_dir / "dagster_home")
    print("\nseconds per asset (steps summed over partitions):")
    for key, s in sorted(steps.items(), key=lambda kv: -kv[1]):
        print(f"  {key:24s} {s:7.1f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nfull default run: exit {code}, {seconds:.1f} s wall ({seconds / 60:.2f} min), peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
