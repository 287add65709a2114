"""What an evaluation was computed from: one definition for every table, report and history
entry, so a number can always be traced to its inputs (docs/design.md §4)."""

from __future__ import annotations

import json

import pandas as pd

INPUTS = ("corpus_hash", "model_id", "chunker", "ground_truth_hash", "bm25", "question_origin")


def of_runs(runs: pd.DataFrame) -> dict:
    """The inputs retrieval runs were computed from, as they recorded them: one value each, or
    the evaluation would mix results of different corpora, questions or models (ValueError).
    The chunker is recorded per strategy, by each chunk set. No runs: every value is None."""
    if runs.empty:
        return dict.fromkeys(INPUTS)
    out = {"model_id": _models(runs)}
    for key in (k for k in INPUTS if k not in ("chunker", "model_id")):
        values = sorted(runs[key].astype(str).unique())
        if len(values) != 1:
            raise ValueError(
                f"retrieval_runs mixes {len(values)} values of {key} ({', '.join(values)}): "
                "rematerialise the stale strategies first"
            )
        out[key] = values[0]
    stamps = runs.drop_duplicates("strategy").sort_values("strategy")
    out["chunker"] = json.dumps(
        {s: json.loads(c) if isinstance(c, str) else None for s, c in zip(stamps["strategy"], stamps["chunker"])}
    )
    return out


def _models(runs: pd.DataFrame) -> str | None:
    """The embedding model's identity; with several models, `{"name": identity, ...}` as JSON.
    Each model's runs must come from one identity (ValueError)."""
    made = runs.dropna(subset=["model_id"])
    names = made["model"] if "model" in made else pd.Series("", index=made.index)
    identities = made.groupby(names.fillna(""))["model_id"].unique()
    for name, values in identities.items():
        if len(values) != 1:
            raise ValueError(
                f"retrieval_runs mixes {len(values)} identities of model {name or '(unnamed)'} ({', '.join(values)}): "
                "rematerialise the stale strategies first"
            )
    if len(identities) <= 1:
        return str(identities.iloc[0][0]) if len(identities) else None
    return json.dumps({name: values[0] for name, values in identities.items()}, sort_keys=True)


def of_table(table: pd.DataFrame, keys=INPUTS) -> dict:
    """The provenance columns of a table that carries them on every row (None when empty, or
    for a column an older table does not have)."""
    return {k: (table[k].iloc[0] if len(table) and k in table else None) for k in keys}
