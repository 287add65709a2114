"""Chunking strategies A-F, word windows W and whole documents, with sliceable offsets.

One promise, kept by every strategy: `document_text[start:end] == content`. Offsets are
FOUND in the document (regex match positions), never accumulated by adding lengths.
`content` is only the chunk's own words (what is quoted back); `text` is what is
embedded: optional `[Title > Section]` header line, optional overlap tail, then content.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from dataclasses import asdict, dataclass

import pandas as pd

from rag_assets.ingest.corpus import Heading, headings
from rag_assets.ingest.locators import SpanIndex


@dataclass(frozen=True)
class Strategy:
    id: str
    cut: str  # "blind" | "boundaries" | "words" | "document"
    header: bool = False
    overlap: int = 0  # characters for blind/boundaries, words for word windows
    target: int = 512  # characters for blind/boundaries, words for word windows
    stride: int = 0  # word windows only

    def settings(self) -> dict:
        return asdict(self)

    def fingerprint(self) -> str:
        """Short hash of the settings: the data version of this strategy's `chunker_settings` source,
        so a change stales this strategy's chunk set only."""
        return hashlib.sha256(json.dumps(self.settings(), sort_keys=True).encode()).hexdigest()[:12]


STRATEGIES: dict[str, Strategy] = {
    s.id: s
    for s in [
        Strategy("A", "blind"),
        Strategy("B", "blind", overlap=64),
        Strategy("C", "boundaries"),
        Strategy("D", "boundaries", overlap=64),
        Strategy("E", "boundaries", header=True),
        Strategy("F", "boundaries", header=True, overlap=64),
        Strategy("W", "words", overlap=5, target=45, stride=40),
        Strategy("doc", "document"),
    ]
}

CHUNK_COLUMNS = [
    "chunk_id",
    "document_id",
    "strategy",
    "position",
    "text",
    "content",
    "section",
    "start",
    "end",
    "header",
    "overlap",
    "word_start",
    "word_count",
    "extractor",
    "extractor_version",
    "locator",
    "language",
]

_PARAGRAPH = re.compile(r"[^\n](?:[^\n]|\n(?!\n))*")
_SENTENCE = re.compile(r"[^.!?]*[.!?]*\s*")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    document_id: str
    strategy: str
    position: int
    text: str
    content: str
    section: str
    start: int
    end: int
    header: str = ""  # the header line prepended to `text` (with its newline), "" if none
    overlap: str = ""  # the tail of the previous chunk (with joiner) inside `text`
    word_start: int | None = None
    word_count: int | None = None


@dataclass(frozen=True)
class _Span:
    """A piece of canonical text under one section: [start, end), headings excluded."""

    section: str
    start: int
    end: int


def _spans(text: str, marks: list[Heading]) -> list[_Span]:
    """Split at `# ` and `## ` lines; the heading lines themselves belong to no span."""
    spans, cursor, section = [], 0, ""
    for h in marks:
        spans.append(_Span(section, cursor, h.start))
        section = h.title if h.level == 2 else ""
        cursor = h.end
    spans.append(_Span(section, cursor, len(text)))
    return [s for s in spans if text[s.start : s.end].strip()]


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The range with surrounding whitespace removed, found in the text; None if blank."""
    raw = text[start:end]
    content = raw.strip()
    if not content:
        return None
    lead = len(raw) - len(raw.lstrip())
    return start + lead, start + lead + len(content)


def boundary_ranges(text: str, span: _Span, target: int) -> list[tuple[int, int]]:
    """The chapter's boundaries rule: whole paragraphs packed up to `target` characters;
    a paragraph longer than `target` alone is cut at sentence ends."""
    body = text[span.start : span.end]
    out: list[tuple[int, int]] = []

    def emit(a: int, b: int) -> None:
        r = _trimmed(text, span.start + a, span.start + b)
        if r:
            out.append(r)

    open_: tuple[int, int] | None = None
    for m in _PARAGRAPH.finditer(body):
        # Measured without surrounding whitespace: a paragraph's budget is its own text.
        pf = m.start() + len(m.group(0)) - len(m.group(0).lstrip())
        pt = m.start() + len(m.group(0).rstrip())
        if pt <= pf:
            continue
        if pt - pf > target:
            if open_:
                emit(*open_)
                open_ = None
            cur: tuple[int, int] | None = None
            for sm in _SENTENCE.finditer(body, pf, pt):
                if not sm.group(0):
                    continue
                sf, st = sm.start(), sm.end()
                if cur and st - cur[0] > target:
                    emit(*cur)
                    cur = None
                cur = (cur[0], st) if cur else (sf, st)
            if cur:
                emit(*cur)
            continue
        if open_ and pt - open_[0] > target:
            emit(*open_)
            open_ = None
        open_ = (open_[0], pt) if open_ else (pf, pt)
    if open_:
        emit(*open_)
    return out


def section_at(marks: list[Heading], offset: int) -> str:
    """Section path in force at `offset` (the last `## ` heading before it, reset by `# `)."""
    i = bisect.bisect_right([h.start for h in marks], offset) - 1
    return marks[i].title if i >= 0 and marks[i].level == 2 else ""


def _ranges(text: str, strategy: Strategy, marks: list[Heading]) -> list[tuple[str, int, int]]:
    """(section, start, end) of each chunk's own content, in document order."""
    if strategy.cut == "blind":
        step = strategy.target
        return [(section_at(marks, i), i, min(i + step, len(text))) for i in range(0, len(text), step)]
    if strategy.cut == "boundaries":
        return [
            (span.section, a, b)
            for span in _spans(text, marks)
            for a, b in boundary_ranges(text, span, strategy.target)
        ]
    if strategy.cut == "document":
        title = _leading_title(text, marks)
        r = _trimmed(text, title.end if title else 0, len(text))
        return [("", *r)] if r else []
    raise ValueError(f"strategy {strategy.id}: unknown cut {strategy.cut!r}")


