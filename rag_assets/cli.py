"""`rag-assets`: materialise the graph, ask questions, open the UI, import data sets."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

from rag_assets.dataset import BUNDLED_DATASET, PROJECT_ROOT, Dataset

QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _use_data_dir(data_dir: Path, dataset: Path) -> Path:
    """Point Dagster at `<data dir>/dagster_home` so run history survives the process,
    and export the paths so `dg dev` started from the same shell sees the same data."""
    data_dir = data_dir.resolve()
    home = data_dir / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():  # explicit: no "defaulting" notice, no telemetry calls, and on a small
        # machine at most two runs at once when the automation sensor fans out over strategies
        config.write_text("telemetry:\n  enabled: false\nrun_queue:\n  max_concurrent_runs: 2\n")
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ["RAG_ASSETS_DATA_DIR"] = str(data_dir)
    os.environ["RAG_ASSETS_DATASET"] = str(dataset.resolve())
    return data_dir


def _strategies(value: str | None) -> list[str]:
    from rag_assets.chunking import STRATEGIES

    if not value:
        return list(STRATEGIES)
    chosen = [s.strip() for s in value.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown:
        raise SystemExit(f"unknown strategies {', '.join(unknown)}; choose from {', '.join(STRATEGIES)}")
    return chosen


def cmd_run(args: argparse.Namespace) -> int:
    dataset = Dataset(Path(args.dataset))
    try:
        dataset.check()
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    strategies = _strategies(args.strategies)
    data_dir = _use_data_dir(Path(args.data_dir), dataset.root)
    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*(is currently in beta|is currently in preview).*")

    from dagster import DagsterInstance

    from rag_assets.defs import build_definitions
    from rag_assets.defs.plan import materialization_steps
    from rag_assets.defs.run_report import RunReport
    from rag_assets.defs.sources import record_source_versions

    defs = build_definitions(data_dir=data_dir, dataset_dir=dataset.root, full_ground_truth=args.full_ground_truth,
                             max_file_mb=args.max_file_mb, llm=not args.no_llm)
    job = defs.resolve_implicit_global_asset_job_def()
    steps = materialization_steps(defs, strategies)
    report = RunReport()
    started = time.perf_counter()
    print(f"rag-assets run: dataset {dataset.root}\n  data dir {data_dir} (Dagster home {os.environ['DAGSTER_HOME']})")
    with DagsterInstance.get() as instance:
        changed = record_source_versions(instance, defs.resources["dataset"], defs.resources["embedder"])
        print(f"new source versions: {', '.join(changed)}" if changed else "sources unchanged since the last run")
        for i, step in enumerate(steps, start=1):
            names = ", ".join(k.to_user_string() for k in step.keys)
            print(f"[{i}/{len(steps)}] {step.label}: {names} ...", flush=True)
            t0 = time.perf_counter()
            result = job.execute_in_process(
                instance=instance, asset_selection=list(step.keys), partition_key=step.partition_key,
                run_config=None if args.verbose else QUIET_LOGS, raise_on_error=False,
            )
            for line in report.add(result):
                print(f"      {line}")
            status = "ok" if result.success else "FAILED"
            print(f"      {status} in {time.perf_counter() - t0:.1f}s (run {result.run_id[:8]})", flush=True)
            if not result.success:
                print(report.failure(result), file=sys.stderr)
                return 1
    print(report.summary(time.perf_counter() - started))
    return 0 if report.checks_passed else 1


def _print_answer(a) -> None:
    run = f"strategy {a.strategy}, {a.retriever}, threshold {a.threshold:.3f}"
    if a.refused:
        nearest = "nothing retrieved" if a.nearest_distance is None else f"nearest chunk at {a.nearest_distance:.3f}"
        print(f"NO ANSWER: no retrieved chunk is under the distance threshold ({nearest}; {run}). "
              "The model was not called.")
        return
    print(a.answer, "\n")
    if a.citations:
        print("Citations:")
        for c in a.citations:
            cut = " (quote cut at the input budget)" if c.truncated else ""
            where = f"{c.document_id}{c.fragment}" + (f" {c.locator}" if c.locator else "")
            print(f"  [{c.index}] {c.locator_label} | {where} | distance {c.cosine_distance:.3f}{cut}")
            quote = " ".join(c.quote.split())
            print(f"      \"{quote[:240]}{'...' if len(quote) > 240 else ''}\"")
    else:
        print(f"No citations: the answer cites none of the {len(a.sources)} sources it was given.")
    if a.dangling:
        print(f"Removed: [{'], ['.join(map(str, a.dangling))}] point at no source.")
    print(f"\n({run}; model {a.model}; retrieval {a.retrieval_ms:.0f} ms, context {a.context_ms:.0f} ms, "
          f"generation {a.generation_ms:.0f} ms; loading the model took {a.load_ms / 1000:.1f} s)")


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer from the materialised index; refuse a missing or stale one instead of rebuilding it."""
    import json

    import logging

    dataset = Dataset(Path(args.dataset))
    data_dir = _use_data_dir(Path(args.data_dir), dataset.root)
    warnings.filterwarnings("ignore", module="dagster")
    from dagster import DagsterInstance

    logging.getLogger("dagster").setLevel(logging.WARNING)  # stdout is the answer (or its JSON) only
    from rag_assets.answering import Answerer
    from rag_assets.defs import build_definitions
    from rag_assets.defs.generation_assets import ANSWER_RETRIEVER
    from rag_assets.defs.serving import IndexNotReady, load_index
    from rag_assets.generation import LocalLM
    from rag_assets.rerank import LLMRelevanceReranker, find_cross_encoder
    from rag_assets.retrieval import ALL_TENANTS

    defs = build_definitions(data_dir=data_dir, dataset_dir=dataset.root)
    settings, generator = defs.resources["retrieval"], defs.resources["generator"]
    strategy = args.strategy or settings.serving_strategy
    threshold = settings.refusal_threshold if args.threshold is None else args.threshold
    embedder = defs.resources["embedder"].load()
    lm = LocalLM(args.generator or generator.model, generator.max_new_tokens, generator.answer_prefix)  # loads nothing yet
    rerankers = []
    if args.retriever == "rerank":
        reranker, why = find_cross_encoder(settings.cross_encoder or None)
        if reranker is None:
            raise SystemExit(why)
        rerankers.append(reranker)
    elif args.retriever == "rerank-llm":
        rerankers.append(LLMRelevanceReranker(lm, settings.llm_rerank_depth))
    with DagsterInstance.get() as instance:
        try:
            index, chunks = load_index(defs, instance, strategy, embedder.identity)
        except IndexNotReady as exc:
            raise SystemExit(str(exc)) from None
    answerer = Answerer(index, chunks, embedder, lm, args.retriever or ANSWER_RETRIEVER, threshold,
                        generator.input_budget, rerankers, ALL_TENANTS if args.all_tenants else args.tenant)
    try:
        answer = answerer.ask(args.question)
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(str(exc)) from None
    if args.json:
        print(json.dumps(answer.as_dict(), ensure_ascii=False, indent=2))
    else:
        _print_answer(answer)
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    _use_data_dir(Path(args.data_dir), Path(args.dataset))
    print(f"Dagster UI on http://localhost:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']})")
    os.chdir(PROJECT_ROOT)
    dg = Path(sys.executable).parent / "dg"  # the venv's own dg, whether or not the venv is activated
    os.execv(dg, [str(dg), "dev", "--port", str(args.port)])
    return 0  # not reached


