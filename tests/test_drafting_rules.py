"""The drafting rules without a model: candidate needles, the sample, and every filter on a
crafted bad case (the failures peers' users report: preambles, duplicates, the wrong language,
copied needles)."""

import numpy as np
import pandas as pd
import pytest

from rag_assets.drafting import agreement, candidates, filters
from rag_assets.drafting.question_set import drafts, refusal_records
from rag_assets.ingest import corpus
from tests.conftest import write_dataset

MANUAL = (
    "# Pump manual\n\n"
    "## Installation\n\n"
    "The inlet valve must face north so that the water enters without turbulence. "
    "Mount the pump on a level concrete base that can carry its full weight.\n\n"
    "| Model | Flow | Head |\n|---|---|---|\n| P1 | 30 | 12 |\n\n"
    "    pump.start(speed=3); pump.wait(10); pump.stop();\n\n"
    "Too short here.\n\n"
    "Ratios 3.5 4.1 5.0 6.2 7.7 8.9 9.3 and 10.4 were measured.\n\n"
    "## Maintenance\n\n"
    "Replace the filter every 300 hours of operation, or sooner when the water is muddy. "
    "Check the seals every spring for cracks, leaks and any signs of wear.\n"
)
SHARED = "Check the seals every spring for cracks, leaks and any signs of wear."
FAQ = (
    "# FAQ\n\n## Noise\n\nThe pump is loud when the inlet pressure is too low for the impeller speed.\n\n"
    f"## Seals\n\n{SHARED}\n"
)


def _snapshot(tmp_path, docs):
    return corpus.snapshot(write_dataset(tmp_path, docs, questions=[]) / "documents")


def test_candidates_obey_the_needle_rules_and_say_what_they_dropped(tmp_path):
    snap = _snapshot(tmp_path, {"manual.md": MANUAL, "faq.md": FAQ})
    found, counts = candidates.candidates(snap, seed=13)
    needles = set(found["needle"])
    assert "The inlet valve must face north so that the water enters without turbulence." in needles
    assert SHARED not in needles  # found twice in the corpus: never a needle
    assert not any("|" in n or "pump.start" in n or "Pump manual" in n or "Ratios" in n for n in needles)
    assert (
        counts["not_unique"] == 2
        and counts["not_prose"] == 1
        and counts["too_short"] >= 1
        and counts["kept"] == len(found)
    )
    # the table and the code line, each dropped by one of the prose rules
    assert sum(counts.get(r, 0) for r in ("not_prose", "no_sentence_end", "too_short")) >= 3
    for row in found.itertuples():  # every candidate lies verbatim where it says
        text = snap.set_index("document_id").loc[row.document_id, "text"]
        assert text[row.start : row.start + len(row.needle)] == row.needle
    assert set(found["language"]) == {"en"}
    assert set(found.loc[found["path"] == "manual.md", "section"]) == {"Installation", "Maintenance"}


def test_the_sample_is_proportional_and_a_new_document_does_not_reshuffle_the_others(tmp_path):
    docs = {
        f"d{i}.md": f"# D{i}\n\n"
        + " ".join(
            f"Sentence number {j} of document {i} tells a different fact about topic {j * 7 + i}." for j in range(40)
        )
        for i in range(3)
    }
    docs["d0.md"] += " " + " ".join(
        f"Extra sentence {j} makes document zero twice as long as it was." for j in range(40)
    )
    snap = _snapshot(tmp_path / "a", docs)
    found, _ = candidates.candidates(snap, seed=13)
    first = candidates.sample(found, snap, 20)
    per_doc = first.groupby("path").size().to_dict()
    assert sum(per_doc.values()) == 20 and per_doc["d0.md"] > per_doc["d1.md"]
    assert candidates.sample(found, snap, 20).equals(first)  # deterministic
    docs["d3.md"] = "# D3\n\n" + " ".join(f"A new document says thing {j} about the pump today." for j in range(40))
    snap2 = _snapshot(tmp_path / "b", docs)
    found2, _ = candidates.candidates(snap2, seed=13)
    second = candidates.sample(found2, snap2, 20)
    assert (second["path"] == "d3.md").sum() == 3  # the new document takes its share of the text
    for path, group in first.groupby("path"):  # each old document keeps the head of its own ranking
        kept = set(second.loc[second["path"] == path, "needle"])
        ranking = candidates._by_section(found[found["path"] == path])["needle"].tolist()
        assert kept <= set(group["needle"]) and kept == set(ranking[: len(kept)]) and len(kept) >= 0.6 * len(group)
    assert candidates.sample(found, snap, 10_000).shape[0] == len(found)  # never more than there are


