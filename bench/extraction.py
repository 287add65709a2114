"""Extraction speed per file type, on generated files of real text from the bundled corpus.

    python bench/extraction.py        (needs the test extra: fpdf2 writes the PDF)

Prints pages/s for PDF and MB/s of input for every type. Each file is extracted three
times and the median is reported; the machine is shared, so read the figures as ratios.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from mixed_folder import pdf_bytes  # noqa: E402

from rag_assets.catalog import BUNDLED_DATASET  # noqa: E402
from rag_assets.ingest import corpus  # noqa: E402
from rag_assets.ingest.extractors import EXTRACTORS  # noqa: E402


def paragraphs() -> list[str]:
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    return [p for text in snap["text"] for p in text.split("\n\n") if not p.startswith("#")]


def inputs(paras: list[str]) -> dict[str, tuple[bytes, int | None]]:
    """suffix -> (file bytes, pages or None)."""
    import io

    from openpyxl import Workbook

    ascii_paras = [p.encode("latin-1", "ignore").decode("latin-1") for p in paras]  # the PDF core fonts are latin-1
    pages = [" ".join(ascii_paras[i : i + 3]) for i in range(0, 600, 3)]
    book = Workbook()
    sheet = book.active
    sheet.append(["id", "paragraph"])
    for i, p in enumerate(paras[:2000]):
        sheet.append([i, p])
    xlsx = io.BytesIO()
    book.save(xlsx)
    vtt = "WEBVTT\n\n" + "\n".join(
        f"00:{i // 60:02d}:{i % 60:02d}.000 --> 00:{i // 60:02d}:{i % 60:02d}.900\n{p[:120]}\n"
        for i, p in enumerate(paras[:3000])
    )
    csv = "id,paragraph\n" + "".join(f'{i},"{p.replace(chr(34), chr(39))}"\n' for i, p in enumerate(paras))
    html = (
        "<html><head><title>t</title><script>x=1</script></head><body><nav>menu</nav>"
        + "".join(f"<h2>Part {i}</h2><p>{p}</p>" for i, p in enumerate(paras))
        + "</body></html>"
    )
    markdown = "# Corpus\n\n" + "\n\n".join(paras)
    return {
        ".pdf": (pdf_bytes(pages), len(pages)),
        ".html": (html.encode(), None),
        ".md": (markdown.encode(), None),
        ".csv": (csv.encode(), None),
        ".xlsx": (xlsx.getvalue(), None),
        ".vtt": (vtt.encode(), None),
    }


def main() -> None:
    paras = paragraphs()
    print(f"{'type':>6} {'input MB':>9} {'pages':>6} {'seconds':>8} {'MB/s':>7} {'pages/s':>8} {'chars out':>10}")
    for suffix, (raw, pages) in inputs(paras).items():
        extract = EXTRACTORS[suffix].extract
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            out = extract(raw)
            times.append(time.perf_counter() - t0)
        seconds = statistics.median(times)
        mb = len(raw) / 1e6
        rate = f"{pages / seconds:>8.1f}" if pages else f"{'':>8}"
        print(
            f"{suffix:>6} {mb:>9.2f} {pages or '':>6} {seconds:>8.3f} {mb / seconds:>7.2f} {rate} {len(out.text):>10,}"
        )


if __name__ == "__main__":
    main()
