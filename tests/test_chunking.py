"""Chunkers on arbitrary text: offsets are data, and the rules of docs/design.md §5 hold."""

import json
import re
from collections import defaultdict

from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_assets.chunking.strategies import STRATEGIES, chunk_document
from rag_assets.ingest.corpus import headings

BOUNDARY = [s for s in STRATEGIES.values() if s.cut == "boundaries"]

word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzéß0123456789", min_size=1, max_size=12)
sentence = st.builds(
    lambda ws, end: " ".join(ws) + end,
    st.lists(word, min_size=1, max_size=30),
    st.sampled_from([".", "!", "?", "", "..."]),
)
paragraph = st.builds(" ".join, st.lists(sentence, min_size=1, max_size=12))
heading = st.builds(
    lambda level, ws: f"{level} {' '.join(ws)}",
    st.sampled_from(["#", "##", "###"]),
    st.lists(word, min_size=1, max_size=4),
)
markdown = st.builds(
    lambda blocks, seps: "".join(b + s for b, s in zip(blocks, seps)).strip() or "x",
    st.lists(st.one_of(paragraph, paragraph, heading), min_size=1, max_size=25),
    st.lists(st.sampled_from(["\n\n", "\n\n", "\n", "\n\n\n", " \n\n"]), min_size=25, max_size=25),
)
anything = st.text(alphabet=st.sampled_from(list("ab .!?\n\n#é😀\t")), min_size=1, max_size=3000)
any_text = st.one_of(markdown, anything)


@settings(max_examples=150, deadline=None)
@given(any_text)
def test_every_strategy_slices_back_and_embeds_its_content(text):
    for strategy in STRATEGIES.values():
        chunks = chunk_document("doc-1", "Title", text, strategy)
        for c in chunks:
            assert text[c.start : c.end] == c.content
            assert c.content.strip() or strategy.cut == "blind"  # blind cuts look at nothing
            assert c.text.endswith(c.content)
            marks = headings(text)
            opens_with_title = bool(marks) and marks[0].level == 1 and not text[: marks[0].start].strip()
            titled = strategy.cut == "document" and opens_with_title
            assert c.text == c.header + c.overlap + (f"Title\n{c.content}" if titled else c.content)
        assert [c.position for c in chunks] == list(range(len(chunks)))
        assert len({c.chunk_id for c in chunks}) == len(chunks)
        assert [c.start for c in chunks] == sorted(c.start for c in chunks)


@settings(max_examples=150, deadline=None)
@given(any_text)
def test_same_input_gives_same_chunks_and_ids(text):
    for strategy in STRATEGIES.values():
        assert chunk_document("d", "T", text, strategy) == chunk_document("d", "T", text, strategy)


@settings(max_examples=150, deadline=None)
@given(any_text)
def test_blind_chunks_tile_the_document(text):
    for strategy in (STRATEGIES["A"], STRATEGIES["B"]):
        chunks = chunk_document("d", "T", text, strategy)
        starts = [c.start for c in chunks]
        assert starts == list(range(0, len(text), 512))[: len(chunks)]
        assert all(c.end == n.start for c, n in zip(chunks, chunks[1:]))
        assert chunks[-1].end == len(text)
        assert all(len(c.content) <= 512 for c in chunks)


@settings(max_examples=150, deadline=None)
@given(any_text)
def test_blind_overlap_is_the_previous_64_characters(text):
    chunks = chunk_document("d", "T", text, STRATEGIES["B"])
    for c in chunks:
        assert c.text == text[max(0, c.start - 64) : c.end]


@settings(max_examples=200, deadline=None)
@given(markdown)
def test_boundary_chunks_never_split_a_paragraph_that_fits(text):
    heading_lines = [(h.start, h.end) for h in headings(text)]
    for strategy in BOUNDARY:
        chunks = chunk_document("d", "T", text, strategy)
        for m in re.finditer(r"[^\n](?:[^\n]|\n(?!\n))*", text):
            raw = m.group(0)
            start = m.start() + len(raw) - len(raw.lstrip())
            end = m.start() + len(raw.rstrip())
            if end <= start or end - start > strategy.target:
                continue
            if any(a < end and start < b for a, b in heading_lines):
                continue  # a heading line splits this block into sections by design
            assert any(c.start <= start and end <= c.end for c in chunks), (strategy.id, text[start:end])


