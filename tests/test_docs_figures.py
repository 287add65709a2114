"""bench/docs_figures.py, the check that a documented table still is what the code produces: on a
data dir's real evaluation table it passes a doc that prints those figures and fails, naming the line,
a doc where one figure drifted or a row the data dir does not hold."""

import importlib.util
import subprocess
import sys

import numpy as np
from conftest import TINY_QUESTIONS

from rag_assets.catalog import PROJECT_ROOT
from rag_assets.evaluation import metric_tables
from rag_assets.ingest import ground_truth as gt
from rag_assets.layout import DataDir
from rag_assets.retrieval.search import run_queries


def _check(data_dir, doc):
    return subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "bench" / "docs_figures.py"), "--data-dir", str(data_dir), str(doc)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_marked_table_passes_as_measured_and_fails_on_a_planted_drift(pump, tmp_path):
    snap, chunks, index, embedder = pump
    truth = gt.validate(TINY_QUESTIONS, snap)[0]
    queries = truth[["query_id", "query"]]
    runs = run_queries(index, queries, embedder.encode(queries["query"].tolist()), np.zeros(len(queries)))
    table = metric_tables.metric_table(metric_tables.query_hits(runs, {"E": chunks}, truth), {})
    layout = DataDir(tmp_path / "data")
    layout.table("evaluation_tables").parent.mkdir(parents=True)
    table.to_parquet(layout.table("evaluation_tables"))
    figure = {(r.retriever, r.metric, r.k if r.metric != "mrr" else None): r.value for r in table.itertuples()}

    def row(strategy, r, mrr=None):
        mrr = f"{figure[(r, 'mrr', None)]:.3f}" if mrr is None else mrr
        return (
            f"| {strategy} | {r} | {figure[(r, 'recall', 1)]:.3f} [0.1, 0.9] | {figure[(r, 'recall', 4)]:.2f} | {mrr} |"
        )

    def write(rows):
        marker = "<!-- figures:retrieval rag-assets run --strategies E -->"
        header = "| strategy | retriever | R@1 | R@4 | MRR |\n|---|---|---|---|---|"
        doc.write_text("Text.\n\n" + "\n".join([marker, header, *rows]) + "\n\nAfter.\n")

    doc = tmp_path / "doc.md"
    write([row("E (boundaries + header)", "dense"), row("E", "bm25"), row("E", "hybrid")])
    passed = _check(tmp_path / "data", doc)
    assert passed.returncode == 0 and "all 9 figures match" in passed.stdout, passed.stdout + passed.stderr
    assert "measured by `rag-assets run --strategies E`" in passed.stdout

    write([row("A (blind)", "dense"), row("E", "bm25", mrr="0.123"), row("E", "hybrid")])  # drifted
    failed = _check(tmp_path / "data", doc)
    assert failed.returncode == 1
    bm25 = f"{figure[('bm25', 'mrr', None)]:.3f}"
    assert bm25 != "0.123" and f"doc.md:7: E bm25 mrr: the doc says 0.123, the data dir gives {bm25}" in failed.stdout
    assert "doc.md:6: A dense recall@1: the doc says" in failed.stdout and "no such figure" in failed.stdout
    assert "hybrid" not in failed.stdout.split("measured by")[1]  # the rows that still match are not named


def test_the_marked_tables_of_the_docs_are_read_whole():
    """What the bench checks on the bundled corpus's data dir: results.md's retrieval table, 20 figures."""
    spec = importlib.util.spec_from_file_location("docs_figures", PROJECT_ROOT / "bench" / "docs_figures.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    tables = list(bench.marked_tables(PROJECT_ROOT / "docs" / "results.md"))
    assert [command for _, command, _ in tables] == ["rag-assets run --models minilm-fp32"]
    assert sum(len(figures) for _, figures in tables[0][2]) == 20
