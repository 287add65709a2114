"""Inputs that hang, blow up or vanish: each is bounded, decoded, noted or rejected with a
reason, and the rest goes on."""

import codecs
import io
import json
import random
from pathlib import Path

import pandas as pd
import pytest
from mixed_folder import pdf_bytes

from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus, extractors
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.extractors import ExtractionFailed, extract_csv, extract_pdf, extract_xlsx
from rag_assets.ingest.locators import SpanIndex
from rag_assets.ingest.squad import import_squad

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def xlsx(fill) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    fill(workbook)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_a_cell_at_xfd1048576_reads_only_the_cells_that_exist():
    def fill(wb):
        ws = wb.active
        ws.title = "Parts"
        ws["A1"], ws["B1"], ws["A2"], ws["B2"] = "part", "price", "impeller", 120
        ws["XFD1048576"] = "far away"

    raw = xlsx(fill)
    assert len(raw) < 10_000
    extracted = extract_xlsx(raw)  # the old reader built 16,384 x 1,048,576 cells here and ran out of memory
    assert "part: impeller; price: 120" in extracted.text and "XFD: far away" in extracted.text
    assert extracted.spans[-1]["range"] == "A1048576:XFD1048576"


def test_a_workbook_over_the_limits_fails_alone_with_the_limit_named(monkeypatch, tmp_path):
    def fill(wb):
        for row in range(1, 40):
            wb.active.append([f"cell {row} {col}" for col in range(10)])

    raw = xlsx(fill)
    monkeypatch.setitem(extractors.SHEET_LIMITS, "cells", 200)
    with pytest.raises(ExtractionFailed, match="more than 200 non-empty cells") as failed:
        extract_xlsx(raw)
    assert failed.value.reason == "too_large"
    monkeypatch.setitem(extractors.SHEET_LIMITS, "cells", 2_000_000)
    monkeypatch.setitem(extractors.SHEET_LIMITS, "expanded_bytes", 10_000)  # a zip bomb is this, scaled up
    with pytest.raises(ExtractionFailed, match="expands to .* MiB, over the 0 MiB limit") as failed:
        extract_xlsx(raw)
    assert failed.value.reason == "too_large"
    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "bomb.xlsx").write_bytes(raw)
    (documents / "fine.md").write_text("# Fine\n\nStill indexed.", encoding="utf-8")
    snapshot = corpus.snapshot(documents).set_index("path")
    assert snapshot.loc["bomb.xlsx", "reason"] == "too_large" and snapshot.loc["fine.md", "status"] == "ok"


def test_formulas_without_values_and_header_only_tables_are_noted_never_lost():
    def fill(wb):
        ws = wb.active
        ws.title = "Costs"
        ws.append(["item", "cost", "total"])
        ws.append(["pump", 100, "=B2*2"])  # openpyxl stores no computed value
        head = wb.create_sheet("Plan")
        head.append(["phase", "owner"])
        wb.create_sheet("Formulas").append(["=1+1", "=2+2"])

    extracted = extract_xlsx(xlsx(fill))
    assert "item: pump; cost: 100" in extracted.text and "## Plan\n\nColumns: phase; owner" in extracted.text
    assert "sheet Costs: 1 formula cells have no stored value" in " ".join(extracted.notes)
    assert "sheet Formulas: 2 formula cells have no stored value" in " ".join(extracted.notes)
    assert "sheet Plan: a header row and no data rows; indexed as its header" in extracted.notes
    csv = extract_csv(b"name,price,stock\n")
    assert csv.text == "Columns: name; price; stock" and csv.notes == [
        "table: a header row and no data rows; indexed as its header"
    ]
    with pytest.raises(ExtractionFailed, match="empty workbook: sheet Sheet: 2 formula cells") as failed:
        extract_xlsx(xlsx(lambda wb: wb.active.append(["=1+1", "=2+2"])))
    assert failed.value.reason == "empty"


def test_locating_chunks_of_a_long_table_costs_no_reparse_and_agrees_with_a_scan():
    rows = "\n".join(f"{i},part number {i},{random.Random(i).randint(1, 999)} units in stock" for i in range(20_000))
    extracted = extract_csv(f"id,name,stock\n{rows}\n".encode())
    spans = SpanIndex(json.dumps(extracted.spans))
    rng = random.Random(0)
    for _ in range(2000):
        start = rng.randrange(len(extracted.text))
        end = start + rng.randrange(1, 3000)
        brute = [s for s in extracted.spans if s["start"] < end and s["end"] > start]
        assert spans.overlapping(start, end) == brute
    document = {
        "document_id": ["t"],
        "title": ["table"],
        "path": ["t.csv"],
        "text": [extracted.text],
        "status": ["ok"],
        "extractor": ["csv"],
        "extractor_version": ["2"],
        "spans": [json.dumps(extracted.spans)],
        "language": ["en"],
    }
    chunks = chunk_corpus(pd.DataFrame(document), STRATEGIES["C"])
    assert len(chunks) > 2000 and chunks["locator"].str.match(r"A\d+:C\d+$").all()


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_with_a_byte_order_mark_are_read(codec):
    text = "# Pompe\n\nLa pompe fonctionne à 20 °C."
    raw = (codecs.BOM_UTF16_BE + text.encode("utf-16-be")) if codec == "utf-16-be" else text.encode(codec)
    assert extractors.EXTRACTORS[".txt"].extract(raw).text == text


def test_utf16_without_a_byte_order_mark_is_named_not_called_binary():
    with pytest.raises(ExtractionFailed, match="UTF-16 without a byte-order mark: re-save the file as UTF-8") as failed:
        extractors.EXTRACTORS[".md"].extract("# Pump\n\nPlain text.".encode("utf-16-le"))
    assert failed.value.reason == "undecodable"


