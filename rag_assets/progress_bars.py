"""Progress of long work: one tqdm bar per stage on a terminal, one line per pass elsewhere (a log
file or a pipe keeps what a reader needs, not every redraw of a bar), fed by the core's
`progress(done, total)` callbacks (embedding) or `progress(stage, done, total)` (drafting)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from tqdm import tqdm

from rag_assets import environment

if not sys.stderr.isatty():
    # Bars write a line per pass there; the model libraries' own bars would write one per redraw.
    environment.quiet_library_bars()


@dataclass
class _Pass:
    total: int
    done: int
    started: float  # when the pass began: the previous call, or entering the Bars
    bar: tqdm | None


class Bars:
    """Bars named `name: stage`, closed together. A stage's bar opens again when a call starts a
    new pass (another total, or a count that does not grow: a pass opens with what the cache
    already held); each call may also be logged.

    A bar counts its rate from its first call on: what a pass's first call reports was done before
    the bar could time it (texts the cache held, or a first batch), and counted in it the rate was
    the count over a microsecond. Not on a terminal, each pass prints one line when it completes,
    with the time since it began."""

    def __init__(self, name: str, unit: str, log: Callable[[str], None] | None = None):
        self.name, self.unit, self.log = name, unit, log
        self.passes: dict[str, _Pass] = {}
        self.terminal = sys.stderr.isatty()
        self.last = time.perf_counter()

    def stage(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        desc = f"{self.name}: {stage}" if stage else self.name
        current = self.passes.get(stage)
        if current is None or current.total != total or done <= current.done:
            if current is not None and current.bar is not None:
                current.bar.close()
            bar = tqdm(desc=desc, total=total, initial=done, unit=self.unit, leave=False) if self.terminal else None
            current = self.passes[stage] = _Pass(total, -1, self.last, bar)
        if current.bar is not None:
            current.bar.update(done - current.bar.n)
            current.bar.refresh()  # calls come a chunk apart: show each, also a pass the cache answered at once
            if done >= total:
                current.bar.close()
        elif done >= total > current.done:
            print(f"{desc}: {done}/{total} in {now - current.started:.1f} s", file=sys.stderr, flush=True)
        current.done, self.last = done, now
        if self.log:
            self.log(f"{stage or self.name}: {done}/{total}")

    def __call__(self, done: int, total: int) -> None:
        """One stage only: the `progress(done, total)` form."""
        self.stage("", done, total)

    def __enter__(self) -> Bars:
        self.last = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        for current in self.passes.values():
            if current.bar is not None:
                current.bar.close()
