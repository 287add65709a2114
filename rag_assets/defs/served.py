"""The part of the graph `ask` and `serve` read: the served index's assets and their sources."""

from dagster import Definitions

from rag_assets.defs.chunk_assets import chunk_sets
from rag_assets.defs.corpus_assets import corpus_snapshot, ground_truth
from rag_assets.defs.drafting_assets import drafted_questions
from rag_assets.defs.external_sources import SOURCES
from rag_assets.defs.index_assets import bm25_index, embeddings, hnsw_index
from rag_assets.defs.resources import from_settings
from rag_assets.settings import Settings

# The served index (corpus_snapshot, chunk_sets, embeddings, bm25_index; hnsw_index where it is
# searched) and every asset upstream of it (chunk sets carry the needles the questions hold).
SERVED_ASSETS = [corpus_snapshot, drafted_questions, ground_truth, chunk_sets, embeddings, bm25_index, hnsw_index]


def build_served_definitions(settings: Settings) -> Definitions:
    """Only the served index's assets, what is upstream of them, their checks and the sources:
    Dagster's stale verdict on them reads no more of the graph (their code versions, data
    versions and dependencies are the same objects the whole graph holds), so `ask` imports and
    builds none of the evaluation, generation and history assets."""
    return Definitions(assets=[*SOURCES, *SERVED_ASSETS], resources=from_settings(settings))
