"""Where the dataset and the data dir are, and how much ground truth a run uses."""


import os
from pathlib import Path

from dagster import ConfigurableResource

from rag_assets.dataset import BUNDLED_DATASET, PROJECT_ROOT, Dataset
from rag_assets.ground_truth import FULL, Sample

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
