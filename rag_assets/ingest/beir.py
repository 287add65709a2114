"""BEIR data set folder -> the native dataset format, with document-level relevance.

Reads `corpus.jsonl` ({_id, title, text}), `queries.jsonl` ({_id, text}) and
`qrels/<split>.tsv` (query-id, corpus-id, score; header line). Each corpus entry becomes
`documents/<id>.md` ("# title" then the text; no title line when the title is empty);
each query with qrels becomes an answerable question whose `relevant` maps document paths
to grades. Queries without qrels in the split are left out, as BEIR's evaluation does.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

from rag_assets.ingest.dataset import Dataset, write_questions
from rag_assets.ingest.staging import ImportRefused, staged_folder


def _file_name(doc_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", doc_id) + ".md"


def _jsonl(path: Path):
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ImportRefused(f"{path}:{number}: invalid JSON ({exc.msg})") from None


def import_beir(folder: Path, out: Path, split: str = "test") -> dict:
    folder = Path(folder)
    needed = [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"]
    if not folder.is_dir():
        raise ImportRefused(f"{folder} is not a folder: give the BEIR data set's folder")
    missing = [str(p.relative_to(folder)) for p in needed if not p.is_file()]
    if missing:
        raise ImportRefused(f"{folder} is not a BEIR data set: missing {', '.join(missing)}")
    with staged_folder(out) as staged:
        try:
            return _write(needed, Dataset(staged))
        except (KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            raise ImportRefused(f"{folder} is not a BEIR data set: {type(exc).__name__} {exc}") from None


def _write(needed: list[Path], dataset: Dataset) -> dict:
    dataset.documents_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    for doc in _jsonl(needed[0]):
        doc_id, title, text = str(doc["_id"]), (doc.get("title") or "").strip(), (doc.get("text") or "").strip()
        name = _file_name(doc_id)
        if name in paths.values():
            raise ImportRefused(f"two corpus ids map to the file name {name}; rename one of them")
        paths[doc_id] = name
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        (dataset.documents_dir / name).write_text(body, encoding="utf-8")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with open(needed[2], encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels[row["query-id"]][paths[row["corpus-id"]]] = int(row["score"])
    records = [
        {
            "id": str(q["_id"]),
            "phrasings": [q["text"]],
            "needle": None,
            "kind": "answerable",
            "relevant": qrels[str(q["_id"])],
        }
        for q in _jsonl(needed[1])
        if str(q["_id"]) in qrels
    ]
    write_questions(dataset.questions_path, records)
    return {"documents": len(paths), "questions": len(records), "judgements": sum(len(v) for v in qrels.values())}
