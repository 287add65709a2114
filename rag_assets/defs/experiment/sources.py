"""An experiment's source: `experiment_configs`, one partition per configuration, whose data version
is the configuration's fingerprint (every arm's settings and the identities of its models: a
weights hash, or an endpoint's probe). Recorded by `run --experiment` before it runs anything and by
this domain's sensor, never by the lab's: only what runs an experiment asks its endpoints."""

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    AssetSpec,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    SensorEvaluationContext,
    SensorResult,
    StaticPartitionsDefinition,
    sensor,
)

from rag_assets.defs.external_sources import DATA_VERSION_TAG, changed_source_events, record, with_observations
from rag_assets.defs.resources import DataDirResource, GeneratorResource
from rag_assets.experiment.arms import fingerprints
from rag_assets.experiment.spec import Experiment

SOURCE = AssetKey("experiment_configs")
RUNS = AssetKey("experiment_runs")
GROUP = "experiment"
CONFIGS_JOB, LEADERBOARD_JOB = "experiment_configs", "experiment"


def partitions_of(experiment: Experiment) -> StaticPartitionsDefinition:
    return StaticPartitionsDefinition([c.id for c in experiment.configurations])


def spec(experiment: Experiment) -> AssetSpec:
    return AssetSpec(
        SOURCE,
        group_name="sources",
        partitions_def=partitions_of(experiment),
        description=f"Each configuration of {experiment.path.name}; data version: its fingerprint (every arm's "
        "settings and its models' identities: weights hash, or an endpoint's probe).",
    )


def versions(experiment: Experiment, data_dir: DataDirResource, generator: GeneratorResource, log=print) -> list:
    """(source, configuration, fingerprint) for every configuration whose models can be made now."""
    found = fingerprints(experiment, data_dir.layout.endpoint_records, generator.get, log)
    return [(SOURCE, c, v) for c, v in found.items()]


def record_versions(instance: DagsterInstance, experiment: Experiment, resources, log=print) -> list[str]:
    """Record the configurations whose fingerprint changed; return their names."""
    return record(instance, versions(experiment, resources["data_dir"], resources["generator"], log))


def results(instance: DagsterInstance, experiment: Experiment) -> dict[str, dict]:
    """Per configuration, what its last attempt left: the fingerprint recorded for it now, the
    newest materialisation's run, and whether an attempt after that materialisation failed."""
    out = {}
    for c in experiment.configurations:
        recorded = instance.fetch_materializations(AssetRecordsFilter(asset_key=SOURCE, asset_partitions=[c.id]), 1)
        made = instance.fetch_materializations(AssetRecordsFilter(asset_key=RUNS, asset_partitions=[c.id]), 1)
        planned = instance.get_latest_planned_materialization_info(RUNS, c.id)
        made_run = made.records[0].run_id if made.records else None
        failed = None
        if planned is not None and planned.run_id != made_run:
            run = instance.get_run_by_id(planned.run_id)
            if run is not None and run.status in (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED):
                failed = planned.run_id
        out[c.id] = {
            "version": recorded.records[0].asset_materialization.tags.get(DATA_VERSION_TAG)
            if recorded.records
            else None,
            "failed_run": failed,
        }
    return out


def sensor_of(experiment: Experiment):
    @sensor(name="experiment_sources", default_status=DefaultSensorStatus.RUNNING, minimum_interval_seconds=300)
    def experiment_sources(context: SensorEvaluationContext, data_dir: DataDirResource, generator: GeneratorResource):
        """Records a new fingerprint for each configuration whose arms or models changed (its
        endpoints are probed: only while the experiment is loaded)."""
        found = versions(experiment, data_dir, generator, context.log.info)
        return SensorResult(asset_events=with_observations(changed_source_events(context.instance, found)))

    return experiment_sources
