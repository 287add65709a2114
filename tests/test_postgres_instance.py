"""The Dagster instance on PostgreSQL: a real server started by the tests (servers.py); `rag-assets
run`, `ask` and `ui` against it; what one process records read back by another."""

import json
import os
import subprocess
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import psycopg2
import pytest
from conftest import write_dataset
from dagster import AssetKey, DagsterInstance, DagsterRunStatus, build_schedule_context, evaluate_automation_conditions
from servers import CLI, create_database, free_port, running_process, running_ui, start_postgres, stop_postgres

from rag_assets.app.instance import instance_yaml
from rag_assets.app.keys import add_key
from rag_assets.app.serving import Served, stale_resolver
from rag_assets.defs import build_definitions
from rag_assets.defs.external_sources import record_source_versions
from rag_assets.settings import Settings

CLEAN_ENV = {"DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": "", "RAG_ASSETS_POSTGRES_URL": ""}


def cli(*arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *arguments], env=env, capture_output=True, text=True, timeout=900)


def count(url: str, sql: str) -> int:
    with psycopg2.connect(url) as connection, connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


@pytest.fixture(scope="module")
def materialised(postgres, tmp_path_factory):
    """The tiny corpus materialised by `rag-assets run --instance-postgres` in its own process."""
    root = tmp_path_factory.mktemp("pg")
    dataset = write_dataset(root / "dataset")
    url = create_database(postgres, "rag_assets_run")
    env = {**os.environ, **CLEAN_ENV}
    common = ["--dataset", str(dataset), "--data-dir", str(root / "data")]
    done = cli("run", *common, "--no-llm", "--instance-postgres", url, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return {"root": root, "dataset": dataset, "url": url, "common": common, "env": env}


@pytest.fixture
def instance(materialised, monkeypatch):
    """The same instance opened in this process, as the UI or a second tool would."""
    monkeypatch.setenv("RAG_ASSETS_POSTGRES_URL", "postgresql+psycopg2://" + materialised["url"].split("://")[1])
    with DagsterInstance.from_config(str(materialised["root"] / "data" / "dagster_home")) as opened:
        yield opened


def test_a_run_keeps_its_history_in_postgresql_and_another_process_reads_it(materialised, instance):
    home = materialised["root"] / "data" / "dagster_home"
    assert not (home / "history").exists() and not (home / "schedules").exists()  # nothing in SQLite
    assert materialised["url"].split("@")[1] not in (home / "dagster.yaml").read_text()  # the URL stays off disk
    url = materialised["url"]
    assert count(url, "select count(*) from event_logs where dagster_event_type = 'ASSET_MATERIALIZATION'") > 20
    assert count(url, "select count(*) from event_logs where dagster_event_type = 'ASSET_CHECK_EVALUATION'") > 10

    runs = instance.get_runs()
    assert runs and {r.status for r in runs} == {DagsterRunStatus.SUCCESS}
    assert count(url, "select count(*) from runs") == len(runs)
    settings = Settings(data_dir=materialised["root"] / "data", dataset=materialised["dataset"], llm=False)
    served = Served(build_definitions(settings), instance, settings)
    assert instance.get_latest_materialization_event(AssetKey("significance_report")) is not None
    for strategy in ("C", "E"):  # what `ask` checks before it serves: every blocking check passed, nothing stale
        assert served.failed_checks(strategy) == [] and served.freshness_problems(strategy) == []


def test_an_instance_file_that_holds_no_url_is_refused_without_a_word_of_it(tmp_path):
    """The wrong private file (cloud credentials) given as --instance-postgres-file: one line that
    shows none of it, nor of a file whose first line is a URL and the next ones secrets."""
    secrets = ["AKIA4471EXAMPLE", "wJalrXUtnFEMI/K7MDENG/4471", "eu-west-4471"]
    wrong = tmp_path / "credentials"
    for text in (
        f"aws_access_key_id = {secrets[0]}\naws_secret_access_key = {secrets[1]}\nregion = {secrets[2]}\n",
        f"postgresql://postgres@127.0.0.1:1/db?x={secrets[0]}\naws_secret_access_key = {secrets[1]}\n",
        f"{secrets[2]}://{secrets[0]}:{secrets[1]}\n",
    ):
        wrong.write_text(text)
        wrong.chmod(0o600)
        done = cli(
            "ask", "--data-dir", str(tmp_path / "d"), "--instance-postgres-file", str(wrong), "Why?", env=os.environ
        )
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "postgresql://" in done.stderr and not any(s in done.stderr + done.stdout for s in secrets), done.stderr


def test_ask_answers_from_the_postgresql_instance_and_says_when_it_cannot_reach_it(materialised):
    common, env, url = materialised["common"], materialised["env"], materialised["url"]
    question = "How do I renew my passport?"  # refused by the gate: no generator needed
    missing = cli("ask", question, *common, env=env)
    assert (
        missing.returncode == 2 and "is in PostgreSQL" in missing.stderr and "RAG_ASSETS_POSTGRES_URL" in missing.stderr
    )
    wrong = url.replace("postgres@", "postgres:s3cret@").rsplit(":", 1)[0] + ":1/rag_assets_run"
    unreachable = cli("ask", question, *common, env={**env, "RAG_ASSETS_POSTGRES_URL": wrong})
    assert unreachable.returncode == 2 and "cannot open the PostgreSQL instance" in unreachable.stderr
    assert "s3cret" not in unreachable.stderr + unreachable.stdout  # the password is never printed
    on_the_command_line = cli("ask", question, *common, "--instance-postgres", wrong, env=env)
    assert on_the_command_line.returncode == 2 and "process list" in on_the_command_line.stderr
    assert "s3cret" not in on_the_command_line.stderr
    bad = cli("ask", question, *common, "--instance-postgres", "mysql://x@y/z", env=env)
    assert bad.returncode == 2 and "starts with postgresql://" in bad.stderr

    answered = cli("ask", question, *common, "--json", env={**env, "RAG_ASSETS_POSTGRES_URL": url})
    assert answered.returncode == 0, answered.stderr[-2000:]
    answer = json.loads(answered.stdout)
    assert answer["refused"] and answer["strategy"] == "E"

    sqlite = materialised["root"] / "sqlite-data"  # a data dir whose history is a real SQLite instance
    home = sqlite / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(instance_yaml(postgres=False))  # as `rag-assets run` writes it
    with DagsterInstance.from_config(str(home)):
        pass
    assert (home / "history" / "runs.db").is_file()
    switched = cli("ask", question, "--data-dir", str(sqlite), "--instance-postgres", url, env=env)
    assert switched.returncode == 2 and "is in SQLite" in switched.stderr


def test_the_ui_reads_the_runs_of_the_cli_and_its_daemon_ticks_the_sensors_into_postgresql(materialised, instance):
    url = materialised["url"]
    ran = {r.run_id for r in instance.get_runs()}
    query = {"query": "{ runsOrError { ... on Runs { results { runId status } } } }"}
    env = {**materialised["env"], "RAG_ASSETS_POSTGRES_URL": url}
    with running_ui(materialised["common"], env) as base:
        request = urllib.request.Request(
            base + "/graphql", data=json.dumps(query).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            seen = json.loads(response.read())["data"]["runsOrError"]["results"]
        assert {r["runId"] for r in seen} == ran and {r["status"] for r in seen} == {"SUCCESS"}
        deadline = time.time() + 150  # both sensors tick at most once a minute
        while time.time() < deadline:
            ticks = count(url, "select count(distinct selector_id) from job_ticks where type = 'SENSOR'")
            if ticks >= 2:
                break
            time.sleep(5)
    assert ticks >= 2, "the daemon recorded no tick of both sensors in PostgreSQL"
    names = {t.instigator_name for t in instance.all_instigator_state()}
    assert {"source_versions_sensor", "nightly_evaluation_0200_utc"} <= names


def test_an_edited_document_is_stale_and_the_schedule_and_automation_tick_against_postgresql(materialised, instance):
    defs = build_definitions(
        Settings(data_dir=materialised["root"] / "data", dataset=materialised["dataset"], llm=False)
    )
    first = evaluate_automation_conditions(defs=defs, instance=instance)
    assert first.total_requested == 0  # everything is up to date
    guide = Path(materialised["dataset"]) / "documents" / "guide.md"
    original = guide.read_text()
    guide.write_text(original + "\nThe pump weighs 12 kilograms.\n")
    try:
        assert record_source_versions(instance, defs)
        assert stale_resolver(defs, instance).get_status(AssetKey("corpus_snapshot"), None).value == "STALE"
        tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        assert AssetKey("corpus_snapshot") in {r.key for r in tick.results if not r.true_subset.is_empty}
    finally:  # the module's other tests share this data dir: leave its corpus as the run saw it
        guide.write_text(original)
        record_source_versions(instance, defs)
    assert stale_resolver(defs, instance).get_status(AssetKey("corpus_snapshot"), None).value == "FRESH"
    schedule = defs.resolve_schedule_def("nightly_evaluation_0200_utc")
    context = build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 12, 1, 2, tzinfo=UTC))
    assert len(schedule.evaluate_tick(context).run_requests) == 1


