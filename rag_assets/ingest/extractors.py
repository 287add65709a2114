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

import csv
import io
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

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


def normalise(text: str) -> str:
    """Newlines as \\n, Unicode NFC, no trailing whitespace."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n")).rstrip()


def decode(raw: bytes) -> str:
    if b"\x00" in raw:
        raise ExtractionFailed("binary", "binary file (contains NUL bytes), not a text document")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionFailed(
            "undecodable", f"not valid UTF-8 at byte {exc.start}: re-save the file as UTF-8"
        ) from None


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


def extract_markdown(raw: bytes) -> Extracted:
    """Markdown (and plain text) as written: UTF-8 (BOM dropped), newlines as \\n, Unicode NFC,
    no trailing whitespace; YAML front matter (`access:`) is read and kept out of the text."""
    text = normalise(decode(raw))
    try:
        meta, text = split_front_matter(text)
        access = front_matter_access(meta) if meta is not None else None
    except BadAccessList as exc:
        raise ExtractionFailed("bad_access_list", str(exc)) from None
    return Extracted(_require_text(text), access=access)


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

    soup = BeautifulSoup(decode(raw), "html.parser")
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
    return Extracted(_require_text(normalise(text)), title=title)


# --- PDF -----------------------------------------------------------------------------------


def _page_lines(text: str) -> list[str]:
    return [line.strip() for line in normalise(text).split("\n") if line.strip()]


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
        out.add(f"## Page {number}")  # a section per page: boundary chunkers never cross a page
        for paragraph in _paragraphs(kept):
            out.add(paragraph, page=number)
    if not out.parts:
        raise ExtractionFailed("no_text_layer", "no text layer on any page (a scanned PDF?): OCR needed")
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


def _rows_to_text(out: _Builder, rows: list[list[str]], sheet: str | None) -> None:
    """One paragraph per data row, "header: value" pairs, spanning its A1 range."""
    if not rows:
        return
    header = [h.strip() or column_letter(i) for i, h in enumerate(rows[0])]
    for r, row in enumerate(rows[1:], start=2):
        cells = [(header[i] if i < len(header) else column_letter(i), v.strip()) for i, v in enumerate(row)]
        if not any(v for _, v in cells):
            continue
        line = "; ".join(f"{h}: {v}" for h, v in cells if v)
        out.add(line, sheet=sheet, range=f"A{r}:{column_letter(max(len(row), 1) - 1)}{r}")


def extract_csv(raw: bytes) -> Extracted:
    text = normalise(decode(raw))
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = [row for row in csv.reader(io.StringIO(text), dialect)]
    except csv.Error as exc:
        raise ExtractionFailed("corrupt", f"malformed CSV: {exc}") from None
    out = _Builder()
    _rows_to_text(out, rows, None)
    return Extracted(_require_text(out.text()), spans=out.spans)


def extract_xlsx(raw: bytes) -> Extracted:
    """Each sheet a `## sheet` section, each row a paragraph with its sheet and A1 range."""
    import zipfile

    from openpyxl import load_workbook

    try:
        workbook = load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise ExtractionFailed("corrupt", f"corrupt XLSX (not a readable workbook): {exc}") from None
    out = _Builder()
    for sheet in workbook.worksheets:
        rows = [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
        while rows and not any(rows[-1]):
            rows.pop()
        if rows:
            out.add(f"## {sheet.title}")
            _rows_to_text(out, rows, sheet.title)
    workbook.close()
    return Extracted(_require_text(out.text()), spans=out.spans)


# --- WebVTT and SRT ------------------------------------------------------------------------


def _cues_to_text(cues: list[tuple[float, float, str]]) -> Extracted:
    out = _Builder()
    for start, end, words in cues:
        out.add(" ".join(words.split()), t=[round(start, 3), round(end, 3)])
    return Extracted(_require_text(out.text()), spans=out.spans)


def extract_vtt(raw: bytes) -> Extracted:
    import webvtt
    from webvtt.errors import MalformedCaptionError, MalformedFileError

    try:
        captions = webvtt.from_string(normalise(decode(raw)) + "\n")
        cues = [(c.start_time.in_milliseconds() / 1000, c.end_time.in_milliseconds() / 1000, c.text) for c in captions]
    except (MalformedFileError, MalformedCaptionError) as exc:
        raise ExtractionFailed("corrupt", f"malformed WebVTT: {exc}") from None
    return _cues_to_text(cues)


def extract_srt(raw: bytes) -> Extracted:
    import srt

    try:
        cues = [(s.start.total_seconds(), s.end.total_seconds(), s.content) for s in srt.parse(normalise(decode(raw)))]
    except srt.SRTParseError as exc:
        raise ExtractionFailed("corrupt", f"malformed SRT: {exc}") from None
    return _cues_to_text(cues)


@dataclass(frozen=True)
class Extractor:
    name: str
    version: str
    extract: Callable[[bytes], Extracted]


EXTRACTORS = {
    ".md": Extractor("markdown", "3", extract_markdown),
    ".markdown": Extractor("markdown", "3", extract_markdown),
    ".txt": Extractor("plaintext", "3", extract_markdown),  # the same reading: plain text has no markup to lose
    ".html": Extractor("html", "1", extract_html),
    ".htm": Extractor("html", "1", extract_html),
    ".pdf": Extractor("pdf", "1", extract_pdf),
    ".csv": Extractor("csv", "1", extract_csv),
    ".xlsx": Extractor("xlsx", "1", extract_xlsx),
    ".vtt": Extractor("webvtt", "1", extract_vtt),
    ".srt": Extractor("srt", "1", extract_srt),
}
