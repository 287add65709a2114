"""drafted_questions: a thin wrapper over rag_assets.drafting (candidates, drafter, filters)."""

import dataclasses

import pandas as pd
from dagster import AssetExecutionContext, asset

from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import recorded
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.resources import DataDirResource, DatasetResource, GeneratorResource
from rag_assets.drafting.drafter import NeedsLocalGenerator, draft_set, prompt_identity
from rag_assets.drafting.filters import OVERLAP_CAP
from rag_assets.progress_bars import Bars
from rag_assets.retrieval import model_choice


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
    settings = {"needles": dataset.draft_questions, "seed": dataset.draft_seed, "overlap_cap": OVERLAP_CAP}

    def load_lm():
        if generator.url:
            raise NeedsLocalGenerator(
                "drafting questions needs a local generator: its judge reads token log-probabilities, which this "
                "project takes only from a model it loads; run without --generator-url, or write questions.jsonl"
            )
        return generator.get()

    with Bars("drafted_questions", "prompt", context.log.info) as bars:
        drafted = draft_set(
            corpus_snapshot,
            dataset.dataset().questions_path,
            settings,
            mode=dataset.questions,
            min_written=dataset.min_written,
            load_lm=load_lm,
            cache_root=data_dir.layout.draft_cache,
            progress=bars.stage,
        )
    shares = model_choice.corpus_languages(corpus_snapshot)
    why = model_choice.generator_cannot_write(generator.packaged, shares)
    if why and not drafted.table.empty:  # drafted here (written questions leave the table empty)
        line = (
            f"{why}: its drafts mostly fail the language filter ({drafted.figures['drafted']} questions kept); write "
            "questions.jsonl in the corpus's language, or give --generator a model that writes it"
        )
        drafted = dataclasses.replace(drafted, warnings=[*drafted.warnings, line])
    yield from recorded(context, drafted)
