"""`rag-assets serve-model`: a local generator behind the OpenAI-compatible protocol.

The subset vLLM, Ollama and llama.cpp's server share, non-streaming: `GET /v1/models` and
`POST /v1/chat/completions` (messages through the model's own chat template, greedy decoding,
`max_tokens`, `usage` with the real token counts). One model process serves many `ask`s and
runs; answers are decoded one request at a time. A prompt longer than the model's context
window is refused with 400, as vLLM does.

`POST /v1/rerank` (and `/rerank`) serves the LLM reranker in the Cohere / infinity request shape
(`{model, query, documents, top_n}` -> `results` of `{index, relevance_score}`): the score is the
log-odds of "yes" over "no" as the model's first answer to "does the passage answer the query?",
exactly what `rerank-llm` computes in process. No packaged cross-encoder exists, so this is how an
experiment's `/rerank` endpoint is tested against a real server.

Bounded as `serve` is: with a keys file every route needs a key (the same keys as `serve`);
without one it listens on loopback only. A body is at most MAX_BODY bytes, a prompt at most the
model's window, a rerank at most MAX_DOCUMENTS passages; chat and rerank pass one admission gate
(one decoding at a time, `queue` waiting, beyond that 429; `timeout_s`, then 504, the slot held
until the decoding that timed out ends); a bad request is
a 422 in one line that never echoes it, an error of ours a 500 that logs no text.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rag_assets.answering.generation import LocalLM
from rag_assets.app.keys import KeyRing
from rag_assets.app.service import Admission, BodyLimit, Busy, Contained, checked_text, refusals
from rag_assets.retrieval.rerank import RELEVANCE_PROMPT, LLMRelevanceReranker

DEFAULT_NAME = "smollm2-135m-instruct"
MAX_TOKENS_CAP = 1024
MAX_BODY = 512 * 1024  # bytes of a request: a prompt longer than the model's window is refused anyway
MAX_DOCUMENTS = 100
MAX_TEXT = 32_000  # characters of one message, query or passage
LOOPBACK = ("127.0.0.1", "::1", "localhost")
log = logging.getLogger("rag_assets.serve_model")


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class Message(_Strict):
    role: str = Field(max_length=32)
    content: str = Field(max_length=MAX_TEXT)

    @field_validator("content")
    @classmethod
    def _text(cls, content: str) -> str:
        return checked_text(content, "message")


class ChatRequest(_Strict):
    model: str = Field(max_length=200)
    messages: list[Message] = Field(min_length=1, max_length=64)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS_CAP)
    temperature: float | None = Field(default=None, allow_inf_nan=False)  # decoding is greedy whatever is asked


class RerankRequest(_Strict):
    model: str | None = Field(None, max_length=200)
    query: str = Field(min_length=1, max_length=MAX_TEXT)
    documents: list[str] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    top_n: int | None = Field(default=None, ge=1)
    return_documents: bool = False

    @field_validator("query")
    @classmethod
    def _query(cls, query: str) -> str:
        return checked_text(query, "query")

    @field_validator("documents")
    @classmethod
    def _documents(cls, documents: list[str]) -> list[str]:
        for d in documents:
            if len(d) > MAX_TEXT:
                raise ValueError(f"a document is at most {MAX_TEXT:,} characters")
            checked_text(d + ".", "document")  # an empty passage is a passage; a lone surrogate is not text
        return documents


def build_app(
    lm: LocalLM,
    name: str = DEFAULT_NAME,
    keys: KeyRing | None = None,
    queue: int = 8,
    timeout_s: float = 300.0,
) -> FastAPI:
    app = FastAPI(title="rag-assets model server", version="1")
    app.add_middleware(BodyLimit, limit=MAX_BODY)
    app.add_middleware(Contained, log=log)
    refusals(app)
    decoding = threading.Lock()  # one model, one answer at a time
    gate = Admission(1, queue)

    def caller(request: Request) -> None:
        if keys is None:
            return
        scheme, _, presented = (request.headers.get("authorization") or "").partition(" ")
        if keys.caller(presented.strip() if scheme.lower() == "bearer" else None) is None:
            raise HTTPException(401, "no valid API key (Authorization: Bearer KEY)", {"WWW-Authenticate": "Bearer"})

    async def admitted(request: Request, work):
        """`work()` run past the gate, within the deadline."""
        try:
            await gate.enter(request, timeout_s)
        except Busy as busy:
            raise HTTPException(429, "the model is busy: retry later", {"Retry-After": str(busy.retry_after)}) from None
        return await gate.run(None, work, timeout_s)

    @app.get("/v1/models", dependencies=[Depends(caller)])
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": lm.identity}]}

    @app.post("/v1/chat/completions", dependencies=[Depends(caller)])
    async def chat(request: ChatRequest, raw: Request) -> dict:
        return await admitted(raw, lambda: _chat(request))

    def _chat(request: ChatRequest) -> dict:
        if request.model != name:
            raise HTTPException(404, f"model {request.model!r} not found; this server serves {name!r}")
        messages = [m.model_dump() for m in request.messages]
        ids = list(
            lm.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)[
                "input_ids"
            ]
        )
        window = lm.model.config.max_position_embeddings
        wanted = min(request.max_tokens or lm.max_new_tokens, MAX_TOKENS_CAP)
        if len(ids) >= window:
            raise HTTPException(
                400, f"this model's maximum context length is {window} tokens; the prompt has {len(ids)}"
            )
        decoder = lm.with_decoding(min(wanted, window - len(ids)), "")
        with decoding:
            (generation,) = decoder.generate_ids([ids])
        finish = "length" if generation.new_tokens >= decoder.max_new_tokens else "stop"
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": generation.text}, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": len(ids),
                "completion_tokens": generation.new_tokens,
                "total_tokens": len(ids) + generation.new_tokens,
            },
        }

    @app.post("/v1/rerank", dependencies=[Depends(caller)])
    @app.post("/rerank", dependencies=[Depends(caller)])
    async def rerank(request: RerankRequest, raw: Request) -> dict:
        return await admitted(raw, lambda: _rerank(request))

    def _rerank(request: RerankRequest) -> dict:
        if request.model not in (None, name):
            raise HTTPException(404, f"model {request.model!r} not found; this server serves {name!r}")
        reranker = LLMRelevanceReranker(lm, len(request.documents))
        with decoding:
            scores = reranker.score(request.query, request.documents)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[: request.top_n]
        tokens = sum(
            len(lm.prompt_ids(RELEVANCE_PROMPT.format(passage=d, query=request.query))) for d in request.documents
        )
        results = [
            {
                "index": i,
                "relevance_score": float(scores[i]),
                **({"document": {"text": request.documents[i]}} if request.return_documents else {}),
            }
            for i in order
        ]
        return {
            "id": f"rerank-{uuid.uuid4().hex}",
            "model": name,
            "results": results,
            "usage": {"total_tokens": tokens},
        }

    return app


def loaded(lm: LocalLM) -> LocalLM:
    """`lm` with its weights loaded (ValueError naming its file when they cannot be)."""
    try:
        lm.load_weights()
    except FileNotFoundError:
        raise
    except Exception as exc:  # a file that is not a model: whatever the loader says, in one line
        what = lm.spec or "the packaged generator"
        raise ValueError(f"{what} cannot be loaded as a model ({type(exc).__name__})") from None
    return lm


def serve(lm: LocalLM, host: str, port: int, name: str, keys: KeyRing | None, queue: int, timeout_s: float) -> None:
    """Serve until interrupted (the model is ready before the port opens)."""
    import uvicorn

    print(f"serving {lm.identity} as {name!r} on http://{host}:{port}/v1", flush=True)
    uvicorn.run(build_app(lm, name, keys, queue, timeout_s), host=host, port=port, log_level="warning")
