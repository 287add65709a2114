"""`rag-assets`: materialise the graph, ask questions, open the UI, import data sets."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

from rag_assets.app.instance import (
    cancel_abandoned_queue,
    check_instance,
    fail_orphaned_runs,
    postgres_url,
    readable_home,
    run_tags,
    use_data_dir,
)
from rag_assets.ingest.dataset import PROJECT_ROOT, Dataset
from rag_assets.layout import DataDir

# Dagster's console logger prints a failed step with its whole traceback: `run` keeps it quiet
# and prints the run's warnings and one line per failed step itself (`--verbose`: Dagster's own).
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


class CommandError(Exception):
    """A refusal a user can act on: printed as one line, exit code 2, no traceback."""


def _tenant(value: str) -> str:
    from rag_assets.ingest.access import check_tenant

    try:
        return check_tenant(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; for every document use --all-tenants") from None


def _threshold(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0.0 <= number <= 2.0:  # cosine distance lies in [0, 2]; nan and inf fail this too
        raise argparse.ArgumentTypeError(f"a cosine-distance threshold lies between 0 and 2, got {value!r}")
    return number


def _megabytes(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not (math.isfinite(number) and number > 0):  # nan and inf fail this too
        raise argparse.ArgumentTypeError(f"a size in MiB is a positive finite number, got {value!r}")
    return number


def _port(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is a whole number from 1 to 65535, got {value!r}")
    return int(value)


def _count(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"a count is a whole number of at least 1, got {value!r}")
    return int(value)


def _model_path(value: str) -> str:
    """A generator given on the command line: a .gguf file or a model folder that exists."""
    path = Path(value).expanduser()
    if not (path.is_dir() or (path.is_file() and path.suffix == ".gguf")):
        raise argparse.ArgumentTypeError(f"no .gguf file or model folder at {value}")
    return str(path.resolve())


def _endpoint_url(value: str) -> str:
    """An OpenAI-compatible API base: http(s)://host[:port]/v1."""
    from urllib.parse import urlparse

    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise argparse.ArgumentTypeError(
            f"an endpoint is an http(s) URL such as http://127.0.0.1:8000/v1, got {value!r}"
        )
    return value.rstrip("/")


def _generator_arguments(args: argparse.Namespace) -> None:
    """Refuse generator options that contradict each other, before anything is read."""
    if args.generator_url and args.generator:
        raise CommandError("--generator and --generator-url name two generators: give one")
    if args.generator_model and not args.generator_url:
        raise CommandError("--generator-model names a model of --generator-url: give the URL too")
    if args.generator_url and not args.generator_model:
        raise CommandError("--generator-url needs --generator-model, the name the server knows the model by")


def _endpoint(args: argparse.Namespace, max_new_tokens: int):
    """The endpoint named by --generator-url and --generator-model, checked: None without a URL."""
    if not args.generator_url:
        return None
    from rag_assets.answering.endpoint import EndpointLM, EndpointUnavailable

    lm = EndpointLM(args.generator_url, args.generator_model, max_new_tokens)
    try:
        lm.check()
    except EndpointUnavailable as exc:
        raise CommandError(str(exc)) from None
    return lm


