"""Pins the asset graph: an accidental change to keys, partitions, deps or checks fails here."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import Definitions

from rag_assets.app.plan import materialization_steps
from rag_assets.chunking.strategies import STRATEGIES
from rag_assets.defs import build_definitions, build_served_definitions
from rag_assets.retrieval.packaged import PACKAGED
from rag_assets.settings import Settings, SettingsError

MODELS = ["minilm", "minilm-fp32", "mpnet", "me5-small", "me5-small-int8"]
BY_MODEL = [f"{m}|{s}" for m in MODELS for s in ["A", "B", "C", "D", "E", "F", "W", "doc"]]
ROOT = Path(__file__).resolve().parent.parent
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
    defs = build_definitions(Settings())
    Definitions.validate_loadable(defs)
    assert graph_spec(defs) == EXPECTED
    assert [s.name for s in defs.schedules] == ["nightly_evaluation_0200_utc"]
    sensors = {s.name: s.default_status.value for s in defs.sensors}
    assert sensors == {"source_versions_sensor": "RUNNING", "automation": "RUNNING"}
    assert EXPECTED["chunk_sets"]["partitions"] == list(STRATEGIES) and MODELS == list(PACKAGED)


def test_run_plan_is_one_run_per_partition_after_the_roots():
    """Per strategy: its chunk set and BM25 index, then its embeddings and graph once per model."""
    two = build_definitions(Settings(models="me5-small,minilm"))
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


def test_the_served_definitions_hold_everything_the_stale_verdict_reads():
    """`ask` builds only the served assets: every asset upstream of them is among them, with the
    same code versions, so Dagster's verdict on the served index is the whole graph's."""
    whole = build_definitions(Settings()).resolve_asset_graph()
    served = build_served_definitions(Settings()).resolve_asset_graph()
    keys = {k.to_user_string() for k in served.get_all_asset_keys()}
    assert {"corpus_snapshot", "chunk_sets", "embeddings", "bm25_index", "hnsw_index"} <= keys
    assert {"retrieval_runs", "evaluation_tables", "generation_eval", "significance_report"}.isdisjoint(keys)
    for key in served.get_all_asset_keys():
        node = whole.get(key)
        assert {p.to_user_string() for p in node.parent_keys} <= keys, key
        assert served.get(key).code_version == node.code_version
        assert served.asset_check_keys >= {c for c in whole.asset_check_keys if c.asset_key == key}


def test_importing_the_dagster_layer_builds_nothing_and_reads_no_setting():
    """Every module of rag_assets.defs imports with settings in the environment that the door
    refuses, and none holds a Definitions: they are built by an explicit call (definitions.py
    makes the UI's), which refuses the same settings in one line."""
    script = """
import importlib, pkgutil, dagster, rag_assets.defs
modules = [importlib.import_module(f"rag_assets.defs.{m.name}") for m in pkgutil.iter_modules(rag_assets.defs.__path__)]
assert len(modules) > 10, modules
held = [f"{m.__name__}.{n}" for m in modules for n, v in vars(m).items() if isinstance(v, dagster.Definitions)]
assert held == [], held
from rag_assets.settings import SettingsError
try:
    import definitions
except SettingsError as exc:
    print("refused:", exc)
"""
    env = {**os.environ, "RAG_ASSETS_MODELS": "minilm,nope", "RAG_ASSETS_SETTINGS": ""}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused: unknown embedding model nope"), done.stdout


def test_settings_that_cannot_work_are_refused_at_the_door(tmp_path):
    for bad in (
        {"models": "minilm,nope"},
        {"engine": "spark"},
        {"ray_address": "auto"},  # with the local engine
        {"llm": False, "rerank_llm": True},
        {"questions": "some"},
        {"generator_url": "http://127.0.0.1:9/v1"},  # without the model's name
        {"max_file_mb": float("nan")},
        {"ann_min_chunks": 0},
        {"answerers": "generate,oracle"},
    ):
        with pytest.raises(SettingsError):
            Settings(**bad)
    with pytest.raises(SettingsError, match="RAG_ASSETS_ANN_MIN_CHUNKS must be a whole number"):
        Settings.from_environment({"RAG_ASSETS_ANN_MIN_CHUNKS": "many"})
    data_dir = tmp_path / "never-made"
    done = subprocess.run(
        [sys.executable, "-m", "rag_assets.app.cli", "run", "--data-dir", str(data_dir), "--ray-address", "auto"],
        env={**os.environ, "RAG_ASSETS_ENGINE": ""},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "rag-assets run: error: a Ray address needs the ray engine (--engine ray)"
    ]
    assert not data_dir.exists()  # refused before anything is written
    saved = Settings(models="minilm,me5-small", postgres="postgresql://u:secret@127.0.0.1:1/db")
    assert "secret" not in repr(saved)
    assert Settings.read(saved.write(tmp_path / "s.json")) == Settings(models="minilm,me5-small")
    assert "secret" not in (tmp_path / "s.json").read_text() and (tmp_path / "s.json").stat().st_mode & 0o077 == 0
