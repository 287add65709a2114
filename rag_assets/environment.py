"""The process environment, read here and nowhere else (`tests/test_catalog.py` holds every other
module to it): the variables a user may set, each named with what it sets, and the secrets that
settings name by variable (a key is never a setting, so it never lands in a file or a table).

Standard library only. `Settings.from_environment` reads the settings' variables through
`settings_values`; the machine-wide places (`model_cache`, `state_dir`), the lock's patience and
the secrets are read where they are needed, through the functions below.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# The variables that stand for a Settings field: `dg dev` started by hand reads them.
SETTINGS_VARIABLES = {
    "RAG_ASSETS_DATA_DIR": "data_dir",
    "RAG_ASSETS_DATASET": "dataset",
    "RAG_ASSETS_MODELS": "models",
    "RAG_ASSETS_ENGINE": "engine",
    "RAG_ASSETS_RAY_ADDRESS": "ray_address",
    "RAG_ASSETS_ANN_MIN_CHUNKS": "ann_min_chunks",
    "RAG_ASSETS_EXPERIMENT": "experiment",
    "RAG_ASSETS_CROSS_ENCODER": "cross_encoder",
}
SETTINGS_FILE = "RAG_ASSETS_SETTINGS"  # a settings file (`rag-assets ui` writes one for its code server)
POSTGRES_URL = "RAG_ASSETS_POSTGRES_URL"  # the instance's URL (it may hold a password)
GENERATOR_KEY = "RAG_ASSETS_GENERATOR_KEY"  # the key of --generator-url's server
JUDGE_KEY = "RAG_ASSETS_JUDGE_KEY"  # the key of --judge-url's server
MODEL_CACHE = "RAG_ASSETS_MODEL_CACHE"  # where models built from packaged weights are kept
STATE_DIR = "RAG_ASSETS_STATE_DIR"  # where the Dagster homes of remote data dirs are kept
LOCK_WAIT = "RAG_ASSETS_LOCK_WAIT_S"  # how long a run waits for the data dir's lock
SERVE_FILE = "RAG_ASSETS_SERVE_FILE"  # the file `serve --workers N` hands each worker (a path, no secret)
# The only variables a file may name for a key (an endpoint's `key_env`): a file from a shared dataset
# could otherwise send any secret of the environment ($RAG_ASSETS_POSTGRES_URL, the judge's key,
# AWS_SECRET_ACCESS_KEY) to a URL it chooses, as a Bearer token.
KEY_PREFIX = "RAG_ASSETS_KEY_"
_KEY_VARIABLE = re.compile(r"RAG_ASSETS_KEY_[A-Z0-9_]{1,100}")


def value(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable `name` (empty counts as unset)."""
    return (os.environ if environ is None else environ).get(name) or None


def settings_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Settings fields given by their variables (as text; Settings checks them)."""
    return {field: found for var, field in SETTINGS_VARIABLES.items() if (found := value(var, environ))}


def key_variable(name: str) -> bool:
    """Whether a file's setting may name `name` for a key: RAG_ASSETS_KEY_ and capitals, digits, '_'."""
    return bool(_KEY_VARIABLE.fullmatch(name))


def secret(name: str) -> str | None:
    """A key held in the variable a setting names: an endpoint's `key_env` (a `key_variable`), the
    generator's or the judge's key; ValueError for any other variable, which holds no key to send."""
    if name not in (GENERATOR_KEY, JUDGE_KEY) and not key_variable(name):
        raise ValueError(f"${name} is not a variable for a key (those are {KEY_PREFIX}*)")
    return value(name)


def quiet_library_bars() -> None:
    """Turn off the model libraries' own progress bars in this process (huggingface_hub's switch,
    which transformers' "Loading weights" follows), unless the user set it: off a terminal they
    would write a line per redraw. Called before those libraries load."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def for_child(**extra: str) -> dict[str, str]:
    """This process's environment for a process it starts, with `extra` set."""
    return {**os.environ, **extra}


def set_default(name: str, default: str) -> str:
    """Set `name` for this process and its children unless it is set; its value."""
    return os.environ.setdefault(name, default)


def put(name: str, value: str) -> None:
    """Set `name` for this process and the processes it starts."""
    os.environ[name] = value


def drop(name: str) -> None:
    """Unset `name` here, so that no process this one starts inherits it (a password)."""
    os.environ.pop(name, None)
