"""Figures in the docs that cannot drift: each markdown table after a `<!-- figures:KIND COMMAND -->`
line is read back and compared with what the data dir COMMAND materialised holds.

    .venv/bin/python bench/docs_figures.py --data-dir DIR [--measured-by COMMAND] DOC [DOC ...]

On the bundled corpus (the data dirs of two fresh runs; README.md has no marked table):

    rag-assets run --data-dir /tmp/d && rag-assets run --models minilm-fp32 --data-dir /tmp/d32
    python bench/docs_figures.py --data-dir /tmp/d --measured-by "rag-assets run" docs/results.md docs/answering.md
    python bench/docs_figures.py --data-dir /tmp/d32 --measured-by "rag-assets run --models minilm-fp32" docs/results.md

and on the data dir of docs/experiments.md's walk-through (`rag-assets run --dataset /tmp/ds --data-dir /tmp/dd
--experiment` on a copy of the bundled corpus and the file `rag-assets init` writes):

    python bench/docs_figures.py --data-dir /tmp/dd --measured-by "rag-assets run --experiment" docs/experiments.md

KIND says where a table's figures come from:

- `retrieval`: `evaluation_tables`. A row is found by its first cell's first word (the strategy:
  "E (boundaries + header)" is E) and its second cell (the retriever); a column by its header (R@k,
  MRR, nDCG@k, doc R@k); a cell's figure is its first decimal number (an interval after it is not
  compared).
- `answerers`: the answerers' paired comparison `generation_eval` writes (reports/answerers.md). A
  row is found by its first cell's text before any parenthesis (the metric: "**contains the answer**
  (the headline)" is `contains the answer`); a column by its header: `n`, an answerer's name (its
  value), `NAME wins/losses`, `Holm p` (`over`, the group, is text and not compared).
- `answerer-summary`: each answerer's figures as reports/answerers.md lists them ("Each answerer"):
  a row is found by its first three cells (answerer, metric, group), a column by its header.
- `chunk-sets`: the chunk sets' figures `rag-assets run` closes with (chunks, header share, over
  window, answers destroyed, not citable), computed again from the data dir's `chunk_sets` and
  `ground_truth` by the code the assets use; a row is found by its strategy (and its `model` cell,
  which a data dir with several models needs), a column by its header.
- `refusal`: `refusal_sweep`, the serving model's rows, shown as `refusal_sweep`'s own table
  (metadata `at_three_thresholds`): a row is found by its threshold, a column by its header.
- `leaderboard`: the leaderboard `rag-assets run --experiment` writes (`experiment_leaderboard`,
  reports/experiment_leaderboard.md): a row is found by its `config` cell, a column by its header,
  in whichever of the report's tables (quality; latency, size and cost; chunks) has every column of
  the doc's. A cell's words beside its numbers are compared too ("0.0028, worse" is not "0.0028"),
  and the doc cannot print more digits than the report does.

Every number of a cell is compared at the precision the doc prints it (0.032 against 0.0317 is the
same, 1.3e-05 against 4.17e-07 is not). Whatever the marker says after the kind is the command that
measured the table: it is printed, so a reader knows which data dir to give. Exit 1 naming each
figure that differs (file:line, the doc's figure and the data dir's) or that the data dir does not
hold; 2 when a marked table cannot be read; 0 when every figure matches.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from rag_assets.evaluation.refusal_figures import sweep_table
from rag_assets.layout import DataDir

MARKER = re.compile(r"<!--\s*figures:([\w-]+)\b(.*?)-->")  # a line of its own
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)
DECIMAL = re.compile(r"\d+\.\d+")
CHUNK_SET_COLUMNS = ("chunks", "header share", "over window", "answers destroyed", "not citable")  # the summary's
RETRIEVAL_COLUMNS = {  # a header, lower case, without emphasis -> (metric, k) in evaluation_tables
    re.compile(r"r@(\d+)"): "recall",
    re.compile(r"doc r@(\d+)"): "doc_recall",
    re.compile(r"ndcg@(\d+)"): "ndcg",
    re.compile(r"mrr"): "mrr",
}


@dataclass
class Table:
    """A marked table of a doc: its header's cells and its rows' (line number, cells)."""

    path: Path
    line: int  # the marker's
    kind: str
    command: str
    header: list[str]
    rows: list[tuple[int, list[str]]]


@dataclass
class Figure:
    """One figure of a doc table beside the data dir's, formatted as the doc prints it."""

    where: str  # path:line
    name: str
    printed: str
    ours: str | None  # None: the data dir holds no such figure

    @property
    def drifted(self) -> bool:
        if self.ours is None:
            return True
        try:
            return float(self.printed) != float(self.ours)
        except ValueError:
            return self.printed != self.ours

    def problem(self) -> str:
        if self.ours is None:
            return f"{self.where}: {self.name}: the doc says {self.printed}, the data dir has no such figure"
        return f"{self.where}: {self.name}: the doc says {self.printed}, the data dir gives {self.ours}"


