"""Which configuration `ask` and `serve` answer with, when one was chosen: `rag-assets use CONFIG`
writes it into the data dir (`served.json`), and both read it as their defaults, below what a
command's own options say. Only a configuration the lab serves can be chosen: a preset strategy, a
packaged model, and the lab's dense, BM25 or hybrid retriever with its default settings, with no
reranker, the LLM reranker or a cross-encoder; anything else is refused with what stands in the way.
"""

from __future__ import annotations

import json

from rag_assets import catalog, storage
from rag_assets.layout import DataDir
from rag_assets.retrieval import specs

FILE_NAME = "served.json"
FIELDS = ("serving_strategy", "models", "retriever", "cross_encoder", "llm_rerank_depth", "chosen")


class NotServable(ValueError):
    """A configuration `ask` and `serve` cannot answer with: the message says what stands in the way."""


def choice(config, models: str) -> dict:
    """The settings `ask` and `serve` answer with for `config` (an experiment's Configuration);
    `models`: the data dir's models now (kept first-to-last, the configuration's model first).
    NotServable naming every arm in the way otherwise."""
    problems, chosen = [], {}
    chunker = config.chunker.spec
    if chunker.kind == "preset":
        chosen["serving_strategy"] = chunker.preset
    else:
        problems.append(
            f"chunker {config.chunker.name} is not one of the lab's strategies ({', '.join(catalog.STRATEGIES)}), "
            "which ask and serve answer from"
        )
    if config.embedder is not None:
        if config.embedder.kind == "packaged":
            model = config.embedder.spec.packaged
            chosen["models"] = ",".join(dict.fromkeys([model, *catalog.model_names(models)]))
        else:
            problems.append(f"embedder {config.embedder.name} is not a packaged model ({', '.join(catalog.PACKAGED)})")
    retriever = config.retriever.spec
    if retriever != specs.LAB_RETRIEVERS[retriever.kind]:
        problems.append(
            f"retriever {config.retriever.name} is not the lab's {retriever.kind} with its default settings"
        )
    reranker = config.reranker.spec
    if reranker.kind == "none":
        chosen["retriever"] = retriever.kind
    elif retriever.kind != "hybrid":
        problems.append(f"reranker {config.reranker.name}: ask and serve rerank the hybrid ranking only")
    elif reranker.kind == "llm":
        chosen.update(retriever="rerank-llm", llm_rerank_depth=reranker.depth)
    elif reranker.kind == "cross_encoder" and reranker.depth == catalog.RERANK_DEPTH:
        chosen.update(retriever="rerank", cross_encoder=reranker.cross_encoder)
    else:
        problems.append(
            f"reranker {config.reranker.name} ({reranker.kind}) is not one ask and serve run: the LLM reranker, or "
            f"a cross-encoder folder at depth {catalog.RERANK_DEPTH}"
        )
    if problems:
        raise NotServable(f"configuration {config.id} cannot be served: " + "; ".join(problems))
    return {**chosen, "chosen": config.id}


def write(layout: DataDir, chosen: dict, origin: dict) -> None:
    storage.write_text(layout.root / FILE_NAME, json.dumps({**chosen, "from": origin}, indent=1) + "\n")


def read(layout: DataDir) -> dict:
    """The chosen settings ({} when none was chosen); ValueError when the record cannot be read."""
    path = layout.root / FILE_NAME
    if layout.remote:
        return {}
    try:
        record = storage.read_record(path) or {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read ({exc}): choose again with `rag-assets use`, or delete it") from None
    return {k: record[k] for k in FIELDS if k in record}
