"""Where everything lives under a data dir: the one place that builds its paths.

<data dir>/assets/<asset>.parquet                    unpartitioned tables
<data dir>/assets/<asset>/<partition>.parquet        partitioned tables (one per strategy)
<data dir>/assets/bm25_index/<strategy>/             BM25 indexes
<data dir>/assets/hnsw_index/<strategy>.faiss        HNSW graphs (beside their Parquet row)
<data dir>/assets/evaluation_history/date=.../       the evaluation history
<data dir>/reports/                                  Markdown reports and plots
<data dir>/cache/embeddings/<model>/                 the embedding cache
<data dir>/dagster_home/                             the Dagster instance (run history)
<data dir>/.rag-assets.lock                          the writers' lock

Models built from packaged weights (the int8 encoder, the generator converted from GGUF) are
kept per machine, outside any data dir: see `model_cache`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq


def model_cache() -> Path:
    """Where models built from packaged weights are kept: $RAG_ASSETS_MODEL_CACHE, else
    ~/.cache/rag_assets/models. Each build's folder is named by its source's fingerprint."""
    configured = os.environ.get("RAG_ASSETS_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "rag_assets" / "models"


@dataclass(frozen=True)
class DataDir:
    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    @property
    def assets(self) -> Path:
        return self.root / "assets"

    def table(self, asset: str, partition: str | None = None) -> Path:
        """The Parquet file of an asset (the IO manager's layout)."""
        return self.assets / asset / f"{partition}.parquet" if partition else self.assets / f"{asset}.parquet"

    def read_table(self, asset: str, partition: str | None = None) -> pd.DataFrame:
        path = self.table(asset, partition)
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing")
        return pq.read_table(path).to_pandas()

    def bm25(self, strategy: str) -> Path:
        return self.assets / "bm25_index" / strategy

    def hnsw(self, strategy: str) -> Path:
        return self.assets / "hnsw_index" / f"{strategy}.faiss"

    @property
    def history(self) -> Path:
        return self.assets / "evaluation_history"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def embedding_cache(self) -> Path:
        return self.root / "cache" / "embeddings"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    @property
    def lock(self) -> Path:
        return self.root / ".rag-assets.lock"
