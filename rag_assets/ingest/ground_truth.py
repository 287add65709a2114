"""Questions of the native format, validated against a corpus snapshot.

A needle is a short verbatim sentence of the corpus that answers its question. It must
occur exactly once in the corpus and never in a heading: a chunker that copies headings
into chunks would otherwise score hits for free. Document-level data sets (BEIR) give
graded `relevant` documents instead. A question that fails is dropped with its reason,
never silently.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import ahocorasick
import pandas as pd

from rag_assets.catalog import SAMPLE_ANSWERABLE
from rag_assets.ingest.corpus import headings

KINDS = ("answerable", "unanswerable", "out_of_domain")
GROUND_TRUTH_COLUMNS = [
    "query_id",
    "question_id",
    "phrasing",
    "query",
    "needle",
    "kind",
    "answers",
    "document_id",
    "needle_start",
    "relevant",
    "origin",
    "drafted_by",
]
ORIGINS = ("written", "drafted", "reviewed", "generic")  # reviewed: drafted, then kept in questions.jsonl
_DRAFTED_ID = re.compile(r"d-[0-9a-f]{12}")  # drafting.drafter.question_id
REJECT_COLUMNS = ["line", "question_id", "kind", "reason"]


@dataclass(frozen=True)
class Sample:
    """A fixed, seeded sample of questions per kind; None for a kind keeps all of it."""

    answerable: int | None = SAMPLE_ANSWERABLE
    unanswerable: int | None = 150
    out_of_domain: int | None = None
    seed: int = 13

    def size(self, kind: str) -> int | None:
        return getattr(self, kind)


FULL = Sample(None, None, None)


LINE = "_line"  # set by read_questions on each record: where it stands in the file


def read_questions(path: Path) -> tuple[list[dict], list[dict]]:
    """Parse questions.jsonl line by line. Returns (records, rejects): a line that is not UTF-8,
    not JSON or not an object is rejected with its line number and the rest goes on. A UTF-8
    byte-order mark is allowed. Each record carries its line number under LINE."""
    records, rejects = [], []

    def reject(number: int, reason: str) -> None:
        rejects.append({"line": number, "question_id": None, "kind": None, "reason": reason})

    for number, raw in enumerate(Path(path).read_bytes().split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            reject(number, f"not valid UTF-8 at byte {exc.start}: re-save the file as UTF-8")
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            reject(number, f"invalid JSON: {exc.msg}")
            continue
        if not isinstance(record, dict):
            reject(number, "line is not a JSON object")
            continue
        records.append({**record, LINE: number})
    return records, rejects


def _shape_error(record: dict, seen: set[str]) -> str | None:
    qid, kind, phrasings, needle = record.get("id"), record.get("kind"), record.get("phrasings"), record.get("needle")
    if not isinstance(qid, str) or not qid.strip():
        return "missing or empty `id`"
    if qid in seen:
        return "duplicate `id`"
    if kind not in KINDS:
        return f"`kind` must be one of {', '.join(KINDS)}, got {kind!r}"
    if not isinstance(phrasings, list) or not phrasings or not all(isinstance(p, str) and p.strip() for p in phrasings):
        return "`phrasings` must be a non-empty list of non-empty strings"
    relevant = record.get("relevant")
    if relevant is not None and not (
        isinstance(relevant, dict)
        and relevant
        and all(isinstance(g, int) and not isinstance(g, bool) for g in relevant.values())
    ):
        return "`relevant` must map document paths to integer grades"
    if relevant and kind == "answerable" and not any(g > 0 for g in relevant.values()):
        return "every judgement of its `relevant` documents is grade 0: nothing is relevant (trec_eval leaves it out)"
    if kind == "answerable" and not relevant and (not isinstance(needle, str) or not needle.strip()):
        return "answerable question without a `needle` (or document-level `relevant`)"
    if kind != "answerable" and (needle not in (None, "") or relevant):
        return f"{kind} questions must not carry a needle or relevant documents"
    answers = record.get("answers")
    if answers is not None and not (isinstance(answers, list) and all(isinstance(a, str) for a in answers)):
        return f"`answers` must be a list of strings, got {answers!r}"
    return None


class NeedleIndex:
    """The `ok` documents of a snapshot with every occurrence of the given needles, found in one
    pass over the corpus (an Aho-Corasick automaton): the cost grows with the corpus plus the
    matches, not with questions x corpus."""

    def __init__(self, documents: pd.DataFrame, needles: Iterable[str]):
        docs = documents[documents["status"] == "ok"]
        self.ids_by_path = dict(zip(docs["path"], docs["document_id"]))
        self.heading_spans = {d: headings(t) for d, t in zip(docs["document_id"], docs["text"])}
        heading_texts = {h.title for hs in self.heading_spans.values() for h in hs} | set(docs["title"])
        self.hits: dict[str, list[tuple[str, int]]] = {n: [] for n in needles if n}
        self.in_heading: set[str] = set()
        if not self.hits:
            return
        automaton = ahocorasick.Automaton()
        for needle in self.hits:
            automaton.add_word(needle, needle)
        automaton.make_automaton()
        for doc, text in zip(docs["document_id"], docs["text"]):
            for end, needle in automaton.iter(text):  # every occurrence, overlapping ones included
                self.hits[needle].append((doc, end - len(needle) + 1))
        for title in heading_texts:
            self.in_heading.update(needle for _, needle in automaton.iter(title))

    def locate(self, needle: str) -> tuple[str | None, tuple[str, int] | None]:
        """(reason the needle is unusable or None, (document_id, offset) of its one occurrence)."""
        hits = self.hits[needle]
        if not hits:
            return "needle not found verbatim in any document", None
        if len(hits) > 1:
            return f"needle occurs {len(hits)} times in the corpus; it must occur exactly once", None
        if needle in self.in_heading:
            return "needle is part of a title or section heading", None
        doc, at = hits[0]
        if any(h.start < at + len(needle) and at < h.end for h in self.heading_spans[doc]):
            return "needle lies inside a heading line", None
        return None, hits[0]


def _origin(record: dict, drafted: bool) -> tuple[str, str | None]:
    """(origin, drafted by) of a record: a line of questions.jsonl that says it was drafted was
    kept there by a person (reviewed); the drafter's own records are drafted. A line that still
    carries the export's `drafting` block or a drafted id is reviewed too, when its `origin` was
    removed: never passed off as written."""
    origin = record.get("origin") if isinstance(record.get("origin"), dict) else {}
    by = None
    if origin.get("kind") == "drafted":
        settings = origin.get("settings") if isinstance(origin.get("settings"), dict) else {}
        by = " | ".join(
            [f"{origin.get('model')}", f"prompts {origin.get('prompt')}"]
            + ([", ".join(f"{k} {v}" for k, v in sorted(settings.items()))] if settings else [])
        )
    if drafted:
        return "drafted", by
    if origin.get("kind") == "drafted":
        return "reviewed", by
    if not origin and (isinstance(record.get("drafting"), dict) or _DRAFTED_ID.fullmatch(str(record.get("id")))):
        return "reviewed", "a model (the reviewed export's origin field was removed: which model is not known)"
    return ("generic", None) if origin.get("kind") == "generic" else ("written", None)


def validate(records: list[dict], documents: pd.DataFrame, drafted: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check every question against the `ok` documents of a snapshot (`drafted`: records the
    drafter made, not lines of a questions file).

    Returns (ground truth, one row per phrasing; rejects, one row per dropped question)."""
    index = NeedleIndex(documents, (r["needle"] for r in records if isinstance(r.get("needle"), str)))
    rows, rejects, seen = [], [], set()
    for record in records:
        reason = _shape_error(record, seen)
        qid, kind = record.get("id"), record.get("kind")
        location, relevant = (None, None), None
        if reason is None and record.get("needle"):
            reason, found = index.locate(record["needle"])
            location = found or location
        if reason is None and record.get("relevant"):
            missing = [p for p in record["relevant"] if p not in index.ids_by_path]
            if missing:
                reason = f"{len(missing)} relevant documents are not in the corpus (e.g. {missing[0]!r})"
            else:
                relevant = json.dumps({index.ids_by_path[p]: g for p, g in sorted(record["relevant"].items())})
        if reason is not None:
            rejects.append(
                {
                    "line": record.get(LINE),
                    "question_id": qid if isinstance(qid, str) else None,
                    "kind": kind if isinstance(kind, str) else None,
                    "reason": reason,
                }
            )
            continue
        seen.add(qid)
        origin, drafted_by = _origin(record, drafted)
        for i, phrasing in enumerate(record["phrasings"]):
            rows.append(
                {
                    "query_id": f"{qid}#{i}",
                    "question_id": qid,
                    "phrasing": i,
                    "query": phrasing.strip(),
                    "needle": record.get("needle") or None,
                    "kind": kind,
                    "answers": list(record.get("answers") or []),
                    "document_id": location[0],
                    "needle_start": location[1],
                    "relevant": relevant,
                    "origin": origin,
                    "drafted_by": drafted_by,
                }
            )
    truth = pd.DataFrame(rows, columns=GROUND_TRUTH_COLUMNS).astype({"phrasing": "int64", "needle_start": "Int64"})
    return truth, pd.DataFrame(rejects, columns=REJECT_COLUMNS).astype({"line": "Int64"})


