"""An experiment file: the arms a team chooses between, read, checked and expanded into configurations.

The file is YAML. Each axis (`chunkers`, `embedders`, `retrievers`, `rerankers`) maps arm names to
their settings (a bare string names a preset, a packaged model or a plain retriever); `search` says
whether every combination runs (`grid`) or one factor at a time from the baseline (`one-factor`,
the first arm of each axis unless `baseline` names others). Each arm is made once, here, as the
typed, frozen settings of its kind (rag_assets.chunking.specs, rag_assets.retrieval.specs): every
value's type and range is checked and every setting is applied or refused. Everything wrong with a
file is an `ExperimentError` whose message starts with `FILE:LINE:`, found without loading a model,
reading a document or calling an endpoint: this module imports PyYAML, pydantic and those specs.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote

import yaml
from pydantic import ValidationError

from rag_assets.catalog import INPUT_BUDGET, PACKAGED
from rag_assets.chunking import specs as chunking
from rag_assets.retrieval import specs as retrieval

FILE_NAME = "experiment.yaml"  # beside the dataset's documents/, read when no file is named
MAX_FILE_BYTES = 1 << 20
MAX_CONFIGURATIONS = 500  # what one file may ask for: check prints its estimate for more
AXES = ("chunkers", "embedders", "retrievers", "rerankers")
SEARCHES = ("one-factor", "grid")
TOP_KEYS = {"search", "baseline", "rank_by", "token_budget", *AXES}
RANK_METRICS = ("recall", "mrr", "ndcg")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")  # an arm's name is part of a partition key
# Each axis's kinds, by the key that says which one an arm is (the first of them it sets).
KINDS = {
    "chunkers": {
        "preset": chunking.Preset,
        "cut": chunking.Cut,
        "semchunk": chunking.Semchunk,
        "chonkie": chunking.Chonkie,
    },
    "embedders": {
        "packaged": retrieval.PackagedModel,
        "path": retrieval.ModelFolder,
        "url": retrieval.EmbeddingEndpoint,
    },
    "retrievers": {"dense": retrieval.Dense, "bm25": retrieval.Bm25, "hybrid": retrieval.Hybrid},
    "rerankers": {
        "none": retrieval.NoReranker,
        "cross_encoder": retrieval.CrossEncoder,
        "url": retrieval.RerankEndpoint,
        "llm": retrieval.LLMReranker,
    },
}
SHORTHANDS = {  # what a bare name may be, and the key it sets
    "chunkers": ("preset", chunking.STRATEGIES),
    "embedders": ("packaged", tuple(PACKAGED)),
    "retrievers": (None, ("dense", "bm25", "hybrid")),
    "rerankers": (None, ("none",)),
}
DEFAULTS = {"retrievers": ("hybrid", "dense", "bm25"), "rerankers": ("none",)}  # hybrid: the lab's baseline
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx")


class ExperimentError(ValueError):
    """An experiment file that cannot run: the message names the file and line."""


@dataclass(frozen=True)
class Arm:
    """One arm of an axis: its name, its typed settings and the file line that gave them."""

    axis: str
    name: str
    spec: object  # a chunking.ChunkerSpec, retrieval.EmbedderSpec, retrieval.Retriever or retrieval.RerankerSpec
    line: int

    @property
    def kind(self) -> str:
        return self.spec.kind

    def settings(self) -> dict:
        return {"name": self.name, **self.spec.settings()}


@dataclass(frozen=True)
class Configuration:
    """One combination of arms. Its id is the arms' names (a partition key); its fingerprint
    hashes their full settings and the identities of its models, so changing an arm, or a model
    behind an arm, changes the fingerprint of exactly the configurations it is part of."""

    chunker: Arm
    embedder: Arm | None  # None: BM25 embeds nothing
    retriever: Arm
    reranker: Arm

    @property
    def id(self) -> str:
        embedder = self.embedder.name if self.embedder else "-"
        return f"{self.chunker.name}+{embedder}+{self.retriever.name}+{self.reranker.name}"

    def arms(self) -> list[Arm]:
        return [a for a in (self.chunker, self.embedder, self.retriever, self.reranker) if a is not None]

    def settings(self) -> dict:
        """Every arm's full settings, as each result row records them."""
        return {a.axis: a.settings() for a in self.arms()}

    def fingerprint(self, identities: dict[str, str] | None = None) -> str:
        """sha256 of the settings and the identities given (the embedder's weights hash or an
        endpoint's probe fingerprint, the reranker's), so a model that changes stales its
        configurations."""
        payload = {"settings": self.settings(), "identities": identities or {}}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Experiment:
    path: Path
    search: str
    arms: dict[str, list[Arm]]
    baseline: dict[str, str]
    rank_by: tuple[str, int]  # (metric, k)
    token_budget: int = INPUT_BUDGET  # recall within this many tokens of context is reported beside recall@k
    configurations: list[Configuration] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # combinations that cannot run, and why

    def arm(self, axis: str, name: str) -> Arm:
        return next(a for a in self.arms[axis] if a.name == name)

    def configuration(self, config_id: str) -> Configuration:
        for c in self.configurations:
            if c.id == config_id:
                return c
        raise KeyError(f"{self.path.name} has no configuration {config_id!r}")

    def endpoints(self) -> list[Arm]:
        return [a for axis in ("embedders", "rerankers") for a in self.arms[axis] if a.kind == "url"]


