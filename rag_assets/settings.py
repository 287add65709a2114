"""The settings a command decides before anything is built, typed and checked once, at the door.

A command turns its arguments into one `Settings` (refused there, in one line, when they cannot
work); the Dagster definitions are then built from it by an explicit call, their resources made
from it and never read back; `ask` and `serve` answer with its values. The process environment is
read in one place (rag_assets.environment); `from_environment` takes the settings' variables from
there: for the UI's code server, which `rag-assets ui` hands a settings file, and for a user who
starts `dg dev` by hand.

This module imports the catalog of names and the standard library only, so building the command
line's parser loads no core library.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote

from rag_assets import catalog, environment

DEFAULT_DATA_DIR = catalog.DEFAULT_DATA_DIR
ENGINES = ("local", "ray")
MAX_DRAFTED = 10_000  # needles a drafted set may ask about


class SettingsError(ValueError):
    """Settings that cannot work together: refused before anything is read or written."""


def _directory(value: str) -> str:
    """A local folder as an absolute path; any other fsspec URL (`s3://bucket/prefix`) as given."""
    text = str(value)
    if "://" in text and not text.startswith("file://"):
        return text
    return str(Path(text.removeprefix("file://")).expanduser().resolve())


@dataclass(frozen=True)
class Settings:
    """One command's choices: where its data lives, what it measures with which models, and what
    answers are served with."""

    data_dir: str = str(DEFAULT_DATA_DIR)  # a folder, or an fsspec URL such as s3://bucket/prefix
    dataset: str = str(catalog.BUNDLED_DATASET)
    models: str = catalog.DEFAULT_EMBEDDER  # comma-separated; the first is the one answers come from
    # why these models: who named them, or the corpus languages they were chosen for (model_choice)
    model_choice: str = ""
    engine: str = "local"
    ray_address: str = ""
    ann_min_chunks: int = catalog.ANN_MIN_CHUNKS
    full_ground_truth: bool = False
    max_file_mb: float | None = None  # None: the corpus reader's own limit
    llm: bool = True  # False: generation_eval samples no questions
    rerank_llm: bool = False
    bm25_analyzer: str | None = None  # None: the default analyzer
    questions: str = "auto"
    draft_questions: int | None = None
    generator: str = ""  # a .gguf file or model folder; empty: the packaged generator
    generator_url: str = ""
    generator_model: str = ""
    generator_timeout_s: float = 120.0  # a reply of --generator-url read whole within this, or not at all
    judge_url: str = ""  # an OpenAI-compatible endpoint asked whether each answer sentence is entailed (off: empty)
    judge_model: str = ""
    answerers: str | None = None  # what generation_eval compares; None: its default
    # an experiment file, named or found by the command that runs one (`run --experiment`, `ui`,
    # `check`); empty: none. `ask` and `serve` never set it: an experiment keeps to itself.
    experiment: str = ""
    # what answers are served with (`ask`, `serve`, and the assets that measure the served path)
    threshold: float | None = None  # the refusal gate's cosine distance; None: the served model's own
    serving_strategy: str = catalog.SERVING_STRATEGY
    retriever: str = catalog.DEFAULT_RETRIEVER
    chosen: str = ""  # the experiment configuration `rag-assets use` chose for these (empty: none)
    input_budget: int = catalog.INPUT_BUDGET
    max_new_tokens: int = catalog.MAX_NEW_TOKENS
    answer_prefix: str = catalog.ANSWER_PREFIX
    cross_encoder: str = ""  # a CrossEncoder folder or a cached hub name; empty: ms-marco-MiniLM-L-6-v2 if cached
    llm_rerank_depth: int = catalog.LLM_RERANK_DEPTH
    postgres: str | None = field(default=None, repr=False)  # the instance's URL (holds a password)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", _directory(self.data_dir))
        object.__setattr__(self, "dataset", str(Path(self.dataset).expanduser().resolve()))
        if self.experiment:
            object.__setattr__(self, "experiment", str(Path(self.experiment).expanduser().resolve()))
        try:
            catalog.model_names(self.models)
            if self.answerers is not None:
                catalog.answerer_names(self.answerers)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        for problem in self._problems():
            raise SettingsError(problem)

    def _problems(self):
        if self.engine not in ENGINES:
            yield f"the compute engine is one of {', '.join(ENGINES)}, got {self.engine!r}"
        if self.ray_address and self.engine != "ray":
            yield "a Ray address needs the ray engine (--engine ray)"
        for name in ("ann_min_chunks", "input_budget", "max_new_tokens", "llm_rerank_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                yield f"{name} is a whole number of at least 1, got {value!r}"
        if not (isinstance(self.generator_timeout_s, int | float) and 0.1 <= self.generator_timeout_s <= 3600):
            yield f"the generator's timeout is from 0.1 to 3600 seconds, got {self.generator_timeout_s!r}"
        if self.max_file_mb is not None and not (math.isfinite(self.max_file_mb) and self.max_file_mb > 0):
            yield f"a size in MiB is a positive finite number, got {self.max_file_mb!r}"
        if self.threshold is not None and not (
            isinstance(self.threshold, int | float) and 0.0 <= self.threshold <= 2.0  # nan fails this too
        ):
            yield f"a cosine-distance threshold lies between 0 and 2, got {self.threshold!r}"
        if self.retriever not in catalog.RETRIEVERS:
            yield f"the retriever is one of {', '.join(catalog.RETRIEVERS)}, got {self.retriever!r}"
        if self.serving_strategy not in catalog.STRATEGIES:
            yield f"the serving strategy is one of {', '.join(catalog.STRATEGIES)}, got {self.serving_strategy!r}"
        if self.rerank_llm and not self.llm:
            yield "the LLM reranker needs the language model: rerank_llm with llm off"
        if self.bm25_analyzer is not None and self.bm25_analyzer not in catalog.ANALYZERS:
            yield f"BM25 analyzer must be one of {', '.join(catalog.ANALYZERS)}, got {self.bm25_analyzer!r}"
        if self.questions not in catalog.QUESTION_MODES:
            yield f"the question set is one of {', '.join(catalog.QUESTION_MODES)}, got {self.questions!r}"
        if self.draft_questions is not None and not 1 <= self.draft_questions <= MAX_DRAFTED:
            yield f"a drafted set asks about 1 to {MAX_DRAFTED:,} needles, got {self.draft_questions}"
        if self.experiment and not Path(self.experiment).is_file():
            yield (
                f"no experiment file {self.experiment} (write one with "
                f"`rag-assets init --dataset {quote(self.dataset)} "
                f"--data-dir {quote(str(self.data_dir))} --out {quote(self.experiment)}`)"
            )
        if self.generator_url and self.generator:
            yield "--generator and --generator-url name two generators: give one"
        if self.generator_model and not self.generator_url:
            yield "--generator-model names a model of --generator-url: give the URL too"
        if bool(self.judge_url) != bool(self.judge_model):
            yield "--judge-url and --judge-model go together: the endpoint and the name it knows the model by"
        if self.generator_url and not self.generator_model:
            yield "--generator-url needs --generator-model, the name the server knows the model by"
        if self.generator_url and (self.rerank_llm or self.questions == "drafted"):
            yield (
                "rerank-llm and question drafting read a local generator's token probabilities: drop "
                "--generator-url, or --rerank-llm / --questions drafted"
            )

    def replace(self, **changes) -> Settings:
        """These settings with `changes` (None leaves a field as it is), checked again."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def model_names(self) -> list[str]:
        return catalog.model_names(self.models)

    @property
    def served_model(self) -> str:
        return self.model_names[0]

    def threshold_of(self, model: str) -> float:
        """The refusal gate's threshold for `model`'s distances: the one set, else the model's own."""
        return self.threshold if self.threshold is not None else catalog.PACKAGED[model].threshold

    @property
    def served_threshold(self) -> float:
        return self.threshold_of(self.served_model)

    def write(self, path: Path) -> Path:
        """Save for a process this one starts (the UI's code server): readable by this user only,
        and never with the instance's URL, which may hold a password."""
        values = {k: v for k, v in dataclasses.asdict(self).items() if k != "postgres"}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(values, indent=1))
        return Path(path)

    @classmethod
    def read(cls, path: Path) -> Settings:
        try:
            values = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SettingsError(f"cannot read the settings file {path}: {exc}") from None
        if not isinstance(values, dict):
            raise SettingsError(f"the settings file {path} is not a JSON object")
        unknown = sorted(set(values) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise SettingsError(f"the settings file {path} has unknown fields: {', '.join(unknown)}")
        try:
            return cls(**values)
        except TypeError as exc:
            raise SettingsError(f"the settings file {path}: {exc}") from None

    @classmethod
    def from_environment(cls, environ=None) -> Settings:
        """The settings file $RAG_ASSETS_SETTINGS names, else the $RAG_ASSETS_* variables over the
        defaults (the instance's URL from $RAG_ASSETS_POSTGRES_URL)."""
        handed = environment.value(environment.SETTINGS_FILE, environ)
        if handed:
            return cls.read(Path(handed))
        values: dict = environment.settings_values(environ)
        if "ann_min_chunks" in values:
            given = values["ann_min_chunks"]
            if not given.isdigit():
                raise SettingsError(f"RAG_ASSETS_ANN_MIN_CHUNKS must be a whole number of chunks, got {given!r}")
            values["ann_min_chunks"] = int(given)
        return cls(**values, postgres=environment.value(environment.POSTGRES_URL, environ))
