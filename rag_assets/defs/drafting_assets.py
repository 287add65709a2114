"""drafted_questions: a thin wrapper over rag_assets.drafting (candidates, drafter, filters)."""

import pandas as pd
from dagster import AssetExecutionContext, asset

from rag_assets.defs.automation import AUTOMATION
from rag_assets.defs.glue import recorded
from rag_assets.defs.io_manager import PREVIEW_KEY
from rag_assets.defs.resources import DataDirResource, DatasetResource, GeneratorResource
from rag_assets.drafting.drafter import NeedsLocalGenerator, draft_set, prompt_identity
from rag_assets.drafting.filters import OVERLAP_CAP
from rag_assets.progress_bars import Bars


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
    yield from recorded(context, drafted)
