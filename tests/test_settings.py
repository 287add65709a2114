"""Settings whole: every choice a command makes typed and checked in `Settings`, the environment read
in one module, the parser built without the core, names held to the modules that implement them,
and `ask` and `serve` building their answerer from the same values."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from rag_assets import catalog
from rag_assets.settings import Settings, SettingsError

PACKAGE = Path(__file__).resolve().parent.parent / "rag_assets"


@pytest.mark.parametrize(
    "given,words",
    [
        ({"threshold": 3.0}, "between 0 and 2"),
        ({"threshold": float("nan")}, "between 0 and 2"),
        ({"input_budget": 0}, "input_budget is a whole number of at least 1"),
        ({"llm_rerank_depth": True}, "llm_rerank_depth is a whole number"),
        ({"serving_strategy": "Z"}, "the serving strategy is one of"),
        ({"retriever": "magic"}, "the retriever is one of"),
        ({"models": "bge"}, "unknown embedding model bge"),
        ({"draft_questions": 10**9}, "a drafted set asks about 1 to"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_when_made(given, words):
    with pytest.raises(SettingsError, match=words):
        Settings(**given)


def test_building_the_parser_loads_no_core_library():
    heavy = ("pandas", "numpy", "scipy", "bm25s", "dagster", "torch", "pydantic")
    code = (
        "import sys; from rag_assets.app import cli; cli.parser(); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules)); "
        "print(sorted(m for m in sys.modules if m.startswith('rag_assets.') and not m.startswith('rag_assets.app')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, ours = done.stdout.splitlines()
    assert heavy == "[]"
    assert ours == "['rag_assets.catalog', 'rag_assets.environment', 'rag_assets.settings']"


def _reads_the_environment(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv"):
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                return True
    return False


def test_the_environment_is_read_in_one_module():
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if _reads_the_environment(p))
    assert readers == ["environment.py"]


def test_the_names_a_user_chooses_are_the_ones_the_code_implements():
    from rag_assets.answering.answerer import Answerer
    from rag_assets.chunking.strategies import STRATEGIES
    from rag_assets.retrieval import lexical, packaged

    assert tuple(STRATEGIES) == catalog.STRATEGIES
    assert set(catalog.ANALYZERS) == {*lexical.FORCED, lexical.PER_LANGUAGE}
    assert packaged.PACKAGED is catalog.PACKAGED
    assert set(catalog.SERVING_FALLBACK) == set(catalog.STRATEGIES)
    assert Answerer.__init__.__defaults__[0] == catalog.DEFAULT_RETRIEVER


def test_ask_and_serve_build_the_same_answerer_from_the_same_settings(monkeypatch, pump):
    """Both go through serving.answerer with the command's Settings: the values each answerer is
    built with are the settings', not defaults of their own (serve once left out the LLM
    reranker's depth)."""
    from conftest import ScriptedLM

    from rag_assets.app import serving
    from rag_assets.app.service import Loaded, Service, ServiceSettings

    snap, chunks, index, embedder = pump
    settings = Settings(threshold=0.7, input_budget=900, llm_rerank_depth=3, retriever="rerank-llm")
    seen = []
    real = serving.answerer
    monkeypatch.setattr(serving, "answerer", lambda *a, **k: seen.append((a, k)) or real(*a, **k))

    class Served:
        pass

    served = Served()
    served.settings = settings
    service = Service(served, embedder, ScriptedLM(), ServiceSettings(), ["extractive"])
    from_serve = service.answerer(Loaded("E", (1,), index, chunks), "extractive", settings.retriever)
    from_ask = serving.answerer(settings, index, chunks, embedder, ScriptedLM(), "extractive", settings.retriever)
    assert seen[0][0][0] is settings  # serve's answerer was built from the service's settings
    for built in (from_serve, from_ask):
        assert built.threshold == 0.7 and built.retriever == "rerank-llm"
        assert [r.depth for r in built.rerankers] == [3]
    # and no other way in: outside the lab's evaluation, only serving.answerer builds an answerer
    builders = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if any(isinstance(n, ast.Name) and n.id == "build_answerer" for n in ast.walk(ast.parse(p.read_text())))
        and p.name != "answerer.py"
    )
    assert builders == ["app/serving.py", "evaluation/answer_eval.py"]
