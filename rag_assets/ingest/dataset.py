"""The native dataset format: a folder with `documents/` and, optionally, `questions.jsonl`
(without one, the graph drafts a question set from the documents: rag_assets.drafting).

documents/       Markdown or plain text; a `# ` line gives the title, `## ` lines the sections
questions.jsonl  one question per line:
                 {"id": str, "phrasings": [str, ...], "needle": str | null,
                  "kind": "answerable" | "unanswerable" | "out_of_domain",
                  "answers": [str, ...] (optional, reference answers),
                  "origin": {"kind": "drafted", ...} (optional: kept from `questions export`)}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Dataset:
    root: Path

    @property
    def documents_dir(self) -> Path:
        return self.root / "documents"

    @property
    def questions_path(self) -> Path:
        return self.root / "questions.jsonl"

    def check(self) -> Dataset:
        """Fail early, naming what is missing, before any run starts."""
        try:
            return self._check()
        except PermissionError as exc:
            raise FileNotFoundError(
                f"the dataset {self.root} cannot be read: {exc.strerror} ({exc.filename})"
            ) from None

    def _check(self) -> Dataset:
        if not self.documents_dir.exists():
            raise FileNotFoundError(
                f"{self.root} is not a dataset: missing documents/ "
                "(expected documents/ and, optionally, questions.jsonl; see docs/dataset-format.md)"
            )
        if not self.documents_dir.is_dir():
            raise FileNotFoundError(f"{self.root} is not a dataset: {self.documents_dir} is not a folder")
        if self.questions_path.is_dir():
            raise FileNotFoundError(f"{self.root} is not a dataset: {self.questions_path} is a folder, not a file")
        return self


def write_questions(path: Path, records: list[dict]) -> None:
    """One JSON object per line, keys in a fixed order, UTF-8 kept readable."""
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
