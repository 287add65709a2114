"""The generator behind an OpenAI-compatible endpoint: `rag-assets serve-model` running the
packaged model, and a server that misbehaves, both real HTTP servers on loopback, talked to with
the `openai` client users point at vLLM or Ollama."""

import pandas as pd
import pytest
from servers import free_port, misbehaving_endpoint, model_server

from rag_assets.answering import scoring
from rag_assets.answering.answerer import Answerer, Generative
from rag_assets.answering.citations import build_context
from rag_assets.answering.endpoint import EndpointLM, EndpointUnavailable
from rag_assets.answering.generation import LocalLM
from rag_assets.answering.judge import Judge

EIFFEL = [
    {
        "chunk_id": "c1",
        "document_id": "d1",
        "title": "Paris",
        "section": "",
        "start": 0,
        "end": 48,
        "content": "The Eiffel Tower in Paris was completed in 1889.",
        "locator": None,
        "cosine_distance": 0.2,
    }
]


@pytest.fixture(scope="module")
def served():
    with model_server() as base:
        yield base


def test_the_served_model_answers_as_the_local_one_does(served):
    prompt = build_context("When was the Eiffel Tower completed?", EIFFEL).prompt
    endpoint = EndpointLM(served, "smollm2-135m-instruct")
    endpoint.check()
    reply = endpoint.generate(prompt)
    local = LocalLM(answer_prefix="").generate(prompt)  # the same weights, greedy, no answer prefix
    assert reply.failure is None and reply.text == local.text and "1889" in reply.text
    assert reply.prompt_tokens == local.prompt_tokens <= endpoint.count_tokens(prompt)  # the estimate is over
    assert "weights not verified" in endpoint.identity and "smollm2-135m-instruct" in endpoint.identity
    with pytest.raises(EndpointUnavailable, match="serves no model 'gpt-9'; it serves: smollm2-135m-instruct"):
        EndpointLM(served, "gpt-9").check()


def test_an_unreachable_endpoint_is_refused_before_any_question():
    with pytest.raises(EndpointUnavailable, match="cannot reach the generator endpoint"):
        EndpointLM(f"http://127.0.0.1:{free_port()}/v1", "any").check()


TWO_ENCODINGS = "reply in more than one content encoding, or one not read"


@pytest.fixture(scope="module")
def bad():
    with misbehaving_endpoint() as base:
        yield base


@pytest.mark.parametrize(
    "model, failure, counts",
    [
        ("slow", "timeout", {"timeout": 1, "retries": 1}),
        ("empty", "empty reply", {"empty reply": 1}),
        ("cut", "reply cut at the server's context window", {"reply cut at the server's context window": 1}),
        ("garbage", "reply not text", {"reply not text": 1}),
        ("flaky", None, {"retries": 1}),
        # hostile: no total deadline, a megabyte, the wrong shapes
        ("drip", "timeout", {"timeout": 1, "retries": 1}),
        ("huge", "reply over 262,144 bytes", {"reply over 262,144 bytes": 1}),
        ("choices5", "reply not a chat completion", {"reply not a chat completion": 1}),
        ("list5", "reply not a chat completion", {"reply not a chat completion": 1}),
        ("message5", "reply not a chat completion", {"reply not a chat completion": 1}),
        # on the wire: headers a byte at a time, 1 GiB gzipped into 1 MiB, the same gzipped twice
        ("driphead", "timeout", {"timeout": 1, "retries": 1}),
        ("bomb", "reply over 262,144 bytes", {"reply over 262,144 bytes": 1}),
        ("gzip2", TWO_ENCODINGS, {TWO_ENCODINGS: 1}),
    ],
)
def test_what_goes_wrong_with_an_endpoint_is_counted_never_answered(bad, model, failure, counts):
    endpoint = EndpointLM(bad, model, timeout_s=1, retries=1)
    reply = endpoint.generate("Which way should the inlet valve face?")
    assert reply.failure == failure and dict(endpoint.failures) == counts
    assert (reply.text == "") == (failure is not None)


