"""bench/docs_figures.py, the check that a documented table still is what the code produces: on a
data dir's real tables (evaluation, refusal sweep, the answerers' report, chunk sets, an experiment's
leaderboard) it passes a doc that prints those figures and fails, naming the line, a doc where one
figure drifted or a row the data dir does not hold; and the docs' own marked tables are read whole."""

import importlib.util
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import TINY_QUESTIONS, ScriptedLM

from rag_assets.answering import scoring
from rag_assets.answering.answerer import build_answerer
from rag_assets.catalog import PROJECT_ROOT
from rag_assets.chunking.diagnostics import chunk_set_stats, token_stats
from rag_assets.evaluation import metric_tables, refusal_figures
from rag_assets.evaluation.answer_eval import AnswerEvaluation, compare_answerers
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.access import ALL_TENANTS
from rag_assets.layout import DataDir
from rag_assets.retrieval.packaged import embedder as packaged
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


def _bench():
    spec = importlib.util.spec_from_file_location("docs_figures", PROJECT_ROOT / "bench" / "docs_figures.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    return bench


@pytest.fixture(scope="module")
def measured(pump, tmp_path_factory):
    """A data dir as `rag-assets run` leaves it, for the tables the check reads, from the tiny pump
    corpus by the code the assets use: chunk_sets[E] and ground_truth, refusal_sweep, and
    reports/answerers.md from both answerers (the generator scripted). (data dir, the code's own
    Markdown tables, the comparison, the chunk set's figures)."""
    snap, chunks, index, embedder = pump
    truth = gt.validate(TINY_QUESTIONS, snap)[0]
    layout = DataDir(tmp_path_factory.mktemp("measured") / "data")
    layout.table("chunk_sets", "E").parent.mkdir(parents=True)
    (layout.assets / "embeddings" / "minilm").mkdir(parents=True)
    chunks.to_parquet(layout.table("chunk_sets", "E"))
    truth.to_parquet(layout.table("ground_truth"))
    queries = truth[["query_id", "query"]]
    runs = run_queries(index, queries, embedder.encode(queries["query"].tolist()), np.zeros(len(queries)))
    sweep = refusal_figures.sweep_models(
        runs.assign(strategy="E"), truth, dict(zip(chunks["chunk_id"], chunks["text"])), "E", {"minilm": 0.628}
    )
    sweep.table.to_parquet(layout.table("refusal_sweep"))
    refusal = sweep.figures["at_three_thresholds"]

    sample = truth.drop_duplicates("question_id")
    frames, summaries, latency = [], [], {}
    for name in ("generate", "extractive"):
        answerer = build_answerer(
            index, chunks, embedder, ScriptedLM("North, says [1]."), answerer=name, threshold=0.9, tenant=ALL_TENANTS
        )
        answers = answerer.ask_many(sample["query"].tolist())
        rows = [
            {
                "query_id": q.query_id,
                "kind": q.kind,
                "needle": q.needle,
                "answers": [] if q.answers is None else list(q.answers),
                **a.as_dict(),
            }
            for q, a in zip(sample.itertuples(), answers)
        ]
        scored = scoring.score_answers(pd.DataFrame(rows))
        frames.append(scored)
        summaries.append(scoring.summary(scored).assign(answerer=name))
        latency[name] = scoring.latency(scored)
    scored = pd.concat(frames, ignore_index=True)
    comparison = compare_answerers(scored)
    evaluation = AnswerEvaluation(
        scored, scored, pd.concat(summaries, ignore_index=True), latency, "hybrid", comparison
    )
    report = evaluation.report("E", "scripted", truth, sample, 1)
    report.write(layout.reports)
    figures = chunk_set_stats(chunks, truth) | token_stats(chunks, packaged("minilm"))
    return layout.root, str(refusal), report.markdown, comparison, figures


def _doc(tmp_path, *tables):
    doc = tmp_path / "doc.md"
    doc.write_text("Text.\n\n" + "\n\n".join("\n".join(t) for t in tables) + "\n\nAfter.\n")
    return doc


def _answerer_rows(comparison, drift=None):
    rows = []
    for r in comparison.itertuples():
        value_b = f"{r.value_b:.3f}" if r.metric != drift else f"{r.value_b + 0.25:.3f}"
        label = f"**{r.metric}** (the headline)" if not rows else r.metric
        rows.append(
            f"| {label} | {r.questions} | {r.n} | {r.value_a:.3f} | {value_b} | {r.wins}/{r.losses} | {r.p_holm:.2g} |"
        )
    return rows


def test_the_answerers_refusal_and_chunk_set_tables_pass_as_measured_and_fail_on_a_planted_drift(measured, tmp_path):
    data_dir, refusal, report, comparison, chunk_set = measured
    each = report.split("## Each answerer")[1]
    summary = [line for line in each.splitlines() if line.startswith("| generate | ")][:3]
    chunk_row = (
        f"| E (boundaries + header) | {chunk_set['chunks']} | {chunk_set['header_share']:.1%} | "
        f"{chunk_set['over_window']} | {chunk_set['answers_destroyed']} | {chunk_set['answers_not_citable']} |"
    )

    def tables(answerers, refused, summary_rows, chunks_row):
        return (
            [
                "<!-- figures:answerers rag-assets run -->",
                "| measure | over | n | generate (scripted) | extractive | generate wins/losses | Holm p |",
                "|---|---|---|---|---|---|---|",
                *answerers,
            ],
            ["<!-- figures:refusal rag-assets run -->", *refused],
            [
                "<!-- figures:answerer-summary rag-assets run -->",
                "| answerer | metric | group | value | 95 % interval | count / n |",
                "|---|---|---|---|---|---|",
                *summary_rows,
            ],
            [
                "<!-- figures:chunk-sets rag-assets run -->",
                "| strategy | chunks | header share | over window | answers destroyed | not citable |",
                "|---|---|---|---|---|---|",
                chunks_row,
            ],
        )

    refused = refusal.splitlines()
    doc = _doc(tmp_path, *tables(_answerer_rows(comparison), refused, summary, chunk_row))
    passed = _check(data_dir, doc)
    numbers = _bench().NUMBER.findall
    expected = (
        5 * len(comparison)  # n, both values, wins/losses, p
        + sum(len(numbers(" ".join(_cells(line)[1:]))) for line in refused[2:])
        + sum(len(numbers(" ".join(_cells(line)[3:]))) for line in summary)
        + 5
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert f"all {expected} figures match" in passed.stdout
    assert passed.stdout.count("measured by `rag-assets run`") == 4

    answerers = _answerer_rows(comparison, drift="contains the answer")
    drifted_refusal = refused[:2] + [_with_cell(refused[2], 1, "999/999 (0.999)")] + refused[3:]
    drifted_summary = summary[:1] + [_with_cell(summary[1], 2, "nowhere")] + summary[2:]
    drifted_chunks = _with_cell(chunk_row, 1, str(chunk_set["chunks"] + 1))
    doc = _doc(tmp_path, *tables(answerers, drifted_refusal, drifted_summary, drifted_chunks))
    line = {text: number for number, text in enumerate(doc.read_text().splitlines(), start=1)}
    failed = _check(data_dir, doc)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    problems = failed.stdout.split("measured by")[-1]
    contains = comparison.set_index("metric").at["contains the answer", "value_b"]
    assert (
        f"doc.md:{line[answerers[0]]}: contains the answer: extractive: the doc says {contains + 0.25:.3f}, "
        f"the data dir gives {contains:.3f}"
    ) in problems
    assert f"doc.md:{line[answerers[1]]}:" not in problems  # the rows that still match are not named
    assert f"doc.md:{line[drifted_refusal[2]]}: threshold" in problems and "the doc says 999" in problems
    assert f"doc.md:{line[drifted_summary[1]]}: generate" in problems and "no such figure" in problems
    assert (
        f"doc.md:{line[drifted_chunks]}: E: chunks: the doc says {chunk_set['chunks'] + 1}, "
        f"the data dir gives {chunk_set['chunks']}"
    ) in problems
    named = problems.strip().splitlines()[1:]  # after the last table's command
    assert len(named) == 1 + 3 + 1 + 1, named  # the refusal cell's three numbers, one figure of each other table


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _with_cell(line, index, value):
    cells = _cells(line)
    cells[index] = value
    return "| " + " | ".join(cells) + " |"


def test_a_marker_of_an_unknown_kind_or_a_column_no_table_has_is_refused(measured, tmp_path):
    data_dir = measured[0]
    doc = _doc(tmp_path, ["<!-- figures:latency rag-assets run -->", "| a | b |", "|---|---|", "| 1 | 2 |"])
    refused = _check(data_dir, doc)
    assert refused.returncode == 2 and "figures:latency is not a kind this check knows" in refused.stderr
    doc = _doc(
        tmp_path,
        [
            "<!-- figures:answerers rag-assets run -->",
            "| measure | generate | speed |",
            "|---|---|---|",
            "| token F1 | 0.1 | 3 |",
        ],
    )
    refused = _check(data_dir, doc)
    assert refused.returncode == 2 and "the column 'speed' is not one of the answerers' comparison" in refused.stderr


@pytest.fixture(scope="module")
def experimented(pump, tmp_path_factory):
    """A data dir an experiment ran in, on the tiny pump corpus, by the code `rag-assets run
    --experiment` runs: each configuration measured (`measure`, as the `experiment_runs` asset
    does), then ranked and written (`leaderboard.rank`, `Report.write`, as `experiment_leaderboard`
    does). (data dir, the leaderboard's Markdown.)"""
    from rag_assets.experiment import leaderboard, measure, spec

    snap = pump[0]
    truth = gt.validate(TINY_QUESTIONS, snap)[0]
    root = tmp_path_factory.mktemp("experiment")
    path = root / "experiment.yaml"
    path.write_text("chunkers: [E, C]\nembedders: [minilm]\nretrievers: [hybrid, bm25]\n")
    experiment = spec.load(path)
    layout = DataDir(root / "data")
    tables = {
        c.id: measure.measure(c, snap, truth, layout, experiment.token_budget, log=lambda line: None).table
        for c in experiment.configurations
    }
    report = leaderboard.rank(tables, experiment.rank_by, {}, experiment.token_budget)
    report.write(layout.reports)
    return layout.root, report.markdown


def _report_table(markdown, section):
    """The lines of the leaderboard report's table under `## section`."""
    lines = markdown.split(f"## {section}")[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def test_a_leaderboard_table_passes_as_the_experiment_wrote_it_and_fails_on_a_planted_drift(experimented, tmp_path):
    data_dir, markdown = experimented
    quality, chunks = _report_table(markdown, "Quality"), _report_table(markdown, "Chunks")
    assert len(quality) == len(chunks) == 2 + 3  # three configurations
    marker = "<!-- figures:leaderboard rag-assets run --experiment -->"
    doc = _doc(tmp_path, [marker, *quality], [marker, *chunks])
    passed = _check(data_dir, doc)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    numbers = _bench().NUMBER.findall
    expected = sum(len(numbers(" ".join(c for i, c in enumerate(_cells(r)) if i != 1))) for r in quality[2:])
    expected += sum(len(numbers(" ".join(_cells(r)[1:]))) for r in chunks[2:])
    assert f"all {expected} figures match" in passed.stdout, passed.stdout
    assert passed.stdout.count("leaderboard, measured by `rag-assets run --experiment`") == 2

    first, second, third = quality[2:]
    recall = _cells(second)[2]
    drifted = [
        _with_cell(first, 1, "b999+minilm+hybrid+none"),  # a configuration the leaderboard does not hold
        _with_cell(second, 2, "0.900" + recall[5:]),  # a figure
        _with_cell(third, 7, _cells(third)[7] + ", worse"),  # a finding the leaderboard does not make
    ]
    over = _cells(chunks[2])[2]
    moved = _with_cell(chunks[2], 2, over.replace(" of ", " of 1"))  # "0 of 5 over 256" -> "0 of 15 over 256"
    doc = _doc(tmp_path, [marker, *quality[:2], *drifted], [marker, *chunks[:2], moved])
    line = {text: number for number, text in enumerate(doc.read_text().splitlines(), start=1)}
    failed = _check(data_dir, doc)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    problems = failed.stdout.split("measured by")[-1].strip().splitlines()[1:]
    config = _cells(second)[1]
    assert f"doc.md:{line[drifted[0]]}: b999+minilm+hybrid+none: the doc says 1" in failed.stdout
    assert "no such figure" in failed.stdout
    assert (
        f"doc.md:{line[drifted[1]]}: {config}: recall@4: the doc says 0.900, the data dir gives {recall[:5]}"
    ) in failed.stdout
    assert f"doc.md:{line[drifted[2]]}: {_cells(third)[1]}: vs the best: p (holm): the doc says" in failed.stdout
    assert f"doc.md:{line[moved]}: {_cells(moved)[0]}: chunks over the window: the doc says 15" in failed.stdout
    assert len(problems) == 4, problems

    doc = _doc(tmp_path, [marker, "| config | recall@4 | speed |", "|---|---|---|", "| E+-+bm25+none | 1.000 | 3 |"])
    refused = _check(data_dir, doc)
    assert refused.returncode == 2 and "the column(s) ['speed'] are not one of the leaderboard's" in refused.stderr
    bare = _check(tmp_path / "no-experiment", doc)
    assert bare.returncode == 2 and "no experiment ran in this data dir" in bare.stderr, bare.stderr


def test_the_marked_tables_of_the_docs_are_read_whole():
    """What the bench checks on the bundled corpus's data dirs: results.md's chunk sets, retrieval
    (the fp32 run), refusal, answerers and generation tables, answering.md's answerer table, and
    experiments.md's leaderboard of the init file (the walk-through's data dir)."""
    bench = _bench()
    results = bench.tables(PROJECT_ROOT / "docs" / "results.md")
    assert [(t.kind, t.command) for t in results] == [
        ("chunk-sets", "rag-assets run"),
        ("retrieval", "rag-assets run --models minilm-fp32"),
        ("refusal", "rag-assets run"),
        ("answerers", "rag-assets run"),
        ("answerer-summary", "rag-assets run"),
    ]
    assert [len(t.rows) for t in results] == [8, 5, 4, 5, 13]
    answering = bench.tables(PROJECT_ROOT / "docs" / "answering.md")
    assert [(t.kind, t.command, len(t.rows)) for t in answering] == [("answerers", "rag-assets run", 7)]
    experiments = bench.tables(PROJECT_ROOT / "docs" / "experiments.md")
    assert [(t.kind, t.command, len(t.rows)) for t in experiments] == [
        ("leaderboard", "rag-assets run --experiment", 10)
    ]
