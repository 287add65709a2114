"""Real documents in, nothing lost: every supported type extracted with locators, every bad
file failed with a reason, every good file indexed, every locator slicing back."""

import json

import pandas as pd
import pytest
from mixed_folder import BAD, GOOD, HEADER, MAX_BYTES, PDF_PAGES, write_mixed_folder
from pypdf import PdfReader

from rag_assets import storage
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest.extractors import EXTRACTORS, column_letter
from rag_assets.ingest.locators import SpanIndex, describe


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    documents = write_mixed_folder(tmp_path_factory.mktemp("mixed") / "documents")
    return documents, corpus.snapshot(documents, MAX_BYTES).set_index("path")


def test_every_bad_file_fails_with_its_reason_and_every_good_file_is_ok(mixed):
    _, snap = mixed
    outcome = {p: (r.status, None if pd.isna(r.reason) else r.reason) for p, r in snap.iterrows()}
    assert {p: outcome[p] for p in BAD} == {p: ("failed", reason) for p, (_, reason) in BAD.items()}
    assert {p: outcome[p] for p in GOOD} == {p: ("ok", None) for p in GOOD}
    assert snap.loc[list(BAD), "error"].str.len().gt(20).all()  # a sentence a user can act on
    assert "remove the password" in snap.loc["locked.pdf", "error"]
    assert "OCR needed" in snap.loc["scanned.pdf", "error"]
    assert "146.5 KiB, over the 97.7 KiB limit" in snap.loc["huge.txt", "error"]
    assert corpus.ledger(snap.reset_index()) | {"failed_by_reason": None} == {
        "seen": len(GOOD) + len(BAD),
        "ok": len(GOOD),
        "failed": len(BAD),
        "failed_by_reason": None,
        "other_status": [],
        "ok_without_text": [],
        "failed_without_reason": [],
    }
    assert sum(corpus.ledger(snap.reset_index())["failed_by_reason"].values()) == len(BAD)
    assert set(snap.index[snap["extractor"].isna()]) == {"slides.pptx", "huge.txt"}  # never extracted


@pytest.mark.parametrize("strategy", ["A", "C", "E", "F", "W"])
def test_every_good_document_is_chunked_and_every_chunk_slices_back(mixed, strategy):
    _, snap = mixed
    frame = snap.reset_index()
    chunks = chunk_corpus(frame, STRATEGIES[strategy])
    coverage = corpus.chunk_coverage(frame, chunks)
    assert coverage["ok_without_chunks"] == [] and coverage["chunks_of_other_documents"] == []
    assert set(coverage["chunks_per_document"]) == set(GOOD)
    texts = dict(zip(frame["document_id"], frame["text"]))
    assert all(texts[c.document_id][c.start : c.end] == c.content for c in chunks.itertuples())


def test_pdf_pages_locate_chunks_and_running_headers_stay_out(mixed):
    documents, snap = mixed
    row = snap.loc["handbook.pdf"]
    assert row.title == "Pump handbook"
    assert "page 3: no text layer; OCR needed" in json.loads(row.notes)
    chunks = chunk_corpus(snap.reset_index(), STRATEGIES["C"])
    pdf = chunks[chunks["document_id"] == row.document_id]
    assert HEADER not in row.text and "Confidential" not in row.text
    pages = [p.extract_text() for p in PdfReader(documents / "handbook.pdf").pages]
    for c in pdf.itertuples():  # the page a chunk names holds its first sentence
        assert c.locator.startswith("#page=")
        assert c.content.split(".")[0] in " ".join(pages[int(c.locator[6:]) - 1].split())
    # one paragraph per page here, so each page's text is located on its own page
    spans = json.loads(row.spans)
    assert [s["page"] for s in spans] == [n for n, body in enumerate(PDF_PAGES, start=1) if body]
    assert all(SpanIndex(row.spans).locate(s["start"], s["end"]) == f"#page={s['page']}" for s in spans)


