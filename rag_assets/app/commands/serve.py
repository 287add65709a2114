"""`rag-assets serve` (answers over HTTP for callers known by their API key) and `rag-assets
serve-model` (the generator behind the OpenAI-compatible protocol)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rag_assets import environment
from rag_assets.app.options import (
    CommandError,
    add_data_dir,
    add_dataset,
    add_embedder,
    add_generator,
    add_instance,
    add_judge,
    checked_judge,
    dataset_of,
    free_port,
    port,
    refusing,
    seconds,
    settings_of,
    whole,
)
from rag_assets.settings import Settings

WORKER_FILE = environment.SERVE_FILE  # the path (only) of the file `serve --workers N` hands each worker


def add(sub) -> None:
    from rag_assets.catalog import STRATEGIES

    serve = sub.add_parser("serve", help="answer over HTTP (POST /v1/ask) for callers known by their API key")
    add_dataset(serve)
    add_data_dir(serve)
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)"
    )
    serve.add_argument("--port", type=port, default=8080)
    serve.add_argument("--keys", help="the keys file (`rag-assets keys add`; default: keys.json in the data dir)")
    serve.add_argument("--strategy", choices=list(STRATEGIES), help="the default strategy (default: the serving one)")
    serve.add_argument("--answerers", default="extractive,generate", help="answerers offered (default: both)")
    serve.add_argument("--workers", type=whole(1, 64), default=1, help="server processes on the port (default: 1)")
    serve.add_argument(
        "--generating",
        type=whole(1, 64),
        default=1,
        help="expensive answers (generated, or reranked) at once, per worker (default: 1)",
    )
    serve.add_argument(
        "--queue",
        type=whole(0, 10_000),
        default=8,
        help="expensive answers waiting for a slot; beyond: 429 (default: 8; 0: none wait)",
    )
    serve.add_argument(
        "--timeout", type=seconds(0.1, 3600), default=120.0, help="seconds a request may take (default: 120)"
    )
    serve.add_argument(
        "--check-every",
        type=seconds(0.1, 3600),
        default=5.0,
        help="seconds between freshness checks (default: 5)",
    )
    serve.add_argument("--log-text", action="store_true", help="also log questions and answers (off: ids only)")
    add_generator(serve, endpoint=False)
    add_judge(serve)
    add_embedder(serve)
    add_instance(serve)
    serve.set_defaults(func=command)

    model = sub.add_parser(
        "serve-model", help="serve the generator through the OpenAI-compatible protocol (/v1/chat/completions)"
    )
    add_generator(model, endpoint=False)
    model.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)"
    )
    model.add_argument("--port", type=port, default=8000)
    model.add_argument("--name", default="smollm2-135m-instruct", help="the model's name in the API")
    model.add_argument(
        "--keys",
        help="a keys file (`rag-assets keys add`): every request needs one of its keys; without it, "
        "serve-model listens on loopback only",
    )
    model.add_argument(
        "--queue", type=whole(0, 10_000), default=8, help="requests waiting for the model; beyond: 429 (default: 8)"
    )
    model.add_argument(
        "--timeout", type=seconds(0.1, 3600), default=300.0, help="seconds a request may take (default: 300)"
    )
    model.set_defaults(func=serve_model)


@dataclass(frozen=True)
class Serving:
    """What `serve` was told: its Settings, and how it listens and admits requests."""

    settings: Settings
    keys: str
    answerers: list[str]
    strategy: str | None
    host: str
    port: int
    workers: int
    generating: int
    queue: int
    timeout: float
    check_every: float
    log_text: bool


def command(args: argparse.Namespace) -> int:
    """Answers until interrupted. With `--workers N`, uvicorn runs N processes on the one port,
    each loading its own models and index from the file this process hands them."""
    from rag_assets.app.keys import KeyRing, KeysFileError
    from rag_assets.app.serving import lab_or_chosen
    from rag_assets.catalog import answerer_names
    from rag_assets.layout import DataDir

    settings = settings_of(args, dataset_of(args), served=True, experiment="")
    settings = lab_or_chosen(settings, args.strategy, args.embedder, None)
    free_port(args.host, args.port)
    checked_judge(settings)  # refused here, in one line, rather than in every worker
    keys = Path(args.keys) if args.keys else DataDir(settings.data_dir).root / "keys.json"
    with refusing(KeysFileError, ValueError):  # refused here, in one line, rather than in every worker
        KeyRing.load(keys)
        answerers = answerer_names(args.answerers)
    listed = ("strategy", "host", "port", "workers", "generating", "queue", "timeout", "check_every", "log_text")
    serving = Serving(settings, str(keys), answerers, **{name: getattr(args, name) for name in listed})
    import uvicorn

    if serving.workers == 1:
        uvicorn.run(app(serving), host=serving.host, port=serving.port, log_level="warning")
        return 0
    with tempfile.TemporaryDirectory(prefix="rag-assets-serve-") as folder:  # this user's only; gone at exit
        handed = Path(folder) / "serving.json"
        handed.touch(mode=0o600)
        values = dataclasses.asdict(serving)  # with the instance's URL: a file only this user reads
        handed.write_text(json.dumps(values))
        environment.drop(environment.POSTGRES_URL)  # the workers read the URL from the file, never inherit it
        environment.put(WORKER_FILE, str(handed))  # inherited by the workers uvicorn starts: a path, no secret
        uvicorn.run(
            "rag_assets.app.commands.serve:worker_app",
            factory=True,
            workers=serving.workers,
            host=serving.host,
            port=serving.port,
            log_level="warning",
        )
    return 0


_SERVED = contextlib.ExitStack()  # a worker's instance, open for as long as it serves


def worker_app():
    """The app of one `serve --workers N` worker, from the file its supervisor handed it."""
    values = json.loads(Path(environment.value(WORKER_FILE)).read_text())
    return app(Serving(**{**values, "settings": Settings(**values["settings"])}))


def app(serving: Serving):
    """Load the keys, the instance, the models and the serving strategy's index; the app over them."""
    import logging
    import logging.handlers
    import queue

    from rag_assets.app.keys import KeyRing
    from rag_assets.app.service import Service, ServiceSettings, build_app
    from rag_assets.app.serving import IndexNotReady, local_generator, opened
    from rag_assets.retrieval import embedders

    lines: queue.SimpleQueue = queue.SimpleQueue()  # log lines written by a thread of their own, off the event loop
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[logging.handlers.QueueHandler(lines)])
    logging.handlers.QueueListener(lines, logging.StreamHandler(sys.stderr)).start()
    for name in ("rag_assets.serve", "rag_assets.answering.answerer"):  # JSON lines: ids, ranks, timings
        logging.getLogger(name).setLevel(logging.INFO)
    keys = KeyRing.load(Path(serving.keys))
    with refusing(IndexNotReady, ValueError):
        served = _SERVED.enter_context(opened(serving.settings))
    embedder = embedders.packaged(serving.settings.served_model)
    embedder.encode(["warm-up"])
    lm = local_generator(serving.settings)
    if "generate" in serving.answerers:
        import torch

        # the workers share the cores: torch's own thread pool per worker, sized for its share, or
        # two decoders on two cores each spin four threads and every answer takes ten times as long
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // serving.workers))
        from rag_assets.app.model_server import loaded

        with refusing(FileNotFoundError, ValueError):
            loaded(lm)
    limits = ServiceSettings(
        serving.generating, serving.queue, serving.timeout, serving.check_every, log_text=serving.log_text
    )
    service = Service(served, embedder, lm, limits, serving.answerers, checked_judge(serving.settings))
    service.default_strategy = serving.strategy or served.default_strategy()
    service.refresh(service.default_strategy)
    for problem in service.problems.get(service.default_strategy, []):
        print(f"rag-assets serve: not ready: {problem}", file=sys.stderr)
    print(
        f"rag-assets serve (pid {os.getpid()}): {served.layout.root}, strategy {service.default_strategy}, answerers "
        f"{', '.join(serving.answerers)}, {len(keys.entries)} keys; "
        f"http://{serving.host}:{serving.port}/v1/ask (OpenAPI at /docs)",
        flush=True,
    )
    return build_app(service, keys)


def serve_model(args: argparse.Namespace) -> int:
    """The generator behind an OpenAI-compatible endpoint, until interrupted."""
    from rag_assets.app import model_server
    from rag_assets.app.keys import KeyRing, KeysFileError

    keys = None
    if args.keys:
        with refusing(KeysFileError):
            keys = KeyRing.load(Path(args.keys))
    elif args.host not in model_server.LOOPBACK:
        raise CommandError(
            f"serve-model answers anyone who reaches {args.host}: give --keys FILE, or listen on 127.0.0.1"
        )
    free_port(args.host, args.port)
    from rag_assets.answering.generation import LocalLM

    with refusing(FileNotFoundError, ValueError):
        lm = model_server.loaded(LocalLM(args.generator or "", answer_prefix=""))
    model_server.serve(lm, args.host, args.port, args.name, keys, args.queue, args.timeout)
    return 0
