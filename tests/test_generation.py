"""The generator, the LLM relevance scorer, the ask path and how answers are scored."""

import pandas as pd
import pytest
from conftest import ScriptedLM

from rag_assets.answering import scoring as scoring
from rag_assets.answering.answerer import Answerer, Generative
from rag_assets.answering.citations import build_context, fragment_range
from rag_assets.answering.generation import LocalLM
from rag_assets.layout import model_cache
from rag_assets.retrieval.rerank import RELEVANCE_PROMPT, LLMRelevanceReranker


@pytest.fixture(scope="module")
def lm():
    return LocalLM()


def test_squad_normalisation_exact_match_f1_and_containment():
    assert scoring.normalize_answer("The  Cat, sat!  ") == "cat sat"
    assert scoring.exact_match("the cat.", ["A cat"]) == 1.0 and scoring.exact_match("cats", ["cat"]) == 0.0
    assert scoring.token_f1("the cat sat on the mat", ["cat on mat"]) == pytest.approx(2 * 0.75 / 1.75)
    assert scoring.token_f1("dog", ["cat", "dog"]) == 1.0 and scoring.token_f1("", ["cat"]) == 0.0
    assert scoring.contains_answer("It was built in 1889, in Paris.", ["1889"])
    assert not scoring.contains_answer("It was built in 18890.", ["1889"])  # whole tokens only


def test_failure_decomposition_keeps_unlabelled_correct_answers_apart():
    needle = "The inlet valve must face north."
    source = {"quote": needle}
    other = {"quote": "Tighten the bolts."}

    def row(answer, sources, cited, kind="answerable", refused=False, answers=("north",)):
        return {
            "kind": kind,
            "answers": list(answers),
            "needle": needle if kind == "answerable" else None,
            "refused": refused,
            "declined": answer == "NO ANSWER",
            "failure": None,
            "supported": None,
            "answer": answer,
            "sources": sources,
            "citations": cited,
            "dangling": [],
        }

    scored = scoring.score_answers(
        pd.DataFrame(
            [
                row("It faces north [1].", [source], [source]),
                row("North [1].", [source, other], [other]),
                row("South [1].", [other], [other]),
                row("South [1].", [source], [source]),
                row(None, [], [], refused=True),
                row("NO ANSWER", [other], [], kind="unanswerable"),
                row("It faces north [1].", [source], [source], answers=()),  # no reference answers: not scored
            ]
        )
    )
    assert scored["outcome"].tolist()[:5] == [
        scoring.OUTCOMES[0],
        scoring.OUTCOMES[1],
        scoring.OUTCOMES[2],
        scoring.OUTCOMES[3],
        scoring.OUTCOMES[2],
    ]
    assert scored["contains"].tolist()[:5] == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert pd.isna(scored["outcome"].iloc[6]) and pd.isna(scored["em"].iloc[6]) and scored["cites_needle"].iloc[6]
    summary = scoring.summary(scored).set_index(["metric", "group"])
    assert summary.loc[("correct with evidence", "answerable (scored)"), ["count", "n"]].tolist() == [1, 5]
    assert summary.loc[("not scored (no reference answers)", "answerable"), ["count", "n"]].tolist() == [1, 6]
    assert summary.loc[("declined by the model", "unanswerable"), "count"] == 1
    assert summary.loc[("citations all valid", "answered"), "n"] == 5  # refusals and the decline are not answers


def test_the_gate_refuses_without_calling_the_model_and_citations_are_checked(pump):
    snap, chunks, index, embedder = pump
    silent = ScriptedLM("unused")
    refused = Answerer(index, chunks, embedder, Generative(silent), threshold=0.05).ask("How do I renew my passport?")
    assert refused.refused and silent.prompts == [] and refused.answer is None and refused.nearest_distance > 0.05

    scripted = ScriptedLM("It must face north [1], see also [9].")
    answer = Answerer(index, chunks, embedder, Generative(scripted), threshold=2.0).ask(
        "Which way should the inlet valve face?"
    )
    assert len(scripted.prompts) == 1 and not answer.refused
    assert [c.index for c in answer.citations] == [1] and answer.dangling == [9]
    assert len(answer.sources) == 4  # the gate keeps at most four
    texts = dict(zip(snap["document_id"], snap["text"]))
    for c in answer.sources:
        start, end = fragment_range(c.fragment)
        assert texts[c.document_id][start:end] == c.quote
    with pytest.raises(ValueError, match="unknown retriever"):
        Answerer(index, chunks, embedder, Generative(scripted), retriever="magic")
    with pytest.raises(ValueError, match="empty"):
        Answerer(index, chunks, embedder, Generative(scripted)).ask("  ")


