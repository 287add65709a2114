"""Corpus snapshot: one row per document file, readable or not.

The canonical text produced here is the single source of truth for every offset
downstream (`#char=start,end` slices it). A file that cannot be read becomes a
`failed` row with a reason a user can act on; it never stops the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rag_assets import storage
from rag_assets.ingest.access import SIDECAR_SUFFIX, BadAccessList, read_sidecar, sidecar_of
from rag_assets.ingest.extractors import EXTRACTORS, ExtractionFailed
from rag_assets.ingest.language import language_of

SNAPSHOT_COLUMNS = [
    "document_id",
    "title",
    "path",
    "text",
    "sha256",
    "bytes",
    "extractor",
    "extractor_version",
    "status",
    "reason",
    "error",
    "spans",
    "notes",
    "access",
    "encoding",
    "language",
    "language_source",
]
MAX_BYTES = 50 * 1024 * 1024  # a larger file is refused, not read: raise it per dataset if needed

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


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


@dataclass(frozen=True)
class FolderEntry:
    """One entry of the documents folder that is (or was meant to be) a document."""

    relative: str  # POSIX path under documents/: the document's name and id
    location: Path  # the entry itself (a symbolic link stays a link here)
    target: Path | None  # what is read: the file, or a link's target inside the dataset
    failure: tuple[str, str] | None = None  # (reason, message) known before reading


@dataclass
class Listing:
    """Every entry of a documents folder, accounted for: documents to read (or failed before
    reading) and entries skipped by a documented rule, each with why."""

    root: Path
    boundary: Path  # the dataset folder: nothing outside it is ever read
    documents: list[FolderEntry]
    skipped: list[dict]  # {"path", "why"}

    def inside(self, path: Path) -> bool:
        return path.is_relative_to(self.boundary) or path.is_relative_to(self.root)


SKIP_RULES = {
    "hidden": "hidden (name starts with '.'): never read",
    "hidden_folder": "hidden folder (name starts with '.'): nothing in it is read",
    "folder_link": "symbolic link to a folder: not followed (move or copy the folder in)",
    "orphan_sidecar": "access sidecar without its document",
}


def list_folder(documents_dir: Path) -> Listing:
    """Walk `documents_dir` (sorted, depth first) and account for every entry.

    Regular files are documents. A symbolic link to a file inside the dataset folder (the
    parent of documents/) is read once, through its resolved target; a link that points
    outside it fails with `outside_dataset`, a dangling or looping one with `broken_link`.
    FIFOs, sockets and devices fail with `special_file` (reading one could block forever).
    Hidden entries, links to folders and sidecars without their document are skipped, with
    why; `<file>.access` sidecars are read with their document."""
    documents_dir = Path(documents_dir)
    if not documents_dir.is_dir():
        raise FileNotFoundError(f"documents folder not found: {documents_dir}")
    listing = Listing(documents_dir.resolve(), documents_dir.absolute().parent.resolve(), [], [])

    def failed(rel: str, location: Path, reason: str, message: str) -> FolderEntry:
        return FolderEntry(rel, location, None, (reason, message))

    def walk(folder: Path, prefix: str) -> None:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        names = {e.name for e in entries}
        for e in entries:
            rel, location = prefix + e.name, Path(e.path)
            is_dir = e.is_dir(follow_symlinks=False)
            if e.name.startswith("."):
                listing.skipped.append(
                    {"path": rel + ("/" if is_dir else ""), "why": SKIP_RULES["hidden_folder" if is_dir else "hidden"]}
                )
            elif is_sidecar_name(e.name, names):
                pass  # read with its document, whatever kind of entry it is
            elif e.name.endswith(SIDECAR_SUFFIX) and not is_dir:
                listing.skipped.append({"path": rel, "why": SKIP_RULES["orphan_sidecar"]})
            elif e.is_symlink():
                try:
                    target = location.resolve(strict=True)
                except FileNotFoundError:
                    listing.documents.append(
                        failed(rel, location, "broken_link", "dangling symbolic link: its target does not exist")
                    )
                    continue
                except (RuntimeError, OSError):
                    listing.documents.append(failed(rel, location, "broken_link", "symbolic link loop"))
                    continue
                if not listing.inside(target):
                    listing.documents.append(
                        failed(
                            rel,
                            location,
                            "outside_dataset",
                            "symbolic link to a file outside the dataset folder: never read; "
                            "copy the file into documents/ if it belongs to the corpus",
                        )
                    )
                elif target.is_dir():
                    listing.skipped.append({"path": rel + "/", "why": SKIP_RULES["folder_link"]})
                elif target.is_file():
                    listing.documents.append(FolderEntry(rel, location, target))
                else:
                    listing.documents.append(
                        failed(
                            rel,
                            location,
                            "special_file",
                            "link to something that is not a regular file (a FIFO, socket or device): not read",
                        )
                    )
            elif is_dir:
                walk(location, rel + "/")
            elif e.is_file(follow_symlinks=False):
                listing.documents.append(FolderEntry(rel, location, location))
            else:
                listing.documents.append(
                    failed(rel, location, "special_file", "not a regular file (a FIFO, socket or device): not read")
                )

    walk(listing.root, "")
    return listing


def is_sidecar_name(name: str, names: set[str]) -> bool:
    """Whether the entry `name` of a folder holding `names` is its document's access sidecar."""
    document = name[: -len(SIDECAR_SUFFIX)]
    return name.endswith(SIDECAR_SUFFIX) and document in names and not document.startswith(".")


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def load_document(entry: FolderEntry, listing: Listing, max_bytes: int = MAX_BYTES) -> dict:
    """One snapshot row. Every failure is caught here and becomes the row's reason and error."""
    row = dict.fromkeys(SNAPSHOT_COLUMNS)
    row.update(document_id=document_id(entry.relative), path=entry.relative, title=Path(entry.relative).stem)

    def failed(reason: str, error: str) -> dict:
        if reason == "bad_access_list":
            error += "; the document is indexed for nobody until it is fixed"
        return {**row, "status": "failed", "reason": reason, "error": error}

    if entry.failure:
        return failed(*entry.failure)
    name_bytes = len(os.fsencode(entry.location.name))
    if name_bytes + len(SIDECAR_SUFFIX) > _name_max(entry.location.parent):
        return failed(
            "name_too_long",
            f"the file name is {name_bytes} bytes: its access sidecar ({SIDECAR_SUFFIX}) could not be named on "
            "this file system, so it could never be restricted; shorten the name",
        )
    path = entry.target
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return failed(
                "too_large",
                f"file is {_size(size)}, over the {_size(max_bytes)} limit: "
                "split it or raise the dataset's max_file_mb",
            )
        raw = path.read_bytes()
    except OSError as exc:
        return failed("unreadable", f"cannot read file: {exc.strerror or exc}")
    row.update(sha256=hashlib.sha256(raw).hexdigest(), bytes=len(raw))
    extractor = EXTRACTORS.get(Path(entry.relative).suffix.lower())
    if extractor is None:
        supported = ", ".join(sorted(EXTRACTORS))
        return failed(
            "unknown_type", f"unsupported file type {Path(entry.relative).suffix or '(none)'!r}; supported: {supported}"
        )
    row.update(extractor=extractor.name, extractor_version=extractor.version)
    if not raw:
        return failed("empty", "empty file (0 bytes): nothing to index")
    try:
        sidecar = read_sidecar(entry.location, listing.inside)
    except BadAccessList as exc:
        return failed("bad_access_list", str(exc))
    try:
        extracted = extractor.extract(raw)
    except ExtractionFailed as exc:
        return failed(exc.reason, str(exc))
    except Exception as exc:  # a parser bug on one odd file must not sink the folder
        return failed(
            "extractor_error",
            f"the {extractor.name} extractor crashed on this file "
            f"({type(exc).__name__}: {exc}); please report it with the file",
        )
    access = sidecar if sidecar is not None else extracted.access
    return {
        **row,
        "text": extracted.text,
        "title": title_of(extracted.text, extracted.title or row["title"]),
        "status": "ok",
        "spans": json.dumps(extracted.spans),
        "notes": json.dumps(extracted.notes),
        "access": None if access is None else json.dumps(access),
        "encoding": extracted.encoding,
        "language": extracted.language or language_of(extracted.text),
        "language_source": "front matter" if extracted.language else "identified",
    }