def _cells(line: str) -> list[str]:
    return [_plain(c) for c in line.strip().strip("|").split("|")]


def _plain(cell: str) -> str:
    return cell.replace("**", "").strip().strip("*").strip()


def _label(cell: str) -> str:
    """A row's or a column's name: its text before any parenthesis, lower case."""
    return cell.split("(")[0].strip().lower()


def as_printed(value: float, printed: str) -> str:
    """`value` at the precision of `printed`: as many decimals, or as many significant digits in
    e-notation."""
    if "e" in printed.lower():
        mantissa = printed.lower().split("e")[0]
        digits = len(mantissa.replace(".", "").lstrip("0")) or 1
        return f"{value:.{digits - 1}e}"
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return f"{value:.{decimals}f}"


def tables(path: Path) -> list[Table]:
    """Every marked table of `path`; ValueError for a marker of an unknown kind or without a table."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for i, line in enumerate(lines):
        marker = MARKER.fullmatch(line.strip())
        if not marker:
            continue
        kind = marker.group(1)
        if kind not in CHECKS:
            raise ValueError(f"{path}:{i + 1}: figures:{kind} is not a kind this check knows ({', '.join(CHECKS)})")
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        rows = []
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            rows.append((j + 1, _cells(lines[j])))
            j += 1
        if len(rows) < 3:
            raise ValueError(f"{path}:{i + 1}: a figures marker with no table after it")
        found.append(Table(path, i + 1, kind, marker.group(2).strip(), rows[0][1], rows[2:]))
    return found


class Measured:
    """What a data dir holds, read when first asked for."""

    def __init__(self, data_dir: str):
        self.layout = DataDir(data_dir)
        self._embedders = {}

    @cached_property
    def evaluation_tables(self) -> dict:
        table = self.layout.read_table("evaluation_tables")
        return {
            (r.strategy, r.retriever, r.metric, None if pd.isna(r.k) else int(r.k)): r.value for r in table.itertuples()
        }

    @cached_property
    def answerers(self) -> dict[str, dict[str, str]]:
        """metric (lower case) -> its row of the answerers' comparison, cells by role."""
        path = self.layout.reports / "answerers.md"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: the data dir's run did not answer (generation_eval)")
        rows, lines = {}, path.read_text(encoding="utf-8").splitlines()
        start = next((i for i, line in enumerate(lines) if _cells(line)[:3] == ["A", "B", "metric"]), None)
        if start is None:
            raise ValueError(f"{path}: no comparison table")
        for line in lines[start + 2 :]:
            if not line.startswith("|"):
                break
            a, b, metric, over, n, value_a, value_b, wins_losses, p = _cells(line)
            rows[metric.lower()] = {
                "a": a,
                "b": b,
                "n": n,
                "value_a": value_a,
                "value_b": value_b,
                "wins_losses": wins_losses,
                "p": p,
            }
        return rows

    @cached_property
    def answerer_summary(self) -> tuple[list[str], dict[tuple[str, str, str], list[str]]]:
        """reports/answerers.md's "Each answerer" table: its header (lower case), and its rows by
        (answerer, metric, group), lower case."""
        path = self.layout.reports / "answerers.md"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: the data dir's run did not answer (generation_eval)")
        lines = path.read_text(encoding="utf-8").splitlines()
        start = next((i for i, line in enumerate(lines) if _cells(line)[:3] == ["answerer", "metric", "group"]), None)
        if start is None:
            raise ValueError(f"{path}: no table of each answerer's figures")
        rows = {}
        for line in lines[start + 2 :]:
            if not line.startswith("|"):
                break
            cells = _cells(line)
            rows[tuple(c.lower() for c in cells[:3])] = cells
        return [h.lower() for h in _cells(lines[start])], rows

    def chunk_set(self, strategy: str, model: str | None) -> dict | None:
        """A chunk set's figures as `rag-assets run`'s closing summary prints them, computed again
        from the data dir's chunks and ground truth by the code the assets use (the header share
        and the chunks over the window with `model`'s tokenizer); None when it has no such set."""
        path = self.layout.table("chunk_sets", strategy)
        if not path.exists():
            return None
        from rag_assets.app.progress import SUMMARY_FIELDS
        from rag_assets.chunking.diagnostics import chunk_set_stats, token_stats

        chunks = self.layout.read_table("chunk_sets", strategy)
        figures = chunk_set_stats(chunks, self.ground_truth)
        if model:
            figures |= token_stats(chunks, self.embedder(model))
        return {title: fmt.format(figures[key]) for key, title, fmt in SUMMARY_FIELDS if key in figures}

    @cached_property
    def ground_truth(self) -> pd.DataFrame:
        return self.layout.read_table("ground_truth")

    @cached_property
    def models(self) -> list[str]:
        """The embedding models the data dir holds embeddings of."""
        folder = self.layout.assets / "embeddings"
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.exists() else []

    def embedder(self, model: str):
        if model not in self._embedders:
            from rag_assets.retrieval.packaged import embedder

            self._embedders[model] = embedder(model)
        return self._embedders[model]

    @cached_property
    def leaderboard(self) -> list[tuple[list[str], dict[str, list[str]]]]:
        """reports/experiment_leaderboard.md's tables: each one's header (lower case) and its rows
        by config."""
        path = self.layout.reports / "experiment_leaderboard.md"
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: no experiment ran in this data dir (rag-assets run --experiment)"
            )
        found, lines = [], path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("|") or (i and lines[i - 1].startswith("|")) or i + 1 >= len(lines):
                continue
            header = [h.lower() for h in _cells(line)]
            if "config" not in header:
                continue
            rows = {}
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                cells = _cells(row)
                rows[cells[header.index("config")]] = cells
            found.append((header, rows))
        if not found:
            raise ValueError(f"{path}: no leaderboard table")
        return found

    @cached_property
    def refusal_sweep(self) -> pd.DataFrame:
        """The serving model's rows (the first model of the sweep)."""
        table = self.layout.read_table("refusal_sweep")
        return table[table["model"] == table["model"].iloc[0]]


