"""What a retriever, an embedding model and a reranker are, as settings: typed, frozen, each value
checked for its type and range when made (pydantic), so that what cannot run is refused before
anything runs. The lab's own retrievers are three of them (`LAB_RETRIEVERS`); an experiment file's
arms are made of them; `search.run_queries` ranks with them, `embedders.make` and `rerank.make`
make the models they name.

Light on purpose (the catalog and pydantic): `rag-assets check` reads a file through these without
loading numpy or a model.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from rag_assets import environment
from rag_assets.catalog import (
    ANALYZERS,
    LLM_RERANK_DEPTH,
    PACKAGED,
    RERANK_DEPTH,
    RRF_K,
)

HNSW_M, HNSW_EF_SEARCH = 32, 256  # rag_assets.retrieval.ann's defaults
MAX_DEPTH = 1000  # the deepest a list may go: rankings, rerank shortlists
BATCH = 64  # texts per embedding request (docs/experiments.md measures 32 against 64)
Text = Annotated[str, StringConstraints(max_length=1000)]


class Spec(BaseModel):
    """Frozen, strict (no "512" for 512), finite, and no key it does not know."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    def settings(self) -> dict:
        """What it was given, as a result row records it."""
        return self.model_dump(mode="json", exclude_defaults=False)


# --- retrievers -------------------------------------------------------------------------------
class Dense(Spec):
    """Cosine over unit vectors: exact (one matrix product), or an HNSW graph of degree `m`
    searched with `ef_search` candidates."""

    dense: Literal[True] = True
    index: Literal["exact", "hnsw"] = "exact"
    m: int = Field(HNSW_M, ge=2, le=256)  # faiss needs 2 or more
    ef_search: int = Field(HNSW_EF_SEARCH, ge=1, le=4096)

    kind: ClassVar[str] = "dense"


class Bm25(Spec):
    """BM25 (Lucene's) with its k1, b and analyzer (None: the lab's default, per language)."""

    bm25: Literal[True] = True
    k1: float = Field(1.2, ge=0, le=10)
    b: float = Field(0.75, ge=0, le=1)
    analyzer: Literal[ANALYZERS] | None = None  # type: ignore[valid-type]

    kind: ClassVar[str] = "bm25"


class Hybrid(Spec):
    """Dense and BM25 fused: reciprocal rank fusion with `rrf_k`, or a weighted sum of min-max
    normalised scores (`dense_weight`); each list `depth` deep before fusion (None: as deep as the
    ranking asked for, DEPTH in the lab's runs)."""

    hybrid: Literal[True] = True
    rrf_k: int = Field(RRF_K, ge=1, le=100_000)
    dense_weight: float | None = Field(None, ge=0, le=1)
    depth: int | None = Field(None, ge=1, le=MAX_DEPTH)

    kind: ClassVar[str] = "hybrid"


Retriever = Dense | Bm25 | Hybrid
LAB_RETRIEVERS: dict[str, Retriever] = {"dense": Dense(), "bm25": Bm25(), "hybrid": Hybrid()}


# --- embedding models -------------------------------------------------------------------------
class Endpoint(Spec):
    """An OpenAI-compatible server: where, which model, the variable holding its key (never the
    key), and how to call it. `tokenizer`: a tokenizer.json (or a folder holding one) that counts
    the model's tokens here, for costs and windows, when the server's own count is not tokens."""

    url: str = Field(pattern=r"^https?://[^\s/@]+(/\S*)?$", max_length=2000)
    model: Text | None = None
    key_env: str | None = Field(None, max_length=128)
    batch_size: int = Field(BATCH, ge=1, le=2048)
    concurrency: int = Field(2, ge=1, le=32)
    retries: int = Field(3, ge=0, le=10)
    timeout_s: float = Field(30.0, gt=0, le=600)
    price_per_million_tokens: float | None = Field(None, ge=0, le=1_000_000)

    @field_validator("key_env")
    @classmethod
    def _meant_for_a_key(cls, name: str | None) -> str | None:
        """Only a variable meant for a key: any other would send its value (a password) to `url`."""
        if name is not None and not environment.key_variable(name):
            raise ValueError(
                f"only a variable meant for a key, {environment.KEY_PREFIX} then capitals, digits or "
                f"'_' (such as {environment.KEY_PREFIX}EMBEDDINGS), not {name!r}"
            )
        return name


class PackagedModel(Spec):
    packaged: Literal[tuple(PACKAGED)]  # type: ignore[valid-type]

    kind: ClassVar[str] = "packaged"


class ModelFolder(Spec):
    """A sentence-transformers folder, with the prefixes it was trained with (e5, bge)."""

    path: str = Field(min_length=1, max_length=4096)
    name: Text | None = None
    batch_size: int = Field(32, ge=1, le=2048)
    query_prefix: Text = ""
    passage_prefix: Text = ""

    kind: ClassVar[str] = "path"


class EmbeddingEndpoint(Endpoint):
    query_prefix: Text = ""
    passage_prefix: Text = ""
    tokenizer: str | None = Field(None, max_length=4096)

    kind: ClassVar[str] = "url"

    @model_validator(mode="after")
    def _named(self):
        if not self.model:
            raise ValueError("an embedding endpoint needs the model name it serves (model: ...)")
        return self


EmbedderSpec = PackagedModel | ModelFolder | EmbeddingEndpoint


# --- rerankers --------------------------------------------------------------------------------
class NoReranker(Spec):
    none: Literal[True] = True

    kind: ClassVar[str] = "none"


class CrossEncoder(Spec):
    """A sentence-transformers CrossEncoder folder re-scoring the top `depth`."""

    cross_encoder: str = Field(min_length=1, max_length=4096)
    depth: int = Field(RERANK_DEPTH, ge=1, le=MAX_DEPTH)

    kind: ClassVar[str] = "cross_encoder"


class RerankEndpoint(Endpoint):
    """`POST /rerank` in the Cohere / infinity shape, re-scoring the top `depth`."""

    depth: int = Field(RERANK_DEPTH, ge=1, le=MAX_DEPTH)

    kind: ClassVar[str] = "url"


class LLMReranker(Spec):
    """The local generator's yes/no log-odds (slow on a CPU) over the top `depth`."""

    llm: Literal[True] = True
    depth: int = Field(LLM_RERANK_DEPTH, ge=1, le=MAX_DEPTH)

    kind: ClassVar[str] = "llm"


RerankerSpec = NoReranker | CrossEncoder | RerankEndpoint | LLMReranker
