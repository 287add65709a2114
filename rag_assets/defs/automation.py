"""Declarative automation: what re-materialises stale assets, running by default."""

from dagster import AssetSelection, AutomationCondition, AutomationConditionSensorDefinition, DefaultSensorStatus

# Re-materialise when a parent has new data (a new source version, a new materialisation) or
# when the asset's own code version changed: eager() alone ignores code-version changes. Never
# on a parent whose blocking integrity checks failed.
CHECKS_PASSED = AutomationCondition.all_deps_blocking_checks_passed()
AUTOMATION = (AutomationCondition.eager() | AutomationCondition.code_version_changed()) & CHECKS_PASSED

# retrieval_runs reads whichever (model, strategy) partitions of embeddings exist: those of the
# models a run does not name stay missing for ever, and must not hold it back as eager() alone
# would; a missing partition of any other parent still does.
ACROSS_MODELS = (
    AutomationCondition.eager().without(~AutomationCondition.any_deps_missing())
    & ~AutomationCondition.any_deps_missing().ignore(AssetSelection.assets("embeddings"))
    | AutomationCondition.code_version_changed()
) & CHECKS_PASSED

# query_hits, refusal_sweep and generation_eval read the index and questions that retrieval_runs
# also read: they wait for new runs instead of pairing old runs with new chunks or questions.
AFTER_RETRIEVAL = (
    AutomationCondition.eager().ignore(
        AssetSelection.assets("corpus_snapshot", "chunk_sets", "embeddings", "ground_truth")
    )
    | AutomationCondition.code_version_changed()
) & CHECKS_PASSED

# evaluation_history reads the corpus snapshot only to record which documents an evaluation
# saw: a new snapshot alone is no new evaluation to append.
AFTER_EVALUATION = (
    AutomationCondition.eager().ignore(AssetSelection.assets("corpus_snapshot"))
    | AutomationCondition.code_version_changed()
) & CHECKS_PASSED

automation_sensor = AutomationConditionSensorDefinition(
    "automation",
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
)
