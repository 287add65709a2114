"""An experiment file: the arms a team chooses between, read, checked and expanded into configurations.

The file is YAML. Each axis (`chunkers`, `embedders`, `retrievers`, `rerankers`) maps arm names to
their settings (a bare string names a preset, a packaged model or a plain retriever); `search` says
whether every combination runs (`grid`) or one factor at a time from the baseline (`one-factor`,
the first arm of each axis unless `baseline` names others). Everything wrong with a file is an
`ExperimentError` whose message starts with `FILE:LINE:`, found without loading a model or calling
an endpoint: this module imports no more than PyYAML, so `rag-assets check` answers at once.
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

import yaml

FILE_NAME = "experiment.yaml"  # beside the dataset's documents/, read when no file is named
AXES = ("chunkers", "embedders", "retrievers", "rerankers")
SEARCHES = ("one-factor", "grid")
TOP_KEYS = {"search", "baseline", "rank_by", "k", *AXES}
RANK_METRICS = ("recall", "mrr", "ndcg")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")  # an arm's name is part of a partition key
PRESETS = ("A", "B", "C", "D", "E", "F", "W", "doc")  # rag_assets.chunking.strategies, by name
PACKAGED = ("minilm", "minilm-fp32", "mpnet", "me5-small")  # rag_assets.retrieval.packaged, by name
UNITS = ("characters", "tokens")
CHONKIE_CHUNKERS = ("recursive", "token", "sentence")
# Each arm kind's keys: the kind is the first of them that the arm sets.
CHUNKER_KEYS = {
    "preset": {"preset"},
    "cut": {"cut", "size", "overlap", "header", "parent_size", "window"},
    "semchunk": {"semchunk", "size", "unit", "overlap", "parent_size"},
    "chonkie": {"chonkie", "size", "unit", "overlap", "parent_size"},
}
CUTS = ("blind", "boundaries", "sentences")
ENDPOINT_KEYS = {
    "url",
    "model",
    "key_env",
    "batch_size",
    "concurrency",
    "retries",
    "timeout_s",
    "price_per_million_tokens",
}
EMBEDDER_KEYS = {
    "packaged": {"packaged"},
    "path": {"path", "name", "batch_size", "query_prefix", "passage_prefix"},
    "url": ENDPOINT_KEYS | {"query_prefix", "passage_prefix"},
}
RETRIEVER_KEYS = {
    "dense": {"dense", "index", "m", "ef_search"},
    "bm25": {"bm25", "k1", "b", "analyzer"},
    "hybrid": {"hybrid", "rrf_k", "dense_weight", "depth"},
}
RERANKER_KEYS = {
    "none": {"none"},
    "cross_encoder": {"cross_encoder", "depth"},
    "url": ENDPOINT_KEYS | {"depth"},
    "llm": {"llm", "depth"},
}
KINDS = {"chunkers": CHUNKER_KEYS, "embedders": EMBEDDER_KEYS, "retrievers": RETRIEVER_KEYS, "rerankers": RERANKER_KEYS}
DEFAULTS = {"retrievers": ("hybrid", "dense", "bm25"), "rerankers": ("none",)}  # hybrid: the lab's baseline


NUMBERS = {  # each numeric setting: a whole number, or any number
    **dict.fromkeys(
        ("size", "parent_size", "window", "batch_size", "concurrency", "retries", "m", "ef_search", "rrf_k", "depth"),
        int,
    ),
    **dict.fromkeys(("timeout_s", "price_per_million_tokens", "k1", "b", "dense_weight"), (int, float)),
    "overlap": (int, float),  # characters or tokens, or below 1 a share of size
}
FLAGS = ("dense", "bm25", "hybrid", "none", "llm", "semchunk")  # a kind's key whose value may be anything


class ExperimentError(ValueError):
    """An experiment file that cannot run: the message names the file and line."""


@dataclass(frozen=True)
class Arm:
    axis: str
    name: str
    kind: str
    settings: dict  # the arm as written, with its kind's key
    line: int


@dataclass(frozen=True)
class Configuration:
    """One combination of arms. Its id is the arms' names (a partition key); its fingerprint
    hashes their full settings, so changing an arm changes the fingerprint of exactly the
    configurations it is part of."""

    chunker: Arm
    embedder: Arm | None  # None: BM25 alone embeds nothing
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
        return {a.axis: {"name": a.name, **a.settings} for a in self.arms()}

    def fingerprint(self, identities: dict[str, str] | None = None) -> str:
        """sha256 of the settings and, where given, the identity of the embedder (weights hash or
        an endpoint's probe fingerprint), so a model that changes stales its configurations."""
        payload = {"settings": self.settings(), "identities": identities or {}}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Experiment:
    path: Path
    search: str
    arms: dict[str, list[Arm]]
    baseline: dict[str, str]
    rank_by: tuple[str, int]  # (metric, k)
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
    """The experiment file a run reads: the one named, else `experiment.yaml` beside the
    dataset's documents (None when there is none)."""
    if named:
        return Path(named)
    beside = Path(dataset) / FILE_NAME
    return beside if beside.is_file() else None


def load(path: str | Path) -> Experiment:
    """The file read and checked (keys, kinds, names, sizes, combinations), its configurations
    expanded; ExperimentError naming the file and line otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ExperimentError(f"{path}: no such experiment file (write one with `rag-assets init`)")
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ExperimentError(f"{where}: not YAML: {getattr(exc, 'problem', exc)}") from None
    except UnicodeDecodeError:
        raise ExperimentError(f"{path}: not UTF-8 text") from None
    return _Reader(path).experiment(node)


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
                arms[axis] = [Arm(axis, n, n, {n: True}, 1) for n in DEFAULTS[axis]]
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
        experiment = Experiment(self.path, search, arms, baseline, rank_by)
        configurations, skipped = self.configurations(experiment, entries)
        object.__setattr__(experiment, "configurations", configurations)
        object.__setattr__(experiment, "skipped", skipped)
        return experiment

    def scalar(self, node, what: str, kind: type, default=None):
        if node is None:
            return default
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, f"{what} must be a single value")
        value = yaml.safe_load(node.value) if node.style is None else node.value
        if not isinstance(value, kind) or (kind in (int, float, str) and isinstance(value, bool)):
            self.fail(node, f"{what} must be {kind.__name__}, not {value!r}")
        return value

    def rank_by(self, node) -> tuple[str, int]:
        text = self.scalar(node, "rank_by", str, "recall@4")
        metric, _, k = text.partition("@")
        if metric not in RANK_METRICS or not k.isdigit() or int(k) < 1:
            self.fail(
                node, f"rank_by must be a metric at a depth ({', '.join(m + '@k' for m in RANK_METRICS)}), not {text!r}"
            )
        return metric, int(k)

    def axis(self, axis: str, node) -> list[Arm]:
        if isinstance(node, yaml.ScalarNode):
            node = yaml.SequenceNode("tag:yaml.org,2002:seq", [node], node.start_mark, node.end_mark)
        if isinstance(node, yaml.SequenceNode):  # bare names: presets, packaged models, plain retrievers
            items = []
            for item in node.value:
                name = self.scalar(item, f"{axis} entry", str)
                items.append((name, item, item))
        else:
            items = self.mapping(node, axis)
        if not items:
            self.fail(node, f"{axis} needs at least one arm")
        return [self.arm(axis, name, key_node, value) for name, key_node, value in items]

    def arm(self, axis: str, name: str, key_node, node) -> Arm:
        if not NAME.match(name):
            self.fail(key_node, f"arm name {name!r}: letters, digits, '.', '_' and '-' only, at most 40")
        kinds = KINDS[axis]
        if isinstance(node, yaml.ScalarNode):  # a name alone: what it names
            value = self.scalar(node, f"{axis} {name}", str) if node is not key_node else name
            settings = self.shorthand(axis, value, node)
        else:
            settings = {}
            for key, k_node, v_node in self.mapping(node, f"{axis[:-1]} {name}"):
                settings[key] = (k_node, v_node)
            kind = next((k for k in kinds if k in settings), None)
            if kind is None:
                self.fail(node, f"{axis[:-1]} {name} says nothing of what it is: give one of {', '.join(kinds)}")
            for key, (k_node, _) in settings.items():
                if key not in kinds[kind]:
                    self.unknown(k_node, key, kinds[kind], f"{kind} setting")
            settings = {key: self.value(axis, key, v) for key, (_, v) in settings.items()}
        kind = next(k for k in kinds if k in settings)
        self.check_arm(axis, name, kind, settings, node)
        return Arm(axis, name, kind, settings, node.start_mark.line + 1)

    def shorthand(self, axis: str, value: str, node) -> dict:
        known = {
            "chunkers": PRESETS,
            "embedders": PACKAGED,
            "retrievers": tuple(RETRIEVER_KEYS),
            "rerankers": ("none",),
        }
        if value not in known[axis]:
            self.unknown(
                node, value, known[axis], {"chunkers": "preset", "embedders": "packaged model"}.get(axis, axis[:-1])
            )
        key = {"chunkers": "preset", "embedders": "packaged"}.get(axis)
        return {key: value} if key else {value: True}

    def value(self, axis: str, key: str, node):
        if key == "header":
            return self.scalar(node, key, bool)
        if key in NUMBERS:
            value = self.scalar(node, key, object)
            if isinstance(value, bool) or not isinstance(value, NUMBERS[key]):
                kind = "a whole number" if NUMBERS[key] is int else "a number"
                self.fail(node, f"{key} must be {kind}, not {value!r}")
            if not math.isfinite(value) or value < 0:
                self.fail(node, f"{key} must be a finite number ≥ 0, not {value!r}")
            return value
        if key in FLAGS:
            value = self.scalar(node, key, object)
            return value if value is not None else True
        return self.scalar(node, key, str)

    def check_arm(self, axis: str, name: str, kind: str, s: dict, node) -> None:
        where = f"{axis[:-1]} {name}"
        if axis == "chunkers":
            if kind == "preset" and s["preset"] not in PRESETS:
                self.unknown(node, s["preset"], PRESETS, "preset")
            if kind == "cut" and s["cut"] not in CUTS:
                self.unknown(node, s["cut"], CUTS, "cut")
            if kind == "chonkie" and s["chonkie"] not in CHONKIE_CHUNKERS:
                self.unknown(node, s["chonkie"], CHONKIE_CHUNKERS, "chonkie chunker")
            if kind == "chonkie" and s["chonkie"] == "token" and s.get("unit") == "tokens":
                self.fail(
                    node,
                    f"{where}: chonkie's token chunker counts characters here; for model tokens use "
                    "chonkie: recursive or sentence, or semchunk",
                )
            if s.get("unit", "characters") not in UNITS:
                self.unknown(node, s["unit"], UNITS, "unit")
            if kind != "preset" and s.get("cut") != "sentences":
                size = s.get("size")
                if not size or size < 1:
                    self.fail(node, f"{where}: size must be a whole number ≥ 1")
                overlap = s.get("overlap", 0)
                absolute = overlap * size if isinstance(overlap, float) and overlap < 1 else overlap
                if absolute >= size:
                    self.fail(node, f"{where}: overlap {overlap} must be smaller than size {size}")
            if s.get("cut") == "sentences" and "window" not in s:
                s["window"] = 0
            if "window" in s and s.get("cut") != "sentences":
                self.fail(node, f"{where}: window (sentences returned around a hit) needs cut: sentences")
            if "parent_size" in s and s["parent_size"] <= s.get("size", 0):
                self.fail(node, f"{where}: parent_size {s['parent_size']} must be larger than size {s.get('size')}")
        if axis == "embedders" and kind == "path":
            folder = Path(s["path"]).expanduser()
            if not folder.is_absolute():
                folder = self.path.parent / folder
            s["path"] = str(folder)
            if not folder.is_dir():
                self.fail(node, f"{where}: no folder {folder}")
            if not any(f.suffix in (".safetensors", ".bin", ".onnx") for f in folder.rglob("*")):
                self.fail(node, f"{where}: {folder} holds no weights (.safetensors, .bin or .onnx)")
        if axis == "rerankers" and kind == "cross_encoder":
            folder = Path(s["cross_encoder"]).expanduser()
            folder = folder if folder.is_absolute() else self.path.parent / folder
            s["cross_encoder"] = str(folder)
            if not folder.is_dir():
                self.fail(node, f"{where}: no folder {folder}")
        if kind == "url":
            if not re.match(r"^https?://[^\s/]+", s["url"]):
                self.fail(node, f"{where}: url must start with http:// or https://, not {s['url']!r}")
            if axis == "embedders" and "model" not in s:
                self.fail(node, f"{where}: an endpoint needs the model name it serves (model: ...)")
            if s.get("batch_size", 1) < 1 or s.get("concurrency", 1) < 1:
                self.fail(node, f"{where}: batch_size and concurrency must be ≥ 1")
        if axis == "retrievers":
            if kind == "dense" and s.get("index", "exact") not in ("exact", "hnsw"):
                self.unknown(node, s["index"], ("exact", "hnsw"), "dense index")
            if kind == "hybrid" and not 0 <= s.get("dense_weight", 0.5) <= 1:
                self.fail(node, f"{where}: dense_weight must lie in [0, 1]")
            if kind == "bm25" and s.get("analyzer") is not None:
                from rag_assets.retrieval.lexical import ANALYZERS

                if s["analyzer"] not in ANALYZERS:
                    self.unknown(node, s["analyzer"], ANALYZERS, "analyzer")
        if axis == "rerankers" and kind != "none" and s.get("depth", 25) < 1:
            self.fail(node, f"{where}: depth must be ≥ 1")

    def configurations(self, experiment: Experiment, entries) -> tuple[list[Configuration], dict[str, str]]:
        arms, base = experiment.arms, experiment.baseline
        if experiment.search == "grid":
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
            if retriever.kind == "bm25" and reranker.kind == "none" and chunker.settings.get("unit") != "tokens":
                embedder = None  # BM25 alone embeds nothing: one configuration, whatever the embedders
            if chunker.settings.get("unit") == "tokens" and embedder is not None and embedder.kind == "url":
                skipped[Configuration(chunker, embedder, retriever, reranker).id] = (
                    f"chunker {chunker.name} counts the embedder's tokens, and {embedder.name}'s tokenizer is behind "
                    "its endpoint"
                )
                continue
            config = Configuration(chunker, embedder, retriever, reranker)
            if config.id not in seen:
                seen.add(config.id)
                out.append(config)
        if not out:
            node = entries.get("chunkers", (None, None))[1]
            self.fail(node, "no configuration can run: token sizes need a local embedder's tokenizer")
        return out, skipped
