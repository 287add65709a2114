"""A generator behind an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server, hosted APIs).

It speaks `/v1/chat/completions` through the `openai` client, the one users point at those
servers: the prompt is one user message, decoding is greedy (`temperature` 0) and at most
`max_new_tokens` long. No answer prefix can be given through this protocol, so the model starts
its answer itself. The key, if the server wants one, comes from $RAG_ASSETS_GENERATOR_KEY and
is never written to disk, logs or results.

The project has no tokenizer for a model it reaches over HTTP, so the input budget counts one
token per BYTES_PER_TOKEN bytes of UTF-8, plus MESSAGE_OVERHEAD for the chat template: an
overestimate for the tokenizers measured (docs/answering.md), so a prompt that fits the budget
fits the model. The server's own count comes back with each reply and is recorded as the
answer's `prompt_tokens`.

What goes wrong is counted, never scored as an answer (`failures`): a server that cannot be
reached (refused before any question, by `check`), timeouts, retries, error statuses, an empty
reply, a reply the server cut at its context window, a reply that is not text. Every reply is read
within TIMEOUT_S from connecting to its last byte, headers included, and MAX_REPLY_BYTES decoded
(rag_assets.retrieval.bounded: a server that drips bytes, answers a megabyte or a gzip bomb is cut
off), read as the shape a chat completion or a model list has (each field checked), never trusted
to have it, and with every key sent to an endpoint masked out of its text (a server that echoes
its Authorization header hands the key to no one).
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from threading import Lock

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rag_assets import environment
from rag_assets.answering.generation import Generation
from rag_assets.catalog import MAX_NEW_TOKENS
from rag_assets.retrieval import bounded

KEY_VARIABLE = environment.GENERATOR_KEY
BYTES_PER_TOKEN = 2
MESSAGE_OVERHEAD = 16
TIMEOUT_S = 120.0
RETRIES = 2  # after a timeout, a dropped connection, a 429 or a 5xx; with a back-off of 1 s, 2 s
MAX_REPLY_BYTES = 256 * 1024  # a chat completion of MAX_NEW_TOKENS tokens is a few kilobytes


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class _Message(_Shape):
    content: str | None = None


class _Choice(_Shape):
    message: _Message
    finish_reason: str | None = None


class _Usage(_Shape):
    prompt_tokens: int | None = Field(None, ge=0)
    completion_tokens: int | None = Field(None, ge=0)


class _Completion(_Shape):
    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


class _Model(_Shape):
    id: str


class _Models(_Shape):
    data: list[_Model] = Field(max_length=10_000)


class EndpointUnavailable(RuntimeError):
    """The endpoint cannot be used: unreachable, refusing the key, or without the model."""


class EndpointLM:
    """`url`: the API base (`http://host:port/v1`); `model`: the name the server knows it by."""

    answer_prefix = ""
    stop_strings: tuple[str, ...] = ()

    def __init__(
        self,
        url: str,
        model: str,
        max_new_tokens: int = MAX_NEW_TOKENS,
        timeout_s: float = TIMEOUT_S,
        retries: int = RETRIES,
        key_variable: str = KEY_VARIABLE,
        role: str = "generator",
    ):
        from openai import OpenAI

        self.url, self.model, self.max_new_tokens, self.retries = url.rstrip("/"), model, max_new_tokens, retries
        self.key_variable, self.role = key_variable, role
        self.client = OpenAI(
            base_url=self.url,
            api_key=environment.secret(key_variable) or "none",
            timeout=timeout_s,
            max_retries=0,
            http_client=bounded.client(timeout_s, MAX_REPLY_BYTES),
        )
        self.failures: Counter = Counter()
        self._lock = Lock()

    @property
    def identity(self) -> str:
        """Names the server and the model, and says that no weights were seen."""
        return f"{self.model} via {self.url} (OpenAI-compatible endpoint; weights not verified)"

    def check(self) -> None:
        """EndpointUnavailable, in one line, unless the server answers and lists the model."""
        import openai

        try:
            listed = _Models.model_validate_json(self.client.models.with_raw_response.list().http_response.content)
            names = [m.id for m in listed.data]
        except openai.AuthenticationError:
            raise EndpointUnavailable(
                f"{self.url} refused the key (set ${self.key_variable} to the key this server expects)"
            ) from None
        except openai.APIError as exc:
            raise EndpointUnavailable(
                f"cannot reach the {self.role} endpoint {self.url}: {type(exc).__name__}"
            ) from None
        except ValidationError:
            raise EndpointUnavailable(f"{self.url}/models does not answer an OpenAI-compatible model list") from None
        if self.model not in names:
            served = bounded.masked(", ".join(names))  # names the server chose: it may echo a key
            raise EndpointUnavailable(f"{self.url} serves no model {self.model!r}; it serves: {served}")

    def load_weights(self) -> None:
        """Nothing to load: the server holds the model."""

    def count_tokens(self, prompt: str) -> int:
        return math.ceil(len(prompt.encode("utf-8")) / BYTES_PER_TOKEN) + MESSAGE_OVERHEAD

    def rendered(self, prompt: str) -> str:
        """What was sent: the messages, as JSON (the server applies its own chat template)."""
        return json.dumps([{"role": "user", "content": prompt}], ensure_ascii=False)

    def _count(self, what: str) -> None:
        with self._lock:
            self.failures[what] += 1

    def _once(self, prompt: str) -> Generation:
        import openai

        t0 = time.perf_counter()
        for attempt in range(self.retries + 1):
            if attempt:
                self._count("retries")
                time.sleep(attempt)
            try:
                raw = self.client.chat.completions.with_raw_response.create(
                    model=self.model,
                    messages=[{"role": "user", "content": prompt}],
                    max_tokens=self.max_new_tokens,
                    temperature=0,
                )
                reply = _Completion.model_validate_json(raw.http_response.content)
                break
            except ValidationError as exc:
                json_at_all = exc.errors()[0]["type"] != "json_invalid"
                return self._failed("reply not a chat completion" if json_at_all else "reply not text", t0)
            except openai.APITimeoutError:
                failure = "timeout"
            except openai.APIConnectionError as exc:
                if isinstance(exc.__cause__, bounded.Oversized):
                    return self._failed(f"reply over {MAX_REPLY_BYTES:,} bytes", t0)
                if isinstance(exc.__cause__, bounded.Refused):
                    return self._failed("reply in more than one content encoding, or one not read", t0)
                failure = "connection failed"
            except openai.APIResponseValidationError:
                return self._failed("reply not text", t0)
            except openai.APIStatusError as exc:
                failure = f"HTTP {exc.status_code}"
                if exc.status_code == 400 and "context" in str(exc).lower():
                    return self._failed("prompt over the server's context window", t0)
                if exc.status_code != 429 and exc.status_code < 500:
                    return self._failed(failure, t0)
            except ValueError:  # a body that is not JSON
                return self._failed("reply not text", t0)
        else:
            return self._failed(failure, t0)
        return self._read(reply, prompt, t0)

    def _failed(self, failure: str, t0: float) -> Generation:
        self._count(failure)
        return Generation("", 0, 0, (time.perf_counter() - t0) * 1000, failure=failure)

    def _read(self, reply: _Completion, prompt: str, t0: float) -> Generation:
        content, finish = reply.choices[0].message.content, reply.choices[0].finish_reason
        usage = reply.usage or _Usage()
        new_tokens = usage.completion_tokens or 0
        if not (content or "").strip():
            return self._failed("empty reply", t0)
        if finish == "length" and new_tokens < self.max_new_tokens:
            return self._failed("reply cut at the server's context window", t0)
        prompt_tokens = usage.prompt_tokens or self.count_tokens(prompt)
        return Generation(bounded.masked(content).strip(), prompt_tokens, new_tokens, (time.perf_counter() - t0) * 1000)

    def generate(self, prompt: str) -> Generation:
        return self.generate_many([prompt])[0]

    def generate_many(self, prompts: list[str], batch_size: int = 1, progress=None) -> list[Generation]:
        """Replies in `prompts` order, `batch_size` requests in flight at once; `ms` is each
        request's own latency."""
        out: list[Generation | None] = [None] * len(prompts)
        done = 0
        with ThreadPoolExecutor(max_workers=max(1, batch_size)) as pool:
            for i, generation in zip(range(len(prompts)), pool.map(self._once, prompts)):
                out[i] = generation
                done += 1
                if progress:
                    progress(done, len(prompts))
        return out
