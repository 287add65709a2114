import filecmp
import json
from pathlib import Path

import pytest

from rag_assets.app.cli import main
from rag_assets.catalog import BUNDLED_DATASET, PROJECT_ROOT
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt

SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Pump_history",
            "paragraphs": [
                {
                    "context": (
                        "The first pumps were built in Egypt. Dr. Smith improved them in 1850. "
                        "They are still used today."
                    ),
                    "qas": [
                        {
                            "id": "s1",
                            "question": "Where were the first pumps built?",
                            "is_impossible": False,
                            "answers": [
                                {"text": "Egypt", "answer_start": 30},
                                {"text": "in Egypt", "answer_start": 27},
                            ],
                        },
                        {
                            "id": "s2",
                            "question": "When did Smith improve them?",
                            "is_impossible": False,
                            "answers": [{"text": "1850", "answer_start": 64}],
                        },
                        {
                            "id": "s3",
                            "question": "Who broke the pumps?",
                            "is_impossible": True,
                            "answers": [],
                            "plausible_answers": [{"text": "Smith", "answer_start": 41}],
                        },
                    ],
                }
            ],
        }
    ],
}


def test_import_writes_documents_needles_and_unanswerables(tmp_path):
    src = tmp_path / "squad.json"
    src.write_text(json.dumps(SQUAD), encoding="utf-8")
    out = tmp_path / "ds"
    assert main(["import", "squad", str(src), "--out", str(out)]) == 0
    assert (out / "documents" / "pump-history.md").read_text(encoding="utf-8") == (
        "# Pump history\n\n" + SQUAD["data"][0]["paragraphs"][0]["context"] + "\n"
    )
    records, _ = gt.read_questions(out / "questions.jsonl")
    by_id = {r["id"]: r for r in records}
    assert by_id["s1"]["needle"] == "The first pumps were built in Egypt."
    assert by_id["s1"]["answers"] == ["Egypt", "in Egypt"]
    # "Dr." does not end a sentence: the needle is the whole sentence holding the answer
    assert by_id["s2"]["needle"] == "Dr. Smith improved them in 1850."
    assert by_id["s3"] == {
        "id": "s3",
        "phrasings": ["Who broke the pumps?"],
        "needle": None,
        "kind": "unanswerable",
        "answers": [],
        gt.LINE: 3,  # where it stands in the file, for rejections
    }
    truth, rejects = gt.validate(records, corpus.snapshot(out / "documents"))
    assert rejects.empty and truth["question_id"].nunique() == 3


def _refused(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_import_rejects_a_misplaced_answer_and_leaves_nothing_behind(tmp_path, capsys):
    bad = json.loads(json.dumps(SQUAD))
    bad["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 3
    src = tmp_path / "squad.json"
    src.write_text(json.dumps(bad), encoding="utf-8")
    assert "is not at offset 3" in _refused(capsys, ["import", "squad", str(src), "--out", str(tmp_path / "ds")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["squad.json"]  # no half-written dataset, no staging folder


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, "does not exist"),
        ('{"data": 5}', "no top-level `data` list"),
        ("[1, 2]", "no top-level `data` list"),
        ('{"data": [{"title": "T"}]}', "not SQuAD 2.0 JSON"),
        ("{not json", "is not JSON"),
    ],
)
def test_import_squad_refuses_what_is_not_squad_in_one_line(tmp_path, capsys, content, expected):
    src = tmp_path / "squad.json"
    if content is not None:
        src.write_text(content, encoding="utf-8")
    assert expected in _refused(capsys, ["import", "squad", str(src), "--out", str(tmp_path / "ds")])
    assert not (tmp_path / "ds").exists()


def test_import_refuses_an_out_folder_that_holds_something(tmp_path, capsys):
    src = tmp_path / "squad.json"
    src.write_text(json.dumps(SQUAD), encoding="utf-8")
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "mine.txt").write_text("keep me")
    assert "not an empty folder" in _refused(capsys, ["import", "squad", str(src), "--out", str(tmp_path / "ds")])
    assert [p.name for p in (tmp_path / "ds").iterdir()] == ["mine.txt"]


OUR_OWN = "internal"  # the bundled corpus's folder of documents written for this project, not imported
SHARED_SAMPLE = PROJECT_ROOT.parent / "shared" / "datasets" / "squad-v2-dev-sample" / "squad-v2-dev-sample.json"


@pytest.mark.skipif(not SHARED_SAMPLE.exists(), reason="the shared SQuAD sample is not beside this checkout")
def test_bundled_corpus_is_exactly_what_the_importer_builds(tmp_path):
    out = tmp_path / "rebuilt"
    main(
        [
            "import",
            "squad",
            str(SHARED_SAMPLE),
            "--out",
            str(out),
            "--extra-questions",
            str(PROJECT_ROOT / "data" / "sources" / "squad_out_of_domain.jsonl"),
        ]
    )
    cmp = filecmp.dircmp(out / "documents", BUNDLED_DATASET / "documents")
    assert not cmp.left_only and cmp.right_only == [OUR_OWN]  # our own text beside SQuAD's (LICENSE.md)
    assert all(
        filecmp.cmp(out / "documents" / f, BUNDLED_DATASET / "documents" / f, shallow=False) for f in cmp.common_files
    )
    assert filecmp.cmp(out / "questions.jsonl", BUNDLED_DATASET / "questions.jsonl", shallow=False)


def test_bundled_corpus_meets_the_ground_truth_floor():
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    assert (snap["status"] == "ok").all() and len(snap) == 11  # SQuAD's 10 articles and our Project Falcon
    records, unreadable = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth, _ = gt.validate(records, snap)
    kept = gt.sample(truth, gt.Sample()).drop_duplicates("question_id")["kind"].value_counts()
    assert not unreadable
    assert kept["answerable"] >= 300 and kept["unanswerable"] >= 100 and kept["out_of_domain"] >= 30
    assert (Path(BUNDLED_DATASET) / "LICENSE.md").exists()
