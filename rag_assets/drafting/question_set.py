"""Which question set an evaluation uses: the written one, or one drafted from the corpus.

`auto` (the default) uses questions.jsonl when it has at least `min_written` valid answerable
questions, and drafts otherwise; `written` never drafts; `drafted` drafts even when a written
file exists (to compare the two). Written and drafted answerable questions are never mixed: a
drafted set takes from the written file only its unanswerable and out-of-domain questions, for
the refusal sweep (a drafted set has none of its own), and when the file has none, the small
generic out-of-domain set shipped here (`generic_out_of_domain.jsonl`). Every row keeps its
origin, and every report prints `ground_truth.origin_label`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from rag_assets.catalog import QUESTION_MODES
from rag_assets.ingest import ground_truth as gt
from rag_assets.report import Markdown, Outcome, table_markdown

MODES = QUESTION_MODES
GENERIC_OUT_OF_DOMAIN = Path(__file__).with_name("generic_out_of_domain.jsonl")


def written_records(path: Path) -> tuple[list[dict], list[dict]]:
    """(records, unreadable lines) of questions.jsonl; none when the file is absent."""
    return gt.read_questions(path) if path.is_file() else ([], [])


def answerable_count(records: list[dict], documents: pd.DataFrame) -> int:
    truth, _ = gt.validate(records, documents)
    return int(truth.loc[truth["kind"] == "answerable", "question_id"].nunique())


def drafts(mode: str, written_answerable: int, min_written: int) -> bool:
    if mode not in MODES:
        raise ValueError(f"questions must be one of {', '.join(MODES)}, got {mode!r}")
    return mode == "drafted" or (mode == "auto" and written_answerable < min_written)


def drafted_records(table: pd.DataFrame) -> list[dict]:
    """The kept questions of a drafted_questions table in the native format, each with its
    origin and what the filters said of every phrasing (kept or not), for a person to review."""
    records = []
    for qid, rows in table.groupby("question_id", sort=False):
        kept = rows[rows["kept"]]
        if kept.empty:
            continue
        first = rows.iloc[0]
        records.append(
            {
                "id": qid,
                "phrasings": kept["query"].tolist(),
                "needle": first["needle"],
                "kind": "answerable",
                "answers": [],
                "origin": {
                    "kind": "drafted",
                    "model": first["drafting_model"],
                    "prompt": first["prompts"],
                    "settings": json.loads(first["drafting_settings"]),
                },
                "drafting": {
                    "document": first["path"],
                    "language": first["language"],
                    "judge_margin": None if pd.isna(first["judge_margin"]) else round(float(first["judge_margin"]), 3),
                    "phrasings": [
                        {
                            "style": r.style,
                            "query": r.query,
                            "overlap": round(float(r.overlap), 3),
                            "verdict": r.verdict,
                            **({"detail": r.detail} if isinstance(r.detail, str) else {}),
                        }
                        for r in rows.itertuples()
                    ],
                },
            }
        )
    return records


def refusal_records(written: list[dict]) -> tuple[list[dict], str]:
    """(the unanswerable and out-of-domain questions a drafted set is evaluated with, where
    they come from)."""
    own = [r for r in written if r.get("kind") in ("unanswerable", "out_of_domain")]
    if own:
        return own, f"{len(own)} unanswerable and out-of-domain questions of the dataset's questions.jsonl"
    generic, _ = gt.read_questions(GENERIC_OUT_OF_DOMAIN)
    return generic, f"the {len(generic)} generic out-of-domain questions shipped with rag_assets (none in the dataset)"


def ground_truth(questions: Path, snapshot: pd.DataFrame, drafted: pd.DataFrame, spec: gt.Sample) -> Outcome:
    """The validated queries an evaluation uses (one row per phrasing), sampled by `spec`: from
    questions.jsonl or, when `drafted` holds a drafted set, from it (with the written file's
    refusal questions, or the generic ones); the rejected questions listed with their reasons,
    and the check that no needle occurs twice outside headings."""
    records, unreadable = written_records(questions)
    in_file, refusals, warnings = len(records) + len(unreadable), "written", []
    if len(drafted):
        others, refusals = refusal_records(records)
        kept_drafts, invalid_drafted = gt.validate(drafted_records(drafted), snapshot, drafted=True)
        rest, invalid_rest = gt.validate(others, snapshot)
        truth = pd.concat([kept_drafts, rest], ignore_index=True)
        invalid, unreadable = pd.concat([invalid_drafted, invalid_rest], ignore_index=True), []
        warnings.append(
            f"evaluating on DRAFTED questions ({kept_drafts['question_id'].nunique()}); the {in_file} lines of "
            f"questions.jsonl give only the refusal questions. Refusal questions: {refusals}"
        )
    else:
        truth, invalid = gt.validate(records, snapshot)
    rejects = pd.DataFrame(unreadable + invalid.to_dict("records"), columns=gt.REJECT_COLUMNS).sort_values(
        "line", kind="stable", ignore_index=True
    )
    if len(rejects):
        warnings.append(f"{len(rejects)} questions rejected; see the `rejected` metadata")
    kept = gt.sample(truth, spec)
    per_kind = kept.drop_duplicates("question_id")["kind"].value_counts().to_dict()
    problems = gt.needle_problems(kept, snapshot)
    figures = {
        "ground_truth_hash": gt.ground_truth_hash(kept),
        "questions": gt.origin_label(kept),
        "refusal_questions": refusals,
        "questions_in_file": in_file,
        "questions_valid": int(truth["question_id"].nunique()),
        "questions_rejected": len(rejects),
        "sample": {k: spec.size(k) for k in gt.KINDS} | {"seed": spec.seed},
        "questions_kept": {k: int(per_kind.get(k, 0)) for k in gt.KINDS},
        "queries": len(kept),
        "rejected": table_markdown(rejects, rows=len(rejects)) if len(rejects) else Markdown("none"),
    }
    check = (not problems, {"violations": len(problems), "examples": problems[:10]})
    return Outcome(
        kept, figures, {"needles_unique_outside_headings": check}, gt.ground_truth_hash(kept), warnings=warnings
    )
