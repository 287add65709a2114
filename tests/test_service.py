"""`rag-assets serve` as a client meets it: a real server process on loopback, keys, tenants, limits
and faults. One data dir (three documents, one per tenant and a public one) is materialised for
the module, and one server answers from it."""

import json
import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from conftest import write_dataset
from servers import CLI, free_port, misbehaving_endpoint, running_process

from rag_assets.app.cli import main
from rag_assets.app.keys import add_key

SECRET_B = "Project Falcon launches on 4 March; the budget is 2 million euros."
DOCS = {
    "a/plan.md": "---\naccess: [team-a]\n---\n# Plan A\n\nProject Heron ships the pump controller in June.",
    "b/plan.md": "---\naccess: [team-b]\n---\n# Plan B\n\n" + SECRET_B,
    "public.md": "# Handbook\n\nEvery project reports its budget and launch date to the board.",
}
QUESTION = "When does Project Falcon launch and what is its budget?"


@pytest.fixture(scope="module")
def endpoint():
    """An embedding endpoint that counts the requests it is sent, which the dataset's experiment
    file names: `ask`, `serve` and the lab's run must never call it."""
    with misbehaving_endpoint() as base:
        yield base


def requests_to(base: str) -> int:
    return httpx.get(base + "/count", timeout=5).json()["requests"]


@pytest.fixture(scope="module")
def served(tmp_path_factory, endpoint):
    root = tmp_path_factory.mktemp("serve")
    dataset = write_dataset(root / "dataset", DOCS, [])
    (dataset / "experiment.yaml").write_text(
        f"chunkers: [E]\nembedders:\n  counted: {{url: '{endpoint}', model: counted}}\nretrievers: [hybrid]\n"
    )
    data_dir = root / "data"
    run = ["run", "--dataset", str(dataset), "--data-dir", str(data_dir), "--strategies", "E", "--no-llm"]
    before = requests_to(endpoint)
    assert main([*run, "--questions", "written"]) == 0
    assert requests_to(endpoint) == before  # the lab's run reads no experiment
    keys_file = root / "keys.json"
    keys = {
        who: add_key(keys_file, who, None if who == "ops" else who, who == "ops") for who in ("team-a", "team-b", "ops")
    }
    assert not any(k in keys_file.read_text() for k in keys.values())  # hashes only
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [*CLI, "serve", "--dataset", str(dataset), "--data-dir", str(data_dir), "--keys", str(keys_file)]
    command += ["--port", str(port), "--check-every", "0.5", "--generating", "1", "--queue", "0"]
    log = root / "serve.log"
    with running_process(command, base + "/healthz", "rag-assets serve", 240, log=log):
        yield {
            "base": base,
            "keys": keys,
            "keys_file": keys_file,
            "dataset": dataset,
            "data_dir": data_dir,
            "run": run,
            "endpoint": endpoint,
            "log": log,
        }


def ask(served, who, body, headers=None, timeout=120):
    auth = {"Authorization": f"Bearer {served['keys'][who]}"} if who in served["keys"] else {}
    return httpx.post(f"{served['base']}/v1/ask", json=body, headers={**auth, **(headers or {})}, timeout=timeout)


def sources(response) -> set[str]:
    return {s["document_id"] for s in response.json()["sources"]}


