"""The Dagster UI as a user meets it, in a real browser: Debian's Chromium driven by Playwright,
against `rag-assets ui` on a data dir materialised from a small corpus. The UI runs in its own
process group, started with SIGINT ignored as a shell's `&` does, and must stop whole on SIGINT.

Screenshots of each page are written to test-artifacts/browser/ when a check fails."""

import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import write_dataset
from servers import CLI, running_ui

from rag_assets.defs import ASSETS as DEFINED

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "browser"
ASSETS = [a.key.to_user_string() for a in DEFINED]  # every asset of the graph, in graph order
CHAIN = [
    "corpus_files",
    "corpus_snapshot",
    "chunk_sets",
    "embeddings",
    "retrieval_runs",
    "query_hits",
    "evaluation_tables",
    "significance_report",
]

EXPERIMENT = (
    "chunkers:\n  C: C\n  b256: {cut: boundaries, size: 256}\nembedders: [minilm]\nretrievers: [hybrid, bm25]\n"
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui")
    dataset = write_dataset(root / "dataset")
    env = {**os.environ, "DAGSTER_HOME": "", "RAG_ASSETS_DATA_DIR": "", "RAG_ASSETS_DATASET": ""}
    common = ["--dataset", str(dataset), "--data-dir", str(root / "data")]
    built = subprocess.run([*CLI, "run", *common, "--no-llm"], env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    (dataset / "experiment.yaml").write_text(EXPERIMENT)
    built = subprocess.run([*CLI, "run", *common, "--experiment"], env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    with running_ui(common, env) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    yield page
    page.close()


@contextmanager
def looking_at(page, name: str):
    """Run the checks of one page; on failure keep its screenshot."""
    try:
        yield
        for problem in ("Something went wrong", "Traceback (most recent call last)", "DagsterUserCodeLoadError"):
            assert problem not in page.inner_text("body"), f"{name}: the page shows {problem!r}"
    except BaseException:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        raise


def visit(page, url: str, ready: str) -> None:
    """Open `url` and wait until the page shows `ready` and nothing is loading any more (the UI
    renders in stages: a page can be free of 'Loading' before it starts loading its lists)."""
    page.goto(url, wait_until="networkidle")
    page.wait_for_function(
        "(ready) => document.body.innerText.includes(ready) && !document.body.innerText.includes('Loading')",
        arg=ready,
        timeout=60_000,
    )


def test_the_asset_list_shows_everything_materialised_and_nothing_stale(ui, page):
    page.set_viewport_size({"width": 1280, "height": 2400})  # the list only renders the rows it shows
    with looking_at(page, "assets"):
        visit(page, ui + "/assets", "regression_report")
        page.get_by_text("significance_report", exact=True).first.wait_for()
        page.wait_for_function("() => !document.body.innerText.includes('Loading')", timeout=60_000)  # each status
        rows = page.evaluate("""() => Object.fromEntries(
          [...document.querySelectorAll('a[href^="/assets/"]')].map(a => {
            let row = a;  // climb from the asset's link to the row that also holds its group and status
            while (row.parentElement && !row.innerText.includes('rag_assets')) row = row.parentElement;
            return [a.getAttribute('href').slice('/assets/'.length), row.innerText];
        }))""")
        for asset in ASSETS:
            row = rows[asset]
            if asset in ("embeddings", "hnsw_index"):  # model x strategy: the default model's 8 materialised,
                assert row.split("\n")[-5:] == ["8", "32", "0", "0", "40 partitions"], (asset, row)  # 4 models' not
                continue
            assert "Materialized" in row or row.count("All") == 1 and "8 partitions" in row, (asset, row)
        text = page.inner_text("body")
        for word in ("Stale", "Unsynced", "Never materialized", "Missing"):
            assert word not in text, word
        assert not page.errors, page.errors


def graph_labels(page) -> set[str]:
    """Names drawn right of the asset-group sidebar: the graph's nodes, whole even when the UI shortens them."""
    return set(
        page.evaluate("""() => {
        let sidebar = document.querySelector('input[placeholder="Jump to…"]');
        while (sidebar.getBoundingClientRect().height < window.innerHeight / 2) sidebar = sidebar.parentElement;
        const edge = sidebar.getBoundingClientRect().right;
        return [...document.querySelectorAll('*')].filter(e => e.children.length === 0 && e.textContent.trim()
            && e.getBoundingClientRect().left >= edge).map(e => e.textContent.trim());
    }""")
    )


def drawn(name: str, labels: set[str]) -> bool:
    return name in labels or any(
        "…" in t and name.startswith(t.split("…")[0]) and name.endswith(t.split("…")[1]) for t in labels
    )


def test_the_global_lineage_expanded_shows_the_chain_from_the_sources_to_the_report(ui, page):
    with looking_at(page, "lineage"):
        visit(page, ui + "/asset-groups", "evaluation")
        page.wait_for_selector('input[placeholder="Jump to…"]')
        assert not any(drawn(asset, graph_labels(page)) for asset in CHAIN)  # groups start collapsed
        page.keyboard.press("Alt+e")  # the graph's own shortcut for "Expand all groups"
        deadline = time.monotonic() + 30
        labels = graph_labels(page)
        while [a for a in CHAIN + ASSETS if not drawn(a, labels)] and time.monotonic() < deadline:
            page.wait_for_timeout(200)  # polled until drawn (or the deadline), not a fixed wait
            labels = graph_labels(page)
        assert [asset for asset in CHAIN + ASSETS if not drawn(asset, labels)] == [], labels
        assert not page.errors, page.errors


def wait_for_tables_and_plots(page) -> None:
    """Until the open dialog has rendered two tables or more and every plot in it has loaded."""
    page.wait_for_function(
        """() => { const d = document.querySelector('[role=dialog]'); if (!d) return false;
            const images = [...d.querySelectorAll('img')];
            return d.querySelectorAll('table').length >= 2 && images.length > 0
                && images.every(i => i.complete && i.naturalWidth > 0); }""",
        timeout=30_000,
    )


def test_the_report_renders_with_its_tables_and_a_plot_that_fits_the_dialog(ui, page):
    with looking_at(page, "significance_report"):
        visit(page, ui + "/assets/significance_report", "[Show Markdown]")
        assert "report, recall table, sign tests and plot" in page.inner_text("body")  # the asset says where
        page.get_by_text("[Show Markdown]", exact=True).first.click()
        dialog = page.get_by_role("dialog")
        dialog.wait_for()
        wait_for_tables_and_plots(page)
        found = page.evaluate("""() => {
            const d = document.querySelector('[role=dialog]'), box = d.getBoundingClientRect();
            return {headings: [...d.querySelectorAll('h1,h2')].map(h => h.textContent),
                    tables: [...d.querySelectorAll('table')].map(t => t.querySelector('th').textContent),
                    images: [...d.querySelectorAll('img')].map(i => ({natural: i.naturalWidth,
                        inside: i.getBoundingClientRect().left >= box.left
                            && i.getBoundingClientRect().right <= box.right}))};
        }""")
        assert found["headings"][0] == "Retrieval evaluation and significance"
        assert "Recall@k with 95 % intervals, by question" in found["headings"]
        assert found["tables"] == ["strategy", "comparison"]  # the recall table and the sign-test table
        assert len(found["images"]) == 1 and found["images"][0]["natural"] > 0 and found["images"][0]["inside"], found
        assert not page.errors, page.errors


def test_the_experiment_leaderboard_renders_its_tables_and_frontier_plot_in_the_dialog(ui, page):
    with looking_at(page, "experiment_leaderboard"):
        visit(page, ui + "/assets/experiment_leaderboard", "[Show Markdown]")
        page.get_by_text("[Show Markdown]", exact=True).first.click()
        page.get_by_role("dialog").wait_for()
        wait_for_tables_and_plots(page)
        found = page.evaluate("""() => {
            const d = document.querySelector('[role=dialog]'), box = d.getBoundingClientRect();
            return {headings: [...d.querySelectorAll('h1,h2')].map(h => h.textContent),
                    tables: [...d.querySelectorAll('table')].map(t => t.querySelector('th').textContent),
                    configs: [...d.querySelectorAll('table')][0].innerText,
                    images: [...d.querySelectorAll('img')].map(i => ({natural: i.naturalWidth,
                        inside: i.getBoundingClientRect().right <= box.right}))};
        }""")
        assert found["headings"] == [
            "Experiment leaderboard",
            "Quality",
            "Latency, size and cost",
            "Chunks, frontiers and token counts",
        ], found
        assert found["tables"] == ["rank", "config", "config"], found
        for config in ("C+minilm+hybrid+none", "b256+minilm+hybrid+none", "C+-+bm25+none"):
            assert config in found["configs"], found["configs"]
        assert len(found["images"]) == 1 and found["images"][0]["natural"] > 0 and found["images"][0]["inside"], found
        assert not page.errors, page.errors


def test_embeddings_show_each_model_by_strategy(ui, page):
    """The model dimension in the UI: a model x strategy matrix, the default model's row materialised
    and the models no run named missing, each cell its own."""
    with looking_at(page, "embeddings"):
        visit(page, ui + "/assets/embeddings?view=partitions", "Materialized (")
        text = page.inner_text("body")
        assert "Materialized (8)" in text and "Missing (32)" in text and "Failed (0)" in text, text[:2000]
        for model in ("minilm", "me5-small", "me5-small-int8", "mpnet"):
            assert model in text, (model, text)
        assert not page.errors, page.errors


def test_chunk_sets_shows_its_eight_partitions_and_checks_that_passed(ui, page):
    with looking_at(page, "chunk_sets"):
        visit(page, ui + "/assets/chunk_sets?view=partitions", "Materialized (")
        text = page.inner_text("body")
        assert "Materialized (8)" in text and "Missing (0)" in text and "Failed (0)" in text
        visit(page, ui + "/assets/chunk_sets?view=checks", "Checks (")
        text = page.inner_text("body")
        for check in ("offsets_slice_back", "chunk_ids_unique", "every_ok_document_chunked"):
            assert check in text
        assert text.count("Succeeded") == 3 and "Failed" not in text.split("Checks (3)")[1].split("Execute")[0]
        assert not page.errors, page.errors


def test_the_automation_page_lists_the_nightly_schedule_and_both_sensors_running(ui, page):
    with looking_at(page, "automation"):
        visit(page, ui + "/automation", "Scheduled At")
        assert "Scheduled At 02:00 AM UTC" in page.inner_text("body")
        switches = """() => {
            const rows = {};  // each row holds a selection box, then its on/off switch
            for (const box of document.querySelectorAll('input[type=checkbox]')) {
                let row = box;
                while (row.parentElement && !row.innerText.trim()) row = row.parentElement;
                (rows[row.innerText.trim().split('\\n')[0].trim()] ??= []).push(box.checked);
            }
            return Object.fromEntries(Object.entries(rows).map(([name, boxes]) => [name, boxes.at(-1)]));
        }"""
        names = ["automation", "nightly_evaluation_0200_utc", "source_versions_sensor"]
        try:  # the switches render unchecked until their state has loaded, after the rows' text
            all_on = f"(names) => names.every((n) => ({switches})()[n] === true)"
            page.wait_for_function(all_on, arg=names, timeout=30_000)
        except playwright.TimeoutError:
            pass  # the assertion below shows what the page said
        running = page.evaluate(switches)
        assert {k: running.get(k) for k in names} == {
            "automation": True,
            "nightly_evaluation_0200_utc": True,
            "source_versions_sensor": True,
        }, running
        assert not page.errors, page.errors
