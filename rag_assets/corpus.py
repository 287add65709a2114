"""Corpus snapshot: one row per document file, readable or not.

The canonical text produced here is the single source of truth for every offset
downstream (`#char=start,end` slices it). A file that cannot be read becomes a
`failed` row with a reason a user can act on; it never stops the folder.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

# Bump a version whenever the canonical text an extractor produces could change:
# every offset computed from the old text is then invalid.
EXTRACTORS = {".md": ("markdown", "1"), ".markdown": ("markdown", "1"), ".txt": ("plaintext", "1")}

SNAPSHOT_COLUMNS = [
    "document_id", "title", "path", "text", "sha256", "bytes",
    "extractor", "extractor_version", "status", "error",
]

_HEADING = re.compile(r"^(#{1,2}) (.+?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Heading:
    """A `# ` (level 1, the title) or `## ` (level 2, a section) line of canonical text."""

    level: int
    title: str
    start: int  # offset of the '#'
    end: int  # offset just past the heading line (before its newline)


def headings(text: str) -> list[Heading]:
    return [Heading(len(m.group(1)), m.group(2).strip(), m.start(), m.end()) for m in _HEADING.finditer(text)]


def document_id(relative_path: str) -> str:
    """Stable across edits of the file: derived from its path, never from its content."""
    stem = re.sub(r"[^a-z0-9]+", "-", Path(relative_path).with_suffix("").as_posix().lower()).strip("-")
    return f"{stem or 'doc'}-{hashlib.sha256(relative_path.encode()).hexdigest()[:10]}"


def canonical_text(raw: bytes) -> str:
    """UTF-8 (BOM dropped), newlines as \\n, Unicode NFC, no trailing whitespace.

    Raises ValueError with a user-facing reason when the bytes are not a text document.
    """
    if b"\x00" in raw:
        raise ValueError("binary file (contains NUL bytes), not a text document")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 at byte {exc.start}: re-save the file as UTF-8") from None
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n")).rstrip()
    if not text.strip():
        raise ValueError("empty document: no text to index")
    return text


def title_of(text: str, fallback: str) -> str:
    first = next((h for h in headings(text) if h.level == 1), None)
    return first.title if first else fallback


def load_document(path: Path, relative_path: str) -> dict:
    """One snapshot row. Every failure is caught here and becomes the row's `error`."""
    row = dict.fromkeys(SNAPSHOT_COLUMNS)
    row.update(document_id=document_id(relative_path), path=relative_path, title=Path(relative_path).stem)
    extractor = EXTRACTORS.get(path.suffix.lower())
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return {**row, "status": "failed", "error": f"cannot read file: {exc.strerror or exc}"}
    row.update(sha256=hashlib.sha256(raw).hexdigest(), bytes=len(raw))
    if extractor is None:
        supported = ", ".join(sorted(EXTRACTORS))
        return {**row, "status": "failed", "error": f"unsupported file type {path.suffix or '(none)'!r}; supported: {supported}"}
    row.update(extractor=extractor[0], extractor_version=extractor[1])
    try:
        text = canonical_text(raw)
    except ValueError as exc:
        return {**row, "status": "failed", "error": str(exc)}
    return {**row, "text": text, "title": title_of(text, row["title"]), "status": "ok", "error": None}


def document_files(documents_dir: Path) -> list[tuple[Path, str]]:
    """(path, relative POSIX path) of every regular, non-hidden file, sorted."""
    documents_dir = Path(documents_dir)
    if not documents_dir.is_dir():
        raise FileNotFoundError(f"documents folder not found: {documents_dir}")
    files = sorted(
        p for p in documents_dir.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(documents_dir).parts)
    )
    return [(p, p.relative_to(documents_dir).as_posix()) for p in files]


def snapshot(documents_dir: Path) -> pd.DataFrame:
    """Every regular, non-hidden file under `documents_dir`, sorted by path, as one row each."""
    rows = [load_document(p, rel) for p, rel in document_files(documents_dir)]
    frame = pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS)
    return frame.astype({"bytes": "Int64"})


def _content_hash(entries) -> str:
    keys = sorted("\t".join(str(x) for x in entry) for entry in entries)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def corpus_hash(frame: pd.DataFrame) -> str:
    """Content hash of a snapshot: paths, file hashes and extractors, order-independent."""
    return _content_hash((r.path, r.sha256, r.extractor, r.extractor_version) for r in frame.itertuples())


def folder_hash(documents_dir: Path) -> str:
    """The same hash computed from the folder without extracting anything: the data
    version of the corpus source, cheap enough to take on every sensor tick."""
    def sha(path: Path) -> str | None:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None

    return _content_hash(
        (rel, sha(p), *EXTRACTORS.get(p.suffix.lower(), (None, None))) for p, rel in document_files(documents_dir)
    )

