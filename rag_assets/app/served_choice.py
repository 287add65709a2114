"""Which configuration `ask` and `serve` answer with, when one was chosen: `rag-assets use CONFIG`
writes it into the data dir (`served.json`: the configuration's id, its retriever's label and the
experiment file it is read from), and both answer from it (rag_assets.experiment.served) unless a
command's own options name a strategy, an embedder or a retriever of the lab's.
"""

from __future__ import annotations

import json
from pathlib import Path
from shlex import quote

from rag_assets import storage
from rag_assets.layout import DataDir

FILE_NAME = "served.json"
FIELDS = ("retriever", "chosen")


def choice(config) -> dict:
    """The settings `ask` and `serve` read for `config` (an experiment's Configuration): its id and
    the label its answers carry (its retriever's kind, or the reranker after it)."""
    kind = config.reranker.kind
    label = config.retriever.kind if kind == "none" else "rerank-llm" if kind == "llm" else "rerank"
    return {"retriever": label, "chosen": config.id}


def write(layout: DataDir, chosen: dict, origin: dict) -> None:
    storage.write_text(layout.root / FILE_NAME, json.dumps({**chosen, "from": origin}, indent=1) + "\n")


def read(layout: DataDir) -> dict:
    """The chosen settings ({} when none was chosen); ValueError when the record cannot be read."""
    record = _record(layout)
    return {k: record[k] for k in FIELDS if k in record}


def configuration(layout: DataDir, config_id: str):
    """(the experiment file, the chosen Configuration) as the file says now; ValueError saying how
    to choose again when the file or the configuration is gone."""
    from rag_assets.experiment import spec

    experiment = (_record(layout).get("from") or {}).get("experiment")
    path = Path(experiment if isinstance(experiment, str) else "")
    again = (
        f"choose again with `rag-assets use CONFIG --data-dir {quote(str(layout.root))}`, "
        f"or delete {layout.root / FILE_NAME}"
    )
    try:
        return path, spec.load(path).configuration(config_id)
    except spec.ExperimentError as exc:
        raise ValueError(f"the configuration `rag-assets use` chose cannot be read: {exc}; {again}") from None
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]} (`rag-assets use` chose it): {again}") from None


def _record(layout: DataDir) -> dict:
    path = layout.root / FILE_NAME
    if layout.remote:
        return {}
    try:
        return storage.read_record(path, fields={"retriever": str, "chosen": str, "from": dict}) or {}
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"{exc}: choose again with `rag-assets use CONFIG --data-dir {quote(str(layout.root))}`, or delete {path}"
        ) from None
