"""The whole graph on a tiny corpus, in a real Dagster instance, through the real IO manager."""

import json
import re

import conftest
import pandas as pd
import pyarrow.parquet as pq
import pytest
from dagster import AssetCheckSeverity, AssetKey, DagsterInstance, instance_for_test

from rag_assets.answering import scoring
from rag_assets.answering.citations import fragment_range
from rag_assets.app.cli import main
from rag_assets.app.plan import materialization_steps
from rag_assets.chunking.strategies import CHUNK_COLUMNS, STRATEGIES
from rag_assets.defs import build_definitions
from rag_assets.defs.evaluation_assets import check_same_inputs
from rag_assets.settings import Settings

REGRESSION = "no_significant_regression"  # a warning on a first evaluation: nothing to compare with
CONTRACT = {
    "corpus_snapshot": ["document_id", "title", "path", "text", "sha256", "status", "error"],
    "ground_truth": ["query_id", "question_id", "query", "needle", "kind"],
}


def _materialize_all(defs, instance):
    job = defs.resolve_implicit_global_asset_job_def()
    results = []
    for step in materialization_steps(defs, list(STRATEGIES)):
        result = job.execute_in_process(
            instance=instance, asset_selection=list(step.keys), partition_key=step.partition_key
        )
        assert result.success
        results.append(result)
    return results