def test_the_tenant_comes_from_the_key_never_from_the_request(served):
    forged = ask(served, "team-a", {"question": QUESTION, "tenant": "team-b"}, {"X-Tenant": "team-b"})
    assert forged.status_code == 200, forged.text
    assert not any(d.startswith("b-plan") for d in sources(forged)) and SECRET_B not in forged.text
    own = ask(served, "team-b", {"question": QUESTION})
    assert own.status_code == 200 and SECRET_B in own.json()["answer"], own.json()  # extractive: B's sentence
    assert [s["verdict"] for s in own.json()["support"]] == ["SUPPORTED"]  # the check's level, per sentence
    assert any(d.startswith("b-plan") for d in sources(own))
    operator = ask(served, "ops", {"question": QUESTION})
    assert any(d.startswith("b-plan") for d in sources(operator))
    for who, headers in (("nobody", {}), ("nobody", {"Authorization": "Bearer not-a-key"})):
        refused = ask(served, who, {"question": QUESTION}, headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"


def test_bad_requests_get_a_4xx_and_affect_nothing_else(served):
    key = {"Authorization": f"Bearer {served['keys']['team-b']}", "Content-Type": "application/json"}
    huge = json.dumps({"question": "x" * 10_000_000})
    assert httpx.post(f"{served['base']}/v1/ask", content=huge, headers=key, timeout=60).status_code == 413
    assert httpx.post(f"{served['base']}/v1/ask", content=b'{"question": ', headers=key).status_code == 422
    assert ask(served, "team-b", {"question": ""}).status_code == 422
    assert ask(served, "team-b", {"question": QUESTION, "strategy": "Z"}).status_code == 400
    assert ask(served, "team-b", {"question": QUESTION, "answerer": "oracle"}).status_code == 400
    assert ask(served, "team-b", {"question": QUESTION}).status_code == 200
    assert httpx.get(f"{served['base']}/openapi.json").json()["paths"]["/v1/ask"]["post"]


def test_generation_and_reranking_pass_one_gate_and_the_extractive_answerer_never_waits_behind_it(served):
    """One slot, no queue: of a generated answer and two reranked by the generator, sent together,
    one runs and the others are told to come back; a plain extractive answer meanwhile is not held."""
    expensive = [{"answerer": "generate"}, {"retriever": "rerank-llm"}, {"retriever": "rerank-llm"}]
    with ThreadPoolExecutor(4) as pool:
        generated = [pool.submit(ask, served, "team-b", {"question": QUESTION, **e}) for e in expensive]
        time.sleep(0.5)
        t0 = time.perf_counter()
        quick = ask(served, "team-b", {"question": QUESTION})
        quick_s = time.perf_counter() - t0
        codes = sorted(f.result().status_code for f in generated)
    assert quick.status_code == 200 and quick_s < min(2.0, max(f.result().elapsed.total_seconds() for f in generated))
    assert codes.count(200) >= 1 and codes.count(429) >= 1 and set(codes) <= {200, 429}, codes  # 1 slot, no queue
    busy = next(f.result() for f in generated if f.result().status_code == 429)
    assert int(busy.headers["retry-after"]) >= 1


def test_a_judged_answer_passes_the_gate_and_the_judges_key_never_reaches_the_tenant(served, tmp_path):
    """With a judge, an extractive answer calls a model too: one slot, no queue, four at once, and
    three are told to come back. The judge echoes the operator's key it was sent: not in any answer."""
    judge_key = "sk-judge-of-the-operator-4471"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [*CLI, "serve", "--dataset", str(served["dataset"]), "--data-dir", str(served["data_dir"])]
    command += ["--keys", str(served["keys_file"]), "--port", str(port), "--answerers", "extractive"]
    command += ["--generating", "1", "--queue", "0"]
    env = {**os.environ, "RAG_ASSETS_JUDGE_KEY": judge_key}
    with misbehaving_endpoint() as judge:
        command += ["--judge-url", judge, "--judge-model", "echokey"]
        with running_process(command, base + "/readyz", "rag-assets serve", 240, env=env):
            judged = {**served, "base": base}
            with ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(lambda _: ask(judged, "team-b", {"question": QUESTION}), range(4)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [200, 429, 429, 429], codes
    answered = next(a for a in answers if a.status_code == 200)
    assert [s["judge"]["verdict"] for s in answered.json()["support"]] == ["entailed"], answered.json()
    assert "[key]" in answered.text and not any(judge_key in a.text for a in answers)


def _ready(served, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        response = httpx.get(f"{served['base']}/readyz")
        if response.status_code == 200:
            return response.json()
        time.sleep(0.5)
    raise AssertionError(f"not ready again: {response.text}")


def test_unreadable_files_fail_readiness_not_liveness_and_recover(served):
    assets = served["data_dir"] / "assets"
    moved = served["data_dir"] / "assets-away"
    assets.rename(moved)
    try:
        deadline = time.time() + 30
        while httpx.get(f"{served['base']}/readyz").status_code == 200 and time.time() < deadline:
            time.sleep(0.3)
        not_ready = httpx.get(f"{served['base']}/readyz")
        assert not_ready.status_code == 503 and "cannot be read" in " ".join(not_ready.json()["problems"])
        assert httpx.get(f"{served['base']}/healthz").status_code == 200
        refused = ask(served, "team-b", {"question": QUESTION})
        assert refused.status_code == 503 and "cannot be read" in refused.json()["detail"]
    finally:
        moved.rename(assets)
    _ready(served)
    assert ask(served, "team-b", {"question": QUESTION}).status_code == 200


def test_a_new_materialisation_is_served_without_a_restart_and_no_answer_mixes_two(served):
    """Answers keep coming while a document is edited and the index rebuilt: each is 200 from one
    whole index (its quote is the text of the version it names) or 503 while the index is stale."""
    before = _ready(served)["version"]
    document = served["dataset"] / "documents" / "b" / "plan.md"
    seen, stop = [], threading.Event()

    def keep_asking():
        while not stop.is_set():
            r = ask(served, "team-b", {"question": QUESTION})
            seen.append((r.status_code, r.json()))

    asker = threading.Thread(target=keep_asking)
    asker.start()
    try:
        time.sleep(1)
        document.write_text(DOCS["b/plan.md"].replace("4 March", "9 May"), encoding="utf-8")
        env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
        subprocess.run([*CLI, *served["run"], "--questions", "written"], env=env, check=True, capture_output=True)
        after = _ready(served)["version"]
        time.sleep(1)
    finally:
        stop.set()
        asker.join()
    assert after != before
    codes = {code for code, _ in seen}
    assert codes <= {200, 503} and 200 in codes, codes
    for code, body in seen:
        if code == 200:
            new = body["index_version"] != before
            assert ("9 May" in body["answer"]) == new and ("4 March" in body["answer"]) == (not new), body
        else:
            assert "stale" in body["detail"] or "cannot be served" in body["detail"], body
    assert "9 May" in seen[-1][1]["answer"]  # the new index, picked up without a restart


def test_an_experiment_file_beside_the_dataset_costs_ask_and_serve_no_request_and_no_write(served):
    """The dataset's experiment.yaml names an endpoint: `serve` checks its index's freshness every
    0.5 s and answers, and `ask` answers, without one request to it or one file written for it."""
    before = requests_to(served["endpoint"])
    assert _ready(served)["status"] == "ready"
    time.sleep(3)  # six freshness checks
    assert ask(served, "ops", {"question": QUESTION}).status_code == 200
    where = ["--dataset", str(served["dataset"]), "--data-dir", str(served["data_dir"])]
    done = subprocess.run([*CLI, "ask", *where, "--all-tenants", QUESTION], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "embedder" not in done.stdout and "unreachable" not in done.stdout  # stdout is the answer
    assert requests_to(served["endpoint"]) == before
    assert not (served["data_dir"] / "cache" / "endpoints").exists()


def test_a_bad_request_is_a_one_line_4xx_that_neither_echoes_nor_logs_the_question(served):
    marker = "Falcon-code-4471"
    for body in (
        '{"question": " \\t  "}',
        '{"question": "' + marker + '", "strategy": NaN}',
        '{"question": "' + marker + '", "retriever": Infinity}',
        '{"question": "' + marker + '", "answerer": -Infinity}',
        '{"question": "' + marker + ' \\ud800"}',
    ):
        r = httpx.post(
            f"{served['base']}/v1/ask",
            content=body,
            headers={"Authorization": f"Bearer {served['keys']['ops']}", "Content-Type": "application/json"},
            timeout=30,
        )
        assert r.status_code == 422 and marker not in r.text and len(r.json()["detail"].splitlines()) == 1, r.text
    logged = served["log"].read_text()
    assert marker not in logged and "Traceback" not in logged


def test_a_key_removed_from_the_file_is_refused_within_seconds(served):
    from rag_assets.app.keys import add_key, remove_key

    key = add_key(served["keys_file"], "temporary", None, True)
    time.sleep(1.2)
    assert ask(served, "x", {"question": QUESTION}, {"Authorization": f"Bearer {key}"}).status_code == 200
    remove_key(served["keys_file"], "temporary")
    time.sleep(1.2)
    assert ask(served, "x", {"question": QUESTION}, {"Authorization": f"Bearer {key}"}).status_code == 401


def test_a_strategy_materialised_after_serve_started_is_served_without_a_restart(served):
    """C was never materialised: 503 naming it; once `run` builds it, answered within seconds."""
    before = ask(served, "team-b", {"question": QUESTION, "strategy": "C"})
    assert before.status_code == 503, before.text
    run = [*served["run"][: served["run"].index("--strategies") + 1], "C", "--no-llm", "--questions", "written"]
    env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
    subprocess.run([*CLI, *run], env=env, check=True, capture_output=True)
    deadline = time.time() + 60
    while (after := ask(served, "team-b", {"question": QUESTION, "strategy": "C"})).status_code != 200:
        assert time.time() < deadline, after.text
        time.sleep(0.5)
    assert after.json()["strategy"] == "C" and "Project Falcon" in after.json()["answer"]
