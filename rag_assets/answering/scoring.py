"""Scoring answers: SQuAD exact match and token F1, abstention and bluffs, citation validity,
support, and where each wrong answer came from.

Normalisation is SQuAD's official one (lower case, no punctuation, no articles, single
spaces); a question's score is its best over the gold answers. A generative model answers
in sentences, so exact match is near zero by construction; "contains the gold answer"
(normalised containment) is reported beside it and drives the failure decomposition:

- correct with evidence: contains a gold answer and cites a source whose quote holds the needle;
- correct without labelled evidence: contains a gold answer but cites no such source (kept
  apart: it may be memory, luck or an unlabelled second source, and is not counted as success);
- retrieval failure: wrong, and no source the model was shown holds the needle;
- generation failure: wrong although a source the model was shown holds the needle.

Citation markers (`[1]`) are removed before an answer is compared with the reference answers.
An answer that did not come back (an endpoint's timeout, an empty reply: `failure`) is counted
as such and never scored. A bluff is an answer (neither refused by the gate nor declined by the
model) to a question that has none: an unanswerable or out-of-domain one.
"""

from __future__ import annotations

import re
import string
from collections import Counter

import numpy as np
import pandas as pd

from rag_assets import stats

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_MARKER = re.compile(r"\[\d+\]")
_PUNCTUATION = set(string.punctuation)
OUTCOMES = ["correct with evidence", "correct without labelled evidence", "retrieval failure", "generation failure"]


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: list[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(g) for g in golds))


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g:
        return float(p == g)
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: list[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


def contains_answer(prediction: str, golds: list[str]) -> bool:
    p = f" {normalize_answer(prediction)} "
    return any(normalize_answer(g) and f" {normalize_answer(g)} " in p for g in golds)


def score_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """Adds em, f1, contains, shown_needle, cites_needle, citations_valid, bluffed and outcome.

    `answers`: one row per question with kind, answers (gold list), needle, refused,
    declined, failure, answer, sources and citations (lists of citation dicts), dangling."""
    rows = []
    for r in answers.itertuples():
        golds = list(r.answers) if r.answers is not None else []
        text = _MARKER.sub(" ", r.answer if isinstance(r.answer, str) else "")
        failed = isinstance(r.failure, str)
        gave = not r.refused and not r.declined and not failed
        shown = isinstance(r.needle, str) and any(r.needle in s["quote"] for s in r.sources)
        cites = isinstance(r.needle, str) and any(  # a quote inside the needle is part of the labelled evidence
            r.needle in c["quote"] or c["quote"] in r.needle for c in r.citations
        )
        row = {
            "em": np.nan,
            "f1": np.nan,
            "short_em": np.nan,
            "short_f1": np.nan,
            "contains": np.nan,
            "correct_supported": np.nan,
            "outcome": None,
            "shown_needle": shown,
            "cites_needle": cites,
            "citations_valid": (len(r.dangling) == 0 and len(r.citations) > 0) if gave else np.nan,
            "bluffed": gave if r.kind != "answerable" and not failed else np.nan,
        }
        if r.kind == "answerable" and golds and not failed:
            hit = gave and contains_answer(text, golds)
            short = (getattr(r, "short_answer", None) or {}).get("text", "") if gave else ""
            row.update(
                short_em=exact_match(short, golds),
                short_f1=token_f1(short, golds),
                em=exact_match(text, golds) if gave else 0.0,
                f1=token_f1(text, golds) if gave else 0.0,
                contains=float(hit),
                correct_supported=float(hit and r.supported is True),
            )
            row["outcome"] = (OUTCOMES[0] if cites else OUTCOMES[1]) if hit else (OUTCOMES[3] if shown else OUTCOMES[2])
        rows.append(row)
    return pd.concat([answers.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def _rate(name: str, group: str, successes: int, n: int) -> dict:
    low, high = stats.wilson(successes, n)
    return {
        "metric": name,
        "group": group,
        "count": successes,
        "n": n,
        "value": successes / n if n else np.nan,
        "ci_low": low,
        "ci_high": high,
    }


def summary(scored: pd.DataFrame) -> pd.DataFrame:
    """Long table of rates (Wilson intervals) and means, per question kind."""
    failed = scored["failure"].map(lambda f: isinstance(f, str))
    rows = [_rate("no answer came back (failure)", "all", int(failed.sum()), len(scored))]
    scored = scored[~failed]
    every = scored[scored["kind"] == "answerable"]
    answerable = every[every["outcome"].notna()]  # those with reference answers: the only ones scored
    n = len(answerable)
    rows.append(
        {
            "metric": "not scored (no reference answers)",
            "group": "answerable",
            "count": len(every) - n,
            "n": len(every),
            "value": (len(every) - n) / len(every) if len(every) else np.nan,
            "ci_low": None,
            "ci_high": None,
        }
    )
    for metric in ("em", "f1", "short_em", "short_f1", "contains", "correct_supported"):
        rows.append(
            {
                "metric": metric,
                "group": "answerable (scored)",
                "count": None,
                "n": n,
                "value": float(answerable[metric].mean()) if n else np.nan,
                "ci_low": None,
                "ci_high": None,
            }
        )
    for outcome in OUTCOMES:
        rows.append(_rate(outcome, "answerable (scored)", int((answerable["outcome"] == outcome).sum()), n))
    gave = scored[~scored["refused"] & ~scored["declined"]]
    rows.append(_rate("citations all valid", "answered", int(gave["citations_valid"].astype(bool).sum()), len(gave)))
    rows.append(_rate("every sentence supported", "answered", int(gave["supported"].eq(True).sum()), len(gave)))
    gave_answerable = gave[gave["kind"] == "answerable"]
    rows.append(
        _rate(
            "cites a chunk with the needle",
            "answered answerable",
            int(gave_answerable["cites_needle"].sum()),
            len(gave_answerable),
        )
    )
    for kind in ("unanswerable", "out_of_domain"):
        group = scored[scored["kind"] == kind]
        rows.append(_rate("refused by the gate", kind, int(group["refused"].sum()), len(group)))
        rows.append(_rate("declined by the model", kind, int(group["declined"].sum()), len(group)))
        rows.append(_rate("abstained (either)", kind, int((group["refused"] | group["declined"]).sum()), len(group)))
        rows.append(_rate("bluffed (answered)", kind, int(group["bluffed"].eq(True).sum()), len(group)))
    frame = pd.DataFrame(rows)
    return frame.astype({"count": "Int64", "ci_low": "float64", "ci_high": "float64"})


def latency(scored: pd.DataFrame) -> dict:
    """p50 and p95 per stage in milliseconds; generation only over questions that reached the model."""
    out = {}
    for stage in ("retrieval_ms", "context_ms", "generation_ms"):
        values = scored.loc[~scored["refused"], stage] if stage != "retrieval_ms" else scored[stage]
        out[stage] = {**stats.percentiles(values, digits=1), "n": int(len(values))} if len(values) else {}
    return out