def find(dataset: Path, named: str | Path | None = None) -> Path | None:
    """The experiment file a command reads: the one named, else `experiment.yaml` beside the
    dataset's documents (None when there is none)."""
    if named:
        return Path(named)
    beside = Path(dataset) / FILE_NAME
    return beside if beside.is_file() else None


def load(path: str | Path) -> Experiment:
    """The file read and checked (keys, kinds, names, types, ranges, combinations), its
    configurations expanded; ExperimentError naming the file and line otherwise."""
    path = Path(path)
    try:
        if not path.is_file():
            raise ExperimentError(
                f"{path}: no such experiment file (write one with `rag-assets init --out {quote(str(path))}`)"
            )
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ExperimentError(f"{path}: {path.stat().st_size:,} bytes; an experiment file is at most 1 MiB")
        node = yaml.compose(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ExperimentError(f"{where}: not YAML: {getattr(exc, 'problem', exc)}") from None
    except UnicodeDecodeError:
        raise ExperimentError(f"{path}: not UTF-8 text") from None
    except RecursionError:
        raise ExperimentError(f"{path}: nested too deeply to be an experiment file") from None
    except OSError as exc:
        raise ExperimentError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    return _Reader(path).experiment(node)


def _message(error: dict) -> str:
    """One pydantic error as a line a user reads."""
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "string_pattern_mismatch" and error["loc"] and error["loc"][-1] == "url":
        return "url must be http(s)://host[:port][/path], with no user or password in it (a key goes in key_env)"
    if error["type"] == "literal_error":
        return f"{message[0].lower()}{message[1:]}, not {error['input']!r}"
    return message


class _Reader:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, node, message: str):
        line = node.start_mark.line + 1 if node is not None else 1
        raise ExperimentError(f"{self.path}:{line}: {message}")

    def mapping(self, node, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, f"{what} must be a mapping of names to settings")
        out, seen = [], set()
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                self.fail(key, f"{what}: a key must be a plain name")
            if key.value in seen:
                self.fail(key, f"{what}: {key.value!r} is given twice")
            seen.add(key.value)
            out.append((key.value, key, value))
        return out

    def unknown(self, node, key: str, allowed, what: str):
        close = difflib.get_close_matches(key, sorted(allowed), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(sorted(allowed))}"
        self.fail(node, f"unknown {what} {key!r}{hint}")

    def experiment(self, root) -> Experiment:
        if root is None:
            raise ExperimentError(f"{self.path}:1: the file is empty")
        entries = {k: (kn, v) for k, kn, v in self.mapping(root, "the experiment")}
        for key, (key_node, _) in entries.items():
            if key not in TOP_KEYS:
                self.unknown(key_node, key, TOP_KEYS, "key")
        search = self.scalar(entries.get("search", (None, None))[1], "search", str, "one-factor")
        if search not in SEARCHES:
            self.fail(entries["search"][1], f"search must be one of {', '.join(SEARCHES)}, not {search!r}")
        arms = {}
        for axis in AXES:
            if axis in entries:
                arms[axis] = self.axis(axis, entries[axis][1])
            elif axis in DEFAULTS:
                arms[axis] = [Arm(axis, n, KINDS[axis][n](), 1) for n in DEFAULTS[axis]]
            else:
                self.fail(root, f"the experiment needs {axis!r}: at least one arm")
        baseline = {axis: arms[axis][0].name for axis in AXES}
        if "baseline" in entries:
            for key, key_node, value in self.mapping(entries["baseline"][1], "baseline"):
                axis = key if key in AXES else key + "s"
                if axis not in AXES:
                    self.unknown(key_node, key, [a[:-1] for a in AXES], "baseline axis")
                name = self.scalar(value, f"baseline {key}", str)
                if name not in {a.name for a in arms[axis]}:
                    self.unknown(value, name, [a.name for a in arms[axis]], f"{axis[:-1]} arm")
                baseline[axis] = name
        rank_by = self.rank_by(entries.get("rank_by", (None, None))[1])
        budget_node = entries.get("token_budget", (None, None))[1]
        budget = self.scalar(budget_node, "token_budget", int, INPUT_BUDGET)
        if not 1 <= budget <= 1_000_000:
            self.fail(budget_node, f"token_budget must be a whole number of tokens from 1 to 1,000,000, not {budget}")
        experiment = Experiment(self.path, search, arms, baseline, rank_by, budget)
        configurations, skipped = self.configurations(experiment, entries)
        object.__setattr__(experiment, "configurations", configurations)
        object.__setattr__(experiment, "skipped", skipped)
        return experiment

    def scalar(self, node, what: str, kind: type, default=None):
        if node is None:
            return default
        value = self.value(node, what)
        if not isinstance(value, kind) or (kind in (int, float, str) and isinstance(value, bool)):
            self.fail(node, f"{what} must be {kind.__name__}, not {value!r}")
        return value

    def value(self, node, what: str):
        """A plain value as YAML reads it (a quoted one stays text)."""
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, f"{what} must be a single value")
        return yaml.safe_load(node.value) if node.style is None else node.value

    def rank_by(self, node) -> tuple[str, int]:
        text = self.scalar(node, "rank_by", str, "recall@4")
        metric, _, k = text.partition("@")
        if metric not in RANK_METRICS or not k.isdigit() or not 1 <= int(k) <= retrieval.MAX_DEPTH:
            self.fail(
                node, f"rank_by must be a metric at a depth ({', '.join(m + '@k' for m in RANK_METRICS)}), not {text!r}"
            )
        return metric, int(k)

    def axis(self, axis: str, node) -> list[Arm]:
        if isinstance(node, yaml.ScalarNode):
            node = yaml.SequenceNode("tag:yaml.org,2002:seq", [node], node.start_mark, node.end_mark)
        if isinstance(node, yaml.SequenceNode):  # bare names: presets, packaged models, plain retrievers
            items = [(self.scalar(item, f"{axis} entry", str), item, item) for item in node.value]
        else:
            items = self.mapping(node, axis)
        if not items:
            self.fail(node, f"{axis} needs at least one arm")
        return [self.arm(axis, name, key_node, value) for name, key_node, value in items]

    def arm(self, axis: str, name: str, key_node, node) -> Arm:
        if not NAME.match(name):
            self.fail(key_node, f"arm name {name!r}: letters, digits, '.', '_' and '-' only, at most 40")
        kinds, where = KINDS[axis], f"{axis[:-1]} {name}"
        nodes: dict[str, yaml.Node] = {}
        if isinstance(node, yaml.ScalarNode):  # a name alone: what it names
            value = self.scalar(node, where, str) if node is not key_node else name
            key, known = SHORTHANDS[axis]
            if value not in known:
                self.unknown(
                    node, value, known, {"chunkers": "preset", "embedders": "packaged model"}.get(axis, axis[:-1])
                )
            values = {key: value} if key else {value: True}
        else:
            values = {}
            for key, _, v_node in self.mapping(node, where):
                values[key], nodes[key] = self.value(v_node, f"{where}: {key}"), v_node
        kind = next((k for k in kinds if k in values), None)
        if kind is None:
            self.fail(node, f"{where} says nothing of what it is: give one of {', '.join(kinds)}")
        model = kinds[kind]
        for key in values:
            if key not in model.model_fields:
                self.unknown(nodes.get(key, node), key, model.model_fields, f"{kind} setting")
        values = self.located(axis, where, values, nodes, node)
        try:
            spec = model.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = error["loc"][0] if error["loc"] else None
            self.fail(nodes.get(key, node), f"{where}: " + (f"{key}: " if key else "") + _message(error))
        return Arm(axis, name, spec, node.start_mark.line + 1)

    def located(self, axis: str, where: str, values: dict, nodes: dict, node) -> dict:
        """Folders named by an arm, relative to the file, made absolute and checked to be there
        (a model folder also to hold weights); refused in one line otherwise."""
        key = {"embedders": "path", "rerankers": "cross_encoder"}.get(axis)
        if key is None or not isinstance(values.get(key), str):
            return values
        try:
            folder = Path(values[key]).expanduser()
        except RuntimeError as exc:  # ~user that does not exist
            self.fail(nodes.get(key, node), f"{where}: {key}: {exc}")
        folder = folder if folder.is_absolute() else self.path.parent / folder
        if not folder.is_dir():
            self.fail(nodes.get(key, node), f"{where}: no folder {folder}")
        if axis == "embedders" and not _model_folder(folder):
            self.fail(
                nodes.get(key, node),
                f"{where}: {folder} holds no model: a sentence-transformers folder has a modules.json or "
                f"config.json and weights ({', '.join(WEIGHT_SUFFIXES)}) in it or one folder below",
            )
        return {**values, key: str(folder.resolve())}

    def configurations(self, experiment: Experiment, entries) -> tuple[list[Configuration], dict[str, str]]:
        arms, base = experiment.arms, experiment.baseline
        if experiment.search == "grid":
            count = math.prod(len(arms[a]) for a in AXES)
            if count > MAX_CONFIGURATIONS:
                self.fail(
                    entries.get("search", (None, None))[1],
                    f"a grid of {count:,} combinations: at most {MAX_CONFIGURATIONS} run from one file; narrow an axis "
                    "or use search: one-factor",
                )
            combos = itertools.product(*(arms[a] for a in AXES))
        else:
            pick = {a: experiment.arm(a, base[a]) for a in AXES}
            combos = [tuple(pick[a] for a in AXES)]
            for axis in AXES:
                for arm in arms[axis]:
                    if arm.name != base[axis]:
                        combos.append(tuple(arm if a == axis else pick[a] for a in AXES))
        out, seen, skipped = [], set(), {}
        for chunker, embedder, retriever, reranker in combos:
            tokens = getattr(chunker.spec, "unit", "characters") == "tokens"
            if retriever.kind == "bm25" and not tokens:
                embedder = None  # BM25 embeds nothing: one configuration, whatever the embedders
            if tokens and embedder is not None and embedder.kind == "url" and not embedder.spec.tokenizer:
                skipped[Configuration(chunker, embedder, retriever, reranker).id] = (
                    f"chunker {chunker.name} counts the embedder's tokens, and {embedder.name}'s tokenizer is behind "
                    "its endpoint (give the endpoint a tokenizer: to count them here)"
                )
                continue
            config = Configuration(chunker, embedder, retriever, reranker)
            if config.id not in seen:
                seen.add(config.id)
                out.append(config)
        if not out:
            node = entries.get("chunkers", (None, None))[1]
            self.fail(node, "no configuration can run: token sizes need a local embedder's tokenizer")
        if len(out) > MAX_CONFIGURATIONS:
            self.fail(
                entries.get("search", (None, None))[1],
                f"{len(out):,} configurations: at most {MAX_CONFIGURATIONS} run from one file",
            )
        return out, skipped


def _model_folder(folder: Path) -> bool:
    """A model's configuration in the folder, and weights in it or one folder below (never a walk
    of a whole tree: `path: /`)."""
    try:
        if not any((folder / name).is_file() for name in ("modules.json", "config.json")):
            return False
        for candidate in (folder, *(d for d in folder.iterdir() if d.is_dir())):
            if any(f.suffix in WEIGHT_SUFFIXES for f in candidate.iterdir() if f.is_file()):
                return True
    except OSError:
        return False
    return False
