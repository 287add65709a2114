"""Progress of long work on the terminal: one tqdm bar per stage, fed by the core's
`progress(done, total)` callbacks (embedding) or `progress(stage, done, total)` (drafting)."""

from __future__ import annotations

from collections.abc import Callable

from tqdm import tqdm


class Bars:
    """Bars named `name: stage`, closed together. A stage's bar opens again when a call starts a
    new pass (another total, or a count that does not grow: a pass opens with what the cache
    already held); each call may also be logged."""

    def __init__(self, name: str, unit: str, log: Callable[[str], None] | None = None):
        self.name, self.unit, self.log = name, unit, log
        self.bars: dict[str, tqdm] = {}

    def stage(self, stage: str, done: int, total: int) -> None:
        bar = self.bars.get(stage)
        if bar is None or bar.total != total or done <= bar.n:
            if bar is not None:
                bar.close()
            desc = f"{self.name}: {stage}" if stage else self.name
            bar = self.bars[stage] = tqdm(desc=desc, total=total, unit=self.unit, leave=False)
        bar.update(done - bar.n)
        bar.refresh()  # calls come a chunk apart: show each, also a pass the cache answered at once
        if self.log:
            self.log(f"{stage or self.name}: {done}/{total}")

    def __call__(self, done: int, total: int) -> None:
        """One stage only: the `progress(done, total)` form."""
        self.stage("", done, total)

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc) -> None:
        for bar in self.bars.values():
            bar.close()
