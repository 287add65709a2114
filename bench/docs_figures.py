"""Figures in the docs that cannot drift: each markdown table after a `<!-- figures:retrieval ... -->`
line is read back and compared with the `evaluation_tables` of the data dir it was measured on.

    .venv/bin/python bench/docs_figures.py --data-dir DIR docs/results.md [README.md ...]

A row is found by its first cell's first word (the strategy: "E (boundaries + header)" is E) and its
second cell (the retriever); a column by its header (R@k, MRR, nDCG@k, doc R@k); a cell's figure is
its first decimal number (an interval after it is not compared), compared at the cell's own decimals.
What the marker says after `figures:retrieval` is the command that measured the table: it is printed,
so a reader knows which data dir to give. Exit 1 naming each figure that differs (file:line, the
doc's figure and the data dir's) or that the data dir does not hold; 0 when every one matches.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from rag_assets.layout import DataDir

MARKER = re.compile(r"<!--\s*figures:retrieval\b(.*?)-->")  # a line of its own
NUMBER = re.compile(r"\d+\.\d+")
COLUMNS = {  # a header, lower case, without emphasis -> (metric, k) in evaluation_tables
    re.compile(r"r@(\d+)"): "recall",
    re.compile(r"doc r@(\d+)"): "doc_recall",
    re.compile(r"ndcg@(\d+)"): "ndcg",
    re.compile(r"mrr"): "mrr",
}


def _cells(line: str) -> list[str]:
    return [c.strip().strip("*").strip() for c in line.strip().strip("|").split("|")]


def _column(header: str) -> tuple[str, int | None] | None:
    for pattern, metric in COLUMNS.items():
        found = pattern.fullmatch(header.lower())
        if found:
            return metric, int(found.group(1)) if found.groups() else None
    return None


def marked_tables(path: Path):
    """(line of the marker, the command it names, [(line, {(strategy, retriever, metric, k): figure})])
    for each marked table of `path`; a figure is the cell's text, as the doc prints it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        marker = MARKER.fullmatch(line.strip())
        if not marker:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        table = []
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            table.append((j + 1, lines[j]))
            j += 1
        if len(table) < 3:
            raise ValueError(f"{path}:{i + 1}: a figures marker with no table after it")
        columns = [_column(h) for h in _cells(table[0][1])]
        rows = []
        for number, row in table[2:]:
            cells = _cells(row)
            strategy, retriever = cells[0].split()[0], cells[1]
            figures = {}
            for column, cell in zip(columns[2:], cells[2:]):
                found = NUMBER.search(cell)
                if column and found:
                    figures[(strategy, retriever, *column)] = found.group()
            rows.append((number, figures))
        yield i + 1, marker.group(1).strip(), rows


def drift(path: Path, table: pd.DataFrame) -> list[str]:
    """One line per figure of `path`'s marked tables that `table` (evaluation_tables) does not give."""
    ours = {
        (r.strategy, r.retriever, r.metric, None if pd.isna(r.k) else int(r.k)): r.value for r in table.itertuples()
    }
    problems = []
    for _, _, rows in marked_tables(path):
        for number, figures in rows:
            for (strategy, retriever, metric, k), printed in figures.items():
                name = f"{strategy} {retriever} {metric}{'' if k is None else f'@{k}'}"
                value = ours.get((strategy, retriever, metric, k))
                decimals = len(printed.split(".")[1])
                if value is None:
                    problems.append(f"{path}:{number}: {name}: the doc says {printed}, the data dir has no such figure")
                elif f"{value:.{decimals}f}" != printed:
                    problems.append(
                        f"{path}:{number}: {name}: the doc says {printed}, the data dir gives {value:.{decimals}f}"
                    )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="the materialised data dir the tables were measured on")
    parser.add_argument("docs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    table = DataDir(args.data_dir).read_table("evaluation_tables")
    problems, checked = [], 0
    try:
        for path in args.docs:
            for line, command, rows in marked_tables(path):
                checked += sum(len(f) for _, f in rows)
                print(f"{path}:{line}: measured by `{command or 'no command named'}`")
            problems += drift(path, table)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print("\n".join(problems) or f"all {checked} figures match {args.data_dir}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
