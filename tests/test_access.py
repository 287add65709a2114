"""Who sees what: access lists fail closed, tenant names cannot reach the operator's view,
and BM25 shares exactly what the README says it shares."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from rag_assets.app.cli import main
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest.access import ALL_TENANTS, access_by_document, check_tenant
from rag_assets.retrieval.lexical import BM25Index
from rag_assets.retrieval.search import ChunkIndex

SECRET = "# Plan\n\nProject Falcon launches on 4 March."
RESTRICTED = {  # front matter that names team-a, written the ways people write it
    "trailing-space-fence.md": f"--- \naccess: [team-a]\n--- \n{SECRET}",
    "dots-terminator.md": f"---\naccess: [team-a]\n...\n{SECRET}",
    "comma-string.md": f"---\naccess: team-a\n---\n{SECRET}",
    "blank-line-first.md": f"\n---\naccess: [team-a]\n---\n{SECRET}",
}
UNREADABLE = {  # access meant but unreadable: indexed for nobody, with the reason
    "capitalised-key.md": f"---\nAccess: [team-a]\n---\n{SECRET}",
    "no-value.md": f"---\naccess:\n---\n{SECRET}",
    "never-closed.md": f"---\naccess: [team-a]\n{SECRET}",
    "bad-yaml.md": f"---\naccess: [team-a\n---\n{SECRET}",
    "star.md": f"---\naccess: ['*']\n---\n{SECRET}",
    "mapping.md": f"---\naccess: {{team: a}}\n---\n{SECRET}",
    "not-a-mapping.md": f"---\n- access\n- team-a\n---\n{SECRET}",
}


@pytest.fixture
def snapshot(tmp_path):
    documents = tmp_path / "documents"
    documents.mkdir()
    for name, text in {**RESTRICTED, **UNREADABLE}.items():
        (documents / name).write_text(text, encoding="utf-8")
    (documents / "nobody.md").write_text(f"---\naccess: []\n---\n{SECRET}", encoding="utf-8")
    (documents / "public.md").write_text(
        "---\ntitle: Handbook\n---\n# Handbook\n\nEvery project reports.", encoding="utf-8"
    )
    (documents / "rule.md").write_text("---\n\n# Notes\n\nA thematic break above, no front matter.", encoding="utf-8")
    (documents / "sidecar-star.md").write_text(SECRET, encoding="utf-8")
    (documents / "sidecar-star.md.access").write_text("team-a\n*\n", encoding="utf-8")
    (documents / "sidecar-empty.md").write_text(SECRET, encoding="utf-8")
    (documents / "sidecar-empty.md.access").write_text("", encoding="utf-8")
    return corpus.snapshot(documents).set_index("path")


def test_a_restricted_document_is_never_public_however_its_front_matter_is_written(snapshot):
    for name in RESTRICTED:
        row = snapshot.loc[name]
        assert row.status == "ok" and json.loads(row.access) == ["team-a"], name
        assert row.text == SECRET, name  # the front matter is read and kept out of the text
    for name in UNREADABLE:
        row = snapshot.loc[name]
        assert (row.status, row.reason) == ("failed", "bad_access_list"), name
        assert pd.isna(row.text) and "indexed for nobody until it is fixed" in row.error, name
    assert "not `access`" in snapshot.loc["capitalised-key.md", "error"]
    assert "has no value" in snapshot.loc["no-value.md", "error"]
    assert "never closed" in snapshot.loc["never-closed.md", "error"]
    assert "'*'" in snapshot.loc["star.md", "error"]
    assert (snapshot.loc["sidecar-star.md", "reason"], snapshot.loc["sidecar-star.md", "status"]) == (
        "bad_access_list",
        "failed",
    )
    assert pd.isna(snapshot.loc["public.md", "access"]) and snapshot.loc["public.md", "text"].startswith("# Handbook")
    assert pd.isna(snapshot.loc["rule.md", "access"]) and snapshot.loc["rule.md", "status"] == "ok"


def test_an_empty_access_list_means_nobody_but_the_operator(snapshot):
    frame = snapshot.reset_index()
    frame = frame[frame["status"] == "ok"]
    chunks = chunk_corpus(frame, STRATEGIES["C"])
    index = ChunkIndex(
        "C",
        chunks["chunk_id"].tolist(),
        chunks["text"].tolist(),
        np.zeros((len(chunks), 2)),
        BM25Index.build(chunks["text"].tolist()),
        [access_by_document(frame)[d] for d in chunks["document_id"]],
    )
    path_of = dict(zip(frame["document_id"], frame["path"]))
    seen_by = lambda tenant: {path_of[chunks["document_id"].iloc[i]] for i in index.visible_to(tenant)}  # noqa: E731
    for viewer in ("team-a", "team-b", None):
        assert "nobody.md" not in seen_by(viewer) and "sidecar-empty.md" not in seen_by(viewer)
    assert set(RESTRICTED) <= seen_by("team-a") and not set(RESTRICTED) & seen_by("team-b")
    assert index.visible_to(ALL_TENANTS) is None  # the operator sees every row


@pytest.mark.parametrize("name", ["*", "", "team a", "-team", "ünicode", "a" * 129, "x\n"])
def test_tenant_names_outside_the_documented_set_are_refused(name):
    with pytest.raises(ValueError, match="invalid tenant name"):
        check_tenant(name)
    index = ChunkIndex("C", ["c"], ["text"], np.zeros((1, 2)), BM25Index.build(["text"]), [frozenset({"team-a"})])
    with pytest.raises(ValueError, match="invalid tenant name"):
        index.visible_to(name)


def test_ask_refuses_the_star_tenant_before_reading_anything(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["ask", "--data-dir", str(tmp_path / "nothing"), "--tenant", "*", "When does Falcon launch?"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid tenant name '*'" in err and "--all-tenants" in err and "Traceback" not in err
    assert not (tmp_path / "nothing").exists()


def test_bm25_term_statistics_span_every_chunk_but_results_only_visible_ones():
    """What the README promises: a tenant never receives a chunk it may not see, and the BM25
    statistics (document frequency, average length, count) are those of the whole index."""
    texts = ["falcon launch plan", "falcon budget", "heron pump", "handbook for every team"]
    access = [frozenset({"team-b"}), frozenset({"team-b"}), frozenset({"team-a"}), None]
    index = ChunkIndex("C", ["b1", "b2", "a1", "p"], texts, np.zeros((4, 2)), BM25Index.build(texts), access)
    visible = index.visible_to("team-a")
    rows, scores = index.bm25.top_k("falcon heron handbook", 10, visible)
    assert set(rows.tolist()) <= set(visible.tolist()) and 0 not in rows and 1 not in rows
    shared = index.bm25.scores("heron")[2]
    alone = BM25Index.build([texts[i] for i in visible]).scores("heron")[0]
    assert shared != pytest.approx(alone)  # statistics include chunks team-a cannot see, as documented


def test_every_entry_of_the_folder_is_indexed_failed_or_skipped(tmp_path):
    dataset = tmp_path / "dataset"
    documents = dataset / "documents"
    (documents / "sub").mkdir(parents=True)
    (documents / ".git").mkdir()
    (documents / ".git" / "config").write_text("x")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nThe root password is hunter2.", encoding="utf-8")
    (dataset / "shared.md").write_text("# Shared\n\nA file of the dataset outside documents/.", encoding="utf-8")
    (documents / "good.md").write_text("# Good\n\nBody.", encoding="utf-8")
    (documents / ".draft.md").write_text("# Draft\n\nNot yet.", encoding="utf-8")
    (documents / "outside.md").symlink_to(secret)
    (documents / "shared.md").symlink_to(dataset / "shared.md")
    (documents / "alias.md").symlink_to(documents / "good.md")
    (documents / "dangling.md").symlink_to(tmp_path / "missing.md")
    (documents / "loop.md").symlink_to(documents / "loop.md")
    (documents / "folder-link").symlink_to(documents / "sub")
    (documents / "sub" / "inner.txt").write_text("Inner text.", encoding="utf-8")
    (documents / "orphan.md.access").write_text("team-a\n")
    (documents / "leak.md").write_text("# Leak\n\nBody.", encoding="utf-8")
    (documents / "leak.md.access").symlink_to(secret)
    os.mkfifo(documents / "pipe.md")

    listing = corpus.list_folder(documents)
    frame = corpus.snapshot_of(listing).set_index("path")
    outcome = {p: r.reason if r.status == "failed" else "ok" for p, r in frame.iterrows()}
    assert outcome == {
        "alias.md": "ok",
        "dangling.md": "broken_link",
        "good.md": "ok",
        "leak.md": "bad_access_list",
        "loop.md": "broken_link",
        "outside.md": "outside_dataset",
        "pipe.md": "special_file",
        "shared.md": "ok",
        "sub/inner.txt": "ok",
    }
    assert {s["path"]: s["why"].split(" (")[0].split(":")[0] for s in listing.skipped} == {
        ".draft.md": "hidden",
        ".git/": "hidden folder",
        "folder-link/": "symbolic link to a folder",
        "orphan.md.access": "access sidecar without its document",
    }
    assert "hunter2" not in " ".join(frame["text"].dropna()) and "hunter2" not in " ".join(frame["error"].dropna())
    assert frame.loc["alias.md", "text"] == frame.loc["good.md", "text"]
    top = {e.name for e in os.scandir(documents)}
    accounted = {p.split("/")[0] for p in frame.index} | {s["path"].rstrip("/") for s in listing.skipped}
    assert top == accounted | {"leak.md.access"}  # a sidecar is accounted for with its document


def test_a_fifo_sidecar_fails_its_document_without_blocking_the_snapshot_or_the_source_hash(tmp_path):
    """Opening a FIFO waits for a writer for ever: `run` (holding the lock) and `ask` (hashing
    the folder) would hang. Nothing here may open it; a watchdog thread fails the test instead."""
    import threading

    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "plan.md").write_text(SECRET, encoding="utf-8")
    os.mkfifo(documents / "plan.md.access")
    results = {}
    worker = threading.Thread(
        target=lambda: results.update(
            snapshot=corpus.snapshot(documents).set_index("path"), hash=corpus.folder_hash(documents)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    if worker.is_alive():
        with open(documents / "plan.md.access", "w"):  # release the reader, then fail
            pass
        pytest.fail("reading a FIFO sidecar blocked")
    row = results["snapshot"].loc["plan.md"]
    assert (row.status, row.reason) == ("failed", "bad_access_list") and "FIFO" in row.error
    os.unlink(documents / "plan.md.access")
    assert corpus.folder_hash(documents) != results["hash"]  # the sidecar's kind is part of the version


def test_a_name_too_long_for_its_sidecar_fails_that_document_alone(tmp_path):
    documents = tmp_path / "documents"
    documents.mkdir()
    long_name = "n" * 246 + ".md"  # 249 bytes: "<name>.access" is 256, over the limit
    (documents / long_name).write_text(SECRET, encoding="utf-8")
    (documents / "good.md").write_text("# Good\n\nBody.", encoding="utf-8")
    frame = corpus.snapshot(documents).set_index("path")
    assert (frame.loc[long_name, "status"], frame.loc[long_name, "reason"]) == ("failed", "name_too_long")
    assert frame.loc["good.md", "status"] == "ok"
    corpus.folder_hash(documents)  # the source's version is taken as well


def test_tenant_names_that_differ_only_by_case_are_reported(tmp_path):
    from rag_assets.ingest.access import names_differing_by_case

    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "one.md").write_text(f"---\naccess: [Team-A, ops]\n---\n{SECRET}", encoding="utf-8")
    (documents / "two.md").write_text(f"---\naccess: [team-a, ops]\n---\n{SECRET}", encoding="utf-8")
    frame = corpus.snapshot(documents)
    assert names_differing_by_case(frame) == [["Team-A", "team-a"]]
    index = ChunkIndex("C", ["c"], ["x"], np.zeros((1, 2)), BM25Index.build(["x"]), [frozenset({"Team-A"})])
    assert index.visible_to("team-a").tolist() == [] and index.visible_to("Team-A").tolist() == [0]