EXTRACTION_BATCH = 64  # files per task when an engine spreads the extraction


def load_documents(entries: list[FolderEntry], shared: tuple[Listing, int]) -> list[dict]:
    """Rows of a batch of entries: what an engine's task runs."""
    listing, max_bytes = shared
    return [load_document(e, listing, max_bytes) for e in entries]


def snapshot_of(listing: Listing, max_bytes: int = MAX_BYTES, engine=None) -> pd.DataFrame:
    """One row per document entry of the listing, in its order (skipped entries have none).
    `engine`, when given, extracts in batches elsewhere (`engine.map_batches`): the same rows,
    as each file still fails alone, with its reason."""
    if engine is None:
        rows = [load_document(e, listing, max_bytes) for e in listing.documents]
    else:
        rows = engine.map_batches(
            load_documents, listing.documents, EXTRACTION_BATCH, "extraction", (listing, max_bytes)
        )
    frame = pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS)
    return frame.astype({"bytes": "Int64"})


def snapshot(documents_dir: Path, max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """Every document entry under `documents_dir`, sorted by path, as one row each."""
    return snapshot_of(list_folder(documents_dir), max_bytes)


def _content_hash(entries) -> str:
    keys = sorted("\t".join(str(x) for x in entry) for entry in entries)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def corpus_hash(frame: pd.DataFrame) -> str:
    """Content hash of a snapshot: paths, file hashes, extractors and access lists, order-independent."""
    return _content_hash((r.path, r.sha256, r.extractor, r.extractor_version, r.access) for r in frame.itertuples())


_DIGESTS: dict[str, tuple[tuple[int, ...], str]] = {}  # path -> (stat signature, sha256), per process


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read again only when its stat signature (size, modification and
    change times, inode) differs from the last time this process read it, as git's index does:
    the sensor's tick costs a stat per file, not every byte. Any write moves the change time."""
    st = os.stat(path)
    signature = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    key = os.fspath(path)
    known = _DIGESTS.get(key)
    if known is None or known[0] != signature:
        known = _DIGESTS[key] = (signature, storage.sha256_of([path]))
    return known[1]


def folder_hash(documents_dir: Path) -> str:
    """The corpus source's data version, taken without extracting anything (cheap enough for
    every sensor tick): it changes whenever the snapshot could, i.e. with a file's bytes, its
    extractor's version, its access sidecar, or an entry failing before it is read."""

    def sha(path: Path | None) -> str | None:
        try:
            return file_digest(path) if path else None
        except OSError:
            return None

    def extractor(name: str) -> tuple[str | None, str | None]:
        e = EXTRACTORS.get(Path(name).suffix.lower())
        return (e.name, e.version) if e else (None, None)

    listing = list_folder(documents_dir)
    return _content_hash(
        (e.relative, sha(e.target) if e.target else e.failure[0], *extractor(e.relative), sidecar_state(e.location))
        for e in listing.documents
    )


def sidecar_state(path: Path) -> str | None:
    """What a document's sidecar is now, without ever opening anything but a regular file (a
    FIFO would block): None when there is none, its sha256 when it is a file, else its kind."""
    sidecar = sidecar_of(path)
    try:
        os.lstat(sidecar)
        mode = os.stat(sidecar).st_mode
    except FileNotFoundError:
        return "broken_link" if sidecar.is_symlink() else None
    except OSError as exc:
        return f"error:{exc.errno}"
    if not stat.S_ISREG(mode):
        return f"mode:{stat.S_IFMT(mode)}"
    try:
        return file_digest(sidecar)
    except OSError as exc:
        return f"error:{exc.errno}"


def ledger(frame: pd.DataFrame) -> dict:
    """Counts computed from the rows, never declared: seen, ok, failed (by reason), and the
    rows that break the contract (ok without text, failed without a reason or message)."""
    ok, failed = frame[frame["status"] == "ok"], frame[frame["status"] == "failed"]
    return {
        "seen": len(frame),
        "ok": len(ok),
        "failed": len(failed),
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
