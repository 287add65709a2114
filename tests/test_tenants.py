"""A query on behalf of one tenant never receives another tenant's chunk, in any retriever,
in results or in a prompt; logs carry chunk ids and ranks, never document text."""

import json
import logging

import numpy as np
import pandas as pd
import pytest
from conftest import ScriptedLM, WordOverlapScorer, encoded_index

from rag_assets.answering.answerer import Answerer, Generative
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest.access import ALL_TENANTS, access_by_document
from rag_assets.retrieval.embedding import LocalEmbedder
from rag_assets.retrieval.search import run_queries

SECRET_B = "Project Falcon launches on 4 March; the budget is 2 million euros."
DOCS = {
    "a/plan.md": "---\naccess: [team-a]\n---\n# Plan A\n\nProject Heron ships the pump controller in June.",
    "b/plan.md": f"# Plan B\n\n{SECRET_B}",
    "public.md": "# Handbook\n\nEvery project reports its budget and launch date to the board.",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    documents = tmp_path_factory.mktemp("tenants") / "documents"
    for rel, text in DOCS.items():
        (documents / rel).parent.mkdir(parents=True, exist_ok=True)
        (documents / rel).write_text(text, encoding="utf-8")
    (documents / "b" / "plan.md.access").write_text("team-b\n", encoding="utf-8")
    snap = corpus.snapshot(documents)
    chunks = chunk_corpus(snap, STRATEGIES["C"]).merge(snap[["document_id", "title", "path"]], on="document_id")
    access = access_by_document(snap)
    embedder = LocalEmbedder()
    idx = encoded_index("C", chunks, embedder, [access[d] for d in chunks["document_id"]])
    owner = dict(zip(chunks["chunk_id"], chunks["path"]))
    return idx, chunks, embedder, owner


def test_every_retriever_filters_before_ranking(index):
    idx, _, embedder, owner = index
    query = "When does Project Falcon launch and what is its budget?"  # B's document is the perfect match
    runs = run_queries(
        idx,
        pd.DataFrame({"query_id": ["q"], "query": [query]}),
        embedder.encode([query]),
        np.zeros(1),
        [WordOverlapScorer()],
        tenant="team-a",
    )
    assert set(runs["retriever"]) == {"dense", "bm25", "hybrid", "rerank"}
    for r in runs.itertuples():
        assert {owner[c] for c in r.chunk_ids} == {"a/plan.md", "public.md"}, r.retriever
    public = run_queries(
        idx, pd.DataFrame({"query_id": ["q"], "query": [query]}), embedder.encode([query]), np.zeros(1), tenant=None
    )
    assert all({owner[c] for c in r.chunk_ids} == {"public.md"} for r in public.itertuples())
    everyone = run_queries(
        idx,
        pd.DataFrame({"query_id": ["q"], "query": [query]}),
        embedder.encode([query]),
        np.zeros(1),
        tenant=ALL_TENANTS,
    )
    assert owner[everyone.iloc[0]["chunk_ids"][0]] == "b/plan.md"  # it is found when allowed


def test_ask_on_behalf_of_a_tenant_never_shows_another_tenants_text(index, caplog):
    idx, chunks, embedder, _ = index
    lm = ScriptedLM()
    caplog.set_level(logging.INFO, logger="rag_assets.answering.answerer")
    answer = Answerer(idx, chunks, embedder, Generative(lm), threshold=2.0, tenant="team-a").ask(
        "When does Project Falcon launch and what is its budget?"
    )
    assert lm.prompts and all("4 March" not in p and "2 million" not in p for p in lm.prompts)
    assert all(not s.document_id.startswith("b-") for s in answer.sources)
    assert "Heron" in lm.prompts[0] or "board" in lm.prompts[0]
    answer_b = Answerer(idx, chunks, embedder, Generative(lm), threshold=2.0, tenant="team-b").ask(
        "When does Project Falcon launch?"
    )
    assert answer_b.sources[0].quote == SECRET_B
    logged = [r.getMessage() for r in caplog.records if r.name == "rag_assets.answering.answerer"]
    assert len(logged) == 2 and all(json.loads(m)["event"] == "retrieved" for m in logged)
    documents_text = " ".join(DOCS.values())
    for message in logged:
        for word in ("Falcon", "Heron", "budget", "euros", "board"):
            assert word not in message and word in documents_text
    ranked = json.loads(logged[0])["ranked"]
    assert [r[0] for r in ranked] == list(range(1, len(ranked) + 1)) and all("::" in r[1] for r in ranked)
