"""The Dagster layer: assets, checks and resources over the core library. No algorithm here."""


from pathlib import Path

from dagster import Definitions

from rag_assets.defs.chunk_assets import chunk_sets
from rag_assets.defs.corpus_assets import corpus_snapshot, ground_truth
from rag_assets.defs.io_manager import ParquetIOManagerFactory
from rag_assets.defs.resources import DatasetResource, data_dir_from_env, dataset_from_env

ASSETS = [corpus_snapshot, ground_truth, chunk_sets]


def build_definitions(
    data_dir: Path | None = None, dataset_dir: Path | None = None, full_ground_truth: bool = False
) -> Definitions:
    """Definitions over one dataset and one data dir (defaults: env vars, then the bundled ones)."""
    data_dir = Path(data_dir or data_dir_from_env())
    return Definitions(
        assets=ASSETS,
        resources={
            "io_manager": ParquetIOManagerFactory(base_path=str(data_dir / "assets")),
            "dataset": DatasetResource(root=str(dataset_dir or dataset_from_env()), full_ground_truth=full_ground_truth),
        },
    )


defs = build_definitions()
