"""`rag-assets serve`: answers over HTTP, with the guarantees `ask` has, to callers known by their key.

- **Who is asking** comes from the API key (`Authorization: Bearer KEY`, looked up in the keys
  file: rag_assets.app.keys), never from the request: the body has no tenant field (one sent is
  ignored) and no header names one.
- **Loaded once.** The embedding model, the generator and the serving strategy's index are loaded
  before `/readyz` says ready; another strategy's index is loaded on its first request.
- **Fresh, or refused.** Every `check_s` seconds a watcher runs `ask`'s checks (Dagster's stale
  verdict, the source versions, the blocking checks). A problem makes `/readyz` and `/v1/ask`
  answer 503 with `ask`'s one-line reason (`/healthz` stays 200: the process is alive). A newer
  materialisation that passes them is loaded beside the old one and swapped in with one
  assignment: a request holds the index it started with to its end, so none is dropped and none
  sees half of two. A strategy asked for before it was materialised is checked with the others, and
  served once it is, without a restart.
- **One gate for everything expensive.** A request that calls a model (generates, reranks with the
  generator or a cross-encoder, or is judged) passes one admission gate: at most `generating` at once,
  `queue` more wait; beyond that 429 with Retry-After. A request that waits longer than `timeout_s`
  gets 504, and one whose client went away leaves the queue; one that runs past it gets 504 and keeps
  its slot until its work ends. Without a judge, the extractive answerer over the plain retrievers
  runs on its own threads, never behind that gate. The generator is loaded only when `generate` is
  offered, and a request for the LLM reranker is refused (400) by a service that does not run it.
- **A bad request is a 4xx in one line**, naming the field, never echoing it; an error of ours is a
  500 that names the request id and the error's type, and logs no text.
- **Logs** carry request ids, chunk ids, ranks and timings; never document text, questions or keys
  (`log_text` turns questions and answers on, for an operator).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rag_assets.app import serving
from rag_assets.app.instance import described
from rag_assets.app.keys import KeyRing
from rag_assets.app.serving import IndexNotReady, Served
from rag_assets.catalog import DEFAULT_ANSWERER, RETRIEVERS, STRATEGIES
from rag_assets.ingest.access import describe_viewer

log = logging.getLogger("rag_assets.serve")
MAX_BODY = 64 * 1024  # bytes of a request body; a question is at most MAX_QUESTION characters
MAX_QUESTION = 4000
ID_PREFIX, REQUEST_NUMBERS = secrets.token_hex(4), itertools.count(1)  # request ids: unique, no syscall each


class AskRequest(BaseModel):
    """What a caller may choose. Who they are is their key's business, not the body's."""

    model_config = ConfigDict(extra="ignore", strict=True)
    question: str = Field(min_length=1, max_length=MAX_QUESTION)
    strategy: str | None = Field(None, max_length=16)
    retriever: str | None = Field(None, max_length=16)  # None: the service's (`rag-assets use`, else hybrid)
    answerer: str = Field(DEFAULT_ANSWERER, max_length=16)

    @field_validator("question")
    @classmethod
    def _text(cls, question: str) -> str:
        return checked_text(question, "question")


def checked_text(text: str, what: str) -> str:
    """Text a person could have written: valid UTF-8 (a lone surrogate is not) and not blank."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"the {what} is not valid UTF-8 text") from None
    if not text.strip():
        raise ValueError(f"the {what} is blank")
    return text


def refusals(app: FastAPI) -> None:
    """A bad request answered 422 in one line that names the field and never echoes it (an echo of
    NaN or a lone surrogate cannot even be written as JSON)."""

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError):
        error = (exc.errors() or [{}])[0]
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "the body"
        message = str(error.get("msg", "not valid")).removeprefix("Value error, ")
        return JSONResponse({"detail": f"{where}: {message}"}, status_code=422)