def test_smollm2_answers_greedily_from_its_sources_within_the_token_budget(lm, pump):
    _, chunks, _, _ = pump
    hits = [{**r, "cosine_distance": 0.3} for r in chunks.head(3).to_dict("records")]
    context = build_context(
        "When was the Eiffel Tower completed?",
        [{**hits[0], "content": "The Eiffel Tower in Paris was completed in 1889."}],
    )
    first, second = lm.generate(context.prompt), lm.generate(context.prompt)
    assert first.text == second.text and "1889" in first.text  # greedy: the same prompt, the same answer
    assert first.prompt_tokens == lm.count_tokens(context.prompt) and 0 < first.new_tokens <= lm.max_new_tokens
    whole = lm.count_tokens(build_context("q", hits).prompt)
    budgeted = build_context("q", hits, lm.count_tokens, whole - 5)
    assert lm.count_tokens(budgeted.prompt) <= whole - 5 and budgeted.citations[-1].truncated
    assert lm.identity.startswith("HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF)@sha256:")


def test_prompts_decoded_together_get_the_answers_each_gets_alone_in_their_order(lm, pump):
    _, chunks, _, _ = pump
    rows = [{**r, "cosine_distance": 0.3} for r in chunks.to_dict("records")]
    asked = [("Which way should the inlet valve face?", 0, 3), ("How heavy is the pump?", 1, 1), ("What now?", 2, 2)]
    prompts = [build_context(q, rows[start : start + n]).prompt for q, start, n in asked]
    assert len({lm.count_tokens(p) for p in prompts}) == 3  # lengths differ: the left padding is exercised
    alone = [lm.generate(p) for p in prompts]
    seen = []
    together = lm.generate_many(prompts, batch_size=3, progress=lambda done, total: seen.append((done, total)))
    assert [(g.text, g.prompt_tokens, g.new_tokens) for g in together] == [
        (g.text, g.prompt_tokens, g.new_tokens) for g in alone
    ]
    assert seen == [(3, 3)] and len({g.ms for g in together}) == 1  # one batch: its time shared out


def test_llm_relevance_is_the_log_odds_of_yes_over_no_and_ignores_padding(lm):
    import torch

    reranker = LLMRelevanceReranker(lm)
    query = "What is the capital of France?"
    passages = [
        "Bananas are a yellow fruit.",
        "Paris is the capital and largest city of France, on the river Seine.",
        "The stock market closed lower on Tuesday after a volatile session of trading in technology shares.",
    ]
    scores = reranker.score(query, passages)
    for passage, score in zip(passages, scores):  # one prompt alone, no padding, computed by hand
        ids = torch.tensor([lm.prompt_ids(RELEVANCE_PROMPT.format(passage=passage, query=query))])
        with torch.inference_mode():
            last = lm.model(input_ids=ids).logits[0, -1].log_softmax(-1)
        token = lambda w: lm.tokenizer.encode(w, add_special_tokens=False)[0]  # noqa: E731
        yes = torch.logsumexp(last[[token("yes"), token("Yes")]], 0)
        no = torch.logsumexp(last[[token("no"), token("No")]], 0)
        assert score == pytest.approx(float(yes - no), abs=1e-3)  # batched with right padding: the same
    assert reranker.name == "rerank-llm" and reranker.model == lm.identity and reranker.depth == 10


def test_a_gguf_is_converted_once_into_the_model_cache_with_the_same_tensors_and_tokens(lm):
    """The folder the generator loads from holds exactly what loading the GGUF file gives, so
    the conversion changes neither answers nor identity; a second generator reuses it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm.load_weights()
    assert lm.folder.parent == model_cache() and (lm.folder / "model.safetensors").exists()
    made = (lm.folder / "model.safetensors").stat().st_mtime_ns
    again = LocalLM()
    assert again.folder == lm.folder and again.identity == lm.identity
    assert (again.folder / "model.safetensors").stat().st_mtime_ns == made  # not converted twice

    gguf = {"gguf_file": lm.path.name}
    direct = AutoModelForCausalLM.from_pretrained(str(lm.path.parent), dtype=torch.float32, **gguf)
    ours, theirs = lm.model.state_dict(), direct.state_dict()
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    tokenizer = AutoTokenizer.from_pretrained(str(lm.path.parent), **gguf)
    text = "The Eiffel Tower in Paris was completed in 1889. Où est-elle? [1] 12,5 % — naïve café"
    assert lm.tokenizer(text)["input_ids"] == tokenizer(text)["input_ids"]
    turn = [{"role": "user", "content": text}]
    chat = tokenizer.apply_chat_template(turn, add_generation_prompt=True, tokenize=True, return_dict=True)
    assert lm.prompt_ids(text) == list(chat["input_ids"])
