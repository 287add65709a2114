"""Who sees what, through the path `rag-assets ask` runs: a data dir materialised by `run`, the
index opened by `Served.load` (Dagster's freshness verdict, the snapshot's access lists), and
sidecars that exist but cannot be read as a list failing closed."""

import pandas as pd
import pytest
from conftest import ScriptedLM, write_dataset

from rag_assets.answering.answerer import Answerer, Generative
from rag_assets.app.cli import main
from rag_assets.app.serving import opened
from rag_assets.defs import build_definitions
from rag_assets.defs.resources import EmbedderResource
from rag_assets.ingest.access import ALL_TENANTS
from rag_assets.settings import Settings

ORION = "The Orion budget code is ZX-4471 and only finance may know it."
DOCS = {
    "a/plan.md": "---\naccess: [team-a]\n---\n# Plan A\n\nProject Heron ships the pump controller in June.",
    "b/plan.md": "# Plan B\n\nProject Falcon launches on 4 March; the budget is 2 million euros.",
    "secret.md": f"# Secret\n\n{ORION}",
    "other.md": f"# Other\n\nThe Orion audit code is QQ-9 and only auditors may know it. {ORION}",
    "public.md": "# Handbook\n\nEvery project reports its budget and launch date to the board.",
}
QUESTIONS = [
    {"id": "q1", "phrasings": ["When does Falcon launch?"], "needle": "Project Falcon launches on 4 March;"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A data dir `run` materialised (strategy E, no generator), opened as `ask` opens it."""
    root = tmp_path_factory.mktemp("served")
    dataset = write_dataset(root / "dataset", DOCS, [{**q, "kind": "answerable"} for q in QUESTIONS])
    documents = dataset / "documents"
    (documents / "b" / "plan.md.access").write_text("team-b\n", encoding="utf-8")
    (documents / "secret.md.access").symlink_to("../nowhere/missing")  # dangling
    (documents / "other.md.access").mkdir()  # a folder where the list should be
    (documents / "other.md.access" / "team-a").write_text("x", encoding="utf-8")
    assert (
        main(["run", "--dataset", str(dataset), "--data-dir", str(root / "data"), "--strategies", "E", "--no-llm"]) == 0
    )
    settings = Settings(data_dir=root / "data", dataset=dataset)
    embedder = EmbedderResource(models=settings.models).get()
    with opened(settings) as served:
        index, chunks = served.load("E", embedder.identity)
    snapshot = pd.read_parquet(root / "data" / "assets" / "corpus_snapshot.parquet").set_index("path")
    return index, chunks, embedder, snapshot


def test_a_sidecar_that_is_not_a_readable_file_fails_its_document_closed(served):
    *_, snapshot = served
    for path, why in (("secret.md", "broken symbolic link"), ("other.md", "is a folder")):
        row = snapshot.loc[path]
        assert (row.status, row.reason) == ("failed", "bad_access_list"), path
        assert why in row.error and "indexed for nobody" in row.error
    assert "other.md.access/team-a" not in snapshot.index  # a sidecar folder is not walked as documents
    assert snapshot.loc["b/plan.md", "status"] == "ok"


def _sources(served, tenant, question):
    index, chunks, embedder, _ = served
    lm = ScriptedLM()
    answer = Answerer(index, chunks, embedder, Generative(lm), threshold=2.0, tenant=tenant).ask(question)
    shown = " ".join(s.quote for s in answer.sources) + " ".join(p.replace(question, "") for p in lm.prompts)
    assert answer.sources or not lm.prompts
    return shown


def test_ask_through_the_served_index_shows_a_tenant_only_what_it_may_see(served):
    question = "When does Project Falcon launch and what is its budget?"
    assert "4 March" not in _sources(served, "team-a", question)
    assert "4 March" in _sources(served, "team-b", question)
    assert "Heron" not in _sources(served, None, "Project Heron pump controller")  # public only
    for tenant in (None, "team-a", "team-b", ALL_TENANTS):
        assert "ZX-4471" not in _sources(served, tenant, "What is the Orion budget code?")


def test_the_served_index_carries_access_lists_and_refuses_without_them(served):
    index, chunks, embedder, _ = served
    assert index.access is not None and len(index.access) == len(index.chunk_ids)
    blind = type(index)(index.strategy, index.chunk_ids, index.texts, index.vectors, index.bm25)
    with pytest.raises(ValueError, match="carries no access lists"):
        Answerer(blind, chunks, embedder, Generative(ScriptedLM()), threshold=2.0, tenant="team-a").ask("Falcon?")
    with pytest.raises(ValueError, match="carries no access lists"):
        Answerer(blind, chunks, embedder, Generative(ScriptedLM()), threshold=2.0, tenant=None).ask("Falcon?")
    assert (
        Answerer(blind, chunks, embedder, Generative(ScriptedLM()), threshold=2.0, tenant=ALL_TENANTS)
        .ask("Falcon?")
        .sources
    )


def test_ask_serves_from_a_materialised_strategy_as_the_sweep_does(tmp_path):
    """After `run --strategies C` the serving strategy E was never built: `ask` falls back to C,
    as the refusal sweep and generation_eval do, instead of refusing."""
    from dagster import AssetMaterialization, instance_for_test

    from rag_assets.app.serving import Served

    settings = Settings(data_dir=tmp_path / "data", dataset=tmp_path)
    defs = build_definitions(settings)
    with instance_for_test() as instance:
        served = Served(defs, instance, settings)
        assert served.default_strategy() == "E"  # nothing built: the configured one, refused by name later
        for name, partition in (("chunk_sets", "C"), ("embeddings", "minilm|C")):
            instance.report_runless_asset_event(AssetMaterialization(name, partition=partition))
        instance.report_runless_asset_event(AssetMaterialization("chunk_sets", partition="A"))  # no vectors
        instance.report_runless_asset_event(AssetMaterialization("embeddings", partition="me5-small|A"))  # not served
        assert served.default_strategy() == "C"
        for name, partition in (("chunk_sets", "E"), ("embeddings", "minilm|E")):
            instance.report_runless_asset_event(AssetMaterialization(name, partition=partition))
        assert served.default_strategy() == "E"
