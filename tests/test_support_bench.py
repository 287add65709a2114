"""The benches that measure the support check know nothing of it: they import check_support from
rag_assets.answering.support and nothing else of it (their rewrites, word lists and realistic
sentences are their own), so a figure they print is not the check's word list measured against
itself."""

import ast

import pytest

from rag_assets.catalog import PROJECT_ROOT


@pytest.mark.parametrize("bench", ["support_check.py", "support_realistic.py"])
def test_a_bench_of_the_check_imports_only_check_support_from_it(bench):
    tree = ast.parse((PROJECT_ROOT / "bench" / bench).read_text(encoding="utf-8"))
    taken = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "rag_assets.answering.support":
            taken |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "rag_assets.answering":
            taken |= {a.name for a in node.names if a.name == "support"}
        elif isinstance(node, ast.Import):
            taken |= {a.name for a in node.names if a.name.startswith("rag_assets.answering.support")}
    assert taken == {"check_support"}


def test_the_realistic_sets_say_what_each_sentence_is_and_why():
    import json

    data = PROJECT_ROOT / "bench" / "data"
    sources = json.loads((data / "support_realistic_sources.json").read_text(encoding="utf-8"))
    by_language: dict[str, list] = {}
    for path in sorted(data.glob("support_realistic_*.jsonl")):  # `en` and `en_unseen` are one language
        language = path.stem.split("_")[2]
        by_language.setdefault(language, []).extend(
            json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
        )
    assert sorted(by_language) == ["bg", "de", "el", "en", "ru"]
    for language, cases in by_language.items():
        labels = [c["label"] for c in cases]
        assert labels.count("supported") >= 30 and labels.count("unsupported") >= 30, language
        assert len({c["id"] for c in cases}) == len(cases)
        for c in cases:
            assert c["source"] in sources and c["kind"] and c["reason"] and c["question"], c["id"]
            assert sources[c["source"]]["language"] == language, c["id"]