def test_everything_materialises_to_parquet_with_metadata_and_passing_checks(tiny_dataset, tmp_path):
    data_dir = tmp_path / "data"
    defs = build_definitions(Settings(data_dir=data_dir, dataset=tiny_dataset, rerank_llm=True))  # the opt-in, on
    with instance_for_test() as instance:
        results = _materialize_all(defs, instance)
        checks = [e for r in results for e in r.get_asset_check_evaluations()]
        assert len(checks) == 4 + 5 * len(STRATEGIES) and all(c.passed for c in checks if c.check_name != REGRESSION)
        [first_comparison] = [c for c in checks if c.check_name == REGRESSION]  # nothing to compare yet: a warning
        assert not first_comparison.passed and first_comparison.severity == AssetCheckSeverity.WARN

        snapshot = pd.read_parquet(data_dir / "assets" / "corpus_snapshot.parquet")
        assert set(CONTRACT["corpus_snapshot"]) <= set(snapshot.columns)
        assert snapshot.set_index("path").loc["broken.md", "status"] == "failed"
        assert (snapshot["status"] == "ok").sum() == 2

        truth = pd.read_parquet(data_dir / "assets" / "ground_truth.parquet")
        assert set(CONTRACT["ground_truth"]) <= set(truth.columns)
        assert sorted(truth["question_id"].unique()) == ["q-colour", "q-filter", "q-passport", "q-valve", "q-warranty"]

        texts = dict(zip(snapshot["document_id"], snapshot["text"]))
        for strategy in STRATEGIES:
            path = data_dir / "assets" / "chunk_sets" / f"{strategy}.parquet"
            chunks = pq.read_table(path).to_pandas()
            assert list(chunks.columns) == CHUNK_COLUMNS + ["corpus_hash", "chunker"]
            assert json.loads(chunks["chunker"].iloc[0])["target"] == STRATEGIES[strategy].target
            assert len(chunks) > 0 and (chunks["strategy"] == strategy).all()
            assert all(texts[c.document_id][c.start : c.end] == c.content for c in chunks.itertuples())

        gt_event = instance.get_latest_materialization_event(AssetKey("ground_truth")).asset_materialization
        meta = {k: getattr(v, "value", v) for k, v in gt_event.metadata.items()}
        assert meta["questions_rejected"] == 2 and "needle not found verbatim" in meta["rejected"]
        assert meta["dagster/row_count"] == len(truth)
        assert [c.name for c in meta["dagster/column_schema"].columns][:3] == ["query_id", "question_id", "phrasing"]
        assert meta["preview"].startswith("| query_id |")
        undescribed, kindless = {}, []
        for key in defs.resolve_asset_graph().get_all_asset_keys():  # a legible catalogue: every column explained
            node = defs.resolve_asset_graph().get(key)
            if node.is_external:
                continue
            kindless += [key.to_user_string()] if not node.kinds else []
            event = instance.get_latest_materialization_event(key)
            schema = event and event.asset_materialization.metadata.get("dagster/column_schema")
            if schema:
                missing = [c.name for c in schema.value.columns if not c.description]
                undescribed |= {key.to_user_string(): missing} if missing else {}
        assert undescribed == {} and kindless == []
        report_meta = instance.get_latest_materialization_event(AssetKey("significance_report")).asset_materialization
        preview = report_meta.metadata["preview"].value  # the columns a reader needs, numbers as they mean
        assert preview.splitlines()[0] == "| comparison | k | wins | losses | recall_a | recall_b | p_value | p_holm |"
        assert "8 more columns (comparison_id, a, b, ties_hit, ties_miss, n_questions, n_queries, family)" in preview
        rows = [[c.strip() for c in line.split("|")[5:9]] for line in preview.splitlines()[2:7]]
        assert rows and all(re.fullmatch(r"\d\.\d{3}", r) for row in rows for r in row[:2]), rows  # rates: 3 decimals
        assert all(len(re.sub(r"e.*|^[0.]+|\.", "", p)) <= 3 for row in rows for p in row[2:]), rows  # p: 3 digits
        assert report_meta.metadata["path"].value == "assets/significance_report.parquet"  # the data dir may move
        assert report_meta.metadata["report_path"].value == "reports/significance_report.md"

        records = instance.fetch_materializations(AssetKey("chunk_sets"), limit=100).records
        by_partition = {r.partition_key: r.asset_materialization.metadata for r in records}
        assert set(by_partition) == set(STRATEGIES)
        assert by_partition["A"]["answerable_questions"].value == 3
        records = instance.fetch_materializations(AssetKey("embeddings"), limit=100).records
        costs = {r.partition_key: r.asset_materialization.metadata for r in records}  # the model's own tokens
        assert costs["minilm|E"]["header_share"].value > 0 and costs["minilm|C"]["header_share"].value == 0
        assert costs["minilm|E"]["encoder_window"].value == 256

        runs = pd.read_parquet(data_dir / "assets" / "retrieval_runs.parquet")
        assert set(runs["strategy"]) == set(STRATEGIES)
        assert set(runs["retriever"]) == {"dense", "bm25", "hybrid", "rerank-llm"}
        llm = runs[runs["retriever"] == "rerank-llm"]  # the serving strategy, answerable queries of the sample
        assert set(llm["strategy"]) == {"E"}
        assert sorted(llm["query_id"]) == sorted(truth.loc[truth["kind"] == "answerable", "query_id"])
        assert llm["reranker_model"].str.startswith("HuggingFaceTB/SmolLM2-135M-Instruct").all()
        assert len(runs) == len(truth) * len(STRATEGIES) * 3 + len(llm)
        table = pd.read_parquet(data_dir / "assets" / "evaluation_tables.parquet")
        assert {
            "strategy",
            "retriever",
            "metric",
            "value",
            "ci_low",
            "ci_high",
            "n_queries",
            "corpus_hash",
            "ground_truth_hash",
            "model_id",
            "chunker",
            "question_origin",
        } <= set(table.columns)
        assert (table["question_origin"] == "written").all()  # the tiny dataset's own questions
        assert (table.loc[table["metric"] == "recall", "n_queries"] == 4).all()  # answerable phrasings
        report = data_dir / "reports" / "significance_report.md"
        assert report.read_text().startswith("# Retrieval evaluation and significance")
        assert (data_dir / "reports" / "recall_at_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        rerank = instance.get_latest_materialization_event(AssetKey("retrieval_runs")).asset_materialization.metadata[
            "rerank"
        ]
        assert "no cross-encoder on this machine" in rerank.value
        significance = pd.read_parquet(data_dir / "assets" / "significance_report.parquet")
        llm_vs_hybrid = significance[significance["comparison"] == "LLM rerank vs hybrid (strategy E)"]
        assert len(llm_vs_hybrid) == 4 and (llm_vs_hybrid["n_queries"] == len(llm)).all()  # paired on its own queries

        every = pd.read_parquet(data_dir / "assets" / "generation_eval.parquet")
        assert sorted(set(every["answerer"])) == ["extractive", "generate"]
        answers = every[every["answerer"] == "generate"].set_index("query_id")
        assert sorted(answers["kind"]) == ["answerable"] * 3 + ["out_of_domain", "unanswerable"]
        assert answers.loc["q-passport#0", "refused"] and pd.isna(answers.loc["q-passport#0", "prompt"])
        for r in answers[~answers["refused"]].itertuples():  # the model saw sources; every citation slices its quote
            assert "Answer the question in one short sentence" in r.prompt and r.prompt.endswith(
                "According to source ["
            )
            assert r.answer.startswith("According to source [") and r.generator.startswith("HuggingFaceTB/SmolLM2")
            assert r.supported in (True, False) and json.loads(r.support)  # every answer sentence was checked
            for c in json.loads(r.sources):
                start, end = fragment_range(c["fragment"])
                assert texts[c["document_id"]][start:end] == c["quote"]
        assert answers.loc["q-valve#0", "outcome"] in scoring.OUTCOMES
        extracted = every[every["answerer"] == "extractive"].set_index("query_id")
        assert (extracted["refused"] == answers["refused"]).all()  # the same gate before either answerer
        for r in extracted[~extracted["refused"]].itertuples():  # a sentence of a source, with its exact fragment
            (cited,) = json.loads(r.citations)
            start, end = fragment_range(cited["fragment"])
            assert r.answer == cited["quote"] + " [1]" and texts[cited["document_id"]][start:end] == cited["quote"]
            assert r.supported and r.generator.startswith("extractive (reading sentence choice")
        meta = instance.get_latest_materialization_event(AssetKey("generation_eval")).asset_materialization.metadata
        assert set(meta["latency_ms"].value) == {"generate", "extractive"}
        assert "abstained (either)" in meta["summary"].value and "| generate | extractive |" in meta["comparison"].value
        assert (data_dir / "reports" / "answerers.md").read_text().startswith("# Answerers, paired by question")
        decoded = meta["answer_cache"].value
        assert decoded["reused"] == 0 and decoded["decoded"] == int((~answers["refused"]).sum())
        job = defs.resolve_implicit_global_asset_job_def()  # again: every answer comes from the cache
        assert job.execute_in_process(instance=instance, asset_selection=[AssetKey("generation_eval")]).success
        again = instance.get_latest_materialization_event(AssetKey("generation_eval")).asset_materialization.metadata
        assert again["answer_cache"].value == {"reused": decoded["decoded"], "decoded": 0}
        cached = pd.read_parquet(data_dir / "assets" / "generation_eval.parquet")
        assert (
            cached["answer"].equals(every["answer"])
            and cached.loc[~cached["refused"] & (cached["answerer"] == "generate"), "cached"].all()
        )

        # hits are scored only against the chunks and questions the runs were computed from
        chunk_frames = {s: pd.read_parquet(data_dir / "assets" / "chunk_sets" / f"{s}.parquet") for s in STRATEGIES}
        check_same_inputs(runs, chunk_frames, truth)
        with pytest.raises(ValueError, match="computed on other questions"):
            check_same_inputs(runs, chunk_frames, truth.iloc[1:])
        chunk_frames["C"] = chunk_frames["C"].assign(corpus_hash="edited")
        with pytest.raises(ValueError, match="strategy C were computed on another version"):
            check_same_inputs(runs, chunk_frames, truth)


