"""`rag-assets run`: materialise the graph into the data dir's persistent Dagster instance."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from shlex import quote

from rag_assets.app.options import (
    CommandError,
    add_compute,
    add_data_dir,
    add_dataset,
    add_generator,
    add_instance,
    add_models,
    answerers_help,
    check_compute,
    checked_endpoint,
    count,
    dataset_of,
    experiment_of,
    installed,
    megabytes,
    refusing,
    settings_of,
    sweep_leftovers,
    writable,
)
from rag_assets.settings import Settings

# Dagster's console logger prints a failed step with its whole traceback: `run` keeps it quiet
# and prints the run's warnings and one line per failed step itself (`--verbose`: Dagster's own).
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def add(sub) -> None:
    from rag_assets.catalog import QUESTION_MODES, SAMPLE_ANSWERABLE

    run = sub.add_parser("run", help="materialise every asset and partition into a persistent Dagster instance")
    add_dataset(run, switch=True)
    add_data_dir(
        run,
        "materialisations and Dagster home: a folder, or an fsspec URL such as s3://bucket/prefix (its "
        "history then in PostgreSQL); default: data/",
    )
    run.add_argument("--strategies", help="comma-separated subset of chunking strategies (default: all)")
    run.add_argument("--full-ground-truth", action="store_true", help="use every valid question, not the seeded sample")
    run.add_argument("--max-file-mb", type=megabytes, help="refuse documents larger than this (default: 50 MiB)")
    run.add_argument(
        "--questions",
        choices=QUESTION_MODES,
        default="auto",
        help="the question set: written (questions.jsonl), drafted (from the documents by the generator), or "
        "auto (default: written when questions.jsonl has an answerable question, drafted otherwise)",
    )
    run.add_argument(
        "--draft-questions",
        type=count,
        metavar="N",
        help=f"needles a drafted set asks about (default: {SAMPLE_ANSWERABLE})",
    )
    add_generator(
        run,
        "the model that drafts questions and answers generation_eval's sample: a .gguf file or model folder "
        "(default: packaged SmolLM2-135M-Instruct); its identity is recorded with every drafted question",
    )
    run.add_argument(
        "--answerers",
        metavar="LIST",
        help=f"the answerers generation_eval compares, {answerers_help()} (default: generate,extractive)",
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
    run.add_argument(
        "--experiment",
        nargs="?",
        const="",
        metavar="FILE",
        help="run the experiment file (default: the dataset's experiment.yaml) instead of the lab: each "
        "configuration, then the leaderboard; a configuration that fails fails alone (see `rag-assets check`)",
    )
    run.add_argument("--verbose", action="store_true", help="show Dagster's own log lines")
    add_models(run)
    add_instance(run)
    add_compute(run)
    run.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from rag_assets import locking
    from rag_assets.layout import DataDir

    dataset = dataset_of(args)
    strategies = _strategies(args.strategies)
    settings = settings_of(
        args,
        dataset,
        served=True,
        full_ground_truth=args.full_ground_truth,
        max_file_mb=args.max_file_mb,
        llm=not args.no_llm,
        rerank_llm=args.rerank_llm,
        questions=args.questions,
        draft_questions=args.draft_questions,
        answerers=args.answerers,
    )
    check_compute(settings)
    experiment = None
    if args.experiment is not None:
        found, experiment = experiment_of(Path(settings.dataset), args.experiment, settings.data_dir)
        with refusing(ValueError):
            settings = settings.replace(experiment=str(found))
    if settings.generator_url:  # an endpoint that cannot answer is refused before the run starts
        checked_endpoint(settings)
    data_dir = DataDir(settings.data_dir).root
    writable(data_dir)  # created here, once nothing else refuses
    try:
        with locking.exclusive(data_dir, f"rag-assets run --data-dir {data_dir}") as stale:
            if stale:
                print(
                    f"took over a stale lock: pid {stale.get('pid')} ({stale.get('command')}, started "
                    f"{stale.get('started')}) is gone"
                )
            return _run(args, settings, strategies, experiment)
    except locking.DataDirBusy as exc:
        raise CommandError(str(exc)) from None
    except CommandError:
        raise
    except Exception as exc:  # the disk, the database: say which in one line; what was written stays whole
        from rag_assets.app.instance import storage_failure

        cause = storage_failure(exc)
        if cause is None:
            raise
        print(
            f"rag-assets run: error: the run stopped: {type(cause).__name__}: {cause} (data dir {data_dir}); "
            "every file written before is whole and the next run resumes from it: fix the cause (a full disk, "
            "an unreachable database) and run again",
            file=sys.stderr,
        )
        return 1


def _strategies(value: str | None) -> list[str]:
    from rag_assets.catalog import STRATEGIES

    if value is None:
        return list(STRATEGIES)
    chosen = list(dict.fromkeys(s.strip() for s in value.split(",") if s.strip()))
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown or not chosen:
        given = ", ".join(unknown) or f"none in {value!r}"
        raise CommandError(f"unknown strategies {given}; choose from {', '.join(STRATEGIES)}")
    return chosen


def _run(args: argparse.Namespace, settings: Settings, strategies: list[str], experiment=None) -> int:
    from rag_assets.app import dataset_record
    from rag_assets.app.instance import fail_orphaned_runs, open_instance, use_data_dir
    from rag_assets.app.plan import corpus_steps, materialization_steps
    from rag_assets.app.progress import RunReport
    from rag_assets.defs import build_definitions
    from rag_assets.defs.external_sources import record_source_versions
    from rag_assets.layout import DataDir

    layout = DataDir(settings.data_dir)
    with refusing(ValueError):
        home = use_data_dir(layout.root, settings.postgres)
    dataset_record.record(layout, Path(settings.dataset))
    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*(is currently in beta|is currently in preview).*")
    # the instance first: definitions built before it would read the defs-state storage of
    # whatever instance this process entered last (Dagster keeps it in a ContextVar)
    with open_instance(home, settings.postgres) as instance:
        from rag_assets.experiment.spec import ExperimentError

        with refusing(ExperimentError):
            defs = build_definitions(settings, experiment)
        steps = corpus_steps(defs) if experiment else materialization_steps(defs, strategies)
        report = RunReport()
        started = time.perf_counter()
        print(f"rag-assets run: dataset {settings.dataset}\n  data dir {layout.root} (Dagster home {home})")
        orphans = fail_orphaned_runs(instance)
        if orphans:
            print(f"marked {len(orphans)} runs failed whose process is gone: {', '.join(r[:8] for r in orphans)}")
        sweep_leftovers(layout.root)
        changed = record_source_versions(instance, defs)
        print(f"new source versions: {', '.join(changed)}" if changed else "sources unchanged since the last run")
        runner = _Steps(defs, instance, report, args.verbose)
        roots = [s for s in steps if s.job == "corpus"]
        for step in roots:  # before the models are known (the plan's length depends on them)
            if not runner.execute(step, len(steps) if experiment else "?"):
                return 1
        if not experiment:
            settings, choice, shares = _models_for_corpus(settings, layout, report)
            defs = build_definitions(settings)  # with the models, and why, in the embedder resource
            changed = record_source_versions(instance, defs)
            if changed:
                print(f"new source versions: {', '.join(changed)}")
            runner.defs, steps = defs, materialization_steps(defs, strategies)
        for step in steps[len(roots) :]:
            if not runner.execute(step, len(steps)):
                return 1
        if not experiment:  # what later commands answer with: the models this run embedded with
            from rag_assets.app import corpus_models

            corpus_models.write(layout, choice, shares)
        if experiment:
            steps = _experiment_plan(defs, instance, experiment)
            runner.done = 0
            for step in steps:
                runner.execute(step, len(steps))
    print(report.summary(time.perf_counter() - started))
    if experiment:
        print(f"leaderboard: {layout.reports / 'experiment_leaderboard.md'}")
        if runner.failed:
            print(
                f"{len(runner.failed)} configurations failed, nothing recorded for them and their earlier results not "
                f"ranked: {', '.join(runner.failed)}; fix the cause and run again (what was embedded is cached)",
                file=sys.stderr,
            )
            return 1
    if not experiment:  # the experiment has its leaderboard
        _print_recall_by_language(layout, report.document_languages, settings.serving_strategy, settings.served_model)
    _print_question_origin(layout)
    return 0 if report.checks_passed else 1


class _Steps:
    """Runs the plan's steps one at a time, a line each, and keeps what failed."""

    def __init__(self, defs, instance, report, verbose: bool):
        from rag_assets.app.instance import run_tags

        self.defs, self.instance, self.report, self.verbose = defs, instance, report, verbose
        self.tags, self.done, self.failed = run_tags(), 0, []

    def execute(self, step, total: int) -> bool:
        """Whether the step succeeded (a step that fails alone is recorded, and the plan goes on)."""
        self.done += 1
        names = ", ".join(k.to_user_string() for k in step.keys)
        print(f"[{self.done}/{total}] {step.label}: {names} ...", flush=True)
        t0 = time.perf_counter()
        result = self.defs.resolve_job_def(step.job).execute_in_process(
            instance=self.instance,
            asset_selection=list(step.keys),
            partition_key=step.partition_key,
            run_config=None if self.verbose else QUIET_LOGS,
            raise_on_error=False,
            tags=self.tags,
        )
        for line in self.report.add(result):
            print(f"      {line}")
        if not self.verbose:
            for line in self.report.warnings_of(self.instance, result.run_id):
                print(f"      warning: {line}", file=sys.stderr)
        status = "ok" if result.success else "FAILED"
        print(f"      {status} in {time.perf_counter() - t0:.1f}s (run {result.run_id[:8]})", flush=True)
        if not result.success:
            print(self.report.failure(result), file=sys.stderr)
            if step.fails_alone:
                self.failed.append(step.partition_key)
                return True
        return result.success


