"""Where a chunk sits in the original file: PDF page, transcript time span, spreadsheet range.

Extractors record spans of canonical text with the locator of what they came from; a chunk's
locator is read from the spans its [start, end) overlaps. `#char=start,end` always holds
besides: the canonical text is the single source of truth.
"""

from __future__ import annotations

import bisect
import json
import re


def _cell(ref: str) -> tuple[str, int]:
    letters, row = re.fullmatch(r"([A-Z]+)(\d+)", ref).groups()
    return letters, int(row)


def _column_number(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


class SpanIndex:
    """A document's spans, parsed once and searched by bisection: locating a chunk costs
    O(log spans) plus the spans it covers, whatever the document's size."""

    def __init__(self, spans_json: str | None):
        self.spans = json.loads(spans_json) if spans_json else []  # in text order, never overlapping
        self.ends = [s["end"] for s in self.spans]

    def overlapping(self, start: int, end: int) -> list[dict]:
        first = bisect.bisect_right(self.ends, start)  # the first span that ends after `start`
        out = []
        for span in self.spans[first:]:
            if span["start"] >= end:
                break
            out.append(span)
        return out

    def locate(self, start: int, end: int) -> str | None:
        """`#page=N` (first page the chunk touches), `#t=a,b` (first cue start, last cue end), or
        `Sheet!A2:D5` (one range per sheet touched, comma-separated) / `A2:D5` for a CSV; None
        for plain text."""
        spans = self.overlapping(start, end)
        if not spans:
            return None
        if "page" in spans[0]:
            return f"#page={min(s['page'] for s in spans)}"
        if "t" in spans[0]:
            return f"#t={min(s['t'][0] for s in spans):g},{max(s['t'][1] for s in spans):g}"
        sheets = list(dict.fromkeys(s.get("sheet") for s in spans))
        return ", ".join(_cell_range([s for s in spans if s.get("sheet") == sheet], sheet) for sheet in sheets)


def _cell_range(rows: list[dict], sheet: str | None) -> str:
    """The A1 range covering consecutive row spans of one sheet."""
    first, last = _cell(rows[0]["range"].split(":")[0]), _cell(rows[-1]["range"].split(":")[1])
    widest = max((_cell(r["range"].split(":")[1])[0] for r in rows), key=_column_number)
    cells = f"{first[0]}{first[1]}:{widest}{last[1]}"
    return f"{sheet}!{cells}" if sheet else cells


def describe(locator: str | None) -> str | None:
    """A reader's label: 'page 3', '0:12-0:31', 'Sheet1!A2:D5'."""
    if not locator:
        return None
    if locator.startswith("#page="):
        return f"page {locator[6:]}"
    if locator.startswith("#t="):
        a, b = (float(x) for x in locator[3:].split(","))
        return f"{int(a // 60)}:{a % 60:04.1f}-{int(b // 60)}:{b % 60:04.1f}"
    return locator