def retrieval_figures(table: Table, measured: Measured) -> list[Figure]:
    columns = []
    for header in table.header:
        column = None
        for pattern, metric in RETRIEVAL_COLUMNS.items():
            found = pattern.fullmatch(header.lower())
            if found:
                column = metric, int(found.group(1)) if found.groups() else None
                break
        columns.append(column)
    figures = []
    for number, cells in table.rows:
        strategy, retriever = cells[0].split()[0], cells[1]
        for column, cell in zip(columns[2:], cells[2:]):
            found = DECIMAL.search(cell)
            if not (column and found):
                continue
            metric, k = column
            value = measured.evaluation_tables.get((strategy, retriever, metric, k))
            name = f"{strategy} {retriever} {metric}{'' if k is None else f'@{k}'}"
            printed = found.group()
            figures.append(
                Figure(f"{table.path}:{number}", name, printed, None if value is None else as_printed(value, printed))
            )
    return figures


def _cell_figures(where: str, name: str, doc_cell: str, our_cell: str) -> list[Figure]:
    """Each number of the doc's cell beside the same number of the data dir's cell."""
    printed, ours = NUMBER.findall(doc_cell), NUMBER.findall(our_cell)
    if len(printed) != len(ours):
        return [Figure(where, name, doc_cell or "(empty)", our_cell or "(empty)")]
    return [Figure(where, name, p, as_printed(float(o), p)) for p, o in zip(printed, ours)]