def _experiment_plan(defs, instance, experiment) -> list:
    """The experiment's steps: its configurations' fingerprints recorded (its endpoints probed),
    then only the configurations that are stale, missing, or failed at their last attempt, and the
    leaderboard."""
    from rag_assets.app.plan import experiment_steps
    from rag_assets.app.serving import stale_resolver
    from rag_assets.defs.experiment import sources

    endpoints = len(experiment.endpoints())
    print(
        f"recording the fingerprints of {len(experiment.configurations)} configurations"
        + (f" ({endpoints} endpoints probed)" if endpoints else "")
        + " ...",
        flush=True,
    )
    changed = sources.record_versions(instance, experiment, defs.resources, log=lambda line: print(f"  {line}"))
    if changed:
        print(f"new configuration versions: {', '.join(changed)}")
    resolver, state = stale_resolver(defs, instance), sources.results(instance, experiment)
    chosen, fresh = [], []
    for c in experiment.configurations:
        status = resolver.get_status(sources.RUNS, c.id).value
        (fresh if status == "FRESH" and not state[c.id]["failed_run"] else chosen).append(c.id)
    if fresh:
        print(
            f"{len(fresh)} of {len(experiment.configurations)} configurations are fresh (nothing they read changed "
            f"since their last run) and are not run again: {', '.join(fresh[:5])}" + (", ..." if len(fresh) > 5 else "")
        )
    return experiment_steps(experiment, chosen)