class Contained:
    """Any error of ours a 500 that names its type and a failure id, logged as that (never a
    traceback, whose message may quote the request): plain ASGI, outermost, so nothing reaches the
    server's own error log."""

    def __init__(self, app, log: logging.Logger):
        self.app, self.log = app, log

    async def __call__(self, scope, receive, send):
        started = False

        async def sending(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            failure = secrets.token_hex(4)
            path = scope.get("path", "")
            self.log.error(
                json.dumps({"event": "error", "failure": failure, "path": path, "error": type(exc).__name__})
            )
            if scope["type"] == "http" and not started:
                detail = {"detail": f"internal error: {type(exc).__name__} (failure {failure})"}
                await JSONResponse(detail, status_code=500)(scope, receive, send)


@dataclass
class ServiceSettings:
    generating: int = 1  # answers decoding at once
    queue: int = 8  # answers waiting for a decoding slot; beyond: 429
    timeout_s: float = 120.0
    check_s: float = 5.0  # how often the index's freshness is checked
    extractive_threads: int = 2
    log_text: bool = False


@dataclass
class Loaded:
    """One strategy's index as loaded at one moment: what a request answers from, whole."""

    strategy: str
    version: tuple
    index: object
    chunks: object
    answerers: dict = field(default_factory=dict)  # (answerer, retriever) -> Answerer, made on first use


class BodyLimit:
    """413 for a body over `limit` bytes (by its Content-Length, which the HTTP parser holds the
    client to), 411 for a POST without one: refused before a byte of it is read. Plain ASGI,
    not a BaseHTTPMiddleware, which costs every request a task and a stream."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length")
            status, detail = None, None
            if length is not None and (not length.isdigit() or int(length) > self.limit):
                status, detail = 413, f"the request body is over {self.limit} bytes"
            elif length is None and scope["method"] == "POST":
                status, detail = 411, "a request body needs its Content-Length"
            if status:
                await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Busy(Exception):
    def __init__(self, retry_after: int):
        self.retry_after = retry_after


class Admission:
    """`slots` answers at once, `queue` waiting; a request beyond that is refused at once."""

    def __init__(self, slots: int, queue: int):
        self.slots, self.limit = asyncio.Semaphore(slots), slots + queue
        self.inside, self.n = 0, slots
        self.mean_s = 2.0  # seconds per answer, updated as answers come: the Retry-After estimate

    async def enter(self, request: Request, timeout_s: float) -> None:
        if self.inside >= self.limit:
            raise Busy(max(1, math.ceil(self.mean_s * (self.inside - self.n + 1) / self.n)))
        self.inside += 1
        try:
            acquire = asyncio.ensure_future(self.slots.acquire())
            deadline = time.monotonic() + timeout_s
            while not acquire.done():
                await asyncio.wait({acquire}, timeout=0.25)
                if not acquire.done() and (await request.is_disconnected() or time.monotonic() > deadline):
                    acquire.cancel()
                    gone = await request.is_disconnected()
                    raise HTTPException(499 if gone else 504, "client went away" if gone else "timed out waiting")
        except BaseException:
            self.inside -= 1
            raise

    def leave(self, seconds: float) -> None:
        self.mean_s = 0.8 * self.mean_s + 0.2 * seconds
        self.slots.release()
        self.inside -= 1

    async def run(self, executor, work, timeout_s: float):
        """`work()` on `executor`, once `enter` admitted it: 504 past `timeout_s`, but the slot is left
        when the work ends, not at the 504 (a thread cannot be stopped: work that goes on computing
        holds its slot, so what comes next waits or gets 429 instead of piling up behind it)."""
        t0 = time.perf_counter()
        running = asyncio.get_running_loop().run_in_executor(executor, work)

        def ended(done: asyncio.Future) -> None:
            if not done.cancelled():
                done.exception()  # retrieved: an error after a 504 has no one to go to
            self.leave(time.perf_counter() - t0)

        running.add_done_callback(ended)
        try:
            return await asyncio.wait_for(asyncio.shield(running), timeout_s)
        except TimeoutError:
            raise HTTPException(504, f"no answer within {timeout_s:g} s") from None


class Service:
    """The loaded state behind the app: the data dir's served indexes, the models, and the
    indexes loaded with their freshness."""

    def __init__(self, served: Served, embedder, lm, settings: ServiceSettings, answerers: list[str], judge=None):
        self.served, self.embedder, self.lm, self.judge = served, embedder, lm, judge
        self.settings, self.answerer_names = settings, answerers
        self.loaded: dict[str, Loaded] = {}
        self.problems: dict[str, list[str]] = {}
        self.lock = threading.Lock()  # one loader at a time
        self.default_strategy: str | None = None

    def refresh(self, strategy: str) -> None:
        """Check the strategy's index as `ask` does; load a newer fresh one and swap it in."""
        with self.lock:
            try:
                version = self.served.version(strategy)
                current = self.loaded.get(strategy)
                if current is not None and current.version == version:
                    problems = self.served.problems(strategy)
                    if problems:
                        raise self.served.not_ready(strategy, problems)
                    self.problems.pop(strategy, None)
                    return
                index, chunks = self.served.load(strategy, self.embedder.identity)
                self.loaded[strategy] = Loaded(strategy, version, index, chunks)  # one assignment: the swap
                self.problems.pop(strategy, None)
                log.info(json.dumps({"event": "loaded", "strategy": strategy, "version": list(version)}))
            except IndexNotReady as exc:
                self.problems[strategy] = [str(exc)]
            except Exception as exc:  # the data dir unreadable, the database gone: not ready, say why (no SQL)
                self.problems[strategy] = [f"cannot check the index of strategy {strategy}: {described(exc)}"]

    def answerer(self, loaded: Loaded, name: str, retriever: str):
        key = (name, retriever)
        if key not in loaded.answerers:
            loaded.answerers[key] = serving.answerer(
                self.served.settings,
                loaded.index,
                loaded.chunks,
                self.embedder,
                self.lm,
                name,
                retriever,
                judge=self.judge,
            )
        return loaded.answerers[key]


def build_app(service: Service, keys: KeyRing) -> FastAPI:
    settings = service.settings
    gate = Admission(settings.generating, settings.queue)  # asyncio binds it to the server's loop on first use
    extractive_pool = ThreadPoolExecutor(settings.extractive_threads, thread_name_prefix="extractive")
    generate_pool = ThreadPoolExecutor(settings.generating, thread_name_prefix="generate")

    async def watch() -> None:
        while True:
            await asyncio.sleep(settings.check_s)
            # the loaded ones, and the ones asked for that could not be: one materialised since is loaded
            for strategy in dict.fromkeys([service.default_strategy, *service.loaded, *service.problems]):
                await asyncio.get_running_loop().run_in_executor(None, service.refresh, strategy)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        watcher = asyncio.create_task(watch())
        yield
        watcher.cancel()
        extractive_pool.shutdown(wait=False, cancel_futures=True)
        generate_pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="rag-assets",
        version="1",
        description="Answers with checked citations from a materialised rag-assets data dir, for the tenant of "
        "the caller's API key.",
        lifespan=lifespan,
    )

    app.add_middleware(BodyLimit, limit=MAX_BODY)
    app.add_middleware(Contained, log=log)
    refusals(app)

    @app.get("/healthz")
    def healthz() -> dict:
        """Liveness: the process answers."""
        return {"status": "alive"}

    @app.get("/readyz")
    def readyz():
        """Readiness: the serving strategy's index is loaded, fresh, and passed its checks."""
        strategy = service.default_strategy
        problems = service.problems.get(strategy) or ([] if strategy in service.loaded else ["not loaded yet"])
        if problems:
            return JSONResponse({"status": "not ready", "strategy": strategy, "problems": problems}, status_code=503)
        loaded = service.loaded[strategy]
        return {"status": "ready", "strategy": strategy, "version": list(loaded.version)}

    @app.post("/v1/ask")
    async def ask(body: AskRequest, request: Request):
        """Answer the question for the caller's tenant: the JSON `rag-assets ask --json` prints."""
        request_id = f"{ID_PREFIX}-{next(REQUEST_NUMBERS):08x}"
        started = time.perf_counter()
        scheme, _, presented = (request.headers.get("authorization") or "").partition(" ")
        caller = keys.caller(presented.strip() if scheme.lower() == "bearer" else None)
        if caller is None:
            raise HTTPException(401, "no valid API key (Authorization: Bearer KEY)", {"WWW-Authenticate": "Bearer"})
        if body.answerer not in service.answerer_names:
            raise HTTPException(400, f"unknown answerer {body.answerer!r}; this service has {service.answerer_names}")
        retriever = body.retriever or service.served.settings.retriever
        if retriever not in RETRIEVERS:
            raise HTTPException(400, f"unknown retriever {retriever!r}; choose from {', '.join(RETRIEVERS)}")
        if retriever == "rerank-llm" and "generate" not in service.answerer_names:
            raise HTTPException(
                400, "this service does not run the generator (--answerers has no generate): rerank-llm needs it"
            )
        strategy = body.strategy or service.default_strategy
        if strategy not in service.loaded and strategy not in service.problems:
            if strategy not in STRATEGIES:
                raise HTTPException(400, f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
            await asyncio.get_running_loop().run_in_executor(None, service.refresh, strategy)
        if service.problems.get(strategy):
            raise HTTPException(503, service.problems[strategy][0])
        loaded = service.loaded[strategy]  # this request answers from this index to its end
        try:
            answerer = service.answerer(loaded, body.answerer, retriever).for_viewer(caller.viewer)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        loop = asyncio.get_running_loop()
        if body.answerer == "generate" or retriever.startswith("rerank") or service.judge is not None:
            try:  # the ones that call a model (the judge too): one gate
                await gate.enter(request, settings.timeout_s)
            except Busy as busy:
                raise HTTPException(
                    429,
                    "too many answers generating, reranking, judged or waiting: retry later",
                    {"Retry-After": str(busy.retry_after)},
                ) from None
            answer = await gate.run(generate_pool, lambda: answerer.ask(body.question), settings.timeout_s)
        else:
            answer = await loop.run_in_executor(extractive_pool, answerer.ask, body.question)
        out = await loop.run_in_executor(extractive_pool, answer.as_dict)
        event = {
            "event": "answered",
            "request_id": request_id,
            "key": caller.key_id,
            "viewer": describe_viewer(caller.viewer),
            "strategy": strategy,
            "version": list(loaded.version),
            "answerer": body.answerer,
            "retriever": retriever,
            "refused": answer.refused,
            "supported": answer.supported,
            "sources": [[s.index, s.chunk_id] for s in answer.sources],
            "cited": [c.chunk_id for c in answer.citations],
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
        if settings.log_text:
            event.update(question=body.question, answer=answer.answer)
        log.info(json.dumps(event))
        # already JSON types: returned as they are, not walked again by FastAPI's encoder
        return JSONResponse({**out, "request_id": request_id, "index_version": list(loaded.version)})

    return app
