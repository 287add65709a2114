"""A folder with only documents/ is a dataset: the graph drafts its questions with the packaged
generator, evaluates on them with every check passing, marks every report as drafted, drafts
nothing twice, and a person's review of the export comes back marked as reviewed."""

import contextlib
import io
import json

import pandas as pd
import pytest

from rag_assets.answering.output_cache import OutputCache
from rag_assets.app.cli import main
from rag_assets.defs.resources import GeneratorResource
from rag_assets.drafting import candidates
from rag_assets.drafting.drafter import Drafter
from rag_assets.layout import DataDir
from tests.conftest import TINY_DOCS, write_dataset

DOCS = {
    **TINY_DOCS,
    "valves.md": (
        "# Valves\n\n## Types\n\n"
        "A ball valve closes with a quarter turn of its lever and seals tightly under high pressure.\n\n"
        "## Care\n\n"
        "Grease the valve stem once a year with food-safe silicone to keep the handle turning freely.\n"
    ),
}


@pytest.fixture(scope="module")
def drafted(tmp_path_factory):
    """`rag-assets run` on a folder of documents and nothing else."""
    root = tmp_path_factory.mktemp("bare")
    dataset = write_dataset(root / "dataset", DOCS, questions=[])
    (dataset / "questions.jsonl").unlink()
    data_dir = root / "data"
    args = ["run", "--dataset", str(dataset), "--data-dir", str(data_dir), "--no-llm", "--strategies", "A,W"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*args, "--draft-questions", "4"]) == 0  # every asset check passed
    return dataset, DataDir(data_dir), args, printed.getvalue()


def test_a_bare_folder_is_evaluated_on_drafted_questions_marked_everywhere(drafted):
    dataset, layout, _, printed = drafted
    table = layout.read_table("drafted_questions")
    assert table["question_id"].nunique() == 4 and set(table["style"]) == {"document", "ticket"}
    assert set(table["verdict"]) <= {
        "kept",
        "not_a_question",
        "wrong_language",
        "copies_needle",
        "duplicate",
        "not_answered",
    }
    assert table["drafting_model"].str.startswith("HuggingFaceTB/SmolLM2-135M-Instruct").all()
    kept = table[table["kept"]]
    assert len(kept) and (kept["overlap"] <= 0.8).all() and kept["query"].str.endswith("?").all()
    truth = layout.read_table("ground_truth")
    answerable = truth[truth["kind"] == "answerable"]
    assert set(answerable["question_id"]) == set(kept["question_id"]) and set(answerable["origin"]) == {"drafted"}
    assert set(truth.loc[truth["kind"] == "out_of_domain", "origin"]) == {"generic"}  # none of its own
    tables = layout.read_table("evaluation_tables")
    assert tables["question_origin"].str.startswith("DRAFTED by HuggingFaceTB/SmolLM2-135M-Instruct").all()
    assert tables["question_origin"].str.contains("needles 4, overlap_cap 0.8, seed 13").all()  # the settings too
    report = (layout.reports / "significance_report.md").read_text()
    assert "> **Questions: DRAFTED by" in report.split("## Headlines")[0]
    assert "DRAFTED" in (layout.reports / "regression_report.md").read_text()
    out = layout.root / "drafted.jsonl"
    assert main(["questions", "export", "--data-dir", str(layout.root), "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"] for r in lines} == set(kept["question_id"])
    assert all(r["origin"]["kind"] == "drafted" and len(r["drafting"]["phrasings"]) == 2 for r in lines)
    assert "questions: DRAFTED by" in printed.splitlines()[-3] and "questions export" in printed.splitlines()[-1]


def test_drafting_again_generates_nothing_and_gives_the_same_ids(drafted):
    _, layout, _, _ = drafted
    table = layout.read_table("drafted_questions")
    lm = GeneratorResource().get()  # the run's own generator, loaded in this process
    drafter = Drafter(lm, OutputCache(layout.draft_cache, lm.identity))
    needles = table[table["phrasing"] == 0].rename(columns={"needle_start": "start"})
    settings = json.loads(table["drafting_settings"].iloc[0])
    assert settings == {"needles": 4, "seed": 13, "overlap_cap": 0.8}  # what the run drew its sample with
    found, _ = candidates.candidates(layout.read_table("corpus_snapshot"), settings["seed"])  # the decoys' pool
    columns = ["document_id", "path", "section", "start", "needle", "language"]
    again = drafter.draft(needles[columns], settings, pool=found)
    assert drafter.stats.generated == 0 and drafter.stats.judged == 0 and drafter.stats.generated_from_cache > 0
    pd.testing.assert_frame_equal(again, table.reset_index(drop=True), check_dtype=False)