def test_serve_is_not_ready_while_postgresql_is_down_and_recovers_without_a_restart(materialised, postgres, tmp_path):
    import httpx

    keys = tmp_path / "keys.json"
    key = add_key(keys, "ops", None, True)
    port, url = free_port(), materialised["url"]
    base = f"http://127.0.0.1:{port}"
    command = [*CLI, "serve", *materialised["common"], "--keys", str(keys), "--port", str(port)]
    command += ["--answerers", "extractive", "--check-every", "0.5", "--instance-postgres", url]

    def asked() -> int:
        body = {"question": "Which way should the inlet valve face?"}
        return httpx.post(
            f"{base}/v1/ask", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ).status_code

    def readiness(expected: int) -> dict:
        deadline = time.time() + 120  # Dagster retries a lost connection with back-off before it gives up
        while (r := httpx.get(f"{base}/readyz", timeout=10)).status_code != expected and time.time() < deadline:
            time.sleep(0.3)
        assert r.status_code == expected, r.text
        return r.json()

    with running_process(command, base + "/readyz", "rag-assets serve", 240, materialised["env"]):
        assert asked() == 200
        stop_postgres(postgres)
        try:
            problems = readiness(503)["problems"]
            # psycopg2's OperationalError, or Dagster's own error once its connection retries run out
            assert problems[0].startswith("cannot check the index of strategy E:"), problems
            assert "OperationalError" in problems[0] or "DagsterPostgresException" in problems[0], problems
            assert "[SQL" not in problems[0] and "SELECT" not in problems[0] and len(problems[0]) < 400, problems
            host, port = url.rsplit("@", 1)[1].split("/")[0].rsplit(":", 1)  # /readyz asks no key: no address
            assert host not in problems[0] and port not in problems[0], problems
            assert httpx.get(f"{base}/healthz").status_code == 200 and asked() == 503
        finally:
            start_postgres(postgres)
        readiness(200)
        assert asked() == 200