def needle_problems(truth: pd.DataFrame, documents: pd.DataFrame) -> list[dict]:
    """Re-test a ground-truth table against a snapshot: every answerable needle must still
    occur exactly once, outside headings, where the table says it does."""
    needles = truth[(truth["kind"] == "answerable") & truth["needle"].notna()]
    index = NeedleIndex(documents, needles["needle"])
    problems = []
    for q in needles.drop_duplicates("question_id").itertuples():
        reason, found = index.locate(q.needle)
        if reason is None and found != (q.document_id, q.needle_start):
            reason = f"needle found at {found}, table says ({q.document_id}, {q.needle_start})"
        if reason is not None:
            problems.append({"question_id": q.question_id, "reason": reason})
    return problems


def sample(truth: pd.DataFrame, spec: Sample) -> pd.DataFrame:
    """Keep a seeded subset of questions per kind (all phrasings of a kept question).

    Ranking by a hash of (seed, question id) makes the sample stable when questions are
    added or removed elsewhere in the file."""
    keep: set[str] = set()
    for kind in KINDS:
        ids = truth.loc[truth["kind"] == kind, "question_id"].unique().tolist()
        n = spec.size(kind)
        if n is not None:
            ids = sorted(ids, key=lambda q: hashlib.sha256(f"{spec.seed}:{q}".encode()).hexdigest())[:n]
        keep.update(ids)
    return truth[truth["question_id"].isin(keep)].reset_index(drop=True)


