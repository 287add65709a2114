"""Nightly regression: the newest evaluation against the previous one, question by question.

The two are compared on the questions both evaluated, whatever changed between them: a
changed corpus, model, chunker, question set or BM25 setting is exactly when quality can move,
so it is named beside each verdict rather than used as a reason to compare nothing. Only when
the two share no question is nothing compared, and the report says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from rag_assets import stats
from rag_assets.evaluation import history
from rag_assets.evaluation.comparisons import compare_paired, system_hits
from rag_assets.ingest.ground_truth import drafted_warning
from rag_assets.report import Report

REGRESSION_COLUMNS = [
    "strategy",
    "retriever",
    "k",
    "wins",
    "losses",
    "recall_previous",
    "recall_current",
    "p_value",
    "p_holm",
    "n_questions",
    "significant_loss",
    "changed",
]


@dataclass(frozen=True)
class Regression:
    compared: bool
    changes: list[str]  # what changed between the two evaluations, in words
    table: pd.DataFrame
    why_not: str | None = None  # why nothing was compared

    @property
    def losses(self) -> pd.DataFrame:
        return self.table[self.table["significant_loss"]]


def _counted(parts: list[tuple[int, str]], noun: str) -> str:
    """[(1, "added"), (0, "edited"), (2, "removed")] -> "1 document added, 2 removed" ("" if all 0)."""
    said = [(n, how) for n, how in parts if n]
    return ", ".join(
        f"{n} {noun}{'' if n == 1 else 's'} {how}" if i == 0 else f"{n} {how}" for i, (n, how) in enumerate(said)
    )


def corpus_change(current: pd.DataFrame | None, previous: pd.DataFrame | None) -> str:
    """'2 documents added, 1 edited' from the two document manifests (document_id, sha256)."""
    if current is None or previous is None:
        return "changed"
    now, before = (
        dict(zip(current["document_id"], current["sha256"])),
        dict(zip(previous["document_id"], previous["sha256"])),
    )
    parts = [
        (len(now.keys() - before.keys()), "added"),
        (sum(now[d] != before[d] for d in now.keys() & before.keys()), "edited"),
        (len(before.keys() - now.keys()), "removed"),
    ]
    return _counted(parts, "document") or "changed (access lists or extractors)"


def _chunker_changes(current: str | None, previous: str | None) -> dict[str, str]:
    """strategy -> how its chunker settings changed."""
    now, before = json.loads(current or "{}") or {}, json.loads(previous or "{}") or {}
    return {s: f"chunker of {s} changed" for s in sorted(now.keys() | before.keys()) if now.get(s) != before.get(s)}


def describe_changes(
    current: dict,
    previous: dict,
    current_hits: pd.DataFrame,
    previous_hits: pd.DataFrame,
    current_documents: pd.DataFrame | None,
    previous_documents: pd.DataFrame | None,
) -> list[str]:
    """What changed between two evaluations, one phrase per input that changed (the chunker per strategy)."""
    out = []
    if current.get("corpus_hash") != previous.get("corpus_hash"):
        out.append("corpus: " + corpus_change(current_documents, previous_documents))
    if current.get("model_id") != previous.get("model_id"):
        out.append(f"model: {previous.get('model_id')} -> {current.get('model_id')}")
    if current.get("ground_truth_hash") != previous.get("ground_truth_hash"):
        now, before = set(current_hits["question_id"]), set(previous_hits["question_id"])
        counts = [(len(now - before), "added"), (len(before - now), "removed")]
        out.append("questions: " + (_counted(counts, "question") or "edited"))
    if current.get("question_origin") != previous.get("question_origin"):
        out.append(f"question origin: {previous.get('question_origin')} -> {current.get('question_origin')}")
    if current.get("bm25") != previous.get("bm25"):
        out.append(f"BM25 settings: {previous.get('bm25')} -> {current.get('bm25')}")
    return out


def compare(
    current: pd.DataFrame,
    previous: pd.DataFrame,
    current_inputs: dict,
    previous_inputs: dict,
    current_documents: pd.DataFrame | None = None,
    previous_documents: pd.DataFrame | None = None,
) -> Regression:
    """Paired sign tests per strategy x retriever x k, by question, on the queries both runs
    answered. A loss is significant when the current run loses more questions than it wins
    and the Holm-adjusted p over the whole table is below 0.05."""
    changes = describe_changes(
        current_inputs, previous_inputs, current, previous, current_documents, previous_documents
    )
    chunker = _chunker_changes(current_inputs.get("chunker"), previous_inputs.get("chunker"))
    now, before = system_hits(current), system_hits(previous)
    shared = sorted(now.keys() & before.keys())
    pairs = [({"strategy": s, "retriever": r}, now[(s, r)], before[(s, r)]) for s, r in shared]
    table = compare_paired(pairs, ["strategy", "retriever"]).rename(
        columns={"recall_a": "recall_current", "recall_b": "recall_previous"}
    )
    table = table[table["n_questions"] > 0]
    if table.empty:
        why = "the two evaluations share no question" if shared else "the two evaluations share no system"
        return Regression(False, changes + list(chunker.values()), pd.DataFrame(columns=REGRESSION_COLUMNS), why)
    table["significant_loss"] = (table["losses"] > table["wins"]) & (table["p_holm"] < stats.ALPHA)
    table["changed"] = [
        "; ".join(changes + ([chunker[s]] if s in chunker else [])) or "nothing" for s in table["strategy"]
    ]
    return Regression(True, changes + list(chunker.values()), table[REGRESSION_COLUMNS].reset_index(drop=True))


def render(
    result: Regression, current_label: str | None, previous_label: str | None, question_origin: str | None = None
) -> str:
    warning = drafted_warning(question_origin)
    head = "# Regression report\n\n" + (f"> **{warning}**\n\n" if warning else "")
    if current_label is None:
        return head + "The history holds no evaluation yet: nothing to compare.\n"
    if previous_label is None:
        return head + "No previous evaluation to compare with: this is the first entry of the history.\n"
    head += f"{current_label} against {previous_label}.\n\n"
    changed = (
        "What changed: "
        + (
            "; ".join(result.changes)
            if result.changes
            else "nothing (same corpus, model, chunker settings, questions and BM25 settings)"
        )
        + ".\n\n"
    )
    if not result.compared:
        return head + changed + f"Not compared: {result.why_not}.\n"
    losses = result.losses
    verdict = (
        "No significant loss."
        if losses.empty
        else "Significant losses: "
        + "; ".join(
            f"{r.strategy}/{r.retriever} at R@{r.k} (+{r.wins}/−{r.losses} questions, Holm p = {r.p_holm:.2g}; "
            f"changed: {r.changed})"
            for r in losses.itertuples()
        )
        + "."
    )
    n = int(result.table["n_questions"].max())
    lines = [
        "| strategy | retriever | k | wins | losses | R@k before | R@k now | p | p (Holm) | changed since |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.strategy} | {r.retriever} | {r.k} | +{r.wins} | −{r.losses} | {r.recall_previous:.3f} | "
        f"{r.recall_current:.3f} | {r.p_value:.3g} | {r.p_holm:.3g} | {r.changed} |"
        for r in result.table.itertuples()
    ]
    return (
        head
        + changed
        + f"Compared by question on the {n} questions both evaluated; Holm over the {len(result.table)} rows "
        "of the table below, one family.\n\n" + verdict + "\n\n" + "\n".join(lines) + "\n"
    )


def compare_evaluations(folder) -> tuple[Report, Regression]:
    """The newest evaluation of the history in `folder` against the previous one: the paired
    table, the report, and the figures the UI shows (nothing compared when there is no
    previous one, and the report says why)."""
    entries = history.entries(folder)
    current = history.read(entries[-1]) if entries else None
    previous = history.read(entries[-2]) if len(entries) > 1 else None
    if previous is None:
        why = (
            "the history holds no evaluation yet" if current is None else "this is the first evaluation of the history"
        )
        result = Regression(False, [], pd.DataFrame(columns=REGRESSION_COLUMNS), why)
    else:
        result = compare(
            current,
            previous,
            history.provenance_of(current),
            history.provenance_of(previous),
            history.documents_of(entries[-1]),
            history.documents_of(entries[-2]),
        )
    markdown = render(
        result,
        history.label(entries[-1]) if entries else None,
        history.label(entries[-2]) if previous is not None else None,
        history.provenance_of(current).get("question_origin") if current is not None else None,
    )
    figures = {"compared": result.compared, "changes": result.changes, "significant_losses": len(result.losses)}
    return Report("regression_report", markdown, result.table, figures=figures), result