def _leading_title(text: str, marks: list[Heading]) -> Heading | None:
    """The `# ` line a document opens with, if it opens with one."""
    first = marks[0] if marks else None
    return first if first and first.level == 1 and first.start == len(text) - len(text.lstrip()) else None


def _joiner(text: str, prev_end: int, start: int) -> str:
    """What separates an overlap tail from the content: the document's own whitespace
    when the two are adjacent, a newline when something (a heading) lies between."""
    gap = text[prev_end:start]
    return gap if not gap.strip() else "\n"


def _header(strategy: Strategy, title: str, section: str) -> str:
    if not strategy.header:
        return ""
    return f"[{title} > {section}]\n" if section else f"[{title}]\n"


def chunk_document(document_id: str, title: str, text: str, strategy: Strategy) -> list[Chunk]:
    if strategy.cut == "words":
        return _word_windows(document_id, text, strategy)
    marks = headings(text)
    chunks: list[Chunk] = []
    for position, (section, start, end) in enumerate(_ranges(text, strategy, marks)):
        content = text[start:end]
        overlap = ""
        if strategy.overlap and chunks:
            prev = chunks[-1]
            overlap = prev.content[-strategy.overlap :] + _joiner(text, prev.end, start)
        header = _header(strategy, title, section)
        titled = strategy.cut == "document" and _leading_title(text, marks) is not None
        body = f"{title}\n{content}" if titled else content
        chunks.append(
            Chunk(
                chunk_id=f"{document_id}::{strategy.id}-{position:04d}",
                document_id=document_id,
                strategy=strategy.id,
                position=position,
                text=header + overlap + body,
                content=content,
                section=section,
                start=start,
                end=end,
                header=header,
                overlap=overlap,
            )
        )
    return chunks


def _word_windows(document_id: str, text: str, strategy: Strategy) -> list[Chunk]:
    """ragbench-v1 windows: `target` words every `stride` words, ids `{doc}::chunk-NNNN`.

    `text` is the window verbatim from the document; `content` drops the leading
    words the previous window already owns, so contents tile the word stream."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    marks = headings(text)
    chunks: list[Chunk] = []
    for position, first in enumerate(range(0, len(words), strategy.stride)):
        last = min(first + strategy.target, len(words)) - 1
        own = first + (strategy.target - strategy.stride if position else 0)
        start, end = words[own][0], words[last][1]
        overlap = text[words[first][0] : start]
        chunks.append(
            Chunk(
                chunk_id=f"{document_id}::chunk-{position:04d}",
                document_id=document_id,
                strategy=strategy.id,
                position=position,
                text=overlap + text[start:end],
                content=text[start:end],
                section=section_at(marks, start),
                start=start,
                end=end,
                overlap=overlap,
                word_start=first,
                word_count=last - first + 1,
            )
        )
        if first + strategy.target >= len(words):
            break
    return chunks


def offset_violations(chunks: pd.DataFrame, documents: pd.DataFrame) -> list[str]:
    """Chunk ids whose `content` is not `document_text[start:end]`."""
    texts = dict(zip(documents["document_id"], documents["text"]))
    return [
        c.chunk_id
        for c in chunks.itertuples()
        if c.document_id not in texts or texts[c.document_id][c.start : c.end] != c.content
    ]


def chunk_table_hash(chunks: pd.DataFrame) -> str:
    """A chunk set's content hash (ids, embedded texts, offsets, locators): its data version."""
    payload = chunks[["chunk_id", "text", "start", "end", "locator"]].to_json(orient="values")
    return hashlib.sha256(payload.encode()).hexdigest()


def chunk_corpus(documents: pd.DataFrame, strategy: Strategy) -> pd.DataFrame:
    """Chunks of every `ok` document of a snapshot by one strategy (see `chunk_documents`)."""
    return chunk_documents(
        documents, lambda document_id, title, text, _: chunk_document(document_id, title, text, strategy)
    )


def chunk_documents(documents: pd.DataFrame, cut) -> pd.DataFrame:
    """Chunks of every `ok` document of a snapshot, `cut(document_id, title, text, language)`
    making each document's, in (path, position) order, each stamped with the extractor (and its
    version) that produced the text it points into and with its locator in the original file
    (page, time span or cell range; None for plain text)."""
    ok = documents[documents["status"] == "ok"].sort_values("path")
    rows = []
    for d in ok.itertuples():
        spans = SpanIndex(d.spans)  # parsed once per document
        rows += [
            {
                **asdict(c),
                "extractor": d.extractor,
                "extractor_version": d.extractor_version,
                "locator": spans.locate(c.start, c.end),
                "language": d.language,
            }
            for c in cut(d.document_id, d.title, d.text, d.language)
        ]
    frame = pd.DataFrame(rows, columns=CHUNK_COLUMNS)
    return frame.astype(
        {"position": "int64", "start": "int64", "end": "int64", "word_start": "Int64", "word_count": "Int64"}
    )
