"""The import map: the core never imports Dagster or the layers above it, and asset modules
never borrow from each other (they share glue modules of defs/ instead)."""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rag_assets"
ASSET_MODULES = {
    "corpus_assets",
    "chunk_assets",
    "index_assets",
    "evaluation_assets",
    "generation_assets",
    "nightly",
    "experiment/assets",
}
DEFS_GLUE = {"automation", "glue", "partitions", "resources", "io_manager"}


def imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def modules(under: Path):
    return [(p.relative_to(PACKAGE).parts, imports(p)) for p in sorted(under.rglob("*.py"))]


def test_no_module_outside_defs_and_the_shell_imports_dagster_or_them():
    core = [(parts, found) for parts, found in modules(PACKAGE) if parts[0] not in ("defs", "app")]
    assert len(core) > 30  # the scan sees the whole core
    offenders = {
        "/".join(parts): sorted(
            i for i in found if i.split(".")[0] == "dagster" or i.startswith(("rag_assets.defs", "rag_assets.app"))
        )
        for parts, found in core
    }
    assert {m: i for m, i in offenders.items() if i} == {}


# The core's floors, lowest first: a module imports from its own floor and those below, never above.
# Beneath them all, the top-level modules (storage, layout, locking, columns, stats) import none of them;
# above them all, settings.py, which checks a command's choices against what every floor offers.
FLOORS = ("ingest", "chunking", "retrieval", "answering", "evaluation", "drafting", "experiment", "settings.py")


def test_no_import_runs_back_up_a_floor():
    upward = {}
    for parts, found in modules(PACKAGE):
        if parts[0] in ("defs", "app"):
            continue
        mine = FLOORS.index(parts[0]) if parts[0] in FLOORS else -1  # a top-level module is below every floor
        above = sorted(i for i in found if i.startswith("rag_assets.") and i.split(".")[1] in FLOORS[mine + 1 :])
        if above:
            upward["/".join(parts)] = above
    assert upward == {}
    packages = {p[0] for p, _ in modules(PACKAGE) if p[0] not in ("defs", "app") and not p[0].endswith(".py")}
    assert packages == set(FLOORS) - {"settings.py"}  # every package of the core has its floor


def test_asset_modules_import_only_glue_from_defs():
    """...and their own domain's modules (defs/experiment/assets.py its sources)."""
    lateral = {}
    for parts, found in modules(PACKAGE / "defs"):
        name = "/".join(parts[1:]).removesuffix(".py")
        if name in ASSET_MODULES:
            own = {parts[1]} if len(parts) > 2 else set()
            borrowed = {i.split(".")[2] for i in found if i.startswith("rag_assets.defs.") and len(i.split(".")) > 2}
            if borrowed - DEFS_GLUE - own:
                lateral[name] = sorted(borrowed - DEFS_GLUE - own)
    assert len(lateral) == 0 and {"experiment/assets", "nightly"} <= {
        "/".join(p[1:]).removesuffix(".py") for p, _ in modules(PACKAGE / "defs")
    }


def test_the_definitions_do_not_import_the_shell():
    assert {
        "/".join(p): sorted(i for i in f if i.startswith("rag_assets.app"))
        for p, f in modules(PACKAGE / "defs")
        if any(i.startswith("rag_assets.app") for i in f)
    } == {}


PRIVATE_DAGSTER = {  # the private names used where Dagster has no public API, each pinned here
    ("app", "instance.py"): {"dagster._core.instance.ref.InstanceRef"},  # an instance with its URL given, not read
    ("app", "serving.py"): {
        "dagster._core.asset_graph_view.asset_graph_view.AssetGraphView",
        "dagster._core.asset_graph_view.asset_graph_view.TemporalContext",
        "dagster._core.definitions.data_version.CachingStaleStatusResolver",
    },
}


def test_private_dagster_apis_are_only_the_pinned_ones_and_still_exist():
    import importlib

    used = {parts: {i for i in found if i.startswith("dagster._")} for parts, found in modules(PACKAGE)}
    used = {parts: names - {n.rsplit(".", 1)[0] for n in names} for parts, names in used.items() if names}
    assert used == PRIVATE_DAGSTER
    for names in PRIVATE_DAGSTER.values():
        for name in names:
            module, attribute = name.rsplit(".", 1)
            assert hasattr(importlib.import_module(module), attribute), name
    from dagster._core.definitions.data_version import DATA_VERSION_TAG

    from rag_assets.defs import external_sources

    assert external_sources.DATA_VERSION_TAG == DATA_VERSION_TAG


def _declared(init: Path) -> list[str]:
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return ast.literal_eval(node.value)
    return []


def test_every_package_names_its_public_modules_and_nothing_outside_reaches_past_them():
    """`__all__` of each package lists its public modules (defs: its builders, loaded lazily); a
    module of one package imports from another only what that one lists."""
    packages = {
        ".".join(("rag_assets", *init.parent.relative_to(PACKAGE).parts)): init for init in PACKAGE.rglob("__init__.py")
    }
    public = {}
    for name, init in packages.items():
        declared = _declared(init)
        assert declared, f"{name} names no public API in __all__"
        present = {p.stem for p in init.parent.glob("*.py")} | {p.name for p in init.parent.iterdir() if p.is_dir()}
        assert set(declared) <= present | {"ASSETS", "COMMANDS", "build_definitions", "build_served_definitions"}, name
        public[name] = set(declared)
    reached = {}
    for parts, found in modules(PACKAGE):
        mine = ".".join(("rag_assets", *parts[:-1]))
        for target in found:
            owner = max((p for p in packages if target.startswith(p + ".")), key=len, default=None)
            if owner and owner != mine and not mine.startswith(owner + "."):
                member = target[len(owner) + 1 :].split(".")[0]
                if member not in public[owner]:
                    reached.setdefault("/".join(parts), set()).add(target)
    assert reached == {}


def test_the_design_notes_map_every_module():
    """docs/design.md's module map names every module of the package, so a reader finds each."""
    design = (PACKAGE.parent / "docs" / "design.md").read_text(encoding="utf-8")
    table = design[design.index("| package | modules | owns |") :].split("\n\n")[0]
    named = set(re.findall(r"`([a-z0-9_/]+)`", table))
    missing = [
        "/".join(parts).removesuffix(".py")
        for parts, _ in modules(PACKAGE)
        if parts[-1] != "__init__.py"
        and parts[-1].removesuffix(".py") not in named
        and "/".join(parts[-2:]).removesuffix(".py") not in named
    ]
    assert missing == []
