"""`rag-assets export trec` and `rag-assets questions export`: a materialised data dir's runs and
drafted questions in formats other tools (and people) read. Read only."""

from __future__ import annotations

import argparse
from pathlib import Path
from shlex import quote

from rag_assets.app.options import CommandError, add_data_dir, refusing


def add(sub) -> None:
    from rag_assets.catalog import RETRIEVERS, STRATEGIES

    exp = sub.add_parser("export", help="write materialised runs in formats other tools read")
    formats = exp.add_subparsers(dest="format", required=True)
    trec = formats.add_parser("trec", help="TREC run files and qrels (trec_eval, ranx, ir-measures)")
    add_data_dir(trec)
    trec.add_argument("--strategy", choices=list(STRATEGIES))
    trec.add_argument("--retriever", choices=RETRIEVERS)
    trec.add_argument(
        "--experiment",
        action="store_true",
        help="the experiment's configurations instead of the lab's runs: one run file each, named by "
        "configuration, with the passages each returned per question",
    )
    trec.add_argument("--config", help="with --experiment: this configuration only")
    trec.add_argument("--out", required=True)
    trec.set_defaults(func=trec_files)

    questions = sub.add_parser("questions", help="work with a drafted question set")
    actions = questions.add_subparsers(dest="action", required=True)
    drafted = actions.add_parser("export", help="the drafted set as native JSONL, with origin and filter verdicts")
    add_data_dir(drafted)
    drafted.add_argument("--out", required=True)
    drafted.set_defaults(func=drafted_questions)


def _first_run(args) -> str:
    return f": run `rag-assets run --data-dir {quote(args.data_dir)}` first"


def trec_files(args: argparse.Namespace) -> int:
    """TREC run files and qrels from a materialised data dir."""
    from rag_assets.evaluation import trec
    from rag_assets.layout import DataDir

    layout = DataDir(args.data_dir)
    if args.experiment:
        runs, holders, truth = _experiment_runs(layout, args)
    else:
        if args.config:
            raise CommandError("--config names an experiment's configuration: give --experiment too")
        with refusing(FileNotFoundError, OSError, hint=_first_run(args)):
            runs, truth = layout.read_table("retrieval_runs"), layout.read_table("ground_truth")
            strategies = sorted(set(runs["strategy"]) if not args.strategy else {args.strategy})
            holders = trec.holders_of({s: layout.read_table("chunk_sets", s) for s in strategies}, truth)
        runs = runs[runs["strategy"].isin(strategies)]
        if args.retriever:
            runs = runs[runs["retriever"] == args.retriever]
    if runs.empty:
        raise CommandError("no retrieval runs match: see the strategies and retrievers `retrieval_runs` holds")
    try:
        written = trec.export(runs, holders, truth, Path(args.out))
    except OSError as exc:
        raise CommandError(f"cannot write the TREC files to {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(p.name for p in written))
    return 0


def _experiment_runs(layout, args):
    """(the experiment's runs as TREC rows: a configuration a strategy, each query's returned
    passages, best first; each configuration's relevant passages per question; the ground truth)."""
    import pandas as pd

    folder = layout.assets / "experiment_runs"
    found = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if args.strategy or args.retriever:
        raise CommandError("--strategy and --retriever select the lab's runs: an experiment's are --config")
    if args.config:
        found = [f for f in found if f.stem == args.config]
    if not found:
        which = f"configuration {args.config!r}" if args.config else "configuration"
        raise CommandError(
            f"no {which} of an experiment is materialised in {layout.root}: "
            f"`rag-assets run --data-dir {quote(str(layout.root))} --experiment`"
        )
    with refusing(FileNotFoundError, OSError, hint=_first_run(args)):
        truth = layout.read_table("ground_truth")
        tables = [
            pd.read_parquet(f, columns=["config", "query_id", "question_id", "chunk_ids", "relevant_ids"])
            for f in found
        ]
    rows = pd.concat(tables, ignore_index=True)
    runs = rows.rename(columns={"config": "strategy"}).assign(retriever="experiment")
    holders = {
        config: {q: set(ids) for q, ids in zip(group["question_id"], group["relevant_ids"])}
        for config, group in rows.groupby("config")
    }
    return runs, holders, truth


def drafted_questions(args: argparse.Namespace) -> int:
    """The drafted set in the native format, with origin, overlap and every filter's verdict."""
    from rag_assets.drafting.question_set import drafted_records
    from rag_assets.ingest.dataset import write_questions
    from rag_assets.layout import DataDir

    layout = DataDir(args.data_dir)
    with refusing(FileNotFoundError, OSError, hint=_first_run(args)):
        table = layout.read_table("drafted_questions")
    if table.empty:
        raise CommandError(
            "this data dir evaluated a written question set: nothing was drafted "
            f"(`rag-assets run --data-dir {quote(str(layout.root))} --questions drafted` drafts one)"
        )
    records = drafted_records(table)
    out = Path(args.out)
    if out.is_dir():
        raise CommandError(f"--out {out} is a folder: give a file name such as drafted.jsonl")
    try:
        write_questions(out, records)
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
    dropped = table.groupby("question_id")["kept"].any().eq(False).sum()
    print(
        f"wrote {len(records)} drafted questions to {out} ({dropped} more were dropped by the filters; each line "
        "lists its phrasings' verdicts). Edit, delete or keep lines and save the result as the dataset's "
        "questions.jsonl: the next run evaluates on it, marked as drafted and reviewed."
    )
    return 0