def cmd_import_squad(args: argparse.Namespace) -> int:
    from rag_assets.squad import import_squad

    counts = import_squad(Path(args.file), Path(args.out), Path(args.extra_questions) if args.extra_questions else None)
    print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


def cmd_import_beir(args: argparse.Namespace) -> int:
    from rag_assets.beir import import_beir

    counts = import_beir(Path(args.folder), Path(args.out), args.split)
    print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rag-assets", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    data_dir = PROJECT_ROOT / "data"

    run = sub.add_parser("run", help="materialise every asset and partition into a persistent Dagster instance")
    run.add_argument("--dataset", default=str(BUNDLED_DATASET), help="native dataset folder (default: bundled)")
    run.add_argument("--data-dir", default=str(data_dir), help="materialisations, Dagster home (default: data/)")
    run.add_argument("--strategies", help="comma-separated subset of chunking strategies (default: all)")
    run.add_argument("--full-ground-truth", action="store_true", help="use every valid question, not the seeded sample")
    run.add_argument("--max-file-mb", type=float, help="refuse documents larger than this (default: 50 MiB)")
    run.add_argument("--no-llm", action="store_true", help="skip the LLM reranker and generation_eval's "
                     "answers (minutes on a CPU); generation_eval then records that it measured nothing")
    run.add_argument("--verbose", action="store_true", help="show Dagster's own log lines")
    run.set_defaults(func=cmd_run)

    ask = sub.add_parser("ask", help="answer a question from the materialised index, with citations, or say NO ANSWER")
    ask.add_argument("question")
    ask.add_argument("--dataset", default=str(BUNDLED_DATASET))
    ask.add_argument("--data-dir", default=str(data_dir))
    ask.add_argument("--strategy", help="chunking strategy to answer from (default: the serving strategy, E)")
    ask.add_argument("--retriever", choices=["dense", "bm25", "hybrid", "rerank", "rerank-llm"],
                     help="default: hybrid")
    ask.add_argument("--threshold", type=float, help="refusal gate: cosine distance (default: 0.6)")
    ask.add_argument("--generator", help="a .gguf file or model folder (default: packaged SmolLM2-135M-Instruct)")
    who = ask.add_mutually_exclusive_group()
    who.add_argument("--tenant", help="answer on behalf of this tenant or group: public documents and those "
                                      "whose access list names it (default: public documents only)")
    who.add_argument("--all-tenants", action="store_true", help="operator view: every document")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.set_defaults(func=cmd_ask)

    ui = sub.add_parser("ui", help="start the Dagster UI (dg dev) on the same data dir and dataset")
    ui.add_argument("--dataset", default=str(BUNDLED_DATASET))
    ui.add_argument("--data-dir", default=str(data_dir))
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(func=cmd_ui)

    imp = sub.add_parser("import", help="convert a public data set into the native dataset format")
    kinds = imp.add_subparsers(dest="kind", required=True)
    squad = kinds.add_parser("squad", help="SQuAD 2.0 JSON")
    squad.add_argument("file")
    squad.add_argument("--out", required=True)
    squad.add_argument("--extra-questions", help="native JSONL appended after the SQuAD questions")
    squad.set_defaults(func=cmd_import_squad)
    beir = kinds.add_parser("beir", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    beir.add_argument("folder")
    beir.add_argument("--out", required=True)
    beir.add_argument("--split", default="test")
    beir.set_defaults(func=cmd_import_beir)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
