"""Experiment files: checked at the door with the file's line, expanded into configurations whose
fingerprints move only with their own arms, library chunks placed back, endpoints that are not ours
(infinity-emb) and endpoints that misbehave, and `run --experiment` to a leaderboard."""

import json
import math
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import write_dataset
from servers import CLI, INFINITY, infinity_server, misbehaving_endpoint, model_server

from rag_assets import environment
from rag_assets.app.cli import main
from rag_assets.chunking import placed
from rag_assets.columns import COLUMNS
from rag_assets.experiment import arms, spec
from rag_assets.ingest import snapshot
from rag_assets.layout import DataDir
from rag_assets.retrieval import embedders
from rag_assets.retrieval.embedding import model_path
from rag_assets.retrieval.remote import PROBE

CHAPTER = Path(__file__).parent.parent / "data" / "default_corpus" / "documents"


def experiment_file(folder: Path, text: str) -> Path:
    path = folder / "experiment.yaml"
    path.write_text(text)
    return path


GOOD = """search: one-factor
chunkers:
  E: E
  b512: {cut: boundaries, size: 512, overlap: 64}
embedders: [minilm]
retrievers: [hybrid, bm25]
"""
BAD = [  # (file, the line named, words of the message)
    (GOOD.replace("search: one-factor", "serch: grid"), 1, "unknown key 'serch' (did you mean 'search'?)"),
    (
        GOOD.replace(
            "b512: {cut: boundaries, size: 512, overlap: 64}", "b512: {cut: boundaries, size: 64, overlap: 64}"
        ),
        4,
        "overlap 64 must be smaller than size 64",
    ),
    (GOOD.replace("E: E", "E: Q"), 3, "unknown preset 'Q'"),
    (GOOD.replace("[minilm]", "[minilm, bge]"), 5, "unknown packaged model 'bge'"),
    (GOOD.replace("size: 512,", "sise: 512,"), 4, "unknown cut setting 'sise'"),
    (GOOD + "rerankers:\n  ce: {cross_encoder: no/such/folder}\n", 8, "no folder"),
    (GOOD.replace("[minilm]", "\n  mine: {path: empty}"), 6, "holds no model"),
    (GOOD + "baseline: {chunker: b1024}\n", 7, "unknown chunker arm 'b1024'"),
    # every setting applied or refused, with its type and range
    (GOOD.replace("E: E", "E: {chonkie: recursive, size: 512, overlap: 64}"), 3, "recursive chunker has no overlap"),
    (GOOD.replace("[hybrid, bm25]", "\n  hnsw: {dense: true, index: hnsw, m: 1}"), 7, "m: Input should be greater"),
    (GOOD.replace("[hybrid, bm25]", "\n  b: {bm25: true, b: 7}"), 7, "b: Input should be less than or equal to 1"),
    (GOOD.replace("[hybrid, bm25]", "\n  d: {dense: false}"), 7, "dense: input should be True"),
    (GOOD + "rerankers:\n  l: {llm: false}\n", 8, "llm: input should be True"),
    (GOOD + "k:\n", 7, "unknown key 'k'"),
    (
        GOOD.replace("[minilm]", "\n  s: {url: 'http://h:1/v1', model: m, timeout_s: 0}"),
        6,
        "timeout_s: Input should be greater",
    ),
    (
        GOOD.replace("[minilm]", "\n  s: {url: 'http://h:1/v1', model: m, retries: 100000}"),
        6,
        "retries: Input should be less",
    ),
    (GOOD.replace("[minilm]", "\n  s: {url: 'http://u:p@h:1/v1', model: m}"), 6, "no user or password in it"),
    (GOOD.replace("[minilm]", "\n  s: {path: /}"), 6, "holds no model"),
    (GOOD.replace("size: 512,", "size: '512',"), 4, "size: Input should be a valid integer"),
    (GOOD.replace("search: one-factor", "search: grid\ntoken_budget: 0"), 2, "token_budget must be a whole number"),
]


