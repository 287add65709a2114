"""A generated documents folder: one good file of every supported type and one file of every
bad kind, with what each should become. Shared by the bad-input tests and bench/extraction.py."""

from __future__ import annotations

import io
from pathlib import Path

HEADER, FOOTER = "ACME Pump Handbook", "Confidential - page {n}"
PDF_PAGES = [
    "Chapter one covers installation. The pump must stand on a level concrete plinth.",
    "Chapter two covers priming. Fill the casing with water before the first start.",
    None,  # a scanned page: an image, no text layer
    "Chapter four covers storage. Drain the casing before frost.",
]


def pdf_bytes(
    pages: list[str | None],
    header: str | None = HEADER,
    title: str | None = "Pump handbook",
    password: str | None = None,
) -> bytes:
    """A PDF with a running header and footer on every page that has text; None pages get a drawn box only."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.set_font("Helvetica", size=12)
    if title:
        pdf.set_title(title)
    for n, body in enumerate(pages, start=1):
        pdf.add_page()
        if body is None:
            pdf.rect(20, 20, 120, 160, style="F")
            continue
        if header:
            pdf.cell(0, 10, header, new_x="LMARGIN", new_y="NEXT")
        pdf.multi_cell(0, 8, body)
        if header:
            pdf.set_y(-20)
            pdf.cell(0, 10, FOOTER.format(n=n))
    raw = bytes(pdf.output())
    if password:
        from pypdf import PdfReader, PdfWriter

        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(raw)))
        writer.encrypt(password, algorithm="AES-128")
        out = io.BytesIO()
        writer.write(out)
        raw = out.getvalue()
    return raw


def xlsx_bytes() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    parts = book.active
    parts.title = "Parts"
    for row in [
        ["part", "size", "price"],
        ["impeller", "120 mm", "45"],
        ["seal kit", "M12", "12"],
        ["gasket", "", "3"],
    ]:
        parts.append(row)
    service = book.create_sheet("Service")
    for row in [["interval", "task"], ["300 hours", "replace the filter"], ["2 years", "replace the bearings"]]:
        service.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


GOOD = {
    "guide.md": "# Pump guide\n\n## Mounting\n\nMount the pump on a flat surface.\n",
    "notes.txt": "# Field notes\n\nThe seal leaked twice in winter.\n",
    "page.html": (
        "<html><head><title>Pump FAQ</title><style>p {color: red}</style><script>var tracking = 1;</script></head>"
        "<body><nav><a href='/'>Home</a> | <a href='/shop'>Shop</a></nav><h1>Pump FAQ</h1>"
        "<h2>Noise</h2><p>A loud pump is often cavitating: the inlet pressure is too low.</p>"
        "<ul><li>Check the inlet strainer.</li><li>Open the suction valve fully.</li></ul></body></html>"
    ),
    "handbook.pdf": pdf_bytes(PDF_PAGES),
    "parts.csv": "part,size,price\nimpeller,120 mm,45\nseal kit,M12,12\n",
    "catalogue.xlsx": xlsx_bytes(),
    "talk.vtt": (
        "WEBVTT\n\n00:00:01.000 --> 00:00:04.500\nWelcome to the pump maintenance course.\n\n"
        "00:00:05.000 --> 00:00:09.250\nToday we replace the mechanical seal.\n"
    ),
    "talk.srt": (
        "1\n00:00:01,000 --> 00:00:03,000\nThe impeller spins at 2900 rpm.\n\n"
        "2\n00:01:02,500 --> 00:01:06,000\nNever run the pump dry.\n"
    ),
}

BAD = {  # path -> (bytes, the reason it must fail with)
    "corrupt.pdf": (b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\nthis is not a pdf", "corrupt"),
    "locked.pdf": (pdf_bytes(PDF_PAGES[:2], password="secret"), "encrypted"),
    "scanned.pdf": (pdf_bytes([None, None], header=None, title=None), "no_text_layer"),
    "empty.md": (b"", "empty"),
    "blank.txt": (b"   \n\n  ", "empty"),
    "binary.txt": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
    "latin1.md": ("caf\xe9 cr\xe8me".encode("latin-1"), "undecodable"),
    "huge.txt": (b"word " * 30_000, "too_large"),
    "slides.pptx": (b"PK\x03\x04 not supported", "unknown_type"),
    "broken.xlsx": (b"PK\x03\x04 truncated workbook", "corrupt"),
}
MAX_BYTES = 100_000  # huge.txt is 150,000 bytes


def write_mixed_folder(documents: Path) -> Path:
    documents.mkdir(parents=True, exist_ok=True)
    for name, content in GOOD.items():
        (documents / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    for name, (content, _) in BAD.items():
        (documents / name).write_bytes(content)
    return documents