def answerer_figures(table: Table, measured: Measured) -> list[Figure]:
    figures = []
    for number, cells in table.rows:
        metric = _label(cells[0])
        where = f"{table.path}:{number}"
        row = measured.answerers.get(metric)
        if row is None:
            figures.append(Figure(where, metric, next(iter(NUMBER.findall(" ".join(cells[1:]))), cells[0]), None))
            continue
        for header, cell in zip(table.header[1:], cells[1:]):
            column, words = _label(header), _label(header).split()
            if column in ("over", "group"):
                continue  # text: who was asked
            if column == "n":
                role = "n"
            elif column in ("holm p", "p", "p holm") or header.lower().replace(" ", "") == "p(holm)":
                role = "p"
            elif words and words[0] in (row["a"], row["b"]) and column.endswith("wins/losses"):
                ours = row["wins_losses"]
                if words[0] == row["b"]:
                    ours = "/".join(reversed(ours.split("/")))
                figures.append(Figure(where, f"{metric}: {column}", cell, ours))
                continue
            elif words and words[0] in (row["a"], row["b"]) and len(words) == 1:
                role = "value_a" if words[0] == row["a"] else "value_b"
            else:
                raise ValueError(f"{where}: the column {header!r} is not one of the answerers' comparison")
            figures += _cell_figures(where, f"{metric}: {column}", cell, row[role])
    return figures


def refusal_figures(table: Table, measured: Measured) -> list[Figure]:
    sweep, figures = measured.refusal_sweep, []
    for number, cells in table.rows:
        where, printed = f"{table.path}:{number}", cells[0]
        found = [t for t in sorted(sweep["threshold"].unique()) if as_printed(t, printed) == printed]
        if not found:
            figures.append(Figure(where, f"threshold {printed}", printed, None))
            continue
        ours = sweep_table(sweep, found[:1]).splitlines()
        header, row = _cells(ours[0]), _cells(ours[2])
        by_column = dict(zip((h.lower() for h in header), row))
        for doc_header, cell in zip(table.header[1:], cells[1:]):
            column = doc_header.lower()
            if column not in by_column:
                raise ValueError(f"{where}: the column {doc_header!r} is not one of refusal_sweep's table")
            figures += _cell_figures(where, f"threshold {printed}: {doc_header}", cell, by_column[column])
    return figures


def answerer_summary_figures(table: Table, measured: Measured) -> list[Figure]:
    header, ours = measured.answerer_summary
    if [h.lower() for h in table.header[:3]] != header[:3]:
        raise ValueError(f"{table.path}:{table.line}: an answerer-summary table starts | answerer | metric | group |")
    figures = []
    for number, cells in table.rows:
        where, key = f"{table.path}:{number}", tuple(c.lower() for c in cells[:3])
        name = " ".join(cells[:3])
        row = ours.get(key)
        if row is None:
            figures.append(Figure(where, name, next(iter(NUMBER.findall(" ".join(cells[3:]))), "(a row)"), None))
            continue
        for doc_header, cell in zip(table.header[3:], cells[3:]):
            if doc_header.lower() not in header:
                raise ValueError(f"{where}: the column {doc_header!r} is not one of the answerers' summary")
            figures += _cell_figures(where, f"{name}: {doc_header}", cell, row[header.index(doc_header.lower())])
    return figures