def test_spreadsheet_and_transcript_locators(mixed):
    _, snap = mixed

    def locators(strategy):
        chunks = chunk_corpus(snap.reset_index(), STRATEGIES[strategy]).merge(
            snap.reset_index()[["document_id", "path"]], on="document_id"
        )
        return chunks.groupby("path")["locator"].apply(list).to_dict()

    assert locators("C")["catalogue.xlsx"] == ["Parts!A2:C4", "Service!A2:B3"]  # one chunk per sheet section
    assert locators("W")["catalogue.xlsx"] == ["Parts!A2:C4, Service!A2:B3"]  # one window over both sheets
    assert locators("C")["parts.csv"] == ["A2:C3"] and locators("C")["talk.srt"] == ["#t=1,66"]
    xlsx = json.loads(snap.loc["catalogue.xlsx", "spans"])
    assert [(s["sheet"], s["range"]) for s in xlsx] == [
        ("Parts", "A2:C2"),
        ("Parts", "A3:C3"),
        ("Parts", "A4:C4"),
        ("Service", "A2:B2"),
        ("Service", "A3:B3"),
    ]
    assert "part: gasket; price: 3" in snap.loc["catalogue.xlsx", "text"]  # empty cells are skipped
    assert json.loads(snap.loc["parts.csv", "spans"])[1]["range"] == "A3:C3"
    vtt = json.loads(snap.loc["talk.vtt", "spans"])
    assert [s["t"] for s in vtt] == [[1.0, 4.5], [5.0, 9.25]]
    assert SpanIndex(snap.loc["talk.vtt", "spans"]).locate(0, 10_000) == "#t=1,9.25"
    assert SpanIndex(snap.loc["talk.srt", "spans"]).locate(vtt[1]["start"], vtt[1]["start"] + 3) == "#t=62.5,66"
    assert describe("#t=62.5,66") == "1:02.5-1:06.0" and describe("#page=4") == "page 4"
    assert SpanIndex(snap.loc["guide.md", "spans"]).locate(0, 10) is None
    assert [column_letter(i) for i in (0, 25, 26, 701, 702)] == ["A", "Z", "AA", "ZZ", "AAA"]


def test_html_keeps_headings_and_text_and_drops_scripts_styles_and_navigation(mixed):
    _, snap = mixed
    text = snap.loc["page.html", "text"]
    assert text.startswith("# Pump FAQ\n\n## Noise\n\nA loud pump is often cavitating")
    assert "Check the inlet strainer." in text
    for dropped in ("tracking", "color: red", "Home", "Shop"):
        assert dropped not in text
    chunks = chunk_corpus(snap.reset_index(), STRATEGIES["E"])
    html = chunks[chunks["document_id"] == snap.loc["page.html", "document_id"]]
    assert set(html["section"]) == {"Noise"}


def test_an_extractor_that_crashes_fails_its_file_only(tmp_path, monkeypatch):
    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "odd.html").write_text("<p>odd</p>", encoding="utf-8")
    (documents / "fine.md").write_text("# Fine\n\nText.", encoding="utf-8")

    def crash(raw):
        raise IndexError("list index out of range")

    monkeypatch.setitem(EXTRACTORS, ".html", EXTRACTORS[".html"].__class__("html", "1", crash))
    snap = corpus.snapshot(documents).set_index("path")
    assert snap.loc["odd.html", "reason"] == "extractor_error" and "IndexError" in snap.loc["odd.html", "error"]
    assert snap.loc["fine.md", "status"] == "ok"


def test_fixing_a_file_and_snapshotting_again_retries_it(tmp_path):
    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "a.md").write_bytes(b"caf\xe9")
    assert corpus.snapshot(documents).loc[0, "reason"] == "undecodable"
    (documents / "a.md").write_text("# A\n\ncafé", encoding="utf-8")
    assert corpus.snapshot(documents).loc[0, "status"] == "ok"


def test_extractor_versions_are_stamped_and_bumping_one_changes_the_corpus_version(mixed, monkeypatch):
    documents, snap = mixed
    assert (snap.loc["handbook.pdf", ["extractor", "extractor_version"]] == ["pdf", EXTRACTORS[".pdf"].version]).all()
    chunks = chunk_corpus(snap.reset_index(), STRATEGIES["C"])
    assert (chunks.groupby("document_id")["extractor"].nunique() == 1).all()
    before = corpus.folder_hash(documents), corpus.corpus_hash(snap.reset_index())
    bumped = EXTRACTORS[".pdf"].__class__(EXTRACTORS[".pdf"].name, "99", EXTRACTORS[".pdf"].extract)
    monkeypatch.setitem(EXTRACTORS, ".pdf", bumped)
    after = corpus.folder_hash(documents), corpus.corpus_hash(corpus.snapshot(documents, MAX_BYTES))
    assert before[0] != after[0] and before[1] != after[1]


def test_access_lists_come_from_front_matter_or_a_sidecar(tmp_path):
    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "a.md").write_text("---\naccess: [team-a, admins]\n---\n# A\n\nSecret of team A.", encoding="utf-8")
    (documents / "b.pdf").write_bytes(GOOD["handbook.pdf"])
    (documents / "b.pdf.access").write_text("team-b\n", encoding="utf-8")
    (documents / "c.txt").write_text("Public text.", encoding="utf-8")
    snap = corpus.snapshot(documents).set_index("path")
    assert list(snap.index) == ["a.md", "b.pdf", "c.txt"]  # the sidecar is not a document
    assert snap.loc["a.md", "text"] == "# A\n\nSecret of team A."  # front matter is not indexed
    assert [json.loads(a) if isinstance(a, str) else None for a in snap["access"]] == [
        ["admins", "team-a"],
        ["team-b"],
        None,
    ]
    before = corpus.folder_hash(documents)
    (documents / "b.pdf.access").write_text("team-b\nteam-c\n", encoding="utf-8")
    assert corpus.folder_hash(documents) != before  # an access change is a corpus change
    assert pd.isna(snap.loc["c.txt", "access"])