def test_failed_replies_reach_the_scores_as_failures_not_as_wrong_answers(bad, pump):
    _, chunks, index, embedder = pump
    empty = EndpointLM(bad, "empty", timeout_s=1, retries=0)
    answerer = Answerer(index, chunks, embedder, Generative(empty), threshold=2.0)
    answers = answerer.ask_many(["Which way should the inlet valve face?", "How often is the filter replaced?"], 2)
    assert [a.failure for a in answers] == ["empty reply", "empty reply"] and all(a.answer is None for a in answers)
    rows = [
        {**a.as_dict(), "query_id": f"q{i}", "kind": "answerable", "needle": "x", "answers": ["north"]}
        for i, a in enumerate(answers)
    ]
    summary = scoring.summary(scoring.score_answers(pd.DataFrame(rows))).set_index(["metric", "group"])
    assert summary.loc[("no answer came back (failure)", "all"), ["count", "n"]].tolist() == [2, 2]
    assert summary.loc[("em", "answerable (scored)"), "n"] == 0 and dict(empty.failures) == {"empty reply": 2}


@pytest.mark.parametrize("seed", ["html", "data5"])
def test_a_model_list_of_the_wrong_shape_is_refused_in_one_line(seed):
    with misbehaving_endpoint(seed=seed) as base:
        with pytest.raises(EndpointUnavailable, match="does not answer an OpenAI-compatible model list"):
            EndpointLM(base, "flaky").check()


def test_a_dripping_server_is_cut_off_at_the_deadline_whatever_the_read_timeout(bad):
    import time

    endpoint = EndpointLM(bad, "drip", timeout_s=2, retries=0)
    t0 = time.perf_counter()
    reply = endpoint.generate("Which way should the inlet valve face?")
    assert reply.failure == "timeout" and time.perf_counter() - t0 < 6  # a byte every 0.5 s would go on for ever


def test_a_judge_behind_an_endpoint_gives_a_verdict_per_sentence_or_says_why_not(served, bad):
    judge = Judge(served, "smollm2-135m-instruct", 60)
    judge.check()
    passage = "The Eiffel Tower in Paris was completed in 1889."
    (told,) = judge.verdicts(["The tower was completed in 1889 [1]."], [[passage]])
    assert told["verdict"] in {"entailed", "not entailed", "unreadable"} and told["model"] == judge.identity
    (failed,) = Judge(bad, "garbage", 5).verdicts(["The tower was completed in 1889."], [[passage]])
    assert failed["verdict"] == "failed: reply not text"


def test_a_model_list_whose_headers_drip_is_cut_off_at_the_deadline():
    import time

    with misbehaving_endpoint(seed="driphead") as base:
        t0 = time.perf_counter()
        with pytest.raises(EndpointUnavailable, match="cannot reach the generator endpoint.*APITimeoutError"):
            EndpointLM(base, "flaky", timeout_s=2).check()
        assert time.perf_counter() - t0 < 6  # a header byte every 0.5 s would go on for ever


def test_a_key_an_endpoint_echoes_is_masked_in_the_answer_and_the_judges_reply(bad, monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_GENERATOR_KEY", "sk-generator-4471-secret")
    monkeypatch.setenv("RAG_ASSETS_JUDGE_KEY", "sk-judge-4471-secret")
    reply = EndpointLM(bad, "echokey", timeout_s=5).generate("Which way should the inlet valve face?")
    assert reply.failure is None and reply.text == "YES. You sent Bearer [key]"
    (verdict,) = Judge(bad, "echokey", 5).verdicts(["The valve faces north."], [["It faces north."]])
    assert verdict["verdict"] == "entailed" and verdict["reply"] == "YES. You sent Bearer [key]"
    with misbehaving_endpoint(seed="echokey") as echoing:  # a model list that names the key
        with pytest.raises(EndpointUnavailable, match=r"it serves: Bearer \[key\]$"):
            EndpointLM(echoing, "flaky", timeout_s=5).check()
