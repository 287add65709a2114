import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from rag_assets.answering.generation import Generation

FIXTURES = Path(__file__).parent / "fixtures"

TINY_DOCS = {
    "guide.md": (
        "# Pump manual\n\n"
        "Intro paragraph about the pump. It has two sentences.\n\n"
        "## Installation\n\n"
        "Mount the pump on a flat surface. The inlet valve must face north.\n\n"
        "Tighten the bolts to 12 newton metres before the first start.\n\n"
        "## Maintenance\n\n"
        "Replace the filter every 300 hours of operation. Error code E42 means the filter is clogged.\n"
    ),
    "notes/faq.txt": (
        "# Pump FAQ\n\n"
        "Why is the pump loud? Cavitation happens when the inlet pressure is too low.\n\n"
        "## Warranty\n\n"
        "The warranty covers two years from the date of purchase.\n"
    ),
}

TINY_QUESTIONS = [
    {
        "id": "q-valve",
        "phrasings": ["Which way should the inlet valve face?", "valve orientation"],
        "needle": "The inlet valve must face north.",
        "kind": "answerable",
        "answers": ["north"],
    },
    {
        "id": "q-filter",
        "phrasings": ["How often is the filter replaced?"],
        "needle": "Replace the filter every 300 hours of operation.",
        "kind": "answerable",
        "answers": ["every 300 hours"],
    },
    {
        "id": "q-warranty",
        "phrasings": ["How long is the warranty?"],
        "needle": "The warranty covers two years from the date of purchase.",
        "kind": "answerable",
    },
    {
        "id": "q-heading",
        "phrasings": ["What is in the maintenance section?"],
        "needle": "Maintenance",
        "kind": "answerable",
    },
    {"id": "q-missing", "phrasings": ["What colour is the pump?"], "needle": "The pump is red.", "kind": "answerable"},
    {"id": "q-colour", "phrasings": ["What colour is the pump housing?"], "needle": None, "kind": "unanswerable"},
    {"id": "q-passport", "phrasings": ["How do I renew my passport?"], "needle": None, "kind": "out_of_domain"},
]


class ScriptedLM:
    """A generator that answers a fixed text and keeps every prompt it was given; tokens are
    words. For the logic around the model (gate, citations, tenants); the real model has its own tests."""

    identity = "scripted"

    def __init__(self, text: str = "According to source [1], see the plan."):
        self.text, self.prompts = text, []

    def load_weights(self):
        pass

    def count_tokens(self, prompt):
        return len(prompt.split())

    def rendered(self, prompt):
        return prompt

    def generate_many(self, prompts, batch_size=1, progress=None):
        self.prompts.extend(prompts)
        return [Generation(self.text, self.count_tokens(p), 3, 1.0) for p in prompts]


class WordOverlapScorer:
    """A real (if simple) relevance scorer behind the Reranker interface: shared query words."""

    name, model, depth = "rerank", "word-overlap", 25

    def score(self, query, passages):
        q = set(query.lower().split())
        return np.array([len(q & set(p.lower().split())) for p in passages], dtype=float)


def write_dataset(root: Path, docs: dict[str, str | bytes] = TINY_DOCS, questions: list[dict] = TINY_QUESTIONS) -> Path:
    for rel, content in docs.items():
        path = root / "documents" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return root


def encoded_index(name: str, chunks, embedder, access=None):
    """A ChunkIndex over `chunks`' texts with the embedder's real vectors and a default BM25 index,
    `access` giving each chunk's access list (None: an index for ALL_TENANTS only)."""
    from rag_assets.retrieval.lexical import BM25Index
    from rag_assets.retrieval.search import ChunkIndex

    texts = chunks["text"].tolist()
    return ChunkIndex(name, chunks["chunk_id"].tolist(), texts, embedder.encode(texts), BM25Index.build(texts), access)


@pytest.fixture(scope="module")
def pump(tmp_path_factory):
    """The tiny pump corpus as an E chunk set (with titles) with real vectors and a BM25 index:
    (snapshot, chunks, index, embedder)."""
    from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
    from rag_assets.ingest import corpus
    from rag_assets.ingest.access import access_by_document
    from rag_assets.retrieval.embedding import LocalEmbedder

    root = write_dataset(tmp_path_factory.mktemp("pump"), TINY_DOCS)
    snap = corpus.snapshot(root / "documents")
    chunks = chunk_corpus(snap, STRATEGIES["E"]).merge(snap[["document_id", "title"]], on="document_id")
    embedder = LocalEmbedder()
    access = access_by_document(snap)
    index = encoded_index("E", chunks, embedder, [access[d] for d in chunks["document_id"]])  # every document public
    return snap, chunks, index, embedder


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    """Two good documents, one undecodable file, and questions of every outcome."""
    docs = dict(TINY_DOCS)
    docs["broken.md"] = b"# Broken\n\n\xff\xfe not utf-8"
    return write_dataset(tmp_path / "dataset", docs)


@pytest.fixture(autouse=True)
def _no_dagster_instance_left_entered():
    """A DagsterInstance entered (`with instance:`) and never exited leaves its defs-state storage
    in a process-wide ContextVar, and a later test that builds definitions before opening its
    own instance reads a dead one ("undefined DagsterInstance weakref"): fail the test that
    leaves one behind, and restore what was there so the next test starts as this one did."""
    from dagster._core.storage.defs_state.base import _current_storage  # private; pinned by dagster==1.13.27

    before = _current_storage.get()
    yield
    after = _current_storage.get()
    _current_storage.set(before)
    assert after is before, "this test left a DagsterInstance entered (its defs-state storage is still current)"


@pytest.fixture(autouse=True)
def _quiet_dagster_previews():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")
        yield


BEIR_CORPUS = [
    {"_id": "d1", "title": "Zebras", "text": "Zebra stripes form a pattern that confuses biting flies."},
    {"_id": "d2", "title": "Pumps", "text": "A centrifugal pump moves water with a spinning impeller."},
    {"_id": "d3", "title": "", "text": "Impeller wear lowers the pressure a water pump delivers."},
    {"_id": "d/4", "title": "Valves", "text": "A check valve lets fluid flow one way only."},
]
BEIR_QUERIES = [
    {"_id": "q1", "text": "zebra stripes pattern"},
    {"_id": "q2", "text": "water pump impeller"},
    {"_id": "q3", "text": "not judged in this split"},
]
BEIR_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td3\t1\n"


@pytest.fixture
def beir_folder(tmp_path):
    """A BEIR folder (corpus, queries, graded qrels) with a title-less document and an id with a slash."""
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in BEIR_CORPUS))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in BEIR_QUERIES))
    (folder / "qrels" / "test.tsv").write_text(BEIR_QRELS)
    return folder


@pytest.fixture(scope="session")
def postgres():
    """The base URL of a PostgreSQL server started for this test session (servers.py)."""
    from servers import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def s3():
    """moto's S3 server for this test session (servers.py), with a bucket `rag-assets`: yields
    the environment (endpoint, dummy credentials) a process needs to reach it."""
    from servers import s3_server

    with s3_server() as env:
        yield env
