"""What every command shares: its options, the checks of their values, the one way an exception
becomes a refusal, and the door where arguments become `Settings`."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
from pathlib import Path
from shlex import quote
from urllib.parse import urlparse

from rag_assets import environment
from rag_assets.catalog import ANSWERERS, DEFAULT_EMBEDDER, MULTILINGUAL_EMBEDDER, PACKAGED
from rag_assets.settings import DEFAULT_DATA_DIR, Settings


class CommandError(Exception):
    """A refusal a user can act on: printed as one line, exit code 2, no traceback."""


@contextlib.contextmanager
def refusing(*errors: type[BaseException], hint: str = ""):
    """Any of `errors` raised inside becomes a CommandError with its message (and `hint`)."""
    try:
        yield
    except errors as exc:
        raise CommandError(f"{exc}{hint}") from None


# What a terminal acts on rather than shows: C0 and C1 controls and DEL (an ANSI escape, a carriage
# return), line and paragraph separators, and the bidirectional controls that reorder what follows.
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, lines: bool = False) -> str:
    """`text` from outside (a record in the data dir, an endpoint's answer, a document) as it may reach
    a terminal: each character a terminal would act on (see _UNSHOWN; a newline or tab too unless
    `lines`) written as its escape, so it cannot recolour, clear, move the cursor or forge a line.
    Every other character, a no-break space or a soft hyphen in a quote included, is shown as it is."""
    return _UNSHOWN.sub(
        lambda m: m[0] if lines and m[0] in "\n\t" else m[0].encode("unicode_escape").decode("ascii"), text
    )


# --- values checked as they are parsed -------------------------------------------------------


def tenant(value: str) -> str:
    from rag_assets.ingest.access import check_tenant

    try:
        return check_tenant(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; for every document use --all-tenants") from None


def threshold(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0.0 <= number <= 2.0:  # cosine distance lies in [0, 2]; nan and inf fail this too
        raise argparse.ArgumentTypeError(f"a cosine-distance threshold lies between 0 and 2, got {value!r}")
    return number


def megabytes(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not (math.isfinite(number) and number > 0):  # nan and inf fail this too
        raise argparse.ArgumentTypeError(f"a size in MiB is a positive finite number, got {value!r}")
    return number


def port(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is a whole number from 1 to 65535, got {value!r}")
    return int(value)


def count(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"a count is a whole number of at least 1, got {value!r}")
    return int(value)


def whole(low: int, high: int):
    """A whole number in [low, high]."""

    def parse(value: str) -> int:
        if not value.isdigit() or not low <= int(value) <= high:
            raise argparse.ArgumentTypeError(f"a whole number from {low} to {high:,}, got {value!r}")
        return int(value)

    return parse


def seconds(low: float, high: float):
    """A finite number of seconds in [low, high]."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
        if not (math.isfinite(number) and low <= number <= high):  # nan and inf fail this too
            raise argparse.ArgumentTypeError(f"seconds from {low:g} to {high:g}, got {value!r}")
        return number

    return parse


def free_port(host: str, number: int) -> None:
    """Refuse, before anything loads or is printed, a port something already listens on."""
    import socket

    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, number))
    except OSError as exc:
        raise CommandError(f"cannot listen on {host}:{number}: {exc.strerror or exc}") from None


def model_path(value: str) -> str:
    """A generator given on the command line: a .gguf file or a model folder that exists."""
    path = Path(value).expanduser()
    if not (path.is_dir() or (path.is_file() and path.suffix == ".gguf")):
        raise argparse.ArgumentTypeError(f"no .gguf file or model folder at {value}")
    return str(path.resolve())


