import json

from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt


def _snapshot(tiny_dataset):
    return corpus.snapshot(tiny_dataset / "documents")


def test_validation_keeps_good_questions_and_names_every_rejection(tiny_dataset):
    records, unreadable = gt.read_questions(tiny_dataset / "questions.jsonl")
    truth, rejects = gt.validate(records, _snapshot(tiny_dataset))
    assert unreadable == []
    assert sorted(truth["question_id"].unique()) == ["q-colour", "q-filter", "q-passport", "q-valve", "q-warranty"]
    assert truth.loc[truth["question_id"] == "q-valve", "query_id"].tolist() == ["q-valve#0", "q-valve#1"]
    reasons = dict(zip(rejects["question_id"], rejects["reason"]))
    assert reasons == {
        "q-heading": "needle is part of a title or section heading",
        "q-missing": "needle not found verbatim in any document",
    }
    valve = truth[truth["question_id"] == "q-valve"].iloc[0]
    text = _snapshot(tiny_dataset).set_index("document_id").loc[valve.document_id, "text"]
    assert text[valve.needle_start : valve.needle_start + len(valve.needle)] == valve.needle


def test_shape_errors_duplicates_and_repeated_needles_are_rejected(tiny_dataset, tmp_path):
    lines = [
        json.dumps({"id": "a", "phrasings": ["x"], "needle": "the", "kind": "answerable"}),
        json.dumps({"id": "b", "phrasings": [], "needle": None, "kind": "unanswerable"}),
        json.dumps({"id": "c", "phrasings": ["x"], "needle": None, "kind": "maybe"}),
        json.dumps({"id": "d", "phrasings": ["x"], "needle": "Pump", "kind": "out_of_domain"}),
        json.dumps({"id": "e", "phrasings": ["x"], "kind": "answerable"}),
        json.dumps({"id": "f", "phrasings": ["x"], "needle": None, "kind": "unanswerable"}),
        json.dumps({"id": "f", "phrasings": ["y"], "needle": None, "kind": "unanswerable"}),
        "{not json",
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records, unreadable = gt.read_questions(path)
    assert unreadable[0]["line"] == 8 and "invalid JSON" in unreadable[0]["reason"]
    truth, rejects = gt.validate(records, _snapshot(tiny_dataset))
    reasons = list(zip(rejects["question_id"], rejects["reason"]))
    assert reasons[0][0] == "a" and "it must occur exactly once" in reasons[0][1]
    assert reasons[1] == ("b", "`phrasings` must be a non-empty list of non-empty strings")
    assert reasons[2][0] == "c" and "`kind` must be one of" in reasons[2][1]
    assert reasons[3] == ("d", "out_of_domain questions must not carry a needle or relevant documents")
    assert reasons[4] == ("e", "answerable question without a `needle` (or document-level `relevant`)")
    assert reasons[5] == ("f", "duplicate `id`")
    assert rejects["line"].tolist() == [1, 2, 3, 4, 5, 7]  # every rejection says where it stands
    assert truth["question_id"].tolist() == ["f"]


def test_needle_inside_a_heading_line_is_rejected(tmp_path):
    docs = tmp_path / "documents"
    docs.mkdir()
    (docs / "a.md").write_text("# Title\n\n## Setup and care of the pump\n\nBody text.", encoding="utf-8")
    snap = corpus.snapshot(docs)
    index = gt.NeedleIndex(snap, ["Setup and care", "pump\n\nBody", "Body text."])
    assert index.locate("Setup and care")[0] == "needle is part of a title or section heading"
    assert index.locate("pump\n\nBody")[0] == "needle lies inside a heading line"
    assert index.locate("Body text.")[0] is None


def test_one_pass_finds_every_occurrence_a_scan_per_needle_finds(tmp_path):
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    needles = [r["needle"] for r in records if r.get("needle")]
    needles += ["oxygen", "the", "e", "  ", "no such phrase anywhere", needles[0][:-1]]  # many hits, overlaps, none
    index = gt.NeedleIndex(snap, needles)

    def scan(needle):  # the old way: every document, once per needle, overlapping occurrences included
        hits = []
        for doc, text in zip(snap["document_id"], snap["text"]):
            at = text.find(needle)
            while at != -1:
                hits.append((doc, at))
                at = text.find(needle, at + 1)
        return sorted(hits)

    assert len(needles) > 400
    for needle in needles:
        assert sorted(index.hits[needle]) == scan(needle), needle
    assert len(index.hits["e"]) > 10_000 and index.locate("no such phrase anywhere")[0].startswith("needle not found")


def test_needle_problems_flags_a_table_that_no_longer_matches_the_corpus(tiny_dataset):
    snap = _snapshot(tiny_dataset)
    records, _ = gt.read_questions(tiny_dataset / "questions.jsonl")
    truth, _ = gt.validate(records, snap)
    assert gt.needle_problems(truth, snap) == []
    edited = snap.copy()
    edited["text"] = edited["text"].str.replace("must face north", "must face south", regex=False)
    problems = gt.needle_problems(truth, edited)
    assert problems == [{"question_id": "q-valve", "reason": "needle not found verbatim in any document"}]


def test_sample_is_seeded_stable_and_keeps_all_phrasings(tiny_dataset):
    records, _ = gt.read_questions(tiny_dataset / "questions.jsonl")
    truth, _ = gt.validate(records, _snapshot(tiny_dataset))
    spec = gt.Sample(answerable=2, unanswerable=1, out_of_domain=None, seed=1)
    first, again = gt.sample(truth, spec), gt.sample(truth, spec)
    assert first.equals(again)
    kinds = first.drop_duplicates("question_id")["kind"].value_counts().to_dict()
    assert kinds == {"answerable": 2, "unanswerable": 1, "out_of_domain": 1}
    for qid in first["question_id"].unique():
        assert (first["question_id"] == qid).sum() == (truth["question_id"] == qid).sum()
    # removing an unsampled question does not change which others are sampled
    dropped = next(
        q
        for q in truth.loc[truth["kind"] == "answerable", "question_id"].unique()
        if q not in set(first["question_id"])
    )
    assert gt.sample(truth[truth["question_id"] != dropped], spec).equals(first)
    assert len(gt.sample(truth, gt.FULL)) == len(truth)
    assert gt.ground_truth_hash(first) == gt.ground_truth_hash(again) != gt.ground_truth_hash(truth)


def test_the_bulgarian_fixture_is_valid_whole_in_cyrillic():
    """Every question of the Bulgarian chapter's set survives validation (verbatim needle, found once,
    never a heading) with its two phrasings, and the needle offsets slice Cyrillic text exactly."""
    root = BUNDLED_DATASET.parent / "bulgarian_chapter"
    snap = corpus.snapshot(root / "documents")
    records, unreadable = gt.read_questions(root / "questions.jsonl")
    truth, rejects = gt.validate(records, snap)
    assert unreadable == [] and rejects.empty and truth["question_id"].nunique() == len(records) == 56
    answerable = truth[truth["kind"] == "answerable"]
    assert answerable["question_id"].nunique() == 48 and (answerable.groupby("question_id").size() == 2).all()
    text = snap["text"].iloc[0]
    for r in answerable.drop_duplicates("question_id").itertuples():
        assert text[r.needle_start : r.needle_start + len(r.needle)] == r.needle
        assert all(a in r.needle for a in r.answers)