@settings(max_examples=150, deadline=None)
@given(markdown)
def test_boundary_chunks_exceed_the_budget_only_for_one_long_sentence(text):
    for strategy in BOUNDARY:
        for c in chunk_document("d", "T", text, strategy):
            if len(c.content) > strategy.target:
                sentences = [m for m in re.finditer(r"[^.!?]*[.!?]*\s*", c.content) if m.group(0)]
                assert "\n\n" not in c.content and len(sentences) == 1, (strategy.id, c.content)


@settings(max_examples=150, deadline=None)
@given(any_text)
def test_word_window_contents_tile_the_word_stream(text):
    chunks = chunk_document("d", "T", text, STRATEGIES["W"])
    words = text.split()
    assert [w for c in chunks for w in c.content.split()] == words
    for c in chunks:
        assert c.word_start == 40 * c.position
        assert c.word_count == min(45, len(words) - c.word_start)
        assert c.text.split() == words[c.word_start : c.word_start + c.word_count]


def test_header_strategies_prefix_title_and_section():
    text = "# Manual\n\nIntro text here.\n\n## Setup\n\nFirst step. Second step.\n\n## Care\n\nClean it weekly."
    e = chunk_document("m", "Manual", text, STRATEGIES["E"])
    assert [(c.section, c.text) for c in e] == [
        ("", "[Manual]\nIntro text here."),
        ("Setup", "[Manual > Setup]\nFirst step. Second step."),
        ("Care", "[Manual > Care]\nClean it weekly."),
    ]
    f = chunk_document("m", "Manual", text, STRATEGIES["F"])
    # the overlap tail crosses the heading with a newline, never with the heading itself
    assert f[1].text == "[Manual > Setup]\nIntro text here.\nFirst step. Second step."
    assert f[2].text == "[Manual > Care]\nFirst step. Second step.\nClean it weekly."
    c = chunk_document("m", "Manual", text, STRATEGIES["C"])
    assert [x.content for x in c] == ["Intro text here.", "First step. Second step.", "Clean it weekly."]
    assert all(x.header == "" for x in c)


def test_boundaries_pack_paragraphs_and_cut_long_ones_at_sentences():
    p1, p2 = "a" * 200 + ".", "b" * 250 + "."
    long = " ".join([f"Sentence number {i:03d} is here." for i in range(30)])  # ~870 chars
    text = f"{p1}\n\n{p2}\n\n{long}"
    chunks = chunk_document("d", "T", text, STRATEGIES["C"])
    assert chunks[0].content == f"{p1}\n\n{p2}"  # 453 characters: both paragraphs fit together
    rest = chunks[1:]
    assert len(rest) == 2 and all(len(c.content) <= 512 for c in rest)
    assert " ".join(c.content for c in rest) == long
    assert rest[0].content.endswith("is here.") and rest[1].content.startswith("Sentence number")


def _ragbench_rows():
    rows = []
    for line in (FIXTURES / "ragbench_v1_word_windows.txt").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (\{.*\}) \| \|$", line)
        if m:
            rows.append(json.loads(m.group(1)))
    return rows


def test_word_windows_reproduce_the_ragbench_v1_seed():
    """The seed lists 45-word windows at stride 40; rebuild each document and re-chunk it."""
    by_doc = defaultdict(list)
    for row in _ragbench_rows():
        by_doc[row["doc_id"]].append(row)
    assert len(by_doc) >= 10
    for doc_id, rows in by_doc.items():
        words = []
        for row in rows:
            words[row["metadata"]["word_start"] :] = row["text"].split()
        chunks = chunk_document(doc_id, "", " ".join(words), STRATEGIES["W"])
        assert [(c.chunk_id, c.position, c.word_start, c.word_count, c.text) for c in chunks] == [
            (r["chunk_id"], r["position"], r["metadata"]["word_start"], r["metadata"]["word_count"], r["text"])
            for r in rows
        ]
