"""Chunks made by a library (semchunk, chonkie) placed back in their document, and what a hit returns.

A library hands back strings (and sometimes offsets that do not slice back: a tokenizer that
lowercases decodes to other text). Each string is FOUND in the document: verbatim from where the
previous chunk started, else at the library's own offsets when they hold the same characters up to
case and whitespace, else with any run of whitespace matching any other. `content` is then always
`text[start:end]` of the document; a string that cannot be placed is counted and shown, never dropped.

Small chunks may be indexed while a bigger passage is returned: parent-document (each chunk returns
the boundaries-rule passage of `parent_size` characters that holds its start) and sentence window
(each sentence returns itself and `window` sentences either side). A hit is still a returned passage
that holds the needle whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_assets.chunking.strategies import Chunk, Strategy, chunk_document, section_at
from rag_assets.ingest.corpus import headings
from rag_assets.ingest.sentences import sentence_spans

EXAMPLES = 3  # unplaced chunks quoted in the error


class UnplacedChunks(ValueError):
    """Library chunks that are nowhere in their document: the chunk set is refused whole."""


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def place(text: str, pieces: list[str], hints: list[tuple[int, int]] | None = None) -> list[tuple[int, int] | None]:
    """(start, end) in `text` of each piece, trimmed of surrounding whitespace, in order; None
    where it cannot be found. `hints`: the library's own offsets, trusted only when they hold
    the piece's characters."""
    out: list[tuple[int, int] | None] = []
    cursor = 0
    for i, piece in enumerate(pieces):
        core = piece.strip()
        if not core:
            out.append(None)
            continue
        at = text.find(core, cursor)
        span = (at, at + len(core)) if at >= 0 else None
        if span is None and hints is not None:
            a, b = hints[i]
            if 0 <= a <= b <= len(text) and _squeezed(text[a:b]) == _squeezed(core):
                lead = len(text[a:b]) - len(text[a:b].lstrip())
                span = (a + lead, a + lead + len(text[a:b].strip()))
        if span is None:
            pattern = r"\s+".join(re.escape(w) for w in core.split())
            m = re.compile(pattern).search(text, cursor)
            span = (m.start(), m.end()) if m else None
        out.append(span)
        if span:
            cursor = span[0] + 1 if span[1] > span[0] + 1 else span[1]
    return out


@dataclass(frozen=True)
class Placed:
    chunks: list[Chunk]
    unplaced: list[str]  # the pieces that could not be placed


def placed_chunks(document_id: str, arm: str, text: str, pieces: list[str], hints=None) -> Placed:
    """A library's pieces as chunks of the document (ids `{document_id}::{arm}-NNNN`)."""
    marks = headings(text)
    chunks, unplaced = [], []
    for piece, span in zip(pieces, place(text, pieces, hints)):
        if span is None:
            if piece.strip():
                unplaced.append(piece)
            continue
        start, end = span
        content = text[start:end]
        position = len(chunks)
        chunks.append(
            Chunk(
                f"{document_id}::{arm}-{position:04d}",
                document_id,
                arm,
                position,
                content,
                content,
                section_at(marks, start),
                start,
                end,
            )
        )
    return Placed(chunks, unplaced)


def refuse_unplaced(arm: str, unplaced: dict[str, list[str]]) -> None:
    """UnplacedChunks naming how many chunks of which documents could not be placed, with examples."""
    count = sum(len(v) for v in unplaced.values())
    if not count:
        return
    examples = [f"{d}: {p[:60]!r}" for d, pieces in unplaced.items() for p in pieces][:EXAMPLES]
    raise UnplacedChunks(
        f"chunker {arm}: {count} chunks in {len(unplaced)} documents are nowhere in their document's text "
        f"(e.g. {'; '.join(examples)}); the chunk set is refused rather than losing them"
    )


def sentence_chunks(document_id: str, arm: str, text: str, language: str) -> list[Chunk]:
    """Each sentence a chunk, headings excluded (ids `{document_id}::{arm}-NNNN`)."""
    marks = headings(text)
    inside = [(h.start, h.end) for h in marks]
    chunks = []
    for start, end in sentence_spans(text, language):
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())
        start, end = start + lead, start + lead + len(raw.strip())
        if end <= start or any(a <= start < b for a, b in inside):
            continue
        content = text[start:end]
        chunks.append(
            Chunk(
                f"{document_id}::{arm}-{len(chunks):04d}",
                document_id,
                arm,
                len(chunks),
                content,
                content,
                section_at(marks, start),
                start,
                end,
            )
        )
    return chunks


def parents(
    document_id: str, arm: str, title: str, text: str, small: list[Chunk], size: int
) -> tuple[list[Chunk], dict]:
    """(the boundaries-rule passages of `size` characters, small chunk id -> the passage holding its start)."""
    big = chunk_document(document_id, title, text, Strategy(f"{arm}-parent", "boundaries", target=size))
    of = {}
    for c in small:
        holder = next((p for p in big if p.start <= c.start < p.end), None)
        holder = holder or min(big, key=lambda p: abs(p.start - c.start))
        of[c.chunk_id] = holder.chunk_id
    return big, of


def windows(arm: str, text: str, sentences: list[Chunk], window: int) -> tuple[list[Chunk], dict]:
    """(each sentence with `window` sentences either side, sentence id -> its window)."""
    out, of = [], {}
    for i, s in enumerate(sentences):
        first, last = sentences[max(0, i - window)], sentences[min(len(sentences) - 1, i + window)]
        content = text[first.start : last.end]
        wid = f"{s.document_id}::{arm}-window-{i:04d}"
        out.append(Chunk(wid, s.document_id, arm, i, content, content, s.section, first.start, last.end))
        of[s.chunk_id] = wid
    return out, of


def returned_ids(ranked: list[str], returned_of: dict[str, str] | None) -> list[str]:
    """A ranking of indexed chunks as the passages it returns: each chunk's passage, once, at the
    rank of its best chunk."""
    if returned_of is None:
        return ranked
    return list(dict.fromkeys(returned_of[c] for c in ranked))