def ground_truth_hash(truth: pd.DataFrame) -> str:
    """Identity of a ground-truth table, for provenance next to every result."""
    payload = truth[["query_id", "query", "needle", "kind", "relevant", "origin"]].to_json(orient="records")
    return hashlib.sha256(payload.encode()).hexdigest()


def origin_label(truth: pd.DataFrame) -> str:
    """Where the questions came from, in words every report prints: figures from drafted
    questions are never passed off as figures from written ones."""
    if truth.empty:
        return "no questions"
    questions = truth.drop_duplicates("question_id")
    answerable = questions[questions["kind"] == "answerable"]
    counts = answerable["origin"].value_counts().to_dict()
    by = sorted(answerable["drafted_by"].dropna().unique())
    if set(counts) == {"written"}:
        label = "written"
    elif set(counts) == {"drafted"}:
        label = f"DRAFTED by {'; '.join(by)} (not written by people)"
    elif set(counts) == {"reviewed"}:
        label = f"drafted by {'; '.join(by)}, kept by a person in questions.jsonl"
    else:
        label = "mixed: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
    if (questions.loc[questions["kind"] != "answerable", "origin"] == "generic").any():
        label += "; out-of-domain questions: the generic set shipped with rag_assets"
    return label


def drafted_warning(origin: str | None) -> str | None:
    """The sentence every report leads with when its questions were not all written by people."""
    if origin in (None, "written", "no questions"):
        return None
    return (
        f"Questions: {origin}. These figures come from questions a model drafted from the corpus, not from "
        "people's questions; docs/drafted-questions.md measures how far such figures follow written ones. "
        "The judge that kept them is the drafting model, scoring as the compared rerank-llm does (the "
        "log-odds of yes): a rerank-llm figure on them shares its scorer with the filter."
    )


def origin_figures(origin: str | pd.DataFrame) -> dict:
    """Where a result's questions came from, first among its figures (a label or a ground truth)."""
    label = origin if isinstance(origin, str) else origin_label(origin)
    warning = drafted_warning(label)
    return {"questions": label, **({"drafted_questions_warning": warning} if warning else {})}
