"""The experiment domain's definitions: its source, assets, jobs and sensor, for one file. They name
the resources they use by key; `graph.build_definitions` merges them with the lab's, which holds
those resources."""

from dagster import Definitions, define_asset_job

from rag_assets.defs.experiment import assets, sources
from rag_assets.experiment.spec import Experiment


def experiment_definitions(experiment: Experiment) -> Definitions:
    runs, board = assets.assets_of(experiment)
    jobs = [
        define_asset_job(sources.CONFIGS_JOB, [runs], description="One configuration of the experiment."),
        define_asset_job(sources.LEADERBOARD_JOB, [board], description="The experiment's leaderboard."),
    ]
    return Definitions(
        assets=[sources.spec(experiment), runs, board], jobs=jobs, sensors=[sources.sensor_of(experiment)]
    )
