"""What a step reports beside its table: figures for the UI, typed here so that the Dagster layer
shows each as it should (rendered Markdown, a link, JSON), and written reports (Markdown and the
plot it links), which replace an older run's plot rather than leave it to pass for this one's."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import pandas as pd

from rag_assets import storage


class Markdown(str):
    """Text the UI renders as Markdown."""


class Link(str):
    """A path relative to the data dir, which the UI shows as one."""


class Significant(float):
    """A p-value or a tiny error: shown to 3 significant digits, not 3 decimals."""


PREVIEW_ROWS = 5
PREVIEW_COLUMNS = 8  # wider tables are clipped by the UI's dialog
PREVIEW_CELL_CHARS = 80
P_VALUE_COLUMNS = {"p_value", "p_holm"}


def _cell(value, column: str) -> str:
    if isinstance(value, float):  # what it means: 3 significant digits for a p-value, 3 decimals otherwise
        return f"{value:.3g}" if column in P_VALUE_COLUMNS else f"{value:.3f}"
    text = str(value).replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= PREVIEW_CELL_CHARS else text[: PREVIEW_CELL_CHARS - 1] + "…"


def table_markdown(frame: pd.DataFrame, rows: int = PREVIEW_ROWS, columns: list[str] | None = None) -> Markdown:
    """First rows of `columns` (default: the first ones) as a Markdown table, at most
    PREVIEW_COLUMNS wide, long cells cut and numbers rounded so the UI stays readable; a note
    names the columns left out (the `path` entry is the whole table)."""
    columns = [c for c in columns or frame.columns if c in frame.columns][:PREVIEW_COLUMNS]
    head = frame[columns].head(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += [
        "| " + " | ".join(_cell(v, c) for v, c in zip(row, columns)) + " |" for row in head.itertuples(index=False)
    ]
    hidden = [c for c in frame.columns if c not in columns]
    if hidden:
        lines += [
            "",
            f"{len(hidden)} more columns ({', '.join(hidden)}): the whole table is the Parquet file under `path`.",
        ]
    return Markdown("\n".join(lines))


def inline_png(png: bytes) -> str:
    """A PNG as a data URI, for Markdown shown where no file sits beside it (the UI)."""
    return "data:image/png;base64," + base64.b64encode(png).decode()


@dataclass(frozen=True)
class Report:
    """What a comparison returns: its table of paired tests, its Markdown, the plot that Markdown
    links by `plot_name` (None: this run drew none), and the figures the UI shows beside it."""

    name: str  # its file in the reports folder: name.md
    markdown: str
    table: pd.DataFrame | None = None
    plot: bytes | None = None
    plot_name: str | None = None  # the plot's file beside it; removed when this run drew none
    figures: dict = field(default_factory=dict)

    def write(self, folder) -> object:
        """Write the Markdown and the plot into `folder`; remove an older plot this run did not
        draw. Returns the Markdown's path."""
        if self.plot_name:
            if self.plot is not None:
                storage.write_bytes(folder / self.plot_name, self.plot)
            else:
                (folder / self.plot_name).unlink(missing_ok=True)
        path = folder / f"{self.name}.md"
        storage.write_text(path, self.markdown)
        return path

    def inline(self) -> Markdown:
        """The Markdown with its plot inlined, for the UI."""
        if self.plot is None or not self.plot_name:
            return Markdown(self.markdown)
        return Markdown(self.markdown.replace(f"]({self.plot_name})", f"]({inline_png(self.plot)})"))


@dataclass(frozen=True)
class Outcome:
    """What a step made, for the layer that records it: its table, the figures it reports, its
    checks (name -> (passed, their figures)), the table's data version, and lines to log."""

    table: pd.DataFrame
    figures: dict
    checks: dict = field(default_factory=dict)
    version: str | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