def test_same_inputs_give_identical_tables(tiny_dataset, tmp_path):
    """Everything but measured latencies (`*_ms` columns) and the history log (one entry per run,
    named by time and run id) is identical across two runs."""
    tables = []
    for run in ("one", "two"):
        data_dir = tmp_path / run
        with instance_for_test() as instance:
            _materialize_all(build_definitions(Settings(data_dir=data_dir, dataset=tiny_dataset)), instance)
        tables.append(
            {
                p.relative_to(data_dir): pd.read_parquet(p).filter(regex=r"^(?!.*_ms$)")
                for p in sorted((data_dir / "assets").rglob("*.parquet"))
                if "evaluation_history" not in p.parts
            }
        )
    assert tables[0].keys() == tables[1].keys()
    for key in tables[0]:
        pd.testing.assert_frame_equal(tables[0][key], tables[1][key])


def test_cli_run_keeps_history_in_the_data_dir_and_prints_a_summary(tiny_dataset, tmp_path, capsys):
    data_dir = tmp_path / "data"
    assert main(["run", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir), "--strategies", "A,E"]) == 0
    out = capsys.readouterr().out
    assert "[1/?] unpartitioned roots: corpus_snapshot, drafted_questions, ground_truth" in out
    assert "[3/6] partition minilm|A: embeddings, hnsw_index" in out
    assert "[6/6] downstream of partitions: retrieval_runs" in out
    assert "chunk_sets[E]:" in out and "all asset checks passed" in out
    summary = out[out.index("chunk sets (") :].splitlines()
    assert summary[1].split() == [
        "strategy",
        "model",
        "chunks",
        "header",
        "share",
        "over",
        "window",
        "answers",
        "destroyed",
        "not",
        "citable",
    ]
    assert [line.split()[:2] for line in summary[2:4]] == [["A", "minilm"], ["E", "minilm"]]
    assert (data_dir / "assets" / "chunk_sets" / "E.parquet").exists()
    assert not (data_dir / "assets" / "chunk_sets" / "B.parquet").exists()
    with DagsterInstance.from_config(str(data_dir / "dagster_home")) as instance:
        runs = instance.get_runs()  # each under a named job, as the UI lists and filters them
        assert sorted(r.job_name for r in runs) == [
            "corpus",
            "evaluation",
            *["model_indexes"] * 2,
            *["strategy_indexes"] * 2,
        ]

    # the materialised runs, exported for trec_eval / ranx: one qrels and one run file per strategy x retriever
    trec = tmp_path / "trec"
    export = ["export", "trec", "--data-dir", str(data_dir), "--out", str(trec)]
    assert main([*export, "--strategy", "E", "--retriever", "hybrid"]) == 0
    assert sorted(p.name for p in trec.iterdir()) == ["E.hybrid.chunks.run", "qrels.E.chunks.txt"]
    lines = [line.split() for line in (trec / "E.hybrid.chunks.run").read_text().splitlines()]
    assert {len(fields) for fields in lines} == {6} and {f[1] for f in lines} == {"Q0"} and lines[0][3] == "1"
    assert main([*export, "--strategy", "B"]) == 2
    assert "run `rag-assets run --data-dir" in capsys.readouterr().err

    # ask answers from what was materialised, with citations that slice their quotes out of the document
    ask = ["ask", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir), "--json"]
    assert main([*ask, "Which way should the inlet valve face?"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert not answer["refused"] and answer["strategy"] == "E" and answer["retriever"] == "hybrid"
    assert answer["answerer"] == "extractive" and answer["answer"] == "The inlet valve must face north. [1]"
    assert answer["supported"] and answer["model"].startswith("extractive (reading")  # the default: no generator
    assert main([*ask, "--answerer", "generate", "Which way should the inlet valve face?"]) == 0
    generated = json.loads(capsys.readouterr().out)
    assert generated["answer"] and generated["model"].startswith("HuggingFaceTB/SmolLM2")
    assert generated["supported"] in (True, False) and generated["support"]
    snapshot = pd.read_parquet(data_dir / "assets" / "corpus_snapshot.parquet")
    texts = dict(zip(snapshot["document_id"], snapshot["text"]))
    assert answer["sources"] and all(
        texts[s["document_id"]][slice(*fragment_range(s["fragment"]))] == s["quote"] for s in answer["sources"]
    )
    document = (tiny_dataset / "documents" / "guide.md").read_text()
    assert {c["index"] for c in answer["citations"]} <= {s["index"] for s in answer["sources"]}
    assert main([*ask, "How do I renew my passport?"]) == 0
    refused = json.loads(capsys.readouterr().out)
    assert refused["refused"] and refused["model"] is None and refused["nearest_distance"] > refused["threshold"]
    assert (
        main(["ask", "--dataset", str(tiny_dataset), "--data-dir", str(data_dir), "How do I renew my passport?"]) == 0
    )
    assert capsys.readouterr().out.startswith("NO ANSWER: no retrieved chunk is under the distance threshold")
    assert main([*ask, "--strategy", "B", "Which way should the inlet valve face?"]) == 2
    assert "chunk_sets[B] has never been materialised" in capsys.readouterr().err
    (tiny_dataset / "documents" / "guide.md").write_text(document.replace("north", "south"))
    assert main([*ask, "Which way should the inlet valve face?"]) == 2
    assert "corpus_snapshot is stale: corpus_files changed since the last run" in capsys.readouterr().err


def test_cli_run_refuses_a_folder_that_is_not_a_dataset(tmp_path, capsys):
    assert main(["run", "--dataset", str(tmp_path), "--data-dir", str(tmp_path / "d")]) == 2
    assert "is not a dataset: missing documents/" in capsys.readouterr().err and not (tmp_path / "d").exists()


@pytest.mark.parametrize("case", ["no documents", "every document failed", "no questions"])
def test_the_whole_graph_materialises_on_a_degenerate_dataset(case, tmp_path):
    """Nothing crashes on an empty corpus, a corpus of failures or an empty question file (with
    `--questions written`: otherwise it is drafted): every asset materialises (zero rows where
    there is nothing; no needle to draft from gives an empty drafted set) and every check passes."""
    from conftest import TINY_DOCS, TINY_QUESTIONS, write_dataset

    docs = {
        "no documents": {},
        "every document failed": {"a.md": b"\x00binary", "b.txt": b"  \n"},
        "no questions": TINY_DOCS,
    }[case]
    (tmp_path / "dataset" / "documents").mkdir(parents=True)
    dataset = write_dataset(tmp_path / "dataset", docs, [] if case == "no questions" else TINY_QUESTIONS)
    questions = "written" if case == "no questions" else "auto"
    defs = build_definitions(Settings(data_dir=tmp_path / "data", dataset=dataset, llm=False, questions=questions))
    with instance_for_test() as instance:
        results = _materialize_all(defs, instance)
        assert all(c.passed for r in results for c in r.get_asset_check_evaluations() if c.check_name != REGRESSION)
        materialised = {
            k.to_user_string()
            for k, e in instance.get_latest_materialization_events(
                list(defs.resolve_asset_graph().materializable_asset_keys)
            ).items()
            if e
        }
    assert materialised == {
        "corpus_snapshot",
        "drafted_questions",
        "ground_truth",
        "chunk_sets",
        "embeddings",
        "bm25_index",
        "hnsw_index",
        "retrieval_runs",
        "query_hits",
        "evaluation_tables",
        "significance_report",
        "refusal_sweep",
        "generation_eval",
        "evaluation_history",
        "regression_report",
    }
    assert pd.read_parquet(tmp_path / "data" / "assets" / "drafted_questions.parquet").empty
    if case != "no questions":
        assert pd.read_parquet(tmp_path / "data" / "assets" / "chunk_sets" / "C.parquet").empty
    assert pd.read_parquet(tmp_path / "data" / "assets" / "query_hits.parquet").empty


ANSWERABLE = [q for q in conftest.TINY_QUESTIONS if q["id"] in ("q-valve", "q-filter")]


@pytest.mark.parametrize("per_kind, strategies", [(0, "CE"), (1, "CE"), (2, "CE"), (1, "E")])
def test_the_graph_materialises_with_few_questions_per_kind_and_one_strategy(per_kind, strategies, tmp_path):
    """0, 1 and 2 written questions of each kind (`--questions written`: 0 would otherwise be
    drafted), and one strategy alone: every asset materialises, checks pass, and the
    significance report compares what it can and says what it cannot."""
    from conftest import TINY_DOCS, write_dataset

    kinds = {
        "answerable": ANSWERABLE,
        "unanswerable": [
            {"id": f"u{i}", "phrasings": [f"What colour is part {i}?"], "needle": None, "kind": "unanswerable"}
            for i in range(2)
        ],
        "out_of_domain": [
            {"id": f"o{i}", "phrasings": [f"How do I renew passport {i}?"], "needle": None, "kind": "out_of_domain"}
            for i in range(2)
        ],
    }
    questions = [q for qs in kinds.values() for q in qs[:per_kind]]
    dataset = write_dataset(tmp_path / "dataset", TINY_DOCS, questions)
    defs = build_definitions(Settings(data_dir=tmp_path / "data", dataset=dataset, llm=False, questions="written"))
    job = defs.resolve_implicit_global_asset_job_def()
    with instance_for_test() as instance:
        for step in materialization_steps(defs, list(strategies)):
            result = job.execute_in_process(
                instance=instance,
                asset_selection=list(step.keys),
                partition_key=step.partition_key,
                raise_on_error=False,
            )
            assert result.success, [e.message for e in result.all_events if e.is_failure]
            assert all(
                c.passed for c in result.get_asset_check_evaluations() if c.check_name != "no_significant_regression"
            )
        report = instance.get_latest_materialization_event(AssetKey("significance_report")).asset_materialization
    table = pd.read_parquet(tmp_path / "data" / "assets" / "evaluation_tables.parquet")
    assert set(table["n_questions"]) == ({per_kind} if per_kind else set())
    tests = pd.read_parquet(tmp_path / "data" / "assets" / "significance_report.parquet")
    compared = {"hybrid_vs_dense", "hybrid_vs_bm25"} | ({"header_on_boundaries"} if strategies == "CE" else set())
    assert set(tests["comparison_id"]) == (compared if per_kind else set())
    assert set(tests["n_questions"]) <= {per_kind}
    skipped = report.metadata["not_compared"].value
    assert any(s.startswith("boundaries instead of blind cuts: C vs A (dense): no results for") for s in skipped)