def _models_for_corpus(settings: Settings, layout, report):
    """(the settings with the embedding models the corpus's languages choose, that choice, the
    corpus's language shares) (retrieval.model_choice); models that were named are kept, and one
    not trained on a part of the corpus is warned about, here and in the summary with its chunks
    over the window. The choice and why are printed, and go into the embeddings' metadata."""
    from rag_assets.catalog import model_names
    from rag_assets.retrieval import model_choice

    snapshot = layout.read_table("corpus_snapshot")
    shares = model_choice.corpus_languages(snapshot)
    report.languages, report.document_languages = shares, dict(zip(snapshot["document_id"], snapshot["language"]))
    if settings.model_choice.startswith("named by"):
        report.named = True
        print(f"embedding models: {settings.models} ({settings.model_choice})")
        for model in settings.model_names:
            line = model_choice.coverage_warning(model, shares)
            if line:
                print(f"warning: {line}", file=sys.stderr)
        return settings, model_choice.Choice(settings.models, settings.model_choice), shares
    choice = model_choice.choose(shares)
    installed(model_names(choice.models))  # a multilingual corpus chooses a model with a package of its own
    print(f"embedding models: {choice.models} ({choice.reason}; --models names others)")
    return settings.replace(models=choice.models, model_choice=choice.reason), choice, shares


def _print_recall_by_language(layout, languages: dict[str, str], serving: str, model: str) -> None:
    """R@4 by the language of each question's document (`languages`: document_id -> language), per
    retriever and model, on the serving strategy (else the first measured): what each language of
    the corpus gets."""
    from rag_assets.app.progress import aligned
    from rag_assets.evaluation.metric_tables import recall_by_language
    from rag_assets.ingest.language import name_of

    hits = layout.read_table("query_hits")
    if hits.empty:
        return
    strategy = serving if serving in set(hits["strategy"]) else sorted(hits["strategy"])[0]
    table = recall_by_language(hits[hits["strategy"] == strategy], layout.read_table("ground_truth"), languages)
    retrievers = sorted(set(table["retriever"]))
    print(
        f"R@4 by the language of the question's document (strategy {strategy}; dense and hybrid: {model}'s, "
        "another model's named @; by question, 95 % interval):"
    )
    rows = [["language", "questions", *retrievers]]
    for lang, group in table.groupby("language", sort=True):
        cells = {r.retriever: f"{r.value:.3f} [{r.ci_low:.2f}, {r.ci_high:.2f}]" for r in group.itertuples()}
        rows.append([name_of(lang), str(group["questions"].max()), *(cells.get(r, "—") for r in retrievers)])
    print("\n".join(aligned(rows)))


def _print_question_origin(layout) -> None:
    """Last words of a run: whether its figures come from written or drafted questions."""
    from rag_assets.ingest.ground_truth import drafted_warning, origin_label

    origin = origin_label(layout.read_table("ground_truth"))
    print(f"questions: {origin}")
    if drafted_warning(origin):
        print(
            f"  {drafted_warning(origin)}\n  review them: rag-assets questions export --data-dir "
            f"{quote(str(layout.root))} "
            "--out drafted.jsonl, then save what you keep as the dataset's questions.jsonl"
        )
