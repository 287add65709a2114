"""Where everything lives under a data dir: the one place that builds its paths.

<data dir>/assets/<asset>.parquet                    unpartitioned tables
<data dir>/assets/<asset>/<partition>.parquet        partitioned tables (one per strategy)
<data dir>/assets/bm25_index/<strategy>/             BM25 indexes
<data dir>/assets/hnsw_index/<strategy>.faiss        HNSW graphs (beside their Parquet row)
<data dir>/assets/evaluation_history/date=.../       the evaluation history
<data dir>/reports/                                  Markdown reports and plots
<data dir>/cache/embeddings/<model>/                 the embedding cache
<data dir>/cache/rerank/<reranker>/                  rerank scores (experiments)
<data dir>/cache/endpoints/                          endpoint models' probe answers (their identities)
<data dir>/cache/drafts/<model>/                     drafted questions and their judgements, by prompt
<data dir>/dagster_home/                             the Dagster instance (run history)
<data dir>/.rag-assets.lock                          the writers' lock
<data dir>/dataset.json                              the dataset it was built from

The data dir may be any fsspec URL (`s3://bucket/prefix`): then every path above is a UPath
under it (see `storage` for how each is written), except the Dagster home and the lock, which
are this machine's (`instance_homes()/<hash of the URL>/`): such a data dir keeps its run
history in PostgreSQL, and SQLite's files cannot live on object storage.

Models built from packaged weights (the int8 encoder, the generator converted from GGUF) are
kept per machine, outside any data dir: see `model_cache`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rag_assets import environment, storage


def model_cache() -> Path:
    """Where models built from packaged weights are kept: $RAG_ASSETS_MODEL_CACHE, else
    ~/.cache/rag_assets/models. Each build's folder is named by its source's fingerprint."""
    configured = environment.value(environment.MODEL_CACHE)
    return Path(configured) if configured else Path.home() / ".cache" / "rag_assets" / "models"


def instance_homes() -> Path:
    """Where the Dagster homes of data dirs on object storage are kept on this machine:
    $RAG_ASSETS_STATE_DIR, else ~/.local/state/rag_assets/dagster_homes. A home there holds
    its dagster.yaml and local logs; the run history itself is in PostgreSQL."""
    configured = environment.value(environment.STATE_DIR)
    return Path(configured) if configured else Path.home() / ".local" / "state" / "rag_assets" / "dagster_homes"


@dataclass(frozen=True)
class DataDir:
    root: storage.AnyPath  # a local folder (absolute) or a UPath on object storage

    def __post_init__(self):
        object.__setattr__(self, "root", storage.as_path(self.root))

    @property
    def remote(self) -> bool:
        return storage.is_remote(self.root)

    def relative(self, path: storage.AnyPath) -> str:
        """`path` relative to the data dir, as metadata records it (the data dir may move)."""
        return path.relative_to(self.root).as_posix()

    @property
    def assets(self) -> storage.AnyPath:
        return self.root / "assets"

    def table(self, asset: str, partition: str | None = None) -> storage.AnyPath:
        """The Parquet file of an asset (the IO manager's layout: a (model, strategy) partition
        `minilm|E` is the file `minilm/E.parquet`)."""
        if partition:
            return self.assets / asset / f"{partition.replace('|', '/')}.parquet"
        return self.assets / f"{asset}.parquet"

    def read_table(self, asset: str, partition: str | None = None) -> pd.DataFrame:
        path = self.table(asset, partition)
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing")
        return storage.read_parquet(path).to_pandas()

    def bm25(self, strategy: str) -> storage.AnyPath:
        return self.assets / "bm25_index" / strategy

    def hnsw(self, model: str, strategy: str) -> storage.AnyPath:
        return self.assets / "hnsw_index" / model / f"{strategy}.faiss"

    @property
    def history(self) -> storage.AnyPath:
        return self.assets / "evaluation_history"

    @property
    def reports(self) -> storage.AnyPath:
        return self.root / "reports"

    @property
    def embedding_cache(self) -> storage.AnyPath:
        return self.root / "cache" / "embeddings"

    @property
    def endpoint_records(self) -> storage.AnyPath:
        """Each endpoint model's probe answer: its identity between runs."""
        return self.root / "cache" / "endpoints"

    @property
    def rerank_cache(self) -> storage.AnyPath:
        """Rerank scores by (reranker identity, query, passage)."""
        return self.root / "cache" / "rerank"

    @property
    def draft_cache(self) -> storage.AnyPath:
        return self.root / "cache" / "drafts"

    @property
    def answer_cache(self) -> storage.AnyPath:
        return self.root / "cache" / "answers"

    @property
    def dagster_home(self) -> Path:
        if self.remote:
            return instance_homes() / hashlib.sha256(str(self.root).encode()).hexdigest()[:16]
        return self.root / "dagster_home"

    @property
    def dataset_record(self) -> storage.AnyPath:
        return self.root / "dataset.json"

    @property
    def lock(self) -> Path:
        """A local file: on object storage, the lock of this machine's home for the data dir."""
        return (self.dagster_home if self.remote else self.root) / ".rag-assets.lock"
