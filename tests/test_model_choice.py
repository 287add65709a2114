"""The embedding model follows the corpus's language when none is named: an English corpus keeps
the English default, a Russian one gets the multilingual model, a mixed one both (the
multilingual one serving); a model named is kept, and warned about when it cannot read the corpus."""

import contextlib
import io
import json

import pytest
from conftest import TINY_DOCS, write_dataset

from rag_assets.app.cli import main
from rag_assets.ingest import corpus
from rag_assets.retrieval.model_choice import answerers_for, choose, corpus_languages, coverage_warning

RUSSIAN = {
    "nasos.md": (
        "# Насосная станция\n\n"
        "Насосная станция подаёт воду в три района города. Её построили в тысяча девятьсот "
        "шестьдесят втором году на левом берегу реки.\n\n"
        "## Обслуживание\n\n"
        "Фильтры меняют каждые две недели. Впускной клапан должен смотреть на север, иначе "
        "насос перегревается летом.\n"
    ),
    "sklad.md": (
        "# Склад запчастей\n\n"
        "На складе хранят запасные подшипники, прокладки и два резервных двигателя. Ключи от склада "
        "выдаёт дежурный инженер под подпись.\n"
    ),
}
RUSSIAN_QUESTIONS = [
    {
        "id": "ru-1",
        "phrasings": ["Как часто меняют фильтры?"],
        "needle": "Фильтры меняют каждые две недели.",
        "kind": "answerable",
        "answers": ["каждые две недели"],
    },
    {
        "id": "ru-2",
        "phrasings": ["Кто выдаёт ключи от склада?"],
        "needle": "Ключи от склада выдаёт дежурный инженер под подпись.",
        "kind": "answerable",
        "answers": ["дежурный инженер"],
    },
]


def _shares(tmp_path, docs):
    return corpus_languages(corpus.snapshot(write_dataset(tmp_path, docs, []) / "documents"))


def test_english_keeps_the_english_default_russian_gets_the_multilingual_model_mixed_both(tmp_path):
    english = choose(_shares(tmp_path / "en", TINY_DOCS))
    russian = choose(_shares(tmp_path / "ru", RUSSIAN))
    mixed = choose(_shares(tmp_path / "mixed", {**RUSSIAN, **{k: v for k, v in TINY_DOCS.items() if k != "broken.md"}}))
    assert english.models == "minilm" and "English 100%" in english.reason
    assert russian.models == "me5-small-int8" and "Russian 100%" in russian.reason
    assert mixed.models == "me5-small-int8,minilm" and "Russian" in mixed.reason and "English" in mixed.reason


def test_a_model_that_cannot_read_the_corpus_is_warned_about_with_what_it_costs(tmp_path):
    shares = _shares(tmp_path, RUSSIAN)
    line = coverage_warning("minilm", shares, {"E": (3, 4)})
    assert "minilm was trained on English only and 100% of this corpus" in line
    assert "3 of 4 chunks of strategy E exceed its window" in line
    assert coverage_warning("me5-small-int8", shares) is None
    assert coverage_warning("minilm", _shares(tmp_path / "en", TINY_DOCS)) is None


def test_the_shares_decide_at_the_bounds_written_in_the_readme():
    assert choose({"en": 0.9, "de": 0.1}).models == "minilm"
    assert choose({"en": 0.89, "de": 0.11}).models == "me5-small-int8,minilm"
    assert choose({"bg": 0.9, "en": 0.1}).models == "me5-small-int8"
    assert choose({}).models == "minilm"  # no text: nothing to choose for


def test_languages_are_weighed_by_characters_not_documents(tmp_path):
    docs = {f"n{i}.md": f"# Note {i}\n\nThe pump is on.\n" for i in range(3)}
    docs["long.md"] = RUSSIAN["nasos.md"] * 6
    shares = _shares(tmp_path, docs)
    assert max(shares, key=shares.get) == "ru" and choose(shares).models == "me5-small-int8"