def endpoint_url(value: str) -> str:
    """An OpenAI-compatible API base: http(s)://host[:port]/v1."""
    try:
        parsed = urlparse(value)
        userinfo = parsed.username is not None or parsed.password is not None
    except ValueError:
        parsed, userinfo = None, False
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc or len(value) > 2000:
        raise argparse.ArgumentTypeError("an endpoint is an http(s) URL such as http://127.0.0.1:8000/v1")
    if userinfo:
        raise argparse.ArgumentTypeError(
            "an endpoint URL with a user or password in it would be shown and stored: give the key in "
            "$RAG_ASSETS_GENERATOR_KEY (--judge-url's: $RAG_ASSETS_JUDGE_KEY)"
        )
    return value.rstrip("/")


def question(value: str) -> str:
    """The question as text: bytes that are not UTF-8 (argv keeps them as surrogates) are refused."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("the question is not valid UTF-8 text") from None
    if not value.strip():
        raise argparse.ArgumentTypeError("the question is empty")
    return value


# --- options several commands take -----------------------------------------------------------


def add_data_dir(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), help=help)


def add_dataset(p: argparse.ArgumentParser, switch: bool = False) -> None:
    p.add_argument(
        "--dataset",
        help="native dataset folder (default: the one the data dir was built from, else the bundled corpus)",
    )
    if switch:
        p.add_argument(
            "--switch-dataset",
            action="store_true",
            help="rebuild a data dir from another --dataset than the one it was built from",
        )


def add_instance(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--instance-postgres",
        metavar="URL",
        help="keep the Dagster instance (runs, events, schedules) in PostgreSQL at this URL "
        "(postgresql://user@host:port/db: a password here would sit in the process list, so it is "
        "refused; give one in $RAG_ASSETS_POSTGRES_URL or --instance-postgres-file) instead of SQLite under "
        "the data dir; default: $RAG_ASSETS_POSTGRES_URL",
    )
    where.add_argument(
        "--instance-postgres-file",
        metavar="FILE",
        help="the same URL, password included, read from a file only you can read",
    )


def add_models(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--models",
        metavar="LIST",
        help=f"the embedding models to materialise and compare, comma-separated ({', '.join(PACKAGED)}): "
        f"each has its own partitions of embeddings and HNSW graphs; the first is the one `ask` serves from; "
        f"default: $RAG_ASSETS_MODELS, else chosen from the corpus's languages ({DEFAULT_EMBEDDER} for English, "
        f"{MULTILINGUAL_EMBEDDER} otherwise, both for a mixed corpus)",
    )


def add_embedder(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embedder",
        choices=list(PACKAGED),
        help="the embedding model to answer with (its embeddings must be materialised: `run --models`): "
        + "; ".join(f"{k} ({v.about})" for k, v in PACKAGED.items())
        + f"; default: the first of $RAG_ASSETS_MODELS, else the one the last run embedded with (models.json), "
        f"else {DEFAULT_EMBEDDER}",
    )


def add_compute(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        help="where the heavy work runs: local (this process) or ray (extraction and query batches as Ray "
        "tasks, embeddings by a pool of Ray workers; the same results); default: $RAG_ASSETS_ENGINE, else local",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster for --engine ray: auto, host:port or ray://host:port (default: "
        "$RAG_ASSETS_RAY_ADDRESS, else a cluster started for the run)",
    )


def add_generator(p: argparse.ArgumentParser, help: str | None = None, endpoint: bool = True) -> None:
    p.add_argument(
        "--generator",
        type=model_path,
        metavar="PATH",
        help=help or "a .gguf file or model folder (default: packaged SmolLM2-135M-Instruct)",
    )
    if endpoint:
        _add_endpoint(
            p,
            "generator",
            "answer through an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server, `rag-assets "
            "serve-model`) at this API base, e.g. http://127.0.0.1:8000/v1",
            environment.GENERATOR_KEY,
        )
        p.add_argument(
            "--generator-timeout",
            type=seconds(0.1, 3600),
            metavar="S",
            help="seconds a reply of --generator-url may take, whole (default: 120)",
        )


def add_judge(p: argparse.ArgumentParser) -> None:
    _add_endpoint(
        p,
        "judge",
        "also ask the model at this OpenAI-compatible API base whether the passages each answer sentence "
        "cites entail it (recorded beside the rule check, never replacing it)",
        environment.JUDGE_KEY,
    )


def _add_endpoint(p: argparse.ArgumentParser, role: str, does: str, key_variable: str) -> None:
    """`--ROLE-url` and `--ROLE-model`: an OpenAI-compatible endpoint, and its model's name there."""
    p.add_argument(
        f"--{role}-url", type=endpoint_url, metavar="URL", help=f"{does}; its key, if any, from ${key_variable}"
    )
    p.add_argument(f"--{role}-model", metavar="NAME", help=f"the model's name on --{role}-url")