def chunk_set_figures(table: Table, measured: Measured) -> list[Figure]:
    header = [h.lower() for h in table.header]
    if header[0] != "strategy":
        raise ValueError(f"{table.path}:{table.line}: a chunk-sets table starts | strategy |")
    figures = []
    for number, cells in table.rows:
        where, strategy = f"{table.path}:{number}", cells[0].split()[0]
        model = cells[header.index("model")] if "model" in header else None
        if model is None and len(measured.models) == 1:
            model = measured.models[0]
        elif model is None and {"header share", "over window"} & set(header):
            raise ValueError(f"{where}: the data dir embeds with {measured.models}: name the model in a column")
        ours = measured.chunk_set(strategy, model)
        for doc_header, cell in zip(header[1:], cells[1:]):
            if doc_header == "model":
                continue
            if doc_header not in CHUNK_SET_COLUMNS:
                raise ValueError(f"{where}: the column {doc_header!r} is not one of the chunk sets' summary")
            name = f"{strategy}: {doc_header}"
            if ours is None or doc_header not in ours:
                figures.append(Figure(where, name, cell, None))
            else:
                figures += _cell_figures(where, name, cell, ours[doc_header])
    return figures


def _words(cell: str) -> str:
    return " ".join(NUMBER.sub("#", cell).split())


def leaderboard_figures(table: Table, measured: Measured) -> list[Figure]:
    header = [h.lower() for h in table.header]
    if "config" not in header:
        raise ValueError(f"{table.path}:{table.line}: a leaderboard table has a `config` column")
    ours = next(((h, rows) for h, rows in measured.leaderboard if set(header) <= set(h)), None)
    if ours is None:
        every = {c for h, _ in measured.leaderboard for c in h}
        missing = [h for h in table.header if h.lower() not in every]
        raise ValueError(
            f"{table.path}:{table.line}: "
            + (
                f"the column(s) {missing} are not one of the leaderboard's"
                if missing
                else "no table of the leaderboard has all these columns"
            )
        )
    our_header, rows = ours
    figures = []
    for number, cells in table.rows:
        where, config = f"{table.path}:{number}", cells[header.index("config")]
        row = rows.get(config)
        if row is None:
            figures.append(Figure(where, config, next(iter(NUMBER.findall(" ".join(cells))), "(a row)"), None))
            continue
        for doc_header, cell in zip(header, cells):
            if doc_header == "config":
                continue
            name, our_cell = f"{config}: {doc_header}", row[our_header.index(doc_header)]
            if _words(cell) != _words(our_cell):
                figures.append(Figure(where, name, cell or "(empty)", our_cell or "(empty)"))
            else:
                figures += _cell_figures(where, name, cell, our_cell)
    return figures


CHECKS = {
    "retrieval": retrieval_figures,
    "answerers": answerer_figures,
    "answerer-summary": answerer_summary_figures,
    "refusal": refusal_figures,
    "chunk-sets": chunk_set_figures,
    "leaderboard": leaderboard_figures,
}


def figures_of(path: Path, measured: Measured) -> list[Figure]:
    return [f for table in tables(path) for f in CHECKS[table.kind](table, measured)]


def drift(path: Path, measured: Measured) -> list[str]:
    """One line per figure of `path`'s marked tables that the data dir does not give."""
    return [f.problem() for f in figures_of(path, measured) if f.drifted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="the materialised data dir the tables were measured on")
    parser.add_argument(
        "--measured-by",
        metavar="COMMAND",
        help="check only the tables whose marker names COMMAND (the one that materialised --data-dir); "
        "default: every marked table",
    )
    parser.add_argument("docs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    measured = Measured(args.data_dir)
    problems, checked = [], 0
    try:
        for path in args.docs:
            for table in tables(path):
                if args.measured_by is not None and table.command != args.measured_by.strip():
                    print(f"{path}:{table.line}: {table.kind}, measured by `{table.command}`: not this data dir's")
                    continue
                found = CHECKS[table.kind](table, measured)
                checked += len(found)
                problems += [f.problem() for f in found if f.drifted]
                print(f"{path}:{table.line}: {table.kind}, measured by `{table.command or 'no command named'}`")
    except (ValueError, FileNotFoundError) as exc:
        print(exc, file=sys.stderr)
        return 2
    print("\n".join(problems) or f"all {checked} figures match {args.data_dir}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
