"""The embedding models the last run embedded the corpus with, and why (chosen for its languages
when none was named, or named): `run` writes them into the data dir (`models.json`) once its steps
succeeded, and every later command on it takes them as its default, below `--models`,
$RAG_ASSETS_MODELS and `rag-assets use`, so `ask` and `serve` answer with the model the corpus
was embedded with, and say why. A `ui` reads it when it starts."""

from __future__ import annotations

import json
from shlex import quote

from rag_assets import catalog, storage
from rag_assets.app.options import printable
from rag_assets.layout import DataDir
from rag_assets.retrieval.model_choice import Choice

FILE_NAME = "models.json"


def write(layout: DataDir, choice: Choice, shares: dict[str, float]) -> None:
    """After a run that embedded `choice` (chosen for the corpus, or named): what later commands use."""
    record = {"models": choice.models, "reason": choice.reason, "languages": shares}
    storage.write_text(layout.root / FILE_NAME, json.dumps(record, indent=1) + "\n")


def read(layout: DataDir) -> dict:
    """{"models": ..., "model_choice": ...} as the last run chose them ({} when none did);
    ValueError when the record cannot be read."""
    path = layout.root / FILE_NAME
    try:
        record = storage.read_record(path, fields={"models": str, "reason": str})
        if record is None:
            return {}
        if record.get("models") is None or record.get("reason") is None:
            raise storage.RecordError(f"{path} cannot be read: it does not name the models and why")
        try:
            catalog.model_names(record["models"])
        except ValueError as exc:
            raise storage.RecordError(f"{path} cannot be read: {exc}") from None
    except (OSError, storage.RecordError) as exc:
        raise ValueError(
            f"{exc}: delete it, and `rag-assets run --data-dir {quote(str(layout.root))}` chooses again"
        ) from None
    return {"models": record["models"], "model_choice": f"as the last run: {printable(record['reason'])}"}
