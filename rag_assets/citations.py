"""Numbered sources for a prompt, and the server-side citations behind them.

The model writes [1], [2]; it never writes a link or a document name. The server maps each
number to the chunk it came from and attaches the document, a locator label and a fragment
(`#char=start,end`, RFC 5147, into the document's canonical text). The quote is the chunk's
own `content`, never the embedded `text` (which may carry a header or an overlap tail that
is not at that place in the document). A number that points at no source is reported and
never shown as a citation.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

_MARKER = re.compile(r"\[(\d+)\]")

PROMPT = (
    "Answer using ONLY the numbered sources below. Cite every claim as [n].\n"
    "If the sources do not contain the answer, say so and stop.\n\n"
    "SOURCES\n{sources}\n\nQUESTION\n{question}"
)


@dataclass(frozen=True)
class Citation:
    index: int
    chunk_id: str
    document_id: str
    document_name: str
    locator_label: str
    fragment: str
    quote: str
    cosine_distance: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Context:
    prompt: str
    citations: list[Citation]


def locator_label(title: str, section: str) -> str:
    return f"{title} > {section}" if section else title


def build_context(question: str, hits: list[dict]) -> Context:
    """`hits`: retrieved chunks in rank order, each with chunk_id, document_id, title,
    section, start, end, content and cosine_distance."""
    citations = [
        Citation(
            index=i, chunk_id=h["chunk_id"], document_id=h["document_id"], document_name=h["title"],
            locator_label=locator_label(h["title"], h["section"]), fragment=f"#char={h['start']},{h['end']}",
            quote=h["content"], cosine_distance=float(h["cosine_distance"]),
        )
        for i, h in enumerate(hits, start=1)
    ]
    sources = "\n\n".join(f"[{c.index}] {c.document_name} - {c.locator_label}\n{c.quote}" for c in citations)
    return Context(PROMPT.format(sources=sources, question=question), citations)


def check_citations(answer: str, citations: list[Citation]) -> tuple[list[Citation], list[int]]:
    """(citations the answer actually uses, in first-use order; numbers that point nowhere)."""
    by_index = {c.index: c for c in citations}
    used, dangling = [], []
    for number in dict.fromkeys(int(m) for m in _MARKER.findall(answer)):
        if number in by_index:
            used.append(by_index[number])
        else:
            dangling.append(number)
    return used, dangling


def fragment_range(fragment: str) -> tuple[int, int]:
    """(start, end) of a `#char=start,end` fragment."""
    m = re.fullmatch(r"#char=(\d+),(\d+)", fragment)
    if not m:
        raise ValueError(f"not a #char= fragment: {fragment!r}")
    return int(m.group(1)), int(m.group(2))
