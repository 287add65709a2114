"""Pins the asset graph: an accidental change to keys, partitions, deps or checks fails here."""

from dagster import Definitions

from rag_assets.app.plan import materialization_steps
from rag_assets.chunking.strategies import STRATEGIES
from rag_assets.defs import build_definitions, defs
from rag_assets.defs.resources import EmbedderResource
from rag_assets.retrieval.packaged import PACKAGED

MODELS = ["minilm", "minilm-fp32", "mpnet", "me5-small"]
BY_MODEL = [f"{m}|{s}" for m in MODELS for s in ["A", "B", "C", "D", "E", "F", "W", "doc"]]
EXPECTED = {
    "corpus_files": {"group": "sources", "deps": [], "partitions": None, "checks": []},
    "embedding_model": {"group": "sources", "deps": [], "partitions": MODELS, "checks": []},
    "questions_file": {"group": "sources", "deps": [], "partitions": None, "checks": []},
    "bm25_settings": {"group": "sources", "deps": [], "partitions": None, "checks": []},
    "chunker_settings": {
        "group": "sources",
        "deps": [],
        "partitions": ["A", "B", "C", "D", "E", "F", "W", "doc"],
        "checks": [],
    },
    "corpus_snapshot": {
        "group": "corpus",
        "deps": ["corpus_files"],
        "partitions": None,
        "checks": ["counts_add_up", "document_ids_unique"],
    },
    "drafted_questions": {
        "group": "corpus",
        "deps": ["corpus_snapshot", "questions_file"],
        "partitions": None,
        "checks": [],
    },
    "ground_truth": {
        "group": "corpus",
        "deps": ["corpus_snapshot", "drafted_questions", "questions_file"],
        "partitions": None,
        "checks": ["needles_unique_outside_headings"],
    },
    "chunk_sets": {
        "group": "chunking",
        "deps": ["chunker_settings", "corpus_snapshot", "ground_truth"],
        "partitions": ["A", "B", "C", "D", "E", "F", "W", "doc"],
        "checks": ["chunk_ids_unique", "every_ok_document_chunked", "offsets_slice_back"],
    },
    "embeddings": {
        "group": "indexing",
        "deps": ["chunk_sets", "embedding_model"],
        "partitions": BY_MODEL,
        "checks": ["single_model_identity", "unit_norm_and_distance_identity"],
    },
    "bm25_index": {
        "group": "indexing",
        "deps": ["bm25_settings", "chunk_sets"],
        "partitions": ["A", "B", "C", "D", "E", "F", "W", "doc"],
        "checks": [],
    },
    "hnsw_index": {
        "group": "indexing",
        "deps": ["embeddings", "ground_truth"],
        "partitions": BY_MODEL,
        "checks": [],
    },
    "retrieval_runs": {
        "group": "evaluation",
        "deps": ["bm25_index", "chunk_sets", "corpus_snapshot", "embeddings", "ground_truth"],
        "partitions": None,
        "checks": [],
    },
    "query_hits": {
        "group": "evaluation",
        "deps": ["chunk_sets", "ground_truth", "retrieval_runs"],
        "partitions": None,
        "checks": [],
    },
    "evaluation_tables": {
        "group": "evaluation",
        "deps": ["query_hits", "retrieval_runs"],
        "partitions": None,
        "checks": [],
    },
    "significance_report": {
        "group": "evaluation",
        "deps": ["evaluation_tables", "query_hits"],
        "partitions": None,
        "checks": [],
    },
    "refusal_sweep": {
        "group": "evaluation",
        "deps": ["chunk_sets", "ground_truth", "retrieval_runs"],
        "partitions": None,
        "checks": [],
    },
    "generation_eval": {
        "group": "evaluation",
        "deps": ["bm25_index", "chunk_sets", "corpus_snapshot", "embeddings", "ground_truth", "retrieval_runs"],
        "partitions": None,
        "checks": [],
    },
    "evaluation_history": {
        "group": "nightly",
        "deps": ["corpus_snapshot", "evaluation_tables", "query_hits"],
        "partitions": None,
        "checks": [],
    },
    "regression_report": {
        "group": "nightly",
        "deps": ["evaluation_history"],
        "partitions": None,
        "checks": ["no_significant_regression"],
    },
}


def graph_spec(definitions: Definitions) -> dict:
    graph = definitions.resolve_asset_graph()
    checks = {}
    for check_key in graph.asset_check_keys:
        checks.setdefault(check_key.asset_key.to_user_string(), []).append(check_key.name)
    spec = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        spec[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(p.to_user_string() for p in node.parent_keys),
            "partitions": node.partitions_def.get_partition_keys() if node.partitions_def else None,
            "checks": sorted(checks.get(key.to_user_string(), [])),
        }
    return spec


def test_asset_graph_is_pinned():
    Definitions.validate_loadable(defs)
    assert graph_spec(defs) == EXPECTED
    assert [s.name for s in defs.schedules] == ["nightly_evaluation_0200_utc"]
    sensors = {s.name: s.default_status.value for s in defs.sensors}
    assert sensors == {"source_versions_sensor": "RUNNING", "automation": "RUNNING"}
    assert EXPECTED["chunk_sets"]["partitions"] == list(STRATEGIES) and MODELS == list(PACKAGED)


def test_run_plan_is_one_run_per_partition_after_the_roots():
    """Per strategy: its chunk set and BM25 index, then its embeddings and graph once per model."""
    two = build_definitions(embedder=EmbedderResource(models="me5-small,minilm"))
    steps = materialization_steps(two, ["A", "W"])
    assert [(s.label, [k.to_user_string() for k in s.keys], s.partition_key) for s in steps] == [
        ("unpartitioned roots", ["corpus_snapshot", "drafted_questions", "ground_truth"], None),
        ("partition A", ["chunk_sets", "bm25_index"], "A"),
        ("partition me5-small|A", ["embeddings", "hnsw_index"], "me5-small|A"),
        ("partition minilm|A", ["embeddings", "hnsw_index"], "minilm|A"),
        ("partition W", ["chunk_sets", "bm25_index"], "W"),
        ("partition me5-small|W", ["embeddings", "hnsw_index"], "me5-small|W"),
        ("partition minilm|W", ["embeddings", "hnsw_index"], "minilm|W"),
        (
            "downstream of partitions",
            [
                "retrieval_runs",
                "generation_eval",
                "query_hits",
                "refusal_sweep",
                "evaluation_tables",
                "evaluation_history",
                "significance_report",
                "regression_report",
            ],
            None,
        ),
    ]
