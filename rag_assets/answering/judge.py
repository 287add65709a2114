"""A second opinion on each answer sentence, from a model the user trusts: their own
OpenAI-compatible endpoint (the client `--generator-url` uses), asked per sentence whether the
passages it cites entail it. Off by default; its verdict is recorded beside the rule check's
(`support`), labelled with the model, and never replaces it: a model's yes is not a proof, and
what it says on the realistic sets is measured by bench/support_realistic.py --judge-url.

A reply is read by its first word after any `<think>...</think>`: YES (entailed), NO (not
entailed); anything else is `unreadable`. A reply that never came is `failed` with why (the
endpoint's own failures: timeout, size cap, an error status), and so is every sentence left when
the answer's DEADLINE_S is spent: one answer waits on the judge for at most that long."""

from __future__ import annotations

import re
import time

from rag_assets import environment
from rag_assets.answering.citations import strip_markers
from rag_assets.answering.endpoint import EndpointLM

KEY_VARIABLE = environment.JUDGE_KEY
MAX_NEW_TOKENS = 16  # YES or NO, and room for a model that says a word first
MAX_PASSAGE_CHARS = 6000  # the cited quotes, each cut to its share: a judge's prompt stays bounded
DEADLINE_S = 60.0  # all the sentences of one answer
PROMPT = (
    "Passage:\n{passage}\n\nStatement: {sentence}\n\n"
    "Does the passage state or directly imply everything the statement says? Answer with one word, YES or NO."
)
_THINKING = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_FIRST_WORD = re.compile(r"[A-Za-z]+")


class Judge:
    """`url`, `model`: the endpoint and the name it knows its model by; `timeout_s`: one reply's
    deadline, read whole (no retries: the answer's deadline is the bound)."""

    def __init__(self, url: str, model: str, timeout_s: float, deadline_s: float = DEADLINE_S):
        self.lm = EndpointLM(url, model, MAX_NEW_TOKENS, min(timeout_s, deadline_s), 0, KEY_VARIABLE, "judge")
        self.deadline_s = deadline_s

    @property
    def identity(self) -> str:
        return self.lm.identity

    def check(self) -> None:
        self.lm.check()

    def verdicts(self, sentences: list[str], quotes: list[list[str]]) -> list[dict]:
        """One verdict per sentence, each against the quotes it cites: {model, verdict, reply}."""
        started = time.monotonic()
        out = []
        for sentence, cited in zip(sentences, quotes, strict=True):
            if time.monotonic() - started > self.deadline_s:
                out.append(self._verdict(f"failed: over the answer's {self.deadline_s:.0f} s judge deadline", ""))
                continue
            share = MAX_PASSAGE_CHARS // max(1, len(cited))
            passage = "\n\n".join(quote[:share] for quote in cited)
            (generation,) = self.lm.generate_many([PROMPT.format(passage=passage, sentence=strip_markers(sentence))])
            if generation.failure:
                out.append(self._verdict(f"failed: {generation.failure}", ""))
                continue
            first = _FIRST_WORD.search(_THINKING.sub("", generation.text))
            word = first.group().upper() if first else ""
            out.append(
                self._verdict({"YES": "entailed", "NO": "not entailed"}.get(word, "unreadable"), generation.text)
            )
        return out

    def _verdict(self, verdict: str, reply: str) -> dict:
        return {"model": self.identity, "verdict": verdict, "reply": reply[:80]}
