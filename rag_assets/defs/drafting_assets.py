"""drafted_questions: a thin wrapper over rag_assets.drafting (candidates, drafter, filters)."""

import hashlib

import pandas as pd
from dagster import AssetExecutionContext, DataVersion, Failure, MetadataValue, Output, asset
from tqdm import tqdm

from rag_assets.answering.output_cache import OutputCache
from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import decimals
from rag_assets.defs.io_manager import PREVIEW_KEY, markdown_preview
from rag_assets.defs.resources import DataDirResource, DatasetResource, GeneratorResource
from rag_assets.drafting import candidates, question_set
from rag_assets.drafting.drafter import DRAFT_COLUMNS, Drafter, prompt_identity
from rag_assets.drafting.filters import OVERLAP_CAP, RULES

EXAMPLES = 3  # per rule, in the metadata


def _data_version(table: pd.DataFrame) -> str:
    return hashlib.sha256(table[["question_id", "query", "verdict"]].to_json(orient="records").encode()).hexdigest()


def _overlap_histogram(table: pd.DataFrame) -> dict:
    asked = table[table["query"] != ""]
    bins = pd.cut(asked["overlap"], [-0.01, 0.2, 0.4, 0.6, 0.8, 1.0], labels=["0-0.2", "-0.4", "-0.6", "-0.8", "-1"])
    return {
        "all phrasings": bins.value_counts(sort=False).astype(int).to_dict(),
        "kept": bins[asked["kept"]].value_counts(sort=False).astype(int).to_dict(),
        "cap": OVERLAP_CAP,
    }


@asset(
    kinds={"parquet"},
    group_name="corpus",
    code_version=f"drafted2+{prompt_identity()}",
    deps=["questions_file"],
    metadata={PREVIEW_KEY: ["question_id", "phrasing", "style", "query", "verdict", "overlap", "judge_margin", "path"]},
    automation_condition=AUTOMATION,
)
def drafted_questions(
    context: AssetExecutionContext,
    dataset: DatasetResource,
    generator: GeneratorResource,
    data_dir: DataDirResource,
    corpus_snapshot: pd.DataFrame,
):
    """Questions drafted from the corpus when there is no written question set (or when asked
    to draft anyway): one row per phrasing, kept or dropped with the rule that dropped it."""
    written, _ = question_set.written_records(dataset.dataset().questions_path)
    have = question_set.answerable_count(written, corpus_snapshot) if written else 0
    if not question_set.drafts(dataset.questions, have, dataset.min_written):
        return Output(
            pd.DataFrame(columns=DRAFT_COLUMNS),
            data_version=DataVersion("not drafted"),
            metadata={
                "drafted": 0,
                "why": f"questions.jsonl has {have} valid answerable questions (at least {dataset.min_written}): "
                "the written set is used; `rag-assets run --questions drafted` drafts anyway",
            },
        )
    found, counts = candidates.candidates(corpus_snapshot, dataset.draft_seed)
    needles = candidates.sample(found, corpus_snapshot, dataset.draft_questions)
    if needles.empty:  # no document extracted `ok`, or none has a sentence worth asking about
        context.log.warning(f"no question can be drafted: no candidate needle ({counts})")
        return Output(
            pd.DataFrame(columns=DRAFT_COLUMNS),
            data_version=DataVersion("nothing to draft from"),
            metadata={"drafted": 0, "why": "no candidate needle", "candidates": MetadataValue.json(counts)},
        )
    context.log.info(
        f"drafting questions for {len(needles)} needles ({counts['kept']} candidates of {counts['sentences']} "
        "sentences); a reply already in the cache is not generated again"
    )
    settings = {"needles": dataset.draft_questions, "seed": dataset.draft_seed, "overlap_cap": OVERLAP_CAP}
    if generator.url:
        raise Failure(
            "drafting questions needs a local generator: its judge reads token log-probabilities, which this "
            "project takes only from a model it loads; run without --generator-url, or write questions.jsonl"
        )
    lm = generator.get()
    cache = OutputCache(data_dir.layout.draft_cache, lm.identity)
    bars: dict[str, tqdm] = {}

    def progress(stage: str, done: int, total: int) -> None:
        """One bar per pass (the two phrasings are two passes of `write`): a pass opens with the
        count already cached, at most what the bar shows; within a pass the count only grows."""
        bar = bars.get(stage)
        if bar is None or bar.total != total or done <= bar.n:
            if bar is not None:
                bar.close()
            bar = bars[stage] = tqdm(desc=f"drafted_questions: {stage}", total=total, unit="prompt", leave=False)
        bar.update(done - bar.n)
        bar.refresh()  # calls come a chunk apart: show each, also a pass the cache answered at once
        context.log.info(f"{stage}: {done}/{total}")

    drafter = Drafter(lm, cache, progress)
    try:
        table = drafter.draft(needles, settings, pool=found)  # decoys: each document's own sentences
    finally:
        for bar in bars.values():
            bar.close()
    verdicts = table["verdict"].value_counts().to_dict()
    examples = {
        rule: table.loc[table["verdict"] == rule, ["query", "detail"]].head(EXAMPLES).to_dict("records")
        for rule in (*RULES, "not_answered")
    }
    questions = table.groupby("question_id")["kept"].any()
    return Output(
        table,
        data_version=DataVersion(_data_version(table)),
        metadata={
            "drafted": int(questions.sum()),
            "needles": len(needles),
            "why": f"questions.jsonl has {have} valid answerable questions; --questions {dataset.questions}",
            "model": lm.identity,
            "prompts": prompt_identity(),
            "settings": MetadataValue.json(settings),
            "candidates": MetadataValue.json(counts),
            "phrasings_by_verdict": MetadataValue.json({k: int(v) for k, v in verdicts.items()}),
            "questions_with_a_second_phrasing": int((table[table["kept"]].groupby("question_id").size() > 1).sum()),
            "dropped_examples": MetadataValue.json(examples),
            "overlap_with_needle": MetadataValue.json(_overlap_histogram(table)),
            "mean_overlap_kept": decimals(table.loc[table["kept"], "overlap"].mean() if table["kept"].any() else 0),
            "drafting": MetadataValue.json(drafter.stats.as_dict()),
            "kept_questions": MetadataValue.md(
                markdown_preview(table[table["kept"]], rows=20, columns=["question_id", "style", "query", "needle"])
            ),
        },
    )