def test_a_mixed_folder_materialises_and_answers_cite_page_cells_and_time(tmp_path):
    """Through Dagster: the good documents are indexed, every failure is explained, counts add up,
    and the sources an answer is built from carry the PDF page, the sheet range and the time span."""
    from conftest import ScriptedLM
    from dagster import AssetKey, instance_for_test

    from rag_assets.answering.answerer import Answerer, Generative
    from rag_assets.answering.citations import fragment_range
    from rag_assets.app.plan import materialization_steps
    from rag_assets.app.serving import Served
    from rag_assets.defs import build_definitions
    from rag_assets.defs.external_sources import record_source_versions
    from rag_assets.settings import Settings

    dataset = tmp_path / "dataset"
    write_mixed_folder(dataset / "documents")
    (dataset / "questions.jsonl").write_text(
        json.dumps(
            {
                "id": "q1",
                "phrasings": ["What must be done before the first start?"],
                "kind": "answerable",
                "needle": "Fill the casing with water before the first start.",
            }
        )
        + "\n"
    )
    settings = Settings(data_dir=tmp_path / "data", dataset=dataset, max_file_mb=MAX_BYTES / 2**20)
    defs = build_definitions(settings)
    job = defs.resolve_implicit_global_asset_job_def()
    with instance_for_test() as instance:
        record_source_versions(instance, defs)
        checks = {}
        for step in materialization_steps(defs, ["C"])[:3]:  # what `ask` serves from: sources, chunks, indexes
            result = job.execute_in_process(
                instance=instance, asset_selection=list(step.keys), partition_key=step.partition_key
            )
            checks |= {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
        assert checks == dict.fromkeys(
            [
                "document_ids_unique",
                "counts_add_up",
                "needles_unique_outside_headings",
                "offsets_slice_back",
                "chunk_ids_unique",
                "every_ok_document_chunked",
                "unit_norm_and_distance_identity",
                "single_model_identity",
            ],
            True,
        )
        meta = instance.get_latest_materialization_event(AssetKey("corpus_snapshot")).asset_materialization.metadata
        assert meta["documents_seen"].value == len(GOOD) + len(BAD) and meta["documents_ok"].value == len(GOOD)
        assert meta["failed_by_reason"].value == {
            "binary": 1,
            "corrupt": 2,
            "empty": 2,
            "encrypted": 1,
            "no_text_layer": 1,
            "too_large": 1,
            "undecodable": 1,
            "unknown_type": 1,
        }
        assert "page 3: no text layer; OCR needed" in meta["extraction_notes"].value["handbook.pdf"]
        chunked = instance.fetch_materializations(AssetKey("chunk_sets"), limit=1).records[0].asset_materialization
        assert set(chunked.metadata["chunks_per_document"].value) == set(GOOD)
        embedder = defs.resources["embedder"].get()
        index, chunks = Served(defs, instance, settings).load("C", embedder.identity)
    answerer = Answerer(index, chunks, embedder, Generative(ScriptedLM()), threshold=2.0)
    snap = corpus.snapshot(dataset / "documents", MAX_BYTES)
    documents = dict(zip(snap["document_id"], snap["text"]))
    expected = {
        "What must be done before the first start of the pump?": ("#page=2", "page 2"),
        "What is the price of the impeller?": ("Parts!A2:C4", "Parts!A2:C4"),
        "What do we replace today in the maintenance course?": ("#t=1,9.25", "0:01.0-0:09.2"),
    }
    for question, (locator, label) in expected.items():
        top = answerer.ask(question).sources[0]
        assert top.locator == locator and top.locator_label.lower().endswith(label.lower()), question
        assert documents[top.document_id][slice(*fragment_range(top.fragment))] == top.quote


def test_the_corpus_version_reads_only_files_whose_stat_changed(tmp_path, monkeypatch):
    documents = tmp_path / "documents"
    documents.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (documents / name).write_text(f"# {name}\n\nSome text.", encoding="utf-8")
    read = []
    real = storage.sha256_of
    monkeypatch.setattr(
        storage, "sha256_of", lambda files, prefix=b"": read.extend(f.name for f in files) or real(files)
    )
    first = corpus.folder_hash(documents)
    assert sorted(read) == ["a.md", "b.md", "c.md"]
    read.clear()
    assert corpus.folder_hash(documents) == first and read == []  # a tick on an unchanged folder: stat only
    (documents / "b.md").write_text("# b.md\n\nSome text!", encoding="utf-8")  # same size, new bytes
    changed = corpus.folder_hash(documents)
    assert read == ["b.md"] and changed != first
