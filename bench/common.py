"""Shared inputs for the benchmarks: real text from the bundled corpus, a materialised data dir's
index and questions, timing helpers."""

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from rag_assets.catalog import BUNDLED_DATASET, PROJECT_ROOT
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.layout import DataDir

XQUAD = PROJECT_ROOT.parent / "shared" / "datasets" / "xquad"
CLI = str(Path(sys.executable).parent / "rag-assets")


def materialise_e(dataset: Path, data: Path, models: str | None = None) -> tuple[DataDir, str]:
    """`rag-assets run` on strategy E, every question, no answers (`models`: None leaves the choice
    to the run): the data dir and what the run printed; the bench exits with the run's tail when it fails."""
    command = [CLI, "run", "--dataset", str(dataset), "--data-dir", str(data), "--strategies", "E"]
    command += ["--no-llm", "--full-ground-truth"] + (["--models", models] if models else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return DataDir(data), done.stdout


def imported_xquad(work: Path, language: str) -> Path:
    """XQuAD in `language`, imported by the product into `work` once."""
    out = work / f"xquad-{language}"
    if not out.exists():
        command = [CLI, "import", "squad", str(XQUAD / f"xquad.{language}.json"), "--out", str(out)]
        subprocess.run(command, check=True, capture_output=True)
    return out


def bundled_chunks(strategy: str = "C"):
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    return snap, chunk_corpus(snap, STRATEGIES[strategy])


def bundled_queries(n: int | None = None) -> list[str]:
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    records, _ = gt.read_questions(BUNDLED_DATASET / "questions.jsonl")
    truth = gt.sample(gt.validate(records, snap)[0], gt.Sample())
    queries = truth["query"].tolist()
    return queries[:n] if n else queries


def answerable_questions(data_dir) -> list[str]:
    """The answerable questions of a materialised data dir's ground truth, one phrasing each."""
    truth = DataDir(Path(data_dir)).read_table("ground_truth")
    return truth[truth["kind"] == "answerable"].drop_duplicates("question_id")["query"].tolist()


def every_phrasing(data_dir) -> list[str]:
    """Every phrasing of every question of a materialised data dir's ground truth, each once, the
    answerable ones first (what a cold load asks: strings the server has never seen)."""
    truth = DataDir(Path(data_dir)).read_table("ground_truth")
    ordered = truth.assign(later=truth["kind"] != "answerable").sort_values(["later", "query_id"], kind="stable")
    return list(dict.fromkeys(ordered["query"].tolist()))


def served_index(data_dir, strategy: str):
    """(the strategy's index as `ask` opens it, its chunks with titles, the query model) from a
    materialised data dir, without the instance's freshness checks."""
    from rag_assets.answering.answerer import with_titles
    from rag_assets.defs.partitions import model_strategy_key
    from rag_assets.defs.resources import EmbedderResource
    from rag_assets.retrieval.search import ChunkIndex
    from rag_assets.settings import Settings

    layout, resource = DataDir(Path(data_dir)), EmbedderResource(models=Settings.from_environment().models)
    chunks = layout.read_table("chunk_sets", strategy)
    vectors = layout.read_table("embeddings", model_strategy_key(resource.primary, strategy))
    snapshot, embedder = layout.read_table("corpus_snapshot"), resource.get()
    index = ChunkIndex.open(layout, strategy, chunks, vectors, embedder.identity, snapshot)
    return index, with_titles(chunks, snapshot), embedder


def bm25_runs(chunks, truth, analyzer: str, depth: int = 100):
    """Runs of a BM25 index over `chunks` built with `analyzer` (each chunk's `language` read by
    the per-language one) for every query of `truth`, named after the analyzer."""
    import pandas as pd

    from rag_assets.retrieval.lexical import BM25Index, BM25Settings

    languages = chunks["language"].tolist() if "language" in chunks else None
    index = BM25Index.build(chunks["text"].tolist(), BM25Settings(analyzer=analyzer), languages)
    ids = np.asarray(chunks["chunk_id"])
    rows = [
        {
            "query_id": q.query_id,
            "strategy": chunks["strategy"].iloc[0],
            "retriever": analyzer,
            "chunk_ids": ids[index.top_k(q.query, depth)[0]].tolist(),
        }
        for q in truth.itertuples()
    ]
    return pd.DataFrame(rows)


def synthetic_chunks(n: int, seed: int = 0) -> list[str]:
    """n chunk texts of 2-5 real sentences drawn (seeded) from the bundled corpus."""
    import re

    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    sentences = [
        s for t in snap["text"] for s in re.split(r"(?<=[.!?])\s+", t) if len(s) > 20 and not s.startswith("#")
    ]
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 6, size=n)
    picks = rng.integers(0, len(sentences), size=int(sizes.sum()))
    out, at = [], 0
    for size in sizes:
        out.append(" ".join(sentences[i] for i in picks[at : at + size]))
        at += size
    return out


def timed(fn, *args):
    t0 = time.perf_counter()
    result = fn(*args)
    return result, (time.perf_counter() - t0) * 1000


def pct(values, q) -> float:
    return float(np.percentile(np.asarray(values), q))