def test_filters_catch_what_peers_users_report():
    needle = "The inlet valve must face north so that the water enters without turbulence."

    def rule(question, duplicates=None, language="en"):
        return filters.verdict(question, needle, language, duplicates or filters.Duplicates())[0]

    assert filters.cleaned('Question: "Which way does the inlet valve point?"\nAnswer: north', "Question:") == (
        "Which way does the inlet valve point?"
    )
    assert rule("") == "not_a_question"
    assert rule("Sure, here are 10 questions about the valve?") == "not_a_question"  # llama_index #10997
    assert rule("The valve faces north.") == "not_a_question"  # an answer, not a question
    assert rule("What is the purpose of this sentence?") == "not_a_question"
    assert rule("In welche Richtung zeigt das Einlassventil der Pumpe?") == "wrong_language"  # ragas #744
    assert rule("Must the inlet valve face north so the water enters without turbulence?") == "copies_needle"
    assert filters.overlap("Which way should the valve point?", needle) < filters.OVERLAP_CAP
    seen = filters.Duplicates()
    assert rule("Which way should I point the valve?", seen) is None
    assert rule("Which way should I point the valve?", seen) == "duplicate"  # deepeval #1925
    assert filters.verdict("which way should I point the valve ?", needle, "en", seen)[1] == "duplicate"
    assert rule("Which way should I point the inlet valve of my pump?", seen) is None
    assert filters.verdict("Which way should I point the inlet valve of the pump?", needle, "en", seen)[1] == (
        "near duplicate"
    )


def test_written_and_drafted_never_mix_silently():
    assert drafts("auto", 0, 1) and not drafts("auto", 5, 1) and drafts("drafted", 5, 1)
    assert not drafts("written", 0, 1)
    own, where = refusal_records([{"id": "o", "kind": "out_of_domain"}, {"id": "a", "kind": "answerable"}])
    assert [r["id"] for r in own] == ["o"] and "questions.jsonl" in where
    generic, where = refusal_records([])
    assert len(generic) == 18 and all(r["origin"] == {"kind": "generic"} for r in generic) and "generic" in where


def test_agreement_measures_orderings_and_verdicts():
    def hits(ranks):  # question -> (strategy, retriever) -> hit rank
        return pd.DataFrame(
            [
                {"question_id": q, "strategy": s, "retriever": r, "hit_rank": rank}
                for q, row in ranks.items()
                for (s, r), rank in row.items()
            ]
        )

    base = {f"q{i}": {("A", "dense"): 1, ("A", "bm25"): 3 if i % 2 else 9, ("B", "dense"): None} for i in range(20)}
    same, reversed_ = (
        agreement.per_question(hits(base)),
        agreement.per_question(
            hits(
                {q: {("A", "dense"): None, ("A", "bm25"): 3 if int(q[1:]) % 2 else 9, ("B", "dense"): 1} for q in base}
            )
        ),
    )
    assert agreement.tau_with_interval(same, same, "recall", rounds=50)["tau"] == 1.0
    assert agreement.tau_with_interval(same, reversed_, "rr", rounds=50)["tau"] < 0
    table = pd.DataFrame(
        {"comparison_id": ["x", "y"], "k": [4, 4], "wins": [9, 1], "losses": [1, 1], "p_holm": [0.01, 1.0]}
    )
    flipped = table.assign(wins=[1, 1], losses=[9, 1])
    assert agreement.verdicts(table, table) == {
        "comparisons": 2,
        "same_verdict": 2,
        "same_significant": 1,
        "significant_in_one_only": 0,
        "flipped": 0,
    }
    assert agreement.verdicts(table, flipped)["flipped"] == 1


def test_subsets_show_what_the_question_count_alone_costs_and_the_judge_is_scored_on_people():
    rng = np.random.default_rng(3)
    configs = [("A", "dense"), ("A", "bm25"), ("B", "dense"), ("B", "bm25"), ("C", "hybrid")]
    chance = {c: 0.15 + 0.15 * i for i, c in enumerate(configs)}  # a clear ordering, noisy per question
    rows = [
        {
            "question_id": f"q{q}",
            "strategy": s,
            "retriever": r,
            "hit_rank": 1 if rng.random() < chance[(s, r)] else None,
        }
        for q in range(400)
        for s, r in configs
    ]
    full = agreement.per_question(pd.DataFrame(rows))
    everything = agreement.subsample_tau(full, full, len(full), "recall", rounds=5)
    assert (
        everything["tau_median"] == pytest.approx(1.0) and everything["questions"] == 400
    )  # all of them: the same ordering
    few, many = (agreement.subsample_tau(full, full, n, "recall", rounds=100) for n in (8, 200))
    assert few["tau_median"] < many["tau_median"] and few["ci_low"] < many["ci_low"]  # fewer questions, less agreement
    split = agreement.disjoint_tau(full, 100, "recall", rounds=50)  # 100 against the other 300, never themselves
    assert split["questions"] + split["against"] == 400 and split["tau_median"] <= everything["tau_median"]
    assert list(agreement.close(full)["recall"].columns) == ["C/hybrid"]  # A and B are not close configurations
    judged = agreement.judge_on_written([2.0, -1.0, 0.5, 3.0], [0.9, 0.1, 0.5, 0.95])
    assert judged["kept"] == 3 and judged["kept_share"] == 0.75 and judged["ci_low"] < 0.75 < judged["ci_high"]
    assert judged["spearman_margin_overlap"] == pytest.approx(1.0)  # this judge follows word overlap exactly