def answerers_help() -> str:
    return f"comma-separated from {', '.join(ANSWERERS)}"


# --- the door: arguments, the environment's defaults and the data dir's record, as Settings ----


def dataset_of(args: argparse.Namespace):
    """The dataset the command works on: `--dataset`, else the one the data dir was built from,
    else the bundled corpus (see dataset_record); checked to be a dataset."""
    from rag_assets.app import dataset_record
    from rag_assets.ingest.dataset import Dataset
    from rag_assets.layout import DataDir

    with refusing(FileNotFoundError, dataset_record.DatasetMismatch):
        chosen = dataset_record.choose(DataDir(args.data_dir), args.dataset, getattr(args, "switch_dataset", False))
        return Dataset(chosen).check()


def experiment_of(root: Path, named: str | None, data_dir=None):
    """The experiment file beside the documents (or the one `named`), read and checked: its path and
    the experiment; a one-line refusal when there is none or it does not hold, whose `init` command
    writes it where it was looked for (for the dataset `root` and the data dir the command was given)."""
    from rag_assets.experiment import spec

    path = spec.find(root, named or None)
    init = f"rag-assets init --dataset {quote(str(root))}" + (f" --data-dir {quote(str(data_dir))}" if data_dir else "")
    if path is None:
        raise CommandError(
            f"no experiment file: {root / spec.FILE_NAME} does not exist; write one with "
            f"`{init}` or name one with --experiment FILE"
        )
    if not path.exists() and not path.is_symlink():
        raise CommandError(f"{path}: no such experiment file; write one with `{init} --out {quote(str(path))}`")
    with refusing(spec.ExperimentError, ValueError):
        return path, spec.load(path)


def settings_of(args: argparse.Namespace, dataset, served: bool = False, **given) -> Settings:
    """The command's Settings: the $RAG_ASSETS_* defaults, then (`served`: for `ask` and `serve`) the
    configuration `rag-assets use` chose for the data dir, then what its options name (and
    `given`); refused in one line when they cannot work. The instance's URL is checked to answer."""
    from rag_assets.app.instance import postgres_url
    from rag_assets.layout import DataDir

    from_options = {
        "data_dir": args.data_dir,
        "dataset": str(dataset.root),
        "models": getattr(args, "models", None) or getattr(args, "embedder", None),
        "engine": getattr(args, "engine", None),
        "ray_address": getattr(args, "ray_address", None),
        "generator": getattr(args, "generator", None),
        "generator_url": getattr(args, "generator_url", None),
        "generator_model": getattr(args, "generator_model", None),
        "generator_timeout_s": getattr(args, "generator_timeout", None),
        "judge_url": getattr(args, "judge_url", None),
        "judge_model": getattr(args, "judge_model", None),
    }
    from rag_assets import environment

    with refusing(ValueError):
        postgres = postgres_url(_instance_url(args))
        environ = environment.for_child(**{environment.SETTINGS_FILE: ""})
        defaults = Settings.from_environment(environ)
        chosen = {}
        if served:
            from rag_assets.app import served_choice

            chosen = served_choice.read(DataDir(args.data_dir))
            defaults = defaults.replace(**chosen)
        named = (  # in the order they override each other
            ("--models" if getattr(args, "models", None) else "--embedder" if getattr(args, "embedder", None) else "")
            or ("`rag-assets use`" if "models" in chosen else "")
            or ("$RAG_ASSETS_MODELS" if "models" in environment.settings_values(environ) else "")
        )
        if named:
            defaults = defaults.replace(model_choice=f"named by {named}")
        else:  # the models the last run chose for the corpus's languages (corpus_models)
            from rag_assets.app import corpus_models

            defaults = defaults.replace(**corpus_models.read(DataDir(args.data_dir)))
        settings = defaults.replace(**from_options, **given, postgres=postgres)
    installed(settings.model_names)
    return settings


