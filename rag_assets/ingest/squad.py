"""SQuAD 2.0 JSON -> the native dataset format.

Each article becomes one Markdown document (`# Title`, then its paragraphs). The needle of
an answerable question is the sentence of its paragraph that holds the answer span,
verbatim (the sentences it touches, when a span crosses a sentence end). Questions SQuAD
marks `is_impossible` become the `unanswerable` set, with no needle.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from pathlib import Path

from rag_assets.ingest.dataset import Dataset, write_questions
from rag_assets.ingest.language import language_of
from rag_assets.ingest.sentences import sentence_spans
from rag_assets.ingest.staging import ImportRefused, staged_folder


def _nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def _file_name(title: str, used: set[str]) -> str:
    """A non-empty file name unique in `used`: the title's ASCII slug, with a hash of the title
    added when the slug is empty (a title with no Latin letters) or already taken."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    if not slug or slug in used:
        base, n = f"{slug or 'article'}-{hashlib.sha256(title.encode('utf-8')).hexdigest()[:10]}", 1
        slug = base
        while slug in used:  # the same title twice
            n += 1
            slug = f"{base}-{n}"
    used.add(slug)
    return f"{slug}.md"


def needle_for(context: str, sentences: list[tuple[int, int]], answer_start: int, answer_text: str) -> str:
    """The sentence(s) of `context` covering [answer_start, answer_start + len(answer_text))."""
    if context[answer_start : answer_start + len(answer_text)] != answer_text:
        raise ValueError(f"answer {answer_text!r} is not at offset {answer_start} of its context")
    end = answer_start + len(answer_text)
    covering = [(a, b) for a, b in sentences if a < end and answer_start < b]
    return context[covering[0][0] : covering[-1][1]].strip()


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ImportRefused(f"{path} does not exist") from None
    except IsADirectoryError:
        raise ImportRefused(f"{path} is a folder, not a SQuAD JSON file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportRefused(f"{path} is not JSON ({exc})") from None


def import_squad(squad_json: Path, out: Path, extra_questions: Path | None = None) -> dict:
    """Write `out/documents/*.md` and `out/questions.jsonl` (all or nothing); return counts.

    `extra_questions` (native JSONL, e.g. a hand-written out-of-domain set) is appended
    after the SQuAD questions."""
    data = _read_json(squad_json)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ImportRefused(f"{squad_json} is not SQuAD JSON: no top-level `data` list")
    extra = []
    if extra_questions is not None:
        try:
            lines = Path(extra_questions).read_text(encoding="utf-8").splitlines()
            extra = [json.loads(line) for line in lines if line.strip()]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ImportRefused(f"cannot read the extra questions {extra_questions}: {exc}") from None
    with staged_folder(out) as folder:
        try:
            counts = _write(data["data"], Dataset(folder), extra)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise ImportRefused(
                f"{squad_json} is not SQuAD 2.0 JSON: {type(exc).__name__} {exc} while reading its articles"
            ) from None
    return counts


def _write(articles: list, dataset: Dataset, extra: list[dict]) -> dict:
    dataset.documents_dir.mkdir(parents=True, exist_ok=True)
    records, counts, used = [], {"documents": 0, "answerable": 0, "unanswerable": 0, "extra": 0}, set()
    for article in articles:
        title = article["title"].replace("_", " ")
        contexts = []
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            contexts.append(_nfc(context.strip()))
            sentences = sentence_spans(context, language_of(context))
            for qa in paragraph["qas"]:
                record = {"id": qa["id"], "phrasings": [qa["question"].strip()]}
                if qa.get("is_impossible"):
                    record.update(needle=None, kind="unanswerable", answers=[])
                    counts["unanswerable"] += 1
                else:
                    first = qa["answers"][0]
                    needle = needle_for(context, sentences, first["answer_start"], first["text"])
                    answers = list(dict.fromkeys(_nfc(a["text"]) for a in qa["answers"]))
                    record.update(needle=_nfc(needle), kind="answerable", answers=answers)
                    counts["answerable"] += 1
                records.append(record)
        text = f"# {title}\n\n" + "\n\n".join(contexts) + "\n"
        (dataset.documents_dir / _file_name(title, used)).write_text(text, encoding="utf-8")
        counts["documents"] += 1
    records.extend(extra)
    counts["extra"] = len(extra)
    write_questions(dataset.questions_path, records)
    return counts
