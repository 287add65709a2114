"""Corpus snapshot: one row per document file, readable or not.

The canonical text produced here is the single source of truth for every offset
downstream (`#char=start,end` slices it). A file that cannot be read becomes a
`failed` row with a reason a user can act on; it never stops the folder.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rag_assets.extractors import EXTRACTORS, ExtractionFailed, access_list

SNAPSHOT_COLUMNS = [
    "document_id", "title", "path", "text", "sha256", "bytes", "extractor", "extractor_version",
    "status", "reason", "error", "spans", "notes", "access",
]
MAX_BYTES = 50 * 1024 * 1024  # a larger file is refused, not read: raise it per dataset if needed
ACCESS_SUFFIX = ".access"  # sidecar `<file>.access`: tenants or groups allowed to see <file>, one per line

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


def title_of(text: str, fallback: str) -> str:
    first = next((h for h in headings(text) if h.level == 1), None)
    return first.title if first else fallback


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ACCESS_SUFFIX)


def _sidecar_access(path: Path) -> list[str] | None:
    sidecar = _sidecar(path)
    if not sidecar.is_file():
        return None
    return access_list([line for line in sidecar.read_text(encoding="utf-8").replace(",", "\n").splitlines()])


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def load_document(path: Path, relative_path: str, max_bytes: int = MAX_BYTES) -> dict:
    """One snapshot row. Every failure is caught here and becomes the row's reason and error."""
    row = dict.fromkeys(SNAPSHOT_COLUMNS)
    row.update(document_id=document_id(relative_path), path=relative_path, title=Path(relative_path).stem)

    def failed(reason: str, error: str) -> dict:
        return {**row, "status": "failed", "reason": reason, "error": error}

    try:
        size = path.stat().st_size
        if size > max_bytes:
            return failed("too_large", f"file is {_size(size)}, over the {_size(max_bytes)} limit: "
                                       "split it or raise the dataset's max_file_mb")
        raw = path.read_bytes()
    except OSError as exc:
        return failed("unreadable", f"cannot read file: {exc.strerror or exc}")
    row.update(sha256=hashlib.sha256(raw).hexdigest(), bytes=len(raw))
    extractor = EXTRACTORS.get(path.suffix.lower())
    if extractor is None:
        supported = ", ".join(sorted(EXTRACTORS))
        return failed("unknown_type", f"unsupported file type {path.suffix or '(none)'!r}; supported: {supported}")
    row.update(extractor=extractor.name, extractor_version=extractor.version)
    if not raw:
        return failed("empty", "empty file (0 bytes): nothing to index")
    try:
        extracted = extractor.extract(raw)
    except ExtractionFailed as exc:
        return failed(exc.reason, str(exc))
    except Exception as exc:  # a parser bug on one odd file must not sink the folder
        return failed("extractor_error", f"the {extractor.name} extractor crashed on this file "
                                         f"({type(exc).__name__}: {exc}); please report it with the file")
    sidecar = _sidecar_access(path)
    access = sidecar if sidecar is not None else extracted.access
    return {**row, "text": extracted.text, "title": title_of(extracted.text, extracted.title or row["title"]),
            "status": "ok", "spans": json.dumps(extracted.spans), "notes": json.dumps(extracted.notes),
            "access": None if access is None else json.dumps(access)}


def document_files(documents_dir: Path) -> list[tuple[Path, str]]:
    """(path, relative POSIX path) of every regular, non-hidden file, sorted."""
    documents_dir = Path(documents_dir)
    if not documents_dir.is_dir():
        raise FileNotFoundError(f"documents folder not found: {documents_dir}")
    files = sorted(
        p for p in documents_dir.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(documents_dir).parts)
        and not p.name.endswith(ACCESS_SUFFIX)
    )
    return [(p, p.relative_to(documents_dir).as_posix()) for p in files]


def snapshot(documents_dir: Path, max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """Every regular, non-hidden file under `documents_dir` (access sidecars aside), sorted by
    path, as one row each."""
    rows = [load_document(p, rel, max_bytes) for p, rel in document_files(documents_dir)]
    frame = pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS)
    return frame.astype({"bytes": "Int64"})


def _content_hash(entries) -> str:
    keys = sorted("\t".join(str(x) for x in entry) for entry in entries)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def corpus_hash(frame: pd.DataFrame) -> str:
    """Content hash of a snapshot: paths, file hashes, extractors and access lists, order-independent."""
    return _content_hash((r.path, r.sha256, r.extractor, r.extractor_version, r.access) for r in frame.itertuples())


def folder_hash(documents_dir: Path) -> str:
    """The corpus source's data version, taken without extracting anything (cheap enough for
    every sensor tick): it changes whenever the snapshot could, i.e. with a file's bytes, its
    extractor's version or its access sidecar."""
    def sha(path: Path) -> str | None:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None

    def extractor(path: Path) -> tuple[str | None, str | None]:
        e = EXTRACTORS.get(path.suffix.lower())
        return (e.name, e.version) if e else (None, None)

    return _content_hash(
        (rel, sha(p), *extractor(p), sha(_sidecar(p))) for p, rel in document_files(documents_dir)
    )


def access_by_document(frame: pd.DataFrame) -> dict[str, frozenset[str] | None]:
    """document id -> the tenants or groups allowed to see it; None: public."""
    return {d: None if pd.isna(a) else frozenset(json.loads(a)) for d, a in zip(frame["document_id"], frame["access"])}


def ledger(frame: pd.DataFrame) -> dict:
    """Counts computed from the rows, never declared: seen, ok, failed (by reason), and the
    rows that break the contract (ok without text, failed without a reason or message)."""
    ok, failed = frame[frame["status"] == "ok"], frame[frame["status"] == "failed"]
    return {
        "seen": len(frame), "ok": len(ok), "failed": len(failed),
        "failed_by_reason": {str(k): int(v) for k, v in failed["reason"].value_counts().sort_index().items()},
        "other_status": sorted(set(frame["status"]) - {"ok", "failed"}),
        "ok_without_text": ok.loc[ok["text"].fillna("").str.strip() == "", "path"].tolist(),
        "failed_without_reason": failed.loc[failed["reason"].isna() | failed["error"].isna(), "path"].tolist(),
    }


def chunk_coverage(frame: pd.DataFrame, chunks: pd.DataFrame) -> dict:
    """Chunks per ok document (by path), ok documents with none, chunks of documents not ok."""
    ok = frame[frame["status"] == "ok"]
    counts = chunks["document_id"].value_counts()
    per_path = {p: int(counts.get(d, 0)) for d, p in zip(ok["document_id"], ok["path"])}
    return {
        "chunks_per_document": per_path,
        "ok_without_chunks": [p for p, n in per_path.items() if n == 0],
        "chunks_of_other_documents": sorted(set(chunks["document_id"]) - set(ok["document_id"])),
    }
