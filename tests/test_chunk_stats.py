import json
from pathlib import Path

import pandas as pd

from rag_assets.chunking import diagnostics
from rag_assets.chunking.strategies import STRATEGIES, chunk_corpus
from rag_assets.ingest import corpus
from rag_assets.ingest import ground_truth as gt
from rag_assets.retrieval.embedding import LocalEmbedder


def _truth(snap, needles):
    records = [{"id": f"q{i}", "phrasings": ["?"], "needle": n, "kind": "answerable"} for i, n in enumerate(needles)]
    truth, rejects = gt.validate(records, snap)
    assert rejects.empty
    return truth


def test_blind_cut_destroys_a_needle_that_overlap_and_boundaries_keep(tmp_path):
    docs = tmp_path / "documents"
    docs.mkdir()
    filler = "Filler words go here. " * 22  # 484 characters, so the needle crosses offset 512
    text = f"# Doc\n\n{filler}The secret code of the vault is 4711.\n\nAnother paragraph."
    (docs / "doc.md").write_text(text, encoding="utf-8")
    snap = corpus.snapshot(docs)
    needle = "The secret code of the vault is 4711."
    start = text.index(needle)
    assert start < 512 < start + len(needle) and 512 - start < 64
    truth = _truth(snap, [needle, "Another paragraph."])
    stats = {s: diagnostics.chunk_set_stats(chunk_corpus(snap, STRATEGIES[s]), truth) for s in "ABC"}
    assert stats["A"]["destroyed_question_ids"] == ["q0"]
    assert stats["B"]["answers_destroyed"] == 0  # the 64-character tail carries the needle's head
    assert stats["B"]["answers_not_citable"] == 1  # ... but no chunk's own content holds it whole
    assert stats["C"]["answers_destroyed"] == stats["C"]["answers_not_citable"] == 0
    assert stats["A"]["answerable_questions"] == 2


def model_with_window(tmp_path, window: int) -> Path:
    """The packaged model's files, linked, with another max_seq_length."""
    packaged, folder = LocalEmbedder().path, tmp_path / f"model-{window}"
    for f in packaged.rglob("*"):
        if f.is_file() and f.name != "sentence_bert_config.json":
            (folder / f.relative_to(packaged)).parent.mkdir(parents=True, exist_ok=True)
            (folder / f.relative_to(packaged)).symlink_to(f)
    config = json.loads((packaged / "sentence_bert_config.json").read_text())
    (folder / "sentence_bert_config.json").write_text(json.dumps({**config, "max_seq_length": window}))
    return folder


def test_header_share_and_encoder_window_are_the_configured_models(tmp_path):
    docs = tmp_path / "documents"
    docs.mkdir()
    long_sentence = " ".join(["tokenisation"] * 300) + "."
    medium = " ".join(["pump"] * 150) + "."
    (docs / "d.md").write_text(
        f"# Long document title\n\n## Section\n\nShort one.\n\n{medium}\n\n{long_sentence}", encoding="utf-8"
    )
    chunks = chunk_corpus(corpus.snapshot(docs), STRATEGIES["E"])
    default = LocalEmbedder()
    stats = diagnostics.token_stats(chunks, default)
    per_chunk = default.count_tokens(chunks["text"].tolist())
    assert default.window == stats["encoder_window"] == 256
    assert stats["over_window"] == int((per_chunk > 256).sum()) == 1
    assert stats["max_tokens"] > 600  # "tokenisation" is several word-pieces
    header = default.count_tokens(["[Long document title > Section]"], special_tokens=False)[0]
    assert stats["header_tokens"] == header * len(chunks)
    assert stats["header_share"] == stats["header_tokens"] / stats["embedded_tokens"]
    assert default.count_tokens(["hello world"]).tolist() == [4]  # [CLS] hello world [SEP]
    short = diagnostics.token_stats(chunks, LocalEmbedder(model_with_window(tmp_path, 128)))
    assert short["encoder_window"] == 128 and short["over_window"] == int((per_chunk > 128).sum()) == 2


def test_destroyed_questions_ignores_other_kinds():
    chunks = pd.DataFrame(
        {"chunk_id": ["d::C-0000"], "document_id": ["d"], "text": ["alpha beta"], "content": ["alpha beta"]}
    )
    truth = pd.DataFrame(
        {
            "question_id": ["a", "b", "u"],
            "kind": ["answerable", "answerable", "unanswerable"],
            "needle": ["alpha beta", "gamma", None],
            "document_id": ["d", "d", None],
        }
    )
    assert diagnostics.destroyed_questions(chunks, truth) == ["b"]
