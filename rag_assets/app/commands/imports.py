"""`rag-assets import squad|beir`: a public data set converted into the native dataset format
(nothing is written when it is refused)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_assets.app.options import refusing


def add(sub) -> None:
    imp = sub.add_parser("import", help="convert a public data set into the native dataset format")
    kinds = imp.add_subparsers(dest="kind", required=True)
    squad = kinds.add_parser("squad", help="SQuAD 2.0 JSON")
    squad.add_argument("file")
    squad.add_argument("--out", required=True)
    squad.add_argument("--extra-questions", help="native JSONL appended after the SQuAD questions")
    squad.set_defaults(func=squad_file)
    beir = kinds.add_parser("beir", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    beir.add_argument("folder")
    beir.add_argument("--out", required=True)
    beir.add_argument("--split", default="test")
    beir.set_defaults(func=beir_folder)


def squad_file(args: argparse.Namespace) -> int:
    from rag_assets.ingest.squad import import_squad

    extra = Path(args.extra_questions) if args.extra_questions else None
    with refusing(ValueError):  # ImportRefused and a bad answer span alike
        counts = import_squad(Path(args.file), Path(args.out), extra)
    print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


def beir_folder(args: argparse.Namespace) -> int:
    from rag_assets.ingest.beir import import_beir

    with refusing(ValueError):
        counts = import_beir(Path(args.folder), Path(args.out), args.split)
    print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0