def installed(models: list[str]) -> None:
    """Every packaged model the command loads is installed; refused with the command that installs it."""
    from rag_assets.retrieval.packaged import missing

    for model in models:
        if why := missing(model):
            raise CommandError(why)


def _instance_url(args: argparse.Namespace) -> str | None:
    """The instance's URL from the options: on the command line without a password (the process
    list shows every argument to every user), or read from a private file."""
    from urllib.parse import urlsplit

    given, file = getattr(args, "instance_postgres", None), getattr(args, "instance_postgres_file", None)
    if given:
        try:
            with_password = urlsplit(given).password is not None
        except ValueError:
            with_password = False
        if with_password:
            raise CommandError(
                "--instance-postgres holds a password, which every user of this machine can read in the process "
                "list: put the URL in $RAG_ASSETS_POSTGRES_URL or in a file only you read (--instance-postgres-file)"
            )
        return given
    if file:
        path = Path(file).expanduser()
        try:
            if not path.is_file():
                raise ValueError(f"{path} is not a file")
            if path.stat().st_mode & 0o077:
                raise ValueError(f"{path} can be read by others (chmod 600 it)")
            if path.stat().st_size > 4096:
                raise ValueError(f"{path} is larger than a URL")
            return path.read_text(encoding="utf-8").strip()
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise CommandError(f"--instance-postgres-file: {exc}") from None
    return None


def check_compute(settings: Settings) -> None:
    """Ray installed and its cluster reachable, when the settings ask for it (`run`, `ui`)."""
    if settings.engine != "ray":
        return
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise CommandError("--engine ray needs Ray: pip install -e '.[ray]'")
    if settings.ray_address:
        from rag_assets.retrieval.ray_engine import check_reachable

        with refusing(ConnectionError):
            check_reachable(settings.ray_address)


def checked_endpoint(settings: Settings):
    """The OpenAI-compatible endpoint the settings name, checked to answer: refused in one line,
    before anything starts, when it cannot."""
    from rag_assets.answering.endpoint import EndpointLM, EndpointUnavailable

    lm = EndpointLM(
        settings.generator_url, settings.generator_model, settings.max_new_tokens, settings.generator_timeout_s
    )
    with refusing(EndpointUnavailable):
        lm.check()
    return lm


def checked_judge(settings: Settings):
    """The judge the settings name, checked to answer (refused in one line when it cannot); None
    when none is named."""
    if not settings.judge_url:
        return None
    from rag_assets.answering.endpoint import EndpointUnavailable
    from rag_assets.answering.judge import Judge

    judge = Judge(settings.judge_url, settings.judge_model, settings.generator_timeout_s)
    with refusing(EndpointUnavailable):
        judge.check()
    return judge


def writable(data_dir) -> None:
    """Refuse a data dir this process cannot create or write (a file, /proc, /dev/full, a
    read-only folder) before anything starts, in one line."""
    from rag_assets.layout import DataDir

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


def sweep_leftovers(data_dir) -> None:
    from rag_assets import storage
    from rag_assets.layout import DataDir

    removed = storage.sweep_leftovers(DataDir(data_dir).root)
    if removed:
        print(f"removed {len(removed)} leftovers of killed writers: {', '.join(removed[:5])}")