def test_the_packaged_generator_answers_only_a_corpus_it_can_write_in(tmp_path):
    """SmolLM2 writes English: on a Russian corpus the extractive answerer answers alone, and the
    line says why; a generator the user brings, or an English corpus, keeps both."""
    russian, english = _shares(tmp_path / "ru", RUSSIAN), _shares(tmp_path / "en", TINY_DOCS)
    kept, why = answerers_for(["generate", "extractive"], True, russian)
    assert kept == ["extractive"] and "writes English only and 100% of this corpus" in why and "Russian" in why
    assert answerers_for(["generate", "extractive"], False, russian) == (["generate", "extractive"], "")
    assert answerers_for(["generate", "extractive"], True, english) == (["generate", "extractive"], "")


@pytest.fixture(scope="module")
def russian_run(tmp_path_factory):
    """A Russian dataset run with no model named: (dataset, data dir, what the run printed)."""
    root = tmp_path_factory.mktemp("russian")
    dataset, data = write_dataset(root / "dataset", RUSSIAN, RUSSIAN_QUESTIONS), root / "data"
    capture = io.StringIO()
    with contextlib.redirect_stdout(capture):
        rc = main(["run", "--dataset", str(dataset), "--data-dir", str(data), "--strategies", "E", "--no-llm"])
    assert rc == 0, capture.getvalue()[-2000:]
    return dataset, data, capture.getvalue()


def test_run_on_a_russian_corpus_embeds_with_the_multilingual_model_and_ask_says_why(russian_run, capsys):
    _, data, out = russian_run
    assert "embedding models: me5-small-int8 (the corpus is Russian 100%" in out
    assert "partition me5-small-int8|E: embeddings" in out and "minilm|E" not in out
    assert "warning: minilm" not in out  # a model chosen for the corpus is not warned about
    assert "Russian          2" in out  # R@4 by language closes the run
    assert json.loads((data / "models.json").read_text())["models"] == "me5-small-int8"
    assert main(["ask", "Как часто меняют фильтры?", "--data-dir", str(data), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["embedding_model"]["model"] == "me5-small-int8"
    assert "as the last run: the corpus is Russian 100%" in answer["embedding_model"]["chosen"]
    assert "calibrated on XQuAD en+de" in answer["embedding_model"]["threshold_source"]
    assert "каждые две недели" in answer["answer"]


def test_a_model_named_is_kept_and_warned_about_with_its_chunks_over_the_window(russian_run, capsys):
    dataset, data, _ = russian_run
    args = ["run", "--dataset", str(dataset), "--data-dir", str(data), "--strategies", "E", "--no-llm"]
    assert main([*args, "--models", "minilm"]) == 0
    captured = capsys.readouterr()
    assert "embedding models: minilm (named by --models)" in captured.out
    assert "partition minilm|E: embeddings" in captured.out and "partition me5-small-int8" not in captured.out
    assert "warning: minilm was trained on English only and 100% of this corpus" in captured.err
    summary_warning = [line for line in captured.out.splitlines() if line.startswith("warning: minilm was")]
    assert summary_warning and "chunks of strategy E exceed its window" in summary_warning[0]
    assert main(["ask", "Как часто меняют фильтры?", "--data-dir", str(data), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)  # ask follows the last run
    assert answer["embedding_model"] == {
        "model": "minilm",
        "chosen": "as the last run: named by --models",
        "threshold_source": answer["embedding_model"]["threshold_source"],
    }


def test_a_models_record_that_cannot_be_read_is_refused_in_one_line(russian_run, capsys):
    _, data, _ = russian_run
    record = data / "models.json"
    kept = record.read_text()
    try:
        for bad in ('{"models": ["minilm"], "reason": "x"}', '{"models": "minilm", "reason": "' + "x" * 70_000 + '"}'):
            record.write_text(bad)
            assert main(["ask", "Кто выдаёт ключи?", "--data-dir", str(data)]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and "models.json cannot be read" in err[0], err
    finally:
        record.write_text(kept)
