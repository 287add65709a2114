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
"""

from __future__ import annotations

import threading
import time
import uuid

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from rag_assets.answering.generation import LocalLM
from rag_assets.retrieval.rerank import RELEVANCE_PROMPT, LLMRelevanceReranker

DEFAULT_NAME = "smollm2-135m-instruct"
MAX_TOKENS_CAP = 1024


class Message(BaseModel):
    role: str
    content: str


class ChatRequest(BaseModel):
    model: str
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None  # decoding is greedy whatever is asked


class RerankRequest(BaseModel):
    model: str | None = None
    query: str
    documents: list[str] = Field(min_length=1)
    top_n: int | None = Field(default=None, ge=1)
    return_documents: bool = False


def build_app(lm: LocalLM, name: str = DEFAULT_NAME) -> FastAPI:
    app = FastAPI(title="rag-assets model server", version="1")
    decoding = threading.Lock()  # one model, one answer at a time

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": lm.identity}]}

    @app.post("/v1/chat/completions")
    def chat(request: ChatRequest) -> dict:
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

    @app.post("/v1/rerank")
    @app.post("/rerank")
    def rerank(request: RerankRequest) -> dict:
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


def serve(spec: str, host: str, port: int, name: str = DEFAULT_NAME) -> None:
    """Load the model, then serve until interrupted (the model is ready before the port opens)."""
    import uvicorn

    lm = LocalLM(spec, answer_prefix="")
    lm.load_weights()
    print(f"serving {lm.identity} as {name!r} on http://{host}:{port}/v1", flush=True)
    uvicorn.run(build_app(lm, name), host=host, port=port, log_level="warning")