def test_serve_workers_get_their_settings_in_a_file_never_the_password_in_their_environment(materialised, tmp_path):
    """`serve --workers 2` on the PostgreSQL instance, its URL carrying a password (the tests'
    server trusts loopback, so any password opens it) read from a private file: both workers
    answer, and neither the supervisor's environment or arguments nor any worker's holds the
    password; the file that carried their settings is this user's only, and gone once the server
    stops. On the command line, a URL with a password is refused (every user sees arguments)."""
    import httpx
    from servers import descendants

    keys = tmp_path / "keys.json"
    key = add_key(keys, "ops", None, True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user, _, server = materialised["url"].partition("://")[2].partition("@")
    url = f"postgresql://{user}:pw-never-in-an-environment@{server}"
    private = tmp_path / "instance-url"
    private.write_text(url)
    private.chmod(0o600)
    command = [*CLI, "serve", *materialised["common"], "--keys", str(keys), "--port", str(port), "--workers", "2"]
    command += ["--answerers", "extractive", "--instance-postgres-file", str(private)]
    with running_process(command, base + "/readyz", "rag-assets serve --workers 2", 300, materialised["env"]) as served:
        body = {"question": "Which way should the inlet valve face?"}
        answered = [
            httpx.post(f"{base}/v1/ask", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)
            for _ in range(4)
        ]
        assert {r.status_code for r in answered} == {200}, [r.text for r in answered]
        processes = {served.pid} | descendants(served.pid)
        assert len(processes) >= 3  # the supervisor and its two workers
        environments = {pid: Path(f"/proc/{pid}/environ").read_bytes() for pid in processes}
        assert not [pid for pid, env in environments.items() if b"pw-never-in-an-environment" in env]
        arguments = {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in processes}
        assert not [pid for pid, args in arguments.items() if b"pw-never-in-an-environment" in args]
        handed = {
            Path(line.split(b"=", 1)[1].decode())
            for env in environments.values()
            for line in env.split(b"\0")
            if line.startswith(b"RAG_ASSETS_SERVE_FILE=")
        }
        assert len(handed) == 1 and next(iter(handed)).stat().st_mode & 0o077 == 0
    assert not next(iter(handed)).exists()
    refused = subprocess.run([*command[:-2], "--instance-postgres", url], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "process list" in refused.stderr and "pw-never" not in refused.stderr
