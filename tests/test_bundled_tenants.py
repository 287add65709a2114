"""The bundled corpus's restricted document, which the README's tenant example asks about: it is
team-a's alone, so `ask "When does Project Falcon launch?" --tenant team-a` answers from it and any
other viewer (team-b, a caller without a tenant) gets NO ANSWER."""

import pytest
from conftest import encoded_index

from rag_assets.answering.answerer import Answerer, with_titles
from rag_assets.answering.extractive import Extractive
from rag_assets.catalog import BUNDLED_DATASET, PACKAGED
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest.access import ALL_TENANTS, access_by_document
from rag_assets.retrieval.embedding import LocalEmbedder

FALCON = "internal/project-falcon.md"
QUESTION = "When does Project Falcon launch?"


@pytest.fixture(scope="module")
def snap():
    return corpus.snapshot(BUNDLED_DATASET / "documents")


def test_the_bundled_corpus_holds_one_document_for_team_a_alone(snap):
    assert (snap["status"] == "ok").all() and len(snap) == 11
    access = access_by_document(snap)
    by_path = dict(zip(snap["path"], snap["document_id"]))
    assert access[by_path[FALCON]] == frozenset({"team-a"})
    public = [p for p in snap["path"] if p != FALCON]
    assert len(public) == 10 and all(access[by_path[p]] is None for p in public)
    assert "Project Falcon" not in " ".join(
        (BUNDLED_DATASET / "documents" / p).read_text(encoding="utf-8") for p in public
    )  # no public document names it: a tenant without the list has nothing to answer from


@pytest.fixture(scope="module")
def answerers(snap):
    """The Falcon document and a public SQuAD article as `ask` serves them: strategy E, hybrid,
    the extractive answerer, the fp32 MiniLM's own threshold."""
    kept = snap[snap["path"].isin([FALCON, "steam-engine.md"])]
    chunks = with_titles(chunk_corpus(kept, STRATEGIES["E"]), kept)
    chunks = chunks.merge(kept[["document_id", "language"]], on="document_id", how="left")
    chunks["content"] = chunks["text"]
    embedder = LocalEmbedder()
    access = access_by_document(kept)
    index = encoded_index("E", chunks, embedder, [access[d] for d in chunks["document_id"]])
    answerer = Answerer(index, chunks, embedder, Extractive(embedder), threshold=PACKAGED["minilm-fp32"].threshold)
    return answerer, dict(zip(kept["path"], kept["document_id"]))[FALCON]


def test_team_a_is_answered_from_it_and_no_one_else_is(answerers):
    answerer, falcon = answerers
    team_a = answerer.for_viewer("team-a").ask(QUESTION)
    assert not team_a.refused and "14 March 2027" in team_a.answer
    assert [c.document_id for c in team_a.citations] == [falcon]
    for viewer in ("team-b", None):
        other = answerer.for_viewer(viewer).ask(QUESTION)
        assert other.refused and other.answer is None, viewer
        assert all(s.document_id != falcon for s in other.sources)
    assert "14 March 2027" in answerer.for_viewer(ALL_TENANTS).ask(QUESTION).answer  # the operator's view
