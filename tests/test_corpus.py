from rag_assets.ingest import corpus
from rag_assets.ingest.extractors import EXTRACTORS


def test_canonical_text_normalises_newlines_bom_and_unicode():
    raw = "\ufeff# Café\r\n\r\nLine one\rLine two   \n\n".encode().replace("é".encode(), "e\u0301".encode())
    assert EXTRACTORS[".txt"].extract(raw).text == "# Caf\u00e9\n\nLine one\nLine two"


def test_snapshot_keeps_going_past_bad_files_and_says_why(tmp_path):
    docs = tmp_path / "documents"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text("# Good\n\n## Part\n\nBody.", encoding="utf-8")
    (docs / "sub" / "plain.txt").write_text("No title here.", encoding="utf-8")
    (docs / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (docs / "empty.md").write_text("  \n\n ", encoding="utf-8")
    (docs / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (docs / "table.xlsx").write_bytes(b"PK\x03\x04")
    (docs / "slides.key").write_bytes(b"keynote")
    (docs / ".hidden.md").write_text("ignored", encoding="utf-8")
    frame = corpus.snapshot(docs).set_index("path")
    assert list(frame.index) == sorted(
        ["good.md", "sub/plain.txt", "latin1.md", "empty.md", "image.md", "table.xlsx", "slides.key"]
    )
    assert frame.loc["good.md", "status"] == "ok" and frame.loc["good.md", "title"] == "Good"
    assert frame.loc["sub/plain.txt", "title"] == "plain"
    assert frame.loc["sub/plain.txt", "extractor"] == "plaintext"
    errors = frame["error"].to_dict()
    assert "not valid UTF-8 at byte 3" in errors["latin1.md"]
    assert "empty document" in errors["empty.md"]
    assert "binary file" in errors["image.md"]
    assert "corrupt XLSX" in errors["table.xlsx"]
    assert "unsupported file type '.key'" in errors["slides.key"]
    assert (frame.loc[["latin1.md", "empty.md", "image.md", "table.xlsx", "slides.key"], "status"] == "failed").all()
    assert frame["sha256"].notna().all()


def test_document_id_is_stable_across_edits_and_unique_per_path(tmp_path):
    docs = tmp_path / "documents"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nfirst", encoding="utf-8")
    before = corpus.snapshot(docs)
    (docs / "a.md").write_text("# A\n\nsecond", encoding="utf-8")
    after = corpus.snapshot(docs)
    assert before["document_id"].tolist() == after["document_id"].tolist()
    assert before["sha256"].tolist() != after["sha256"].tolist()
    assert corpus.corpus_hash(before) != corpus.corpus_hash(after)
    assert corpus.document_id("a/b.md") != corpus.document_id("a-b.md")