def _question(value: str) -> str:
    """The question as text: bytes that are not UTF-8 (argv keeps them as surrogates) are refused."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("the question is not valid UTF-8 text") from None
    if not value.strip():
        raise argparse.ArgumentTypeError("the question is empty")
    return value


def _writable(data_dir) -> None:
    """Refuse a data dir this process cannot create or write (a file, /proc, /dev/full, a
    read-only folder) before anything starts, in one line."""
    layout = DataDir(data_dir)
    if layout.remote:
        return
    probe = layout.root / f".rag-assets-probe-{os.getpid()}"
    try:
        layout.root.mkdir(parents=True, exist_ok=True)
        with open(probe, "wb") as fh:
            fh.write(b"probe")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise CommandError(f"cannot write to the data dir {layout.root}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()


def _dataset(args: argparse.Namespace) -> Dataset:
    """The dataset the command works on: `--dataset`, else the one the data dir was built from,
    else the bundled corpus (see dataset_record); checked to be a dataset."""
    from rag_assets.app import dataset_record

    try:
        chosen = dataset_record.choose(DataDir(args.data_dir), args.dataset, getattr(args, "switch_dataset", False))
        return Dataset(chosen).check()
    except (FileNotFoundError, dataset_record.DatasetMismatch) as exc:
        raise CommandError(str(exc)) from None


def _embedder(args: argparse.Namespace):
    """The embedder resource `--models` (run, ui) or `--embedder` (ask, serve) asks for; None:
    $RAG_ASSETS_MODELS, else the default. The settings read from the environment are checked
    here, so a bad one is a refusal."""
    from rag_assets.defs.resources import EmbedderResource, ann_settings_from_env
    from rag_assets.retrieval import packaged

    chosen = getattr(args, "models", None) or getattr(args, "embedder", None)
    try:
        ann_settings_from_env()
        packaged.names(os.environ.get("RAG_ASSETS_MODELS") or packaged.DEFAULT_EMBEDDER)
        if chosen:
            packaged.names(chosen)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    return EmbedderResource(models=chosen) if chosen else None


def _compute(args: argparse.Namespace):
    """The compute resource `--engine` and `--ray-address` ask for, else $RAG_ASSETS_ENGINE and
    $RAG_ASSETS_RAY_ADDRESS (exported, so the UI's runs see the same)."""
    from rag_assets.defs.resources import compute_from_env

    if args.ray_address and (args.engine or os.environ.get("RAG_ASSETS_ENGINE")) != "ray":
        raise CommandError("--ray-address needs --engine ray")
    if args.engine:
        os.environ["RAG_ASSETS_ENGINE"] = args.engine
    if args.ray_address:
        os.environ["RAG_ASSETS_RAY_ADDRESS"] = args.ray_address
    try:
        compute = compute_from_env()
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if compute.engine == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise CommandError("--engine ray needs Ray: pip install -e '.[ray]'")
        if compute.ray_address:
            from rag_assets.retrieval.ray_engine import check_reachable

            try:
                check_reachable(compute.ray_address)
            except ConnectionError as exc:
                raise CommandError(str(exc)) from None
    return compute


def _postgres(args: argparse.Namespace) -> str | None:
    """`--instance-postgres`, else $RAG_ASSETS_POSTGRES_URL: checked to answer; None for SQLite."""
    try:
        return postgres_url(args.instance_postgres)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _data_dir(args: argparse.Namespace, dataset: Path):
    try:
        return use_data_dir(args.data_dir, dataset, _postgres(args))
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _strategies(value: str | None) -> list[str]:
    from rag_assets.chunking.strategies import STRATEGIES

    if not value:
        return list(STRATEGIES)
    chosen = [s.strip() for s in value.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown:
        raise CommandError(f"unknown strategies {', '.join(unknown)}; choose from {', '.join(STRATEGIES)}")
    return chosen


def cmd_run(args: argparse.Namespace) -> int:
    from rag_assets import locking

    dataset = _dataset(args)
    strategies = _strategies(args.strategies)
    data_dir = DataDir(args.data_dir).root
    _writable(data_dir)  # created here, once nothing else refuses
    command = f"rag-assets run --data-dir {data_dir}"
    try:
        with locking.exclusive(data_dir, command) as stale:
            if stale:
                print(
                    f"took over a stale lock: pid {stale.get('pid')} ({stale.get('command')}, started "
                    f"{stale.get('started')}) is gone"
                )
            return _run(args, dataset, strategies)
    except locking.DataDirBusy as exc:
        raise CommandError(str(exc)) from None
    except CommandError:
        raise
    except Exception as exc:  # the disk, the database: say which in one line; what was written stays whole
        cause = _storage_failure(exc)
        if cause is None:
            raise
        print(
            f"rag-assets run: error: the run stopped: {type(cause).__name__}: {cause} (data dir {data_dir}); "
            "every file written before is whole and the next run resumes from it: fix the cause (a full disk, "
            "an unreachable database) and run again",
            file=sys.stderr,
        )
        return 1


def _storage_failure(exc: BaseException) -> BaseException | None:
    """The innermost cause of `exc` when it is the disk's or the database's (an OSError, a
    SQLite or PostgreSQL operational error), else None: those are reported in one line."""
    cause = _root_cause(exc)
    return cause if isinstance(cause, (OSError, *_database_errors())) else None


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception an error was raised from (a database driver's, an OSError)."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        below = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if below is None:
            return exc
        exc = below
    return exc


def _database_errors() -> tuple[type, ...]:
    import sqlite3

    errors: tuple[type, ...] = (sqlite3.OperationalError, sqlite3.DatabaseError)
    try:
        import psycopg2

        errors += (psycopg2.OperationalError,)
    except ImportError:
        pass
    return errors


def _run(args: argparse.Namespace, dataset: Dataset, strategies: list[str]) -> int:
    from rag_assets.app import dataset_record

    compute = _compute(args)  # refused before anything is written; before the definitions read the environment
    _generator_arguments(args)
    if args.generator_url and (args.rerank_llm or args.questions == "drafted"):
        raise CommandError(
            "rerank-llm and question drafting read a local generator's token probabilities: drop --generator-url, "
            "or --rerank-llm / --questions drafted"
        )
    from rag_assets.answering.generation import MAX_NEW_TOKENS

    _endpoint(args, MAX_NEW_TOKENS)  # an endpoint that cannot answer is refused before the run starts
    data_dir = _data_dir(args, dataset.root)
    dataset_record.record(DataDir(data_dir), dataset.root)
    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*(is currently in beta|is currently in preview).*")

    from dagster import DagsterInstance

    from rag_assets.app.plan import materialization_steps
    from rag_assets.app.progress import RunReport
    from rag_assets.defs import build_definitions
    from rag_assets.defs.external_sources import record_source_versions

    # the instance first: definitions built before it would read the defs-state storage of
    # whatever instance this process entered last (Dagster keeps it in a ContextVar)
    with DagsterInstance.get() as instance:
        defs = build_definitions(
            data_dir=data_dir,
            dataset_dir=dataset.root,
            full_ground_truth=args.full_ground_truth,
            max_file_mb=args.max_file_mb,
            llm=not args.no_llm,
            rerank_llm=args.rerank_llm,
            embedder=_embedder(args),
            compute=compute,
            questions=args.questions,
            draft_questions=args.draft_questions,
            generator_model=args.generator,
            generator_url=args.generator_url,
            generator_url_model=args.generator_model,
            answerers=args.answerers,
        )
        steps = materialization_steps(defs, strategies)
        report = RunReport()
        started = time.perf_counter()
        print(
            f"rag-assets run: dataset {dataset.root}\n  data dir {data_dir} (Dagster home {os.environ['DAGSTER_HOME']})"
        )
        tags = run_tags()
        orphans = fail_orphaned_runs(instance)
        if orphans:
            print(f"marked {len(orphans)} runs failed whose process is gone: {', '.join(r[:8] for r in orphans)}")
        _report_sweep(data_dir)
        changed = record_source_versions(instance, defs.resources)
        print(f"new source versions: {', '.join(changed)}" if changed else "sources unchanged since the last run")
        for i, step in enumerate(steps, start=1):
            names = ", ".join(k.to_user_string() for k in step.keys)
            print(f"[{i}/{len(steps)}] {step.label}: {names} ...", flush=True)
            t0 = time.perf_counter()
            result = defs.resolve_job_def(step.job).execute_in_process(
                instance=instance,
                asset_selection=list(step.keys),
                partition_key=step.partition_key,
                run_config=None if args.verbose else QUIET_LOGS,
                raise_on_error=False,
                tags=tags,
            )
            for line in report.add(result):
                print(f"      {line}")
            if not args.verbose:
                for line in report.warnings_of(instance, result.run_id):
                    print(f"      warning: {line}", file=sys.stderr)
            status = "ok" if result.success else "FAILED"
            print(f"      {status} in {time.perf_counter() - t0:.1f}s (run {result.run_id[:8]})", flush=True)
            if not result.success:
                print(report.failure(result), file=sys.stderr)
                return 1
    print(report.summary(time.perf_counter() - started))
    _print_question_origin(DataDir(data_dir))
    return 0 if report.checks_passed else 1


def _print_question_origin(layout: DataDir) -> None:
    """Last words of a run: whether its figures come from written or drafted questions."""
    from rag_assets.ingest.ground_truth import drafted_warning, origin_label

    origin = origin_label(layout.read_table("ground_truth"))
    print(f"questions: {origin}")
    if drafted_warning(origin):
        print(
            f"  {drafted_warning(origin)}\n  review them: rag-assets questions export --data-dir {layout.root} "
            "--out drafted.jsonl, then save what you keep as the dataset's questions.jsonl"
        )


def cmd_questions_export(args: argparse.Namespace) -> int:
    """The drafted set in the native format, with origin, overlap and every filter's verdict."""
    from rag_assets.drafting.question_set import drafted_records
    from rag_assets.ingest.dataset import write_questions

    layout = DataDir(args.data_dir)
    try:
        table = layout.read_table("drafted_questions")
    except (FileNotFoundError, OSError) as exc:
        raise CommandError(f"{exc}: run `rag-assets run --data-dir {args.data_dir}` first") from None
    if table.empty:
        raise CommandError(
            "this data dir evaluated a written question set: nothing was drafted "
            "(`rag-assets run --questions drafted` drafts one)"
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


def _report_sweep(data_dir) -> None:
    from rag_assets import storage

    removed = storage.sweep_leftovers(DataDir(data_dir).root)
    if removed:
        print(f"removed {len(removed)} leftovers of killed writers: {', '.join(removed[:5])}")


def _print_answer(a) -> None:
    run = f"strategy {a.strategy}, {a.retriever}, threshold {a.threshold:.3f}, dense search {a.dense_search}"
    if a.refused:
        nearest = "nothing retrieved" if a.nearest_distance is None else f"nearest chunk at {a.nearest_distance:.3f}"
        print(
            f"NO ANSWER: no retrieved chunk is under the distance threshold ({nearest}; {run}). "
            "The model was not called."
        )
        return
    if a.failure:
        print(f"NO ANSWER: the generator gave none ({a.failure}; {run}; model {a.model}).")
        return
    print(a.answer, "\n")
    unsupported = [s for s in a.support if not s["supported"]]
    for s in unsupported:  # what the sentence cites, and the claims another shown source holds (a wrong [n])
        cited = "[" + "], [".join(map(str, s["cites"])) + "]" if s["cites"] else "its sources"
        elsewhere = (
            f" (another source shown holds {', '.join(s['elsewhere'])}: a wrong citation)" if s["elsewhere"] else ""
        )
        asked = s.get("from_question") or []
        asked = f" (only the question says {', '.join(asked)})" if asked else ""
        print(f'UNSUPPORTED: "{s["text"]}" states what {cited} do not: {", ".join(s["missing"])}{elsewhere}{asked}')
    if unsupported:
        print()
    if a.citations:
        print("Citations:")
        for c in a.citations:
            cut = " (quote cut at the input budget)" if c.truncated else ""
            where = f"{c.document_id}{c.fragment}" + (f" {c.locator}" if c.locator else "")
            print(f"  [{c.index}] {c.locator_label} | {where} | distance {c.cosine_distance:.3f}{cut}")
            quote = " ".join(c.quote.split())
            print(f'      "{quote[:240]}{"..." if len(quote) > 240 else ""}"')
    else:
        print(f"No citations: the answer cites none of the {len(a.sources)} sources it was given.")
    if a.dangling:
        print(f"Removed: [{'], ['.join(map(str, a.dangling))}] point at no source.")
    stage = "generation" if a.answerer == "generate" else "sentence choice"
    print(
        f"\n({run}; answerer {a.answerer}, {a.model}; retrieval {a.retrieval_ms:.0f} ms, "
        f"context {a.context_ms:.0f} ms, {stage} {a.generation_ms:.0f} ms"
        + (f"; loading the model took {a.load_ms / 1000:.1f} s)" if a.answerer == "generate" else ")")
    )


@contextlib.contextmanager
def _served_instance(args: argparse.Namespace):
    """(definitions, the Dagster instance, the data dir) that `ask` and `serve` answer from, read
    only; refused in one line when nothing was materialised or the history cannot be read."""
    import logging

    dataset = _dataset(args)
    layout, postgres = DataDir(args.data_dir), _postgres(args)
    data_dir, home = layout.root, layout.dagster_home
    if not layout.remote and not (home / "dagster.yaml").is_file():
        raise CommandError(
            f"nothing has been materialised in {data_dir}: run `rag-assets run --data-dir {args.data_dir}` first"
        )
    try:
        if layout.remote:  # its history is in PostgreSQL; its home is this machine's, made here if new
            use_data_dir(data_dir, dataset.root, postgres)  # checks the instance too
        else:
            check_instance(home, postgres)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    os.environ.update(RAG_ASSETS_DATA_DIR=str(data_dir), RAG_ASSETS_DATASET=str(dataset.root.resolve()))
    warnings.filterwarnings("ignore", module="dagster")
    from dagster import DagsterInstance

    from rag_assets.defs import build_definitions

    logging.getLogger("dagster").setLevel(logging.WARNING)  # stdout is the answer (or its JSON) only
    try:
        with readable_home(home) as readable, DagsterInstance.from_config(str(readable)) as instance:
            # definitions only once the instance is entered (see _run)
            yield (
                build_definitions(data_dir=data_dir, dataset_dir=dataset.root, embedder=_embedder(args)),
                instance,
                data_dir,
            )
    except CommandError:
        raise
    except Exception as exc:  # a full disk under the instance (or under the private copy of it)
        cause = _storage_failure(exc)
        if cause is None:
            raise
        raise CommandError(
            f"cannot read the run history of {data_dir}: {type(cause).__name__}: {cause} (is the disk, or the "
            "temporary folder, full?)"
        ) from None


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer from the materialised index; refuse a missing, stale or unreadable one instead of
    rebuilding it. Nothing is written: the data dir may be read-only."""
    import json

    _generator_arguments(args)
    # a generator named on the command line is there to answer, unless another answerer is asked for
    from rag_assets.answering.answerer import DEFAULT_ANSWERER, build_answerer

    answerer = args.answerer or ("generate" if args.generator or args.generator_url else DEFAULT_ANSWERER)
    from rag_assets.answering.generation import LocalLM
    from rag_assets.app.serving import IndexNotReady, load_index, serving_strategy_of
    from rag_assets.ingest.access import ALL_TENANTS

    try:
        with _served_instance(args) as (defs, instance, data_dir):
            settings, generator = defs.resources["retrieval"], defs.resources["generator"]
            embedder_name = defs.resources["embedder"].primary
            embedder = defs.resources["embedder"].get()
            strategy = args.strategy or serving_strategy_of(defs, instance)
            index, chunks = load_index(defs, instance, strategy, embedder.identity)
    except IndexNotReady as exc:
        raise CommandError(str(exc)) from None
    if args.generator_url and args.retriever == "rerank-llm":
        raise CommandError(
            "rerank-llm scores passages with a local generator's token probabilities: drop --generator-url"
        )
    uses_generator = answerer == "generate" or args.retriever == "rerank-llm"
    lm = (_endpoint(args, generator.max_new_tokens) if uses_generator else None) or LocalLM(
        args.generator or generator.model, generator.max_new_tokens, generator.answer_prefix
    )  # loads nothing yet
    try:
        answerer = build_answerer(
            index,
            chunks,
            embedder,
            lm,
            answerer=answerer,
            retriever=args.retriever,
            budget=generator.input_budget,
            threshold=args.threshold if args.threshold is not None else settings.threshold(embedder_name),
            tenant=ALL_TENANTS if args.all_tenants else args.tenant,
            cross_encoder=settings.cross_encoder,
            llm_rerank_depth=settings.llm_rerank_depth,
        )
        answer = answerer.ask(args.question)
    except (ValueError, FileNotFoundError) as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps(answer.as_dict(), ensure_ascii=False, indent=2, allow_nan=False))
    else:
        _print_answer(answer)
    return 0


SERVE_ARGS = "RAG_ASSETS_SERVE_ARGS"  # how `serve --workers N` hands its arguments to each worker


def cmd_serve(args: argparse.Namespace) -> int:
    """Answers over HTTP for callers known by their API key, until interrupted. With `--workers N`,
    uvicorn runs N processes on the one port, each loading its own models and index."""
    import json

    from rag_assets.answering.answerer import answerer_names
    from rag_assets.app.keys import KeyRing, KeysFileError

    try:  # refused here, in one line, rather than in every worker
        KeyRing.load(_keys_path(args))
        answerer_names(args.answerers)
    except (KeysFileError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    import uvicorn

    if args.workers == 1:
        uvicorn.run(serve_app(args), host=args.host, port=args.port, log_level="warning")
        return 0
    os.environ[SERVE_ARGS] = json.dumps({k: v for k, v in vars(args).items() if k != "func"})
    uvicorn.run(
        "rag_assets.app.cli:serve_app_from_environment",
        factory=True,
        workers=args.workers,
        host=args.host,
        port=args.port,
        log_level="warning",
    )
    return 0


def _keys_path(args: argparse.Namespace) -> Path:
    return Path(args.keys) if args.keys else DataDir(args.data_dir).root / "keys.json"


_SERVED = contextlib.ExitStack()  # a worker's instance, open for as long as it serves


def serve_app_from_environment():
    """The app of one `serve --workers N` worker, from the arguments its parent put in the environment."""
    import json

    return serve_app(argparse.Namespace(**json.loads(os.environ[SERVE_ARGS])))


def serve_app(args: argparse.Namespace):
    """Load the keys, the instance, the models and the serving strategy's index; the app over them."""
    import logging
    import logging.handlers
    import queue

    from rag_assets.answering.answerer import answerer_names
    from rag_assets.answering.generation import LocalLM
    from rag_assets.app.keys import KeyRing
    from rag_assets.app.service import Service, ServiceSettings, build_app
    from rag_assets.app.serving import serving_strategy_of

    lines: queue.SimpleQueue = queue.SimpleQueue()  # log lines written by a thread of their own, off the event loop
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[logging.handlers.QueueHandler(lines)])
    logging.handlers.QueueListener(lines, logging.StreamHandler(sys.stderr)).start()
    for name in ("rag_assets.serve", "rag_assets.answering.answerer"):  # JSON lines: ids, ranks, timings
        logging.getLogger(name).setLevel(logging.INFO)
    keys = KeyRing.load(_keys_path(args))
    answerers = answerer_names(args.answerers)
    defs, instance, data_dir = _SERVED.enter_context(_served_instance(args))
    embedder = defs.resources["embedder"].get()
    embedder.encode(["warm-up"])
    generator = defs.resources["generator"]
    lm = LocalLM(args.generator or generator.model, generator.max_new_tokens, generator.answer_prefix)
    if "generate" in answerers:
        import torch

        # the workers share the cores: torch's own thread pool per worker, sized for its share, or
        # two decoders on two cores each spin four threads and every answer takes ten times as long
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.workers))
        lm.load_weights()
    settings = ServiceSettings(args.generating, args.queue, args.timeout, args.check_every, log_text=args.log_text)
    service = Service(defs, instance, embedder, lm, settings, answerers)
    service.default_strategy = args.strategy or serving_strategy_of(defs, instance)
    service.refresh(service.default_strategy)
    for problem in service.problems.get(service.default_strategy, []):
        print(f"rag-assets serve: not ready: {problem}", file=sys.stderr)
    print(
        f"rag-assets serve (pid {os.getpid()}): {data_dir}, strategy {service.default_strategy}, answerers "
        f"{', '.join(answerers)}, {len(keys.entries)} keys; http://{args.host}:{args.port}/v1/ask (OpenAPI at /docs)",
        flush=True,
    )
    return build_app(service, keys)


def cmd_keys_add(args: argparse.Namespace) -> int:
    from rag_assets.app.keys import KeysFileError, add_key

    try:
        key = add_key(Path(args.keys), args.id, args.tenant, args.operator)
    except (KeysFileError, ValueError, OSError) as exc:
        raise CommandError(str(exc)) from None
    whom = "the operator (every document)" if args.operator else f"tenant {args.tenant}"
    print(key)
    print(f"key {args.id!r} for {whom} added to {args.keys}; it is shown only this once", file=sys.stderr)
    return 0


def cmd_serve_model(args: argparse.Namespace) -> int:
    """The generator behind an OpenAI-compatible endpoint, until interrupted."""
    from rag_assets.app.model_server import serve

    try:
        serve(args.generator or "", args.host, args.port, args.name)
    except FileNotFoundError as exc:
        raise CommandError(str(exc)) from None
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    """`dg dev` on the same data dir and dataset, as a child in its own process group that this
    command stops whole (webserver, daemon, code servers) on SIGINT or SIGTERM, in the foreground
    or in the background (where a shell starts it with SIGINT ignored)."""
    from rag_assets.app import dataset_record

    _embedder(args)  # a bad setting in the environment is refused before anything starts
    _compute(args)
    dataset = _dataset(args)
    _writable(args.data_dir)
    dataset_record.record(DataDir(_data_dir(args, dataset.root)), dataset.root)
    from dagster import DagsterInstance

    with DagsterInstance.get() as instance:
        orphans = fail_orphaned_runs(instance)
        abandoned = cancel_abandoned_queue(instance, Path(os.environ["DAGSTER_HOME"]))
    if orphans:
        print(f"marked {len(orphans)} runs failed whose process is gone: {', '.join(r[:8] for r in orphans)}")
    if abandoned:
        print(f"cancelled {len(abandoned)} runs left queued by a stopped UI (the automation asks again)")
    _report_sweep(args.data_dir)
    print(f"Dagster UI on http://127.0.0.1:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']})", flush=True)
    venv = Path(sys.executable).parent  # the venv's own dg, whether or not the venv is activated
    child = subprocess.Popen(
        [str(venv / "dg"), "dev", "--port", str(args.port)],
        cwd=PROJECT_ROOT,
        env={  # dg then knows its venv is the active one
            **os.environ,
            "VIRTUAL_ENV": str(venv.parent),
            **({"RAG_ASSETS_MODELS": args.models} if args.models else {}),
        },
        start_new_session=True,
        preexec_fn=_default_signals,
    )
    stop = lambda signum, frame: _stop_group(child)  # noqa: E731
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        return child.wait()
    finally:
        _stop_group(child)


def _default_signals() -> None:
    """In the child: default SIGINT and SIGTERM, whatever the shell left ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_group(child: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM to the child's whole process group, SIGKILL to what is left after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(child.pid, 0)
            except ProcessLookupError:
                return
            child.poll()
            time.sleep(0.2)


def cmd_export_trec(args: argparse.Namespace) -> int:
    """TREC run files and qrels from a materialised data dir (read only)."""
    from rag_assets.evaluation import trec

    layout = DataDir(args.data_dir)
    try:
        runs, truth = layout.read_table("retrieval_runs"), layout.read_table("ground_truth")
        strategies = sorted(set(runs["strategy"]) if not args.strategy else {args.strategy})
        chunk_sets = {s: layout.read_table("chunk_sets", s) for s in strategies}
    except (FileNotFoundError, OSError) as exc:
        raise CommandError(f"{exc}: run `rag-assets run --data-dir {args.data_dir}` first") from None
    runs = runs[runs["strategy"].isin(strategies)]
    if args.retriever:
        runs = runs[runs["retriever"] == args.retriever]
    if runs.empty:
        raise CommandError("no retrieval runs match: see the strategies and retrievers `retrieval_runs` holds")
    try:
        written = trec.export(runs, chunk_sets, truth, Path(args.out))
    except OSError as exc:
        raise CommandError(f"cannot write the TREC files to {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(p.name for p in written))
    return 0


def cmd_import_squad(args: argparse.Namespace) -> int:
    from rag_assets.ingest.squad import import_squad

    extra = Path(args.extra_questions) if args.extra_questions else None
    try:
        counts = import_squad(Path(args.file), Path(args.out), extra)
    except ValueError as exc:  # ImportRefused and a bad answer span alike: nothing was written
        raise CommandError(str(exc)) from None
    print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


def cmd_import_beir(args: argparse.Namespace) -> int:
    from rag_assets.ingest.beir import import_beir

    try:
        counts = import_beir(Path(args.folder), Path(args.out), args.split)
    except ValueError as exc:  # nothing was written
        raise CommandError(str(exc)) from None
    print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


def parser() -> argparse.ArgumentParser:
    from rag_assets.answering.answerer import (
        ANSWERERS,
        DEFAULT_ANSWERER,
        DEFAULT_RETRIEVER,
        RETRIEVERS,
        SERVING_STRATEGY,
    )
    from rag_assets.chunking.strategies import STRATEGIES
    from rag_assets.drafting.question_set import MODES
    from rag_assets.ingest.ground_truth import Sample
    from rag_assets.retrieval.packaged import DEFAULT_EMBEDDER, PACKAGED

    p = argparse.ArgumentParser(prog="rag-assets", description=__doc__)
    embedder_option = {
        "choices": list(PACKAGED),
        "help": "the embedding model to answer with (its embeddings must be materialised: `run --models`): "
        + "; ".join(f"{k} ({v.about})" for k, v in PACKAGED.items())
        + f"; default: the first of $RAG_ASSETS_MODELS, else {DEFAULT_EMBEDDER}",
    }
    models_option = {
        "metavar": "LIST",
        "help": f"the embedding models to materialise and compare, comma-separated ({', '.join(PACKAGED)}): "
        f"each has its own partitions of embeddings and HNSW graphs; the first is the one `ask` serves from; "
        f"default: $RAG_ASSETS_MODELS, else {DEFAULT_EMBEDDER}",
    }
    instance_option = {
        "metavar": "URL",
        "help": "keep the Dagster instance (runs, events, schedules) in PostgreSQL at this URL "
        "(postgresql://user:password@host:port/db) instead of SQLite under the data dir; "
        "default: $RAG_ASSETS_POSTGRES_URL",
    }
    engine_option = {
        "choices": ("local", "ray"),
        "help": "where the heavy work runs: local (this process) or ray (extraction and query batches as Ray "
        "tasks, embeddings by a pool of Ray workers; the same results); default: $RAG_ASSETS_ENGINE, else local",
    }
    address_option = {
        "metavar": "ADDR",
        "help": "the Ray cluster for --engine ray: auto, host:port or ray://host:port (default: "
        "$RAG_ASSETS_RAY_ADDRESS, else a cluster started for the run)",
    }
    dataset_option = {
        "help": "native dataset folder (default: the one the data dir was built from, else the bundled corpus)"
    }
    switch_option = {
        "action": "store_true",
        "help": "rebuild a data dir from another --dataset than the one it was built from",
    }
    endpoint_option = {
        "type": _endpoint_url,
        "metavar": "URL",
        "help": "answer through an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server, `rag-assets "
        "serve-model`) at this API base, e.g. http://127.0.0.1:8000/v1; its key, if any, from "
        "$RAG_ASSETS_GENERATOR_KEY",
    }
    endpoint_model_option = {"metavar": "NAME", "help": "the model's name on --generator-url"}
    generator_option = {
        "type": _model_path,
        "help": "a .gguf file or model folder (default: packaged SmolLM2-135M-Instruct)",
    }
    sub = p.add_subparsers(dest="command", required=True)
    data_dir = PROJECT_ROOT / "data"

    run = sub.add_parser("run", help="materialise every asset and partition into a persistent Dagster instance")
    run.add_argument("--dataset", **dataset_option)
    run.add_argument("--switch-dataset", **switch_option)
    run.add_argument(
        "--data-dir",
        default=str(data_dir),
        help="materialisations and Dagster home: a folder, or an fsspec URL such as s3://bucket/prefix (its "
        "history then in PostgreSQL); default: data/",
    )
    run.add_argument("--strategies", help="comma-separated subset of chunking strategies (default: all)")
    run.add_argument("--full-ground-truth", action="store_true", help="use every valid question, not the seeded sample")
    run.add_argument("--max-file-mb", type=_megabytes, help="refuse documents larger than this (default: 50 MiB)")
    run.add_argument(
        "--questions",
        choices=MODES,
        default="auto",
        help="the question set: written (questions.jsonl), drafted (from the documents by the generator), or "
        "auto (default: written when questions.jsonl has an answerable question, drafted otherwise)",
    )
    run.add_argument(
        "--draft-questions",
        type=_count,
        metavar="N",
        help=f"needles a drafted set asks about (default: {Sample.answerable})",
    )
    run.add_argument(
        "--generator",
        type=_model_path,
        metavar="PATH",
        help="the model that drafts questions and answers generation_eval's sample: a .gguf file or model folder "
        "(default: packaged SmolLM2-135M-Instruct); its identity is recorded with every drafted question",
    )
    run.add_argument("--generator-url", **endpoint_option)
    run.add_argument("--generator-model", **endpoint_model_option)
    run.add_argument(
        "--answerers",
        metavar="LIST",
        help=f"the answerers generation_eval compares, comma-separated from {', '.join(ANSWERERS)} "
        "(default: generate,extractive)",
    )
    llm = run.add_mutually_exclusive_group()
    llm.add_argument(
        "--no-llm",
        action="store_true",
        help="skip generation_eval's answers (minutes on a CPU); generation_eval then records that it measured nothing",
    )
    llm.add_argument(
        "--rerank-llm",
        action="store_true",
        help="also run the LLM reranker (rerank-llm) on a fixed sample of answerable questions: off by "
        "default, as it measured worse than no reranking and costs seconds per question",
    )
    run.add_argument("--verbose", action="store_true", help="show Dagster's own log lines")
    run.add_argument("--models", **models_option)
    run.add_argument("--instance-postgres", **instance_option)
    run.add_argument("--engine", **engine_option)
    run.add_argument("--ray-address", **address_option)
    run.set_defaults(func=cmd_run)

    ask = sub.add_parser("ask", help="answer a question from the materialised index, with citations, or say NO ANSWER")
    ask.add_argument("question", type=_question)
    ask.add_argument("--dataset", **dataset_option)
    ask.add_argument("--data-dir", default=str(data_dir))
    ask.add_argument(
        "--strategy",
        choices=list(STRATEGIES),
        help=f"chunking strategy to answer from (default: the serving strategy, {SERVING_STRATEGY})",
    )
    ask.add_argument("--retriever", choices=RETRIEVERS, default=DEFAULT_RETRIEVER, help=f"default: {DEFAULT_RETRIEVER}")
    ask.add_argument(
        "--threshold",
        type=_threshold,
        help="refusal gate: cosine distance in [0, 2] (default: the served model's own, "
        + ", ".join(f"{k} {v.threshold}" for k, v in PACKAGED.items())
        + ")",
    )
    ask.add_argument(
        "--answerer",
        choices=ANSWERERS,
        help=f"extractive (a sentence of the sources, verbatim) or generate (the language model writes); "
        f"default: generate when --generator or --generator-url is given, else {DEFAULT_ANSWERER}, the one "
        "that contains a reference answer most often on the bundled corpus (docs/answering.md)",
    )
    ask.add_argument("--generator", **generator_option)
    ask.add_argument("--generator-url", **endpoint_option)
    ask.add_argument("--generator-model", **endpoint_model_option)
    who = ask.add_mutually_exclusive_group()
    who.add_argument(
        "--tenant",
        type=_tenant,
        help="answer on behalf of this tenant or group: public documents "
        "and those whose access list names it (default: public documents only)",
    )
    who.add_argument("--all-tenants", action="store_true", help="operator view: every document")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--embedder", **embedder_option)
    ask.add_argument("--instance-postgres", **instance_option)
    ask.set_defaults(func=cmd_ask)

    serve = sub.add_parser("serve", help="answer over HTTP (POST /v1/ask) for callers known by their API key")
    serve.add_argument("--dataset", **dataset_option)
    serve.add_argument("--data-dir", default=str(data_dir))
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)"
    )
    serve.add_argument("--port", type=_port, default=8080)
    serve.add_argument("--keys", help="the keys file (`rag-assets keys add`; default: keys.json in the data dir)")
    serve.add_argument("--strategy", choices=list(STRATEGIES), help="the default strategy (default: the serving one)")
    serve.add_argument("--answerers", default="extractive,generate", help="answerers offered (default: both)")
    serve.add_argument("--workers", type=_count, default=1, help="server processes on the port (default: 1)")
    serve.add_argument("--generating", type=_count, default=1, help="answers decoding at once, per worker (default: 1)")
    serve.add_argument("--queue", type=int, default=8, help="answers waiting to decode; beyond: 429 (default: 8)")
    serve.add_argument("--timeout", type=float, default=120.0, help="seconds a request may take (default: 120)")
    serve.add_argument("--check-every", type=float, default=5.0, help="seconds between freshness checks (default: 5)")
    serve.add_argument("--log-text", action="store_true", help="also log questions and answers (off: ids only)")
    serve.add_argument("--generator", **generator_option)
    serve.add_argument("--embedder", **embedder_option)
    serve.add_argument("--instance-postgres", **instance_option)
    serve.set_defaults(func=cmd_serve)

    keys = sub.add_parser("keys", help="API keys of `rag-assets serve`")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    add = keys_sub.add_parser("add", help="make a key for a tenant (or the operator); it is printed once")
    add.add_argument("--keys", required=True, help="the keys file (made if missing; holds hashes only)")
    add.add_argument("--id", required=True, help="a name for the key, for logs")
    whom = add.add_mutually_exclusive_group(required=True)
    whom.add_argument("--tenant", type=_tenant, help="the tenant or group whose documents the key sees")
    whom.add_argument("--operator", action="store_true", help="the operator's view: every document")
    add.set_defaults(func=cmd_keys_add)

    model = sub.add_parser(
        "serve-model", help="serve the generator through the OpenAI-compatible protocol (/v1/chat/completions)"
    )
    model.add_argument("--generator", **generator_option)
    model.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)"
    )
    model.add_argument("--port", type=_port, default=8000)
    model.add_argument("--name", default="smollm2-135m-instruct", help="the model's name in the API")
    model.set_defaults(func=cmd_serve_model)

    ui = sub.add_parser("ui", help="start the Dagster UI (dg dev) on the same data dir and dataset")
    ui.add_argument("--dataset", **dataset_option)
    ui.add_argument("--switch-dataset", **switch_option)
    ui.add_argument("--data-dir", default=str(data_dir))
    ui.add_argument("--port", type=_port, default=3000)
    ui.add_argument("--models", **models_option)
    ui.add_argument("--instance-postgres", **instance_option)
    ui.add_argument("--engine", **engine_option)
    ui.add_argument("--ray-address", **address_option)
    ui.set_defaults(func=cmd_ui)

    exp = sub.add_parser("export", help="write materialised runs in formats other tools read")
    formats = exp.add_subparsers(dest="format", required=True)
    trec_ = formats.add_parser("trec", help="TREC run files and qrels (trec_eval, ranx, ir-measures)")
    trec_.add_argument("--data-dir", default=str(data_dir))
    trec_.add_argument("--strategy", choices=list(STRATEGIES))
    trec_.add_argument("--retriever", choices=RETRIEVERS)
    trec_.add_argument("--out", required=True)
    trec_.set_defaults(func=cmd_export_trec)

    questions = sub.add_parser("questions", help="work with a drafted question set")
    actions = questions.add_subparsers(dest="action", required=True)
    export_q = actions.add_parser("export", help="the drafted set as native JSONL, with origin and filter verdicts")
    export_q.add_argument("--data-dir", default=str(data_dir))
    export_q.add_argument("--out", required=True)
    export_q.set_defaults(func=cmd_questions_export)

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
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"rag-assets {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