@pytest.mark.parametrize("text,line,words", BAD)
def test_check_refuses_a_bad_file_in_one_line_naming_its_line(tmp_path, tiny_dataset, capsys, text, line, words):
    (tmp_path / "empty").mkdir()
    path = experiment_file(tmp_path, text)
    code = main(["check", "--experiment", str(path), "--dataset", str(tiny_dataset), "--data-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{path}:{line}:" in err and words in err


def test_one_factor_and_grid_and_fingerprints_that_move_with_their_own_arms(tmp_path):
    text = GOOD.replace("[minilm]", "[minilm, me5-small]")
    one = spec.load(experiment_file(tmp_path, text))
    # baseline, the other chunker, the other embedder, BM25 (which embeds nothing: one configuration)
    assert [c.id for c in one.configurations] == [
        "E+minilm+hybrid+none",
        "b512+minilm+hybrid+none",
        "E+me5-small+hybrid+none",
        "E+-+bm25+none",
    ]
    grid = spec.load(experiment_file(tmp_path, text.replace("one-factor", "grid")))
    assert len(grid.configurations) == 2 * 2 + 2  # hybrid: chunkers x embedders; bm25: per chunker
    before = {c.id: c.fingerprint() for c in grid.configurations}
    moved = spec.load(
        experiment_file(tmp_path, text.replace("one-factor", "grid").replace("overlap: 64", "overlap: 32"))
    )
    after = {c.id: c.fingerprint() for c in moved.configurations}
    assert {c for c in before if before[c] != after[c]} == {c for c in before if c.startswith("b512+")}


def test_library_chunks_slice_back_and_a_chunk_nowhere_in_the_text_is_refused_by_count(tmp_path):
    documents = snapshot.take(CHAPTER, 50 * 2**20).table
    texts = dict(zip(documents["document_id"], documents["text"]))
    minilm = __import__("rag_assets.retrieval.packaged", fromlist=["embedder"]).embedder("minilm")
    count = lambda t: int(minilm.count_tokens([t], special_tokens=False)[0])  # noqa: E731
    path = experiment_file(
        tmp_path,
        "chunkers:\n  sem: {semchunk: true, size: 128, unit: tokens, overlap: 0.25}\n"
        "  chk: {chonkie: recursive, size: 400}\n  snt: {chonkie: sentence, size: 96, unit: tokens}\n"
        "  parent: {cut: boundaries, size: 200, parent_size: 1000}\n  win: {cut: sentences, window: 1}\n"
        "embedders: [minilm]\n",
    )
    for arm in spec.load(path).arms["chunkers"]:
        made = arms.chunk_arm(documents, arm, count)
        for frame in (made.indexed, made.returned):
            assert len(frame) and all(
                texts[d][s:e] == c
                for d, s, e, c in zip(frame["document_id"], frame["start"], frame["end"], frame["content"])
            )
        if made.returned_of is not None:  # every indexed chunk returns a passage that holds its start
            spans = made.returned.set_index("chunk_id")[["start", "end"]]
            assert all(
                spans.loc[made.returned_of[c], "start"] <= s < spans.loc[made.returned_of[c], "end"]
                for c, s in zip(made.indexed["chunk_id"], made.indexed["start"])
            )
    text = texts[documents["document_id"].iloc[0]]
    pieces = [text[100:400].lower(), text[500:700], "a sentence this document never wrote"]
    got = placed.placed_chunks("doc", "lib", text, pieces, [(100, 400), (0, 0), (0, 0)])
    assert [(c.start, c.end) for c in got.chunks] == [
        (
            100 + len(text[100:400]) - len(text[100:400].lstrip()),
            400 - (len(text[100:400]) - len(text[100:400].rstrip())),
        ),
        placed.place(text, [text[500:700]])[0],
    ]
    with pytest.raises(placed.UnplacedChunks, match=r"lib: 1 chunks in 1 documents .*never wrote"):
        placed.refuse_unplaced("lib", {"doc": got.unplaced})


def _run(dataset: Path, data_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "run", "--dataset", str(dataset), "--data-dir", str(data_dir), "--experiment", *extra],
        capture_output=True,
        text=True,
        timeout=900,
    )


def _check(path: Path, dataset: Path, data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "check", "--experiment", str(path), "--dataset", str(dataset), "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "model,why",
    [
        ("unauthorized", "HTTP 401"),
        ("ratelimited", "HTTP 429"),
        ("broken", "HTTP 500"),
        ("slow", "answer within"),
        ("short", "4 vectors for 5 texts"),
        ("nan", "NaN"),
        # hostile: a byte at a time, megabytes, the wrong shapes
        ("drip", "answer within"),
        ("huge10", "answered more than"),
        ("strvec", "valid number"),
        ("strindex", "valid integer"),
        ("usage5", "usage"),
        # on the wire: headers a byte at a time, a gzip bomb, two encodings
        ("driphead", "answer within"),
        ("bomb", "answered more than"),
        ("gzip2", "content encoding gzip, gzip"),
    ],
)
def test_check_names_an_endpoint_that_misbehaves(tmp_path, tiny_dataset, bad_base, model, why):
    path = experiment_file(
        tmp_path, f"chunkers: [E]\nembedders:\n  served: {{url: '{bad_base}', model: {model}, batch_size: 8}}\n"
    )
    done = _check(path, tiny_dataset, tmp_path / "d")
    assert done.returncode == 2, done.stdout
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and why in line and bad_base in line and f"{path}:3:" in line


def test_check_names_an_endpoint_that_is_down_moved_or_now_returns_vectors_of_another_length(tmp_path, tiny_dataset):
    from servers import free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    path = experiment_file(tmp_path, f"chunkers: [E]\nembedders:\n  served: {{url: '{base}', model: good}}\n")
    down = _check(path, tiny_dataset, tmp_path / "d")
    assert down.returncode == 2 and "unreachable" in down.stderr and base in down.stderr and f"{path}:3:" in down.stderr
    with misbehaving_endpoint(port=port):  # what a run records: the model's probe vectors, 8 long
        embedders.make(spec.load(path).arms["embedders"][0].spec, DataDir(tmp_path / "d").endpoint_records)
    with misbehaving_endpoint(port=port):  # the same model: nothing to say
        same = _check(path, tiny_dataset, tmp_path / "d")
    with misbehaving_endpoint(port=port, seed="1"):  # another model of the same size: stale, not refused
        moved = _check(path, tiny_dataset, tmp_path / "d")
    assert same.returncode == moved.returncode == 0 and "moved" not in same.stdout
    assert "its probe answer moved" in moved.stdout and "`run` computes them anew" in moved.stdout
    with misbehaving_endpoint(port=port, dim=16):  # another model under the same name
        changed = _check(path, tiny_dataset, tmp_path / "d")
    assert changed.returncode == 2, changed.stdout
    assert "now returns 16-dimensional vectors, 8 at the last run" in changed.stderr


@pytest.fixture(scope="module")
def bad_base():
    with misbehaving_endpoint() as base:
        yield base


def test_a_failing_configuration_fails_alone_a_moved_model_is_stale_and_only_what_is_stale_runs_again(tmp_path):
    dataset = write_dataset(tmp_path / "ds")
    data_dir = tmp_path / "data"
    from servers import free_port

    port = free_port()
    text = (
        "chunkers: [C]\nretrievers: [hybrid]\nembedders:\n  minilm: minilm\n"
        "  served: {{url: 'http://127.0.0.1:{port}/v1', model: {model}}}\n"
    )
    path = experiment_file(dataset, text.format(port=port, model="broken"))
    with misbehaving_endpoint(seed="1", port=port):
        first = _run(dataset, data_dir)
        assert first.returncode == 1
        assert "1 configurations failed, nothing recorded for them and their earlier results not ranked" in first.stderr
        assert "C+served+hybrid+none; fix the cause" in first.stderr
        layout = DataDir(data_dir)
        assert layout.table("experiment_runs", "C+minilm+hybrid+none").exists()
        assert not layout.table("experiment_runs", "C+served+hybrid+none").exists()
        board = (layout.reports / "experiment_leaderboard.md").read_text()
        assert "C+served+hybrid+none`: its last run" in board and "failed: no result" in board
        path.write_text(text.format(port=port, model="good"))
        second = _run(dataset, data_dir)
        assert second.returncode == 0, second.stderr[-2000:]
        assert "C+minilm+hybrid+none" not in _changed(second.stdout)  # its arms did not move
        assert "1 of 2 configurations are fresh" in second.stdout and "C+minilm+hybrid+none" in _fresh(second.stdout)
    with misbehaving_endpoint(seed="2", port=port):  # the same name, another model
        third = _run(dataset, data_dir)
    assert third.returncode == 0, third.stderr[-2000:]
    assert _changed(third.stdout) == {"experiment_configs[C+served+hybrid+none]"}
    table = pd.read_parquet(DataDir(data_dir).table("experiment_leaderboard"))
    assert set(table["config"]) == {"C+minilm+hybrid+none", "C+served+hybrid+none"}
    assert (table["index_endpoint_calls"] > 0).tolist() == [c == "C+served+hybrid+none" for c in table["config"]]
    runs = pd.read_parquet(DataDir(data_dir).table("experiment_runs", "C+served+hybrid+none"))
    assert set(table.columns) | set(runs.columns) <= set(COLUMNS)  # every column explained in the UI
    fourth = _run(dataset, data_dir)  # the endpoint is down: the configuration is tried, fails, and is not ranked
    assert fourth.returncode == 1 and "C+served+hybrid+none; fix the cause" in fourth.stderr
    board = pd.read_parquet(DataDir(data_dir).table("experiment_leaderboard"))
    assert board["config"].tolist() == ["C+minilm+hybrid+none"]
    report = (DataDir(data_dir).reports / "experiment_leaderboard.md").read_text()
    assert "`C+served+hybrid+none`: its last run" in report and "failed: its earlier result is not ranked" in report
    _exported_and_used(dataset, data_dir)


def test_an_endpoint_that_answers_its_probes_with_one_model_and_its_batches_with_another_fails_its_configuration(
    tmp_path, bad_base
):
    """`twofaced` answers any request holding a probe text with one model and the others with another:
    the passages embedded again beside the probe give it away, and nothing is recorded for it."""
    dataset = write_dataset(tmp_path / "ds")
    experiment_file(dataset, f"chunkers: [C]\nembedders:\n  served: {{url: '{bad_base}', model: twofaced}}\n")
    done = _run(dataset, tmp_path / "data")
    assert done.returncode == 1 and "C+served+dense+none; fix the cause" in done.stderr, done.stderr[-2000:]
    assert "its batches are not from the model its probe identifies" in done.stderr
    assert not DataDir(tmp_path / "data").table("experiment_runs", "C+served+dense+none").exists()


def _exported_and_used(dataset: Path, data_dir: Path) -> None:
    """Its returned passages as TREC files (every query's run, its needle's holders as qrels), and
    one configuration made the one `ask` answers with (the one the lab cannot serve refused)."""
    where = ["--dataset", str(dataset), "--data-dir", str(data_dir)]
    out = data_dir.parent / "trec"
    done = subprocess.run([*CLI, "export", "trec", "--data-dir", str(data_dir), "--experiment", "--out", str(out)])
    assert done.returncode == 0
    rows = pd.read_parquet(DataDir(data_dir).table("experiment_runs", "C+minilm+hybrid+none"))
    run = (out / "C+minilm+hybrid+none.experiment.chunks.run").read_text().splitlines()
    assert {line.split()[0] for line in run} == set(rows["query_id"]) and len(run) == sum(map(len, rows["chunk_ids"]))
    qrels = {line.split()[2] for line in (out / "qrels.C+minilm+hybrid+none.chunks.txt").read_text().splitlines()}
    assert qrels == {c for ids in rows["relevant_ids"] for c in ids} and qrels
    refused = subprocess.run([*CLI, "use", "C+served+hybrid+none", *where], capture_output=True, text=True)
    assert refused.returncode == 2 and "a model it names cannot be made now" in refused.stderr  # its endpoint is down
    assert len(refused.stderr.strip().splitlines()) == 1
    chosen = subprocess.run([*CLI, "use", "C+minilm+hybrid+none", *where], capture_output=True, text=True)
    assert chosen.returncode == 0, chosen.stderr
    asked = subprocess.run(  # no lab run: the configuration's own chunks, and the vectors its run cached
        [*CLI, "ask", *where, "Which way should the inlet valve face?"], capture_output=True, text=True
    )
    assert asked.returncode == 0, asked.stderr
    assert "strategy C+minilm+hybrid+none, hybrid" in asked.stdout
    assert "configuration C+minilm+hybrid+none, chosen" in asked.stdout


def _asked(where: list[str], *extra: str) -> dict:
    done = subprocess.run(
        [*CLI, "ask", *where, "--json", *extra, "Which way should the inlet valve face?"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _requests(base: str) -> int:
    with urllib.request.urlopen(base.removesuffix("/v1") + "/count", timeout=5) as reply:
        return json.load(reply)["requests"]


def test_use_serves_a_parent_document_and_an_endpoint_configuration_from_what_their_run_measured(tmp_path):
    """`use` then `ask` (real processes) answer from the configuration's own chunker, embedder and
    retriever: a parent-document chunker returns the passages its run returned, and an endpoint
    embedder is asked for the question only, never for the corpus again. A result for other settings
    is refused with a command that, run as printed, makes it servable."""
    dataset = write_dataset(tmp_path / "ds")
    where = ["--dataset", str(dataset), "--data-dir", str(tmp_path / "data")]
    with misbehaving_endpoint() as base:
        text = (
            "chunkers:\n  parent: {cut: boundaries, size: 60, parent_size: 200}\n"
            f"embedders:\n  minilm: minilm\n  served: {{url: '{base}', model: good, batch_size: 2}}\n"
            "retrievers: [hybrid]\n"
        )
        path = experiment_file(dataset, text)
        ran = _run(dataset, tmp_path / "data")
        assert ran.returncode == 0, ran.stderr[-2000:]
        listed = subprocess.run([*CLI, "use", "--list", *where], capture_output=True, text=True)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.count("can be served: rag-assets use") == 2, listed.stdout

        assert subprocess.run([*CLI, "use", "parent+minilm+hybrid+none", *where]).returncode == 0
        answer = _asked(where)
        runs = pd.read_parquet(DataDir(tmp_path / "data").table("experiment_runs", "parent+minilm+hybrid+none"))
        returned = {c for ids in runs["chunk_ids"] for c in ids}
        cited = [c["chunk_id"] for c in answer["citations"]]
        assert answer["strategy"] == "parent+minilm+hybrid+none" and "north" in answer["answer"]
        assert cited and set(cited) <= returned and all("parent-parent" in c for c in cited), cited

        probe, before = math.ceil(len(PROBE) / 2), _requests(base)  # requests of 2 texts each
        assert subprocess.run([*CLI, "use", "parent+served+hybrid+none", *where]).returncode == 0
        assert _requests(base) - before == probe  # its identity only: the corpus's vectors are those cached
        answer = _asked(where, "--threshold", "2")
        assert _requests(base) - before == 3 * probe + 2  # its probe, a warm-up (probed after) and the question
        assert answer["strategy"] == "parent+served+hybrid+none" and answer["embedding_model"]["model"].startswith(
            f"good@{base}"
        )
        assert all("parent-parent" in c["chunk_id"] for c in answer["sources"]) and answer["sources"]
        gate = _asked(where)["embedding_model"]["threshold_source"]
        assert "not calibrated for good@" in gate and "set --threshold" in gate

        assert subprocess.run([*CLI, "use", "parent+minilm+hybrid+none", *where]).returncode == 0
        path.write_text(text.replace("size: 60", "size: 80"))
        stale = subprocess.run([*CLI, "ask", *where, "Which way?"], capture_output=True, text=True)
        assert stale.returncode == 2 and len(stale.stderr.strip().splitlines()) == 1
        assert "its result is for other settings or models than the file's now" in stale.stderr
        hint = re.search(r"run it again with `rag-assets (run [^`]*)`", stale.stderr).group(1).split()
        assert subprocess.run([*CLI, *hint], capture_output=True).returncode == 0
        assert _asked(where)["strategy"] == "parent+minilm+hybrid+none"
    down = subprocess.run([*CLI, "use", "parent+served+hybrid+none", *where], capture_output=True, text=True)
    assert down.returncode == 2 and "a model it names cannot be made now" in down.stderr


def _changed(stdout: str) -> set[str]:
    found = re.search(r"new configuration versions: (.*)", stdout)
    return {s for s in found.group(1).split(", ") if s.startswith("experiment_configs")} if found else set()


def _fresh(stdout: str) -> set[str]:
    found = re.search(r"are fresh .* not run again: (.*)", stdout)
    return set(found.group(1).split(", ")) if found else set()


@pytest.mark.skipif(not INFINITY.exists(), reason=f"infinity-emb is not installed at {INFINITY} (.ci/run installs it)")
def test_infinity_serves_the_packaged_model_as_the_process_encodes_it_and_an_experiment_runs_through_it(tmp_path):
    from rag_assets.retrieval import packaged

    texts = [p.strip() for p in (CHAPTER.glob("*.md").__next__()).read_text().split("\n\n") if p.strip()][:64]
    with infinity_server(model_path()) as base:
        path = experiment_file(
            tmp_path,
            f"chunkers: [C]\nretrievers: [hybrid]\nembedders:\n"
            f"  inf: {{url: '{base}', model: {model_path().parent.name}/model}}\n",
        )
        arm = spec.load(path).arms["embedders"][0]
        served = embedders.make(arm.spec, tmp_path / "records")
        local = packaged.embedder("minilm-fp32").encode(texts)
        assert float((served.encode(texts) * local).sum(axis=1).min()) >= 0.999
        dataset = write_dataset(tmp_path / "ds")
        shutil.copy(path, dataset / "experiment.yaml")
        done = _run(dataset, tmp_path / "data")
    assert done.returncode == 0, done.stderr[-2000:]
    board = pd.read_parquet(DataDir(tmp_path / "data").table("experiment_leaderboard"))
    assert board["config"].tolist() == ["C+inf+hybrid+none"] and board["query_endpoint_calls"].iloc[0] > 0
    assert json.loads(board["settings"].iloc[0])["embedders"]["url"] == base
    assert np.isfinite(board["latency_p95_ms"]).all()


def test_the_llm_reranker_served_behind_rerank_scores_as_in_process_and_an_experiment_reranks_through_it(tmp_path):
    """No packaged cross-encoder exists: `rag-assets serve-model` serves the LLM reranker behind the
    /rerank protocol, and an experiment's rerank endpoint is tested against it."""
    from rag_assets.answering.generation import LocalLM
    from rag_assets.retrieval.remote import EndpointReranker
    from rag_assets.retrieval.rerank import LLMRelevanceReranker
    from rag_assets.retrieval.specs import RerankEndpoint

    query = "Which way should the inlet valve face?"
    passages = ["Tighten the bolts first.", "The inlet valve must face north.", "The warranty covers two years."]
    dataset = write_dataset(tmp_path / "ds")
    with model_server() as base:
        reranker = EndpointReranker(RerankEndpoint(url=base, model="smollm2-135m-instruct", depth=3))
        served = reranker.score(query, passages)
        local = LocalLM("", answer_prefix="")
        local.load_weights()
        assert np.allclose(served, LLMRelevanceReranker(local).score(query, passages), atol=1e-4)
        experiment_file(
            dataset,
            f"chunkers: [C]\nembedders: [minilm]\nretrievers: [hybrid]\nrerankers:\n  none: none\n"
            f"  llm: {{url: '{base}', model: smollm2-135m-instruct, depth: 4}}\n",
        )
        done = _run(dataset, tmp_path / "data")
    assert done.returncode == 0, done.stderr[-2000:]
    board = pd.read_parquet(DataDir(tmp_path / "data").table("experiment_leaderboard")).set_index("config")
    rows = pd.read_parquet(DataDir(tmp_path / "data").table("experiment_runs", "C+minilm+hybrid+llm"))
    # one call per question, and the probe that is its identity
    assert board.loc["C+minilm+hybrid+llm", "query_endpoint_calls"] == len(rows) + 1 > 1
    assert board.loc["C+minilm+hybrid+none", "query_endpoint_calls"] == 0
    assert rows["rerank_ms"].notna().all()


def test_a_configuration_ranks_through_the_labs_own_engine(tmp_path, pump):
    """The experiment's E + fp32 MiniLM + hybrid configuration gives every query the very ranking
    `run_queries` gives the lab's index of strategy E: one engine, not a copy of it."""
    from rag_assets.evaluation import metric_tables
    from rag_assets.experiment.measure import measure
    from rag_assets.ingest import ground_truth as gt
    from rag_assets.retrieval.search import run_queries

    snap, chunks, index, embedder = pump
    root = write_dataset(tmp_path / "ds")
    records, _ = gt.read_questions(root / "questions.jsonl")
    truth = gt.validate(records, snap)[0]
    path = experiment_file(tmp_path, "chunkers: [E]\nembedders: [minilm-fp32]\nretrievers: [hybrid]\n")
    config = spec.load(path).configurations[0]
    made = measure(config, snap, truth, DataDir(tmp_path / "data"), 1024, log=lambda line: None)
    queries = truth[truth["kind"] == "answerable"][["query_id", "query"]].reset_index(drop=True)
    vectors = embedder.encode(queries["query"].tolist(), query=True)
    lab = run_queries(index, queries, vectors, np.zeros(len(queries)))
    lab_hits = metric_tables.query_hits(lab[lab["retriever"] == "hybrid"], {"E": chunks}, truth)
    ours = made.table.set_index("query_id")
    assert len(ours) == len(lab_hits) > 0
    for q in lab.loc[lab["retriever"] == "hybrid"].itertuples():
        assert list(ours.loc[q.query_id, "chunk_ids"]) == list(q.chunk_ids)
    assert ours.loc[lab_hits["query_id"], "hit_rank"].tolist() == lab_hits["hit_rank"].tolist()
    assert made.figures["latency_ms"] and made.figures["load_before"] >= 0
    assert ours["latency_ms"].notna().sum() == min(len(ours), 100)


def test_probes_are_kept_apart_by_prefixes_and_a_reranker_behind_a_url_has_an_identity(tmp_path):
    from rag_assets.experiment.arms import fingerprints, identities

    with misbehaving_endpoint() as base:
        path = experiment_file(
            tmp_path,
            "chunkers: [E]\nembedders:\n"
            f"  plain: {{url: '{base}', model: good}}\n"
            f"  e5: {{url: '{base}', model: good, query_prefix: 'query: ', passage_prefix: 'passage: '}}\n"
            f"rerankers:\n  none: none\n  served: {{url: '{base.removesuffix('/v1')}', model: good}}\n",
        )
        experiment = spec.load(path)
        records = tmp_path / "records"
        first = identities(experiment, records)
        assert len(list(records.iterdir())) == 3  # one record each: two embedders, one reranker
        again = identities(experiment, records)
        assert first == again and first["plain"] != first["e5"] and first["served"]
        before = fingerprints(experiment, records)
    with misbehaving_endpoint(seed="9", port=int(base.rsplit(":", 1)[1].split("/")[0])):  # other models, same names
        after = fingerprints(experiment, records)
    modelled = [c for c in before if "+-+" not in c]  # BM25 alone has no model to move
    assert len(modelled) == 4 and all(before[c] != after[c] for c in modelled)
    assert before["E+-+bm25+none"] == after["E+-+bm25+none"]
    down = fingerprints(experiment, records, log=lambda line: None)  # nothing answers: tried again, not kept
    assert set(down) == set(after) and all(down[c] != after[c] for c in modelled)


def test_an_endpoint_that_counts_characters_is_counted_here_and_said_so(tmp_path):
    from rag_assets.retrieval import specs
    from rag_assets.retrieval.remote import PROBE, EndpointEmbedder

    with misbehaving_endpoint() as base:
        tokens = EndpointEmbedder(specs.EmbeddingEndpoint(url=base, model="good"))
        tokens.encode(["a passage about pumps"])
        chars = EndpointEmbedder(specs.EmbeddingEndpoint(url=base, model="characters"))
        chars.encode(["a passage about pumps"])
    assert tokens.endpoint.usage.source == "the endpoint's count"
    assert chars.endpoint.usage.source.startswith("estimated here with all-MiniLM-L6-v2's word pieces")
    sent = [*PROBE, "a passage about pumps", *PROBE]  # its probe, the passage, the probe again
    assert 0 < chars.endpoint.usage.tokens < sum(len(t) for t in sent)  # word pieces, not characters


def test_what_check_cannot_read_or_init_cannot_write_is_refused_in_one_line(tmp_path, tiny_dataset, capsys):
    where = ["--dataset", str(tiny_dataset), "--data-dir", str(tmp_path / "d")]
    deep = experiment_file(tmp_path, "chunkers: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert main(["check", *where, "--experiment", str(deep)]) == 2
    assert "nested too deeply" in capsys.readouterr().err
    axis = "\n".join(f"  r{i}: {{hybrid: true, rrf_k: {i + 1}}}" for i in range(1000))
    grid = experiment_file(tmp_path, f"search: grid\nchunkers: [A, B, C]\nembedders: [minilm]\nretrievers:\n{axis}\n")
    assert main(["check", *where, "--experiment", str(grid)]) == 2
    assert "a grid of 3,000 combinations: at most 500" in capsys.readouterr().err
    target = tmp_path / "elsewhere.yaml"
    (tiny_dataset / "experiment.yaml").symlink_to(target)
    for force in ([], ["--force"]):
        assert main(["init", *where, *force]) == 2 and "is a link" in capsys.readouterr().err
    assert not target.exists()
    for out in (str(tmp_path), "/proc/rag-assets.yaml", "/dev/full"):
        assert main(["init", *where, "--out", out, "--force"]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_reranker_answering_string_scores_is_refused_by_check(tmp_path, tiny_dataset, bad_base):
    path = experiment_file(
        tmp_path,
        "chunkers: [E]\nembedders: [minilm]\nrerankers:\n"
        f"  r: {{url: '{bad_base.removesuffix('/v1')}', model: strscore}}\n",
    )
    done = _check(path, tiny_dataset, tmp_path / "d")
    assert done.returncode == 2 and "relevance_score" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "variable", ["RAG_ASSETS_POSTGRES_URL", "PATH", "AWS_SECRET_ACCESS_KEY", "RAG_ASSETS_JUDGE_KEY", "EMBEDDINGS_KEY"]
)
def test_key_env_names_only_a_variable_meant_for_a_key(tmp_path, tiny_dataset, bad_base, variable):
    """A file from a shared dataset cannot send the environment's secrets to a URL it chooses: the
    endpoint echoes the key it gets, and a refused key_env reaches no endpoint at all."""
    secret = "postgresql://postgres:pw-4471@db:5432/rag"
    path = experiment_file(
        tmp_path, f"chunkers: [E]\nembedders:\n  served: {{url: '{bad_base}', model: echokey, key_env: {variable}}}\n"
    )
    command = [*CLI, "check", "--experiment", str(path), "--dataset", str(tiny_dataset), "--data-dir", str(tmp_path)]
    env = {**os.environ, variable: secret} if variable != "PATH" else dict(os.environ)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    line = done.stderr.strip()
    assert done.returncode == 2 and len(line.splitlines()) == 1 and f"{path}:3:" in line
    assert "key_env: only a variable meant for a key" in line and "RAG_ASSETS_KEY_" in line
    assert secret not in done.stdout + done.stderr and "bad key" not in line  # no request was made
    path.write_text(path.read_text().replace(variable, "RAG_ASSETS_KEY_EMBEDDINGS"))
    env["RAG_ASSETS_KEY_EMBEDDINGS"] = "sk-embeddings-key-4471"
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and "HTTP 400" in done.stderr and "sk-embeddings" not in done.stderr  # sent, refused
    if variable != environment.JUDGE_KEY:  # the judge's own key is read, for the judge only, by its fixed name
        with pytest.raises(ValueError, match="not a variable for a key"):
            environment.secret(variable)  # the one place keys are read holds every setting to the same rule


def test_a_probe_record_is_read_like_every_record_in_the_data_dir(tmp_path, tiny_dataset, bad_base):
    """What is in it that is no probe record is probed and written anew; what stands in its place
    that is no file is refused in one line naming it."""
    path = experiment_file(tmp_path, f"chunkers: [E]\nembedders:\n  served: {{url: '{bad_base}', model: good}}\n")
    data = tmp_path / "d"

    def made():  # what a run does: probe, and keep the record
        return embedders.make(spec.load(path).arms["embedders"][0].spec, DataDir(data).endpoint_records).identity

    identity = made()
    [record] = (data / "cache" / "endpoints").glob("*.json")
    for junk in (
        '{"a": ' + "[" * 30_000 + "]" * 30_000 + "}",
        '{"identity": 7, "setting": {}, "answer": []}',
        '{"identity": "x", "setting": {}, "answer": [["one"]]}',
        '{"identity": "x", "setting": {}, "answer": [[1.0], [1.0, 2.0]]}',
    ):
        record.write_text(junk)
        done = _check(path, tiny_dataset, data)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert made() == identity and json.loads(record.read_text())["identity"] == identity  # written anew
    for make, words in (
        (lambda p: p.mkdir(), "is a folder"),
        (os.mkfifo, "is a FIFO"),
        (lambda p: p.symlink_to("/dev/zero"), "is a device"),
        (lambda p: p.symlink_to(p.parent / "gone.json"), "a link to nothing"),
    ):
        shutil.rmtree(record) if record.is_dir() and not record.is_symlink() else record.unlink()
        make(record)
        done = _check(path, tiny_dataset, data)
        line = done.stderr.strip()
        assert done.returncode == 2 and len(line.splitlines()) == 1 and f"{record} cannot be read" in line, line
        assert words in line


def test_check_on_a_model_folder_whose_weights_do_not_load_is_one_line(tmp_path, tiny_dataset):
    folder = tmp_path / "random-model"
    shutil.copytree(model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors", "sentence_bert_config.json"))
    (folder / "model.safetensors").write_bytes(np.random.default_rng(0).bytes(4096))  # no window: loads the weights
    path = experiment_file(tmp_path, "chunkers: [E]\nembedders:\n  broken: {path: " + str(folder) + "}\n")
    done = _check(path, tiny_dataset, tmp_path / "d")
    line = done.stderr.strip()
    assert done.returncode == 2 and len(line.splitlines()) == 1, line
    assert f"{folder} cannot be loaded as a model (SafetensorError)" in line and f"{path}:3: embedder broken" in line