@pytest.mark.skipif(not DEJAVU.exists(), reason="needs the DejaVu Sans font to print ligatures into a PDF")
def test_pdf_ligatures_are_folded_so_a_needle_typed_plainly_is_found():
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_font("DejaVu", fname=str(DEJAVU))
    pdf.set_font("DejaVu", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "The \ufb01lter of the o\ufb03ce \ufb02ow meter is replaced every year.")
    text = extract_pdf(bytes(pdf.output())).text
    assert "The filter of the office flow meter is replaced every year." in text and "\ufb01" not in text


def test_a_garbled_text_layer_is_noted_like_a_missing_one():
    plain = (
        "The pump must stand on a level concrete plinth and the inlet valve must face north before the "
        "first start of the machine in the plant."
    )
    garbled = codecs.encode(plain, "rot13")  # what a broken ToUnicode map prints: letters, but no words
    extracted = extract_pdf(pdf_bytes([plain, garbled, plain], header=None))
    assert "page 2: the text layer looks garbled (only 0% of its words are dictionary words)" in " ".join(
        extracted.notes
    )
    assert "## Page 2" not in extracted.text and garbled[:20] not in extracted.text and "## Page 3" in extracted.text
    with pytest.raises(ExtractionFailed, match="no readable text layer") as failed:
        extract_pdf(pdf_bytes([garbled], header=None))
    assert failed.value.reason == "no_text_layer"


def test_every_bad_question_line_is_rejected_with_its_number_and_the_rest_goes_on(tmp_path, tiny_dataset):
    good = {
        "id": "q-valve",
        "phrasings": ["Which way should the inlet valve face?"],
        "needle": "The inlet valve must face north.",
        "kind": "answerable",
        "answers": ["north"],
    }
    lines = [
        b"\xef\xbb\xbf" + json.dumps(good).encode(),  # a UTF-8 byte-order mark on the first line
        json.dumps({**good, "id": "n", "answers": 5}).encode(),
        b'{"id": "latin", "phrasings": ["caf\xe9?"], "kind": "out_of_domain", "needle": null}',
        json.dumps({**good, "id": "s", "answers": "slowly"}).encode(),
        b"not json",
        json.dumps({**good, "id": "ok2", "phrasings": ["Valve direction?"]}).encode(),
    ]
    path = tmp_path / "questions.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    records, unreadable = gt.read_questions(path)
    truth, rejects = gt.validate(records, corpus.snapshot(tiny_dataset / "documents"))
    reasons = {r["line"]: r["reason"] for r in unreadable} | dict(zip(rejects["line"], rejects["reason"]))
    assert reasons == {
        2: "`answers` must be a list of strings, got 5",
        3: "not valid UTF-8 at byte 34: re-save the file as UTF-8",
        4: "`answers` must be a list of strings, got 'slowly'",
        5: "invalid JSON: Expecting value",
    }
    assert sorted(truth["question_id"].unique()) == ["ok2", "q-valve"]
    assert truth.set_index("question_id").loc["q-valve", "answers"] == ["north"]


def test_titles_without_latin_letters_get_unique_non_empty_names(tmp_path):
    titles = ["Москва", "Αθήνα", "東京", "Москва", "C++", "C"]
    squad = {
        "version": "v2.0",
        "data": [
            {"title": t, "paragraphs": [{"context": f"Paragraph {i} about {t}.", "qas": []}]}
            for i, t in enumerate(titles)
        ],
    }
    (tmp_path / "squad.json").write_text(json.dumps(squad, ensure_ascii=False), encoding="utf-8")
    counts = import_squad(tmp_path / "squad.json", tmp_path / "out")
    files = sorted(p.name for p in (tmp_path / "out" / "documents").iterdir())
    assert counts["documents"] == len(titles) == len(files) == len(set(files))
    assert all(not f.startswith(".") and len(f) > len(".md") for f in files)
    snapshot = corpus.snapshot(tmp_path / "out" / "documents")
    assert sorted(snapshot["title"]) == sorted(titles) and (snapshot["status"] == "ok").all()


@pytest.mark.parametrize(
    "text, codec",
    [
        ("# Menu\n\nLe café est servi avec une crème fraîche.", "latin-1"),
        ("# Notes\n\nDie Größe der Fläche beträgt 20 m² und kostet 30 Mark.", "latin-1"),
        ("# Menu\n\nCafé crème, naïve résumé — “quoted” for 5 €.", "cp1252"),
        ("# Отчёт\n\nБюджет проекта составляет два миллиона.", "cp1251"),
    ],
)
def test_legacy_encodings_are_detected_and_recorded(tmp_path, text, codec):
    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "legacy.txt").write_bytes(text.encode(codec))
    (documents / "modern.md").write_text(text, encoding="utf-8")
    snap = corpus.snapshot(documents).set_index("path")
    assert snap.loc["legacy.txt", "status"] == "ok" and snap.loc["legacy.txt", "text"] == text
    assert snap.loc["legacy.txt", "encoding"] == ("cp1251" if codec == "cp1251" else "cp1252")
    assert snap.loc["modern.md", "encoding"] == "utf-8"


@pytest.mark.parametrize(
    "raw", ["café crème".encode("latin-1"), b"# Broken\n\n\xff\xfe not utf-8", bytes(range(128, 256))]
)
def test_bytes_no_encoding_reads_with_confidence_stay_undecodable(raw):
    with pytest.raises(ExtractionFailed, match="no other encoding reads it with confidence") as failed:
        extractors.EXTRACTORS[".md"].extract(raw)
    assert failed.value.reason == "undecodable"
