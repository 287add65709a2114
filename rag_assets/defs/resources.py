"""Settings a run reads: dataset, data dir, ground-truth sample, embedding model, BM25, reranker."""


import os
from functools import lru_cache
from pathlib import Path

from dagster import ConfigurableResource

from rag_assets.dataset import BUNDLED_DATASET, PROJECT_ROOT, Dataset
from rag_assets.embedding import MODEL_NAME, Embedder
from rag_assets.ground_truth import FULL, Sample
from rag_assets.lexical import BM25Settings

DEFAULT_DATA_DIR = PROJECT_ROOT / "data"


def data_dir_from_env() -> Path:
    return Path(os.environ.get("RAG_ASSETS_DATA_DIR", DEFAULT_DATA_DIR)).resolve()


def dataset_from_env() -> Path:
    return Path(os.environ.get("RAG_ASSETS_DATASET", BUNDLED_DATASET)).resolve()


class DatasetResource(ConfigurableResource):
    """The corpus and questions a run reads (native dataset format, see the README)."""

    root: str
    full_ground_truth: bool = False
    sample_answerable: int = Sample.answerable
    sample_unanswerable: int = Sample.unanswerable
    sample_seed: int = Sample.seed

    def dataset(self) -> Dataset:
        return Dataset(Path(self.root)).check()

    def sample(self) -> Sample:
        if self.full_ground_truth:
            return FULL
        return Sample(self.sample_answerable, self.sample_unanswerable, None, self.sample_seed)


class DataDirResource(ConfigurableResource):
    """The data dir: assets that are not tables (BM25 indexes) and reports live under it."""

    root: str

    def path(self, *parts: str) -> Path:
        return Path(self.root).joinpath(*parts)


class EmbedderResource(ConfigurableResource):
    """The embedding model: a local sentence-transformers folder; empty = packaged all-MiniLM-L6-v2."""

    model_path: str = ""
    model_name: str = MODEL_NAME
    batch_size: int = 32

    def load(self) -> Embedder:
        return _embedder(self.model_path, self.model_name, self.batch_size)

    def identity(self) -> str:
        """Name plus weights hash; the weights are hashed, not loaded."""
        return self.load().identity


@lru_cache(maxsize=2)
def _embedder(model_path: str, model_name: str, batch_size: int) -> Embedder:
    """One loaded model per process and setting: assets of one run share it."""
    return Embedder(Path(model_path) if model_path else None, model_name, batch_size)


class RetrievalSettings(ConfigurableResource):
    """BM25 parameters, the reranker (a local CrossEncoder folder or cached name), and the
    refusal gate's operating point: the strategy whose dense distances it reads, and the threshold."""

    bm25_variant: str = "lucene"
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_stopwords: bool = False
    bm25_stemming: bool = False
    cross_encoder: str = ""
    refusal_strategy: str = "E"
    refusal_threshold: float = 0.6

    def bm25(self) -> BM25Settings:
        return BM25Settings(variant=self.bm25_variant, k1=self.bm25_k1, b=self.bm25_b,
                            stopwords=self.bm25_stopwords, stemming=self.bm25_stemming)