def test_an_edited_document_is_drafted_again_alone(drafted):
    """One word of valves.md changed (same length, so no document's share moves): only needles
    of that document are new, only they are written again, and every other document keeps its
    questions word for word."""
    _, layout, _, _ = drafted
    table = layout.read_table("drafted_questions")
    settings = json.loads(table["drafting_settings"].iloc[0])
    snapshot = layout.read_table("corpus_snapshot")
    valves = snapshot["path"] == "valves.md"
    snapshot.loc[valves, "text"] = snapshot.loc[valves, "text"].str.replace("turning freely", "turning easily")
    found, _ = candidates.candidates(snapshot, settings["seed"])
    lm = GeneratorResource().get()
    drafter = Drafter(lm, OutputCache(layout.draft_cache, lm.identity))
    again = drafter.draft(candidates.sample(found, snapshot, settings["needles"]), settings, pool=found)
    new = again[~again["needle"].isin(table["needle"])]
    assert len(new) and set(new["path"]) == {"valves.md"}  # the edit moved a needle, and only there
    assert drafter.stats.generated <= 2 * new["question_id"].nunique()  # the rest came from the cache
    others = ["question_id", "phrasing", "reply", "query", "verdict", "kept", "judge_margin"]  # verdicts too
    before, after = (t[t["path"] != "valves.md"][others].reset_index(drop=True) for t in (table, again))
    pd.testing.assert_frame_equal(before, after)


def test_a_new_document_changes_no_verdict_of_the_others(drafted):
    """A document added: the others' shares shrink, so fewer of their needles may be drawn, but
    each question still drawn keeps its verdict and its judge's margin (duplicates are looked for
    within a document, and decoys are the document's own sentences)."""
    _, layout, _, _ = drafted
    table = layout.read_table("drafted_questions")
    settings = json.loads(table["drafting_settings"].iloc[0])
    snapshot = layout.read_table("corpus_snapshot")
    added = snapshot.iloc[[0]].assign(
        document_id="d-added",
        path="gaskets.md",
        text="# Gaskets\n\nA rubber gasket between the flanges stops the pump from leaking at the joint.\n\n"
        "Replace a gasket that has hardened or cracked before the pump is started again.\n",
    )
    grown = pd.concat([snapshot, added], ignore_index=True)
    found, _ = candidates.candidates(grown, settings["seed"])
    lm = GeneratorResource().get()
    drafter = Drafter(lm, OutputCache(layout.draft_cache, lm.identity))
    again = drafter.draft(candidates.sample(found, grown, settings["needles"]), settings, pool=found)
    kept = ["question_id", "phrasing", "query", "verdict", "kept", "judge_margin"]
    both = table[kept].merge(again[kept], on=["question_id", "phrasing"], suffixes=("", "_now"))
    assert len(both) >= 2  # some questions of the untouched documents are still drawn
    for column in ("query", "verdict", "kept", "judge_margin"):
        pd.testing.assert_series_equal(both[column], both[f"{column}_now"], check_names=False)


def test_the_judge_drops_a_question_its_needle_does_not_answer(drafted):
    _, layout, _, _ = drafted
    lm = GeneratorResource().get()
    drafter = Drafter(lm, OutputCache(layout.root / "judge-cache", lm.identity))
    row = {
        "document_id": "d",
        "path": "p.md",
        "section": "",
        "language": "en",
        "phrasing": 0,
        "style": "document",
        "reply": "",
        "overlap": 0.0,
        "verdict": "kept",
        "detail": None,
        "judge_margin": None,
        "kept": True,
    }
    table = pd.DataFrame(
        [
            {
                **row,
                "question_id": "q1",
                "needle": "The Normans gave their name to Normandy, a region in France.",
                "needle_start": 0,
                "query": "What is the atomic number of oxygen?",
            },
            {
                **row,
                "question_id": "q2",
                "needle": "Oxygen is a chemical element with symbol O and atomic number 8.",
                "needle_start": 90,
                "query": "What region did the Normans give their name to?",
            },
        ]
    )
    alone = drafter._judged(table.iloc[:1].copy(), None)  # its document has no other sentence: no decoy
    assert alone["kept"].all() and alone["judge_margin"].isna().all() and "no other sentence" in alone["detail"].iloc[0]
    assert drafter.stats.judged == 0
    judged = drafter._judged(table, None)
    assert list(judged["verdict"]) == ["not_answered", "not_answered"]  # each question's decoy answers it
    assert (judged["judge_margin"] < 0).all() and "judge margin" in judged["detail"].iloc[0]
    assert drafter.stats.judged == 4  # each question with its needle and with its decoy


def test_a_reviewed_export_is_evaluated_as_drafted_and_reviewed(drafted):
    dataset, layout, args, _ = drafted
    exported = layout.root / "drafted.jsonl"
    if not exported.exists():
        assert main(["questions", "export", "--data-dir", str(layout.root), "--out", str(exported)]) == 0
    lines = exported.read_text().splitlines()
    stripped = {k: v for k, v in json.loads(lines[0]).items() if k != "origin"}  # and removed one's origin field
    kept_lines = [json.dumps(stripped), *lines[1:-1]]
    (dataset / "questions.jsonl").write_text("\n".join(kept_lines) + "\n")  # the person deleted one
    assert main(args) == 0
    truth = layout.read_table("ground_truth")
    answerable = truth[truth["kind"] == "answerable"]
    assert answerable["question_id"].nunique() == len(lines) - 1 and set(answerable["origin"]) == {"reviewed"}
    unknown = answerable.loc[answerable["question_id"] == stripped["id"], "drafted_by"]
    assert unknown.str.contains("origin field was removed").all()  # still reviewed, never passed off as written
    assert layout.read_table("drafted_questions").empty  # a written (reviewed) file: nothing drafted
    origin = layout.read_table("evaluation_tables")["question_origin"].iloc[0]
    assert origin.startswith("drafted by HuggingFaceTB") and "kept by a person" in origin
    assert "kept by a person" in (layout.reports / "significance_report.md").read_text()
