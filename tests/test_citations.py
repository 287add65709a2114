"""Citations point at the exact text they quote; numbers that point nowhere are caught."""

import pytest

from rag_assets.answering.citations import MAX_CHARS_PER_TOKEN, build_context, check_citations, fragment_range
from rag_assets.catalog import BUNDLED_DATASET
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus


def _hits(strategy: str, n: int = 4):
    snap = corpus.snapshot(BUNDLED_DATASET / "documents")
    chunks = chunk_corpus(snap, STRATEGIES[strategy]).merge(snap[["document_id", "title"]], on="document_id")
    picked = chunks.iloc[[5, 77, 300, 640][:n]]
    return snap, [{**r, "cosine_distance": 0.5 + i / 10} for i, r in enumerate(picked.to_dict("records"))]


def test_fragments_slice_exactly_the_quoted_content_and_never_the_header():
    snap, hits = _hits("F")  # header and overlap: `text` differs from the document, `content` does not
    texts = dict(zip(snap["document_id"], snap["text"]))
    context = build_context("What is oxygen?", hits)
    for c, h in zip(context.citations, hits):
        start, end = fragment_range(c.fragment)
        assert texts[c.document_id][start:end] == c.quote == h["content"]
        assert c.quote != h["text"] and not c.quote.startswith("[")
        assert c.locator_label == (f"{h['title']} > {h['section']}" if h["section"] else h["title"])
    assert [c.index for c in context.citations] == [1, 2, 3, 4]
    assert context.prompt.startswith("Answer the question in one short sentence using ONLY the numbered sources below.")
    assert f"[2] {hits[1]['title']} - {context.citations[1].locator_label}\n{hits[1]['content']}" in context.prompt
    assert context.prompt.endswith("QUESTION\nWhat is oxygen?")


def test_numbers_that_point_nowhere_are_reported_not_shown():
    _, hits = _hits("C", 2)
    citations = build_context("q", hits).citations
    used, dangling = check_citations("Oxygen is an element [2][1]. See also [7] and [2] and [0].", citations)
    assert [c.index for c in used] == [2, 1]
    assert dangling == [7, 0]
    assert check_citations("No sources cited.", citations) == ([], [])


def test_input_budget_keeps_whole_chunks_then_cuts_one_at_a_word_and_omits_the_rest():
    snap, hits = _hits("C")
    texts = dict(zip(snap["document_id"], snap["text"]))
    words = lambda prompt: len(prompt.split())  # noqa: E731 - a tokenizer stand-in: one token per word
    base = words(build_context("What is oxygen?", []).prompt)
    sizes = [words(f"[{i}] {h['title']} - x\n{h['content']}") for i, h in enumerate(hits, start=1)]
    budget = base + sizes[0] + sizes[1] + sizes[2] // 2
    context = build_context("What is oxygen?", hits, words, budget)
    assert words(context.prompt) <= budget
    assert [c.truncated for c in context.citations] == [False, False, True]
    cut = context.citations[2]
    assert hits[2]["content"].startswith(cut.quote) and len(cut.quote) < len(hits[2]["content"])
    assert cut.quote == cut.quote.rstrip() and hits[2]["content"][len(cut.quote)].isspace()  # cut between words
    start, end = fragment_range(cut.fragment)
    assert texts[cut.document_id][start:end] == cut.quote
    assert context.omitted == [hits[3]["chunk_id"]]
    assert build_context("What is oxygen?", hits, words, 10**6).omitted == []
    # a budget the first chunk cannot start in: nothing but the question; the question alone over budget: an error
    assert build_context("What is oxygen?", hits, words, base).citations == []
    with pytest.raises(ValueError, match="question alone exceeds"):
        build_context("What is oxygen?", hits, words, base - 1)


def test_a_whole_document_as_one_chunk_costs_what_the_budget_allows_not_its_length():
    snap, [hit] = _hits("C", 1)
    long_text = " ".join(snap["text"]) * 20  # a few megabytes in one chunk
    hit = {**hit, "content": long_text, "end": hit["start"] + len(long_text)}
    seen = []

    def words(prompt):
        seen.append(len(prompt))
        return len(prompt.split())

    budget = 300
    context = build_context("What is oxygen?", [hit], words, budget)
    [cut] = context.citations
    assert len(long_text) > 10**6 and cut.truncated and words(context.prompt) <= budget
    assert long_text.startswith(cut.quote) and long_text[len(cut.quote)].isspace()
    assert max(seen) < budget * MAX_CHARS_PER_TOKEN + 1000 and len(seen) < 40  # never the whole document
    # the longest prefix that fits: one more word would not
    following = long_text[len(cut.quote) :].split()[0]
    one_more = build_context("What is oxygen?", [{**hit, "content": cut.quote + " " + following}], words, 10**6)
    assert words(one_more.prompt) > budget
