"""Which dataset a data dir was built from: recorded at its first `run` (or `ui`), and the
default of every later command on it, so that a command given no `--dataset` never points a
user's data dir at the bundled corpus (whose sensor would then rebuild it from that corpus).

A different `--dataset` is refused with one line unless `--switch-dataset` says it is meant."""

from __future__ import annotations

import json
from pathlib import Path

from rag_assets import storage
from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.layout import DataDir


class DatasetMismatch(ValueError):
    """The dataset asked for is not the one this data dir was built from."""


def recorded(layout: DataDir) -> Path | None:
    """The dataset recorded in the data dir, None when there is none yet."""
    path = layout.dataset_record
    try:
        record = storage.read_record(path, fields={"dataset": str})
        if record is not None and not record.get("dataset"):
            raise storage.RecordError(f"{path} cannot be read: it names no dataset")
    except (OSError, storage.RecordError) as exc:
        raise DatasetMismatch(f"{exc}: give --dataset DIR --switch-dataset to record it again") from None
    return Path(record["dataset"]) if record is not None else None


def bundled() -> Path:
    """The bundled corpus, which ships with the source checkout, not inside the package."""
    if not BUNDLED_DATASET.is_dir():
        raise DatasetMismatch(
            f"no --dataset given and the bundled corpus is not here ({BUNDLED_DATASET}): it ships in the "
            "repository's data/default_corpus, which a non-editable install lacks; give --dataset DIR"
        )
    return BUNDLED_DATASET


def choose(layout: DataDir, given: str | None, switch: bool = False) -> Path:
    """The dataset a command on `layout` uses: `given`, else the recorded one, else the bundled
    corpus. A `given` that differs from the recorded one is refused unless `switch`."""
    known = recorded(layout)
    if given is None:
        return known or bundled()
    chosen = Path(given).resolve()
    if known is not None and known != chosen and not switch:
        raise DatasetMismatch(
            f"the data dir {layout.root} was built from the dataset {known}, not {chosen}: leave out --dataset, "
            "use another --data-dir, or add --switch-dataset to rebuild it from the new one"
        )
    return chosen


def record(layout: DataDir, dataset: Path) -> None:
    """Remember `dataset` as the data dir's (a writer's step: `run` and `ui`)."""
    text = json.dumps({"dataset": str(Path(dataset).resolve())}) + "\n"
    path = layout.dataset_record
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        storage.write_text(path, text)
