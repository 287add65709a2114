"""The settings a command decides before anything is built, typed and checked once, at the door.

A command turns its arguments into one `Settings` (refused there, in one line, when they cannot
work); the Dagster definitions are then built from it by an explicit call. The process
environment is read in one place only, `from_environment`: for the UI's code server, which
`rag-assets ui` hands a settings file, and for a user who starts `dg dev` by hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets import storage
from rag_assets.answering.answerer import answerer_names
from rag_assets.drafting.question_set import MODES
from rag_assets.experiment import spec
from rag_assets.ingest.dataset import BUNDLED_DATASET, PROJECT_ROOT
from rag_assets.retrieval import packaged
from rag_assets.retrieval.lexical import ANALYZERS

DEFAULT_DATA_DIR = PROJECT_ROOT / "data"
ENGINES = ("local", "ray")
ANN_MIN_CHUNKS = 100_000  # from this many chunks on, hnsw_index is built and `ask` searches it
FILE_VARIABLE = "RAG_ASSETS_SETTINGS"  # a settings file (`rag-assets ui` writes one for its code server)
# The variables a user may set instead, each a field: `dg dev` started by hand reads them.
VARIABLES = {
    "RAG_ASSETS_DATA_DIR": "data_dir",
    "RAG_ASSETS_DATASET": "dataset",
    "RAG_ASSETS_MODELS": "models",
    "RAG_ASSETS_ENGINE": "engine",
    "RAG_ASSETS_RAY_ADDRESS": "ray_address",
    "RAG_ASSETS_ANN_MIN_CHUNKS": "ann_min_chunks",
    "RAG_ASSETS_EXPERIMENT": "experiment",
}


class SettingsError(ValueError):
    """Settings that cannot work together: refused before anything is read or written."""


@dataclass(frozen=True)
class Settings:
    """One run's choices: where its data lives, what it measures and with which models."""

    data_dir: str = str(DEFAULT_DATA_DIR)  # a folder, or an fsspec URL such as s3://bucket/prefix
    dataset: str = str(BUNDLED_DATASET)
    models: str = packaged.DEFAULT_EMBEDDER  # comma-separated; the first is the one answers come from
    engine: str = "local"
    ray_address: str = ""
    ann_min_chunks: int = ANN_MIN_CHUNKS
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
    answerers: str | None = None  # what generation_eval compares; None: its default
    experiment: str = ""  # an experiment file; empty: the dataset's experiment.yaml, if it has one
    postgres: str | None = field(default=None, repr=False)  # the instance's URL (holds a password)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", str(storage.as_path(self.data_dir)))
        object.__setattr__(self, "dataset", str(Path(self.dataset).expanduser().resolve()))
        if self.experiment:
            object.__setattr__(self, "experiment", str(Path(self.experiment).expanduser().resolve()))
        try:
            packaged.names(self.models)
            if self.answerers is not None:
                answerer_names(self.answerers)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        for problem in self._problems():
            raise SettingsError(problem)

    def _problems(self):
        if self.engine not in ENGINES:
            yield f"the compute engine is one of {', '.join(ENGINES)}, got {self.engine!r}"
        if self.ray_address and self.engine != "ray":
            yield "a Ray address needs the ray engine (--engine ray)"
        if isinstance(self.ann_min_chunks, bool) or not isinstance(self.ann_min_chunks, int) or self.ann_min_chunks < 1:
            yield f"ann_min_chunks is a whole number of chunks of at least 1, got {self.ann_min_chunks!r}"
        if self.max_file_mb is not None and not (math.isfinite(self.max_file_mb) and self.max_file_mb > 0):
            yield f"a size in MiB is a positive finite number, got {self.max_file_mb!r}"
        if self.rerank_llm and not self.llm:
            yield "the LLM reranker needs the language model: rerank_llm with llm off"
        if self.bm25_analyzer is not None and self.bm25_analyzer not in ANALYZERS:
            yield f"BM25 analyzer must be one of {', '.join(ANALYZERS)}, got {self.bm25_analyzer!r}"
        if self.questions not in MODES:
            yield f"the question set is one of {', '.join(MODES)}, got {self.questions!r}"
        if self.draft_questions is not None and self.draft_questions < 1:
            yield f"a drafted set asks about at least 1 needle, got {self.draft_questions}"
        if self.experiment and not Path(self.experiment).is_file():
            yield f"no experiment file {self.experiment} (write one with `rag-assets init`)"
        if self.generator_url and self.generator:
            yield "--generator and --generator-url name two generators: give one"
        if self.generator_model and not self.generator_url:
            yield "--generator-model names a model of --generator-url: give the URL too"
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
    def experiment_file(self) -> Path | None:
        """The experiment file named, else the dataset's experiment.yaml (None: no experiment)."""
        return spec.find(Path(self.dataset), self.experiment or None)

    @property
    def model_names(self) -> list[str]:
        return packaged.names(self.models)

    @property
    def served_model(self) -> str:
        return self.model_names[0]

    def write(self, path: Path) -> Path:
        """Save for a process this one starts (the UI's code server): readable by this user only,
        and never with the instance's URL, which may hold a password."""
        values = {k: v for k, v in dataclasses.asdict(self).items() if k != "postgres"}
        storage.write_text(path, json.dumps(values, indent=1))
        os.chmod(path, 0o600)
        return path

    @classmethod
    def read(cls, path: Path) -> Settings:
        try:
            values = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SettingsError(f"cannot read the settings file {path}: {exc}") from None
        unknown = sorted(set(values) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise SettingsError(f"the settings file {path} has unknown fields: {', '.join(unknown)}")
        return cls(**values)

    @classmethod
    def from_environment(cls, environ=None) -> Settings:
        """The settings file $RAG_ASSETS_SETTINGS names, else the $RAG_ASSETS_* variables over the
        defaults (the instance's URL from $RAG_ASSETS_POSTGRES_URL)."""
        environ = os.environ if environ is None else environ
        if environ.get(FILE_VARIABLE):
            return cls.read(Path(environ[FILE_VARIABLE]))
        values: dict = {field: environ[var] for var, field in VARIABLES.items() if environ.get(var)}
        if "ann_min_chunks" in values:
            given = values["ann_min_chunks"]
            if not given.isdigit():
                raise SettingsError(f"RAG_ASSETS_ANN_MIN_CHUNKS must be a whole number of chunks, got {given!r}")
            values["ann_min_chunks"] = int(given)
        return cls(**values, postgres=environ.get("RAG_ASSETS_POSTGRES_URL") or None)
