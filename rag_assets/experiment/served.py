"""An experiment's configuration served: the index and answerer `ask` and `serve` answer with once
`rag-assets use` chose it, made from the typed specs its run measured (rag_assets.experiment.spec).

Nothing is computed that its run did not: its chunks are cut again from the corpus snapshot by its
own chunker arm and must be the chunk set its run recorded (the same fingerprint); its vectors are
read from the (model, text) embedding cache its run filled, never embedded again (a missing vector
is a refusal, unless `fill`: `use` may embed what the cache lost); its index is built as its
retriever says, and a hit returns its passage (the parent, the sentence window), as in the run.
A configuration whose result is for other settings, models or documents than now is refused.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_assets.answering.answerer import Answerer, Extractive, Generative, with_titles
from rag_assets.catalog import DEFAULT_EMBEDDER, PACKAGED
from rag_assets.experiment.arms import chunk_arm, counter_of
from rag_assets.experiment.measure import identities_of, returned
from rag_assets.experiment.spec import Configuration
from rag_assets.ingest.access import access_by_document
from rag_assets.ingest.corpus import corpus_hash
from rag_assets.retrieval import embedders, rerank
from rag_assets.retrieval.embedding_cache import EmbeddingCache
from rag_assets.retrieval.search import ChunkIndex, run_queries

RUNS = "experiment_runs"  # the asset whose rows record what each configuration's run measured


class NotServable(ValueError):
    """The configuration cannot be answered with now: the message says why and what to run."""


@dataclass
class ServedConfiguration:
    """What answers come from: the index of the chunks its run measured, the passages a hit
    returns (with their titles), the models that embed and rerank, and the refusal gate's threshold."""

    config: Configuration
    index: ChunkIndex
    passages: pd.DataFrame
    returned_of: dict[str, str] | None
    embedder: object  # embeds the questions (for BM25 alone: the gate's model)
    reranker: object | None
    threshold: float
    threshold_source: str
    model: str  # the query model's packaged name ("" for a folder or an endpoint): its languages are read

    @property
    def retriever(self) -> str:
        """The label its answers carry: its retriever's kind, or the reranker after it."""
        if self.reranker is None:
            return self.config.retriever.kind
        return self.reranker.name

    def describe(self) -> str:
        c = self.config
        model = c.embedder.name if c.embedder else f"none ({self.embedder.identity} for the gate)"
        return (
            f"chunker {c.chunker.name} ({c.chunker.kind}), embedder {model}, retriever {c.retriever.name} "
            f"({c.retriever.kind}), reranker {c.reranker.name} ({c.reranker.kind}): {len(self.index.chunk_ids)} "
            f"chunks indexed, {len(self.passages)} passages returned"
        )


def recorded(layout, config: Configuration) -> dict | None:
    """What the configuration's last successful run recorded (its first row's carried figures), or None."""
    path = layout.table(RUNS, config.id)
    if not path.exists():
        return None
    rows = layout.read_table(RUNS, config.id)
    return rows.iloc[0].to_dict() if len(rows) else None


def make_reranker(spec, records, lm=None):
    """The reranker a spec names, writing nothing (an endpoint's probe is compared with its record,
    never recorded); `lm()`: the local generator, for the LLM reranker."""
    if spec.kind == "url":
        from rag_assets.retrieval.remote import EndpointReranker

        return EndpointReranker(spec, records, keep_record=False)
    return rerank.make(spec, lm, records)


def open_configuration(
    config: Configuration,
    layout,
    snapshot: pd.DataFrame,
    gate_model: str,
    threshold: float | None,
    rerun: str,
    use: str,
    lm=None,
    fill: bool = False,
) -> ServedConfiguration:
    """The configuration ready to answer from, or NotServable saying why (`rerun`: the command that
    runs the experiment again, `use` the one that chooses it again, quoted in the reasons).
    `gate_model`: a packaged model whose distances gate a configuration that embeds nothing (BM25
    alone); `threshold`: the gate's, None for the model's own. `fill`: embed into the cache the
    vectors it lacks (only `use` writes)."""
    from rag_assets.retrieval.remote import EndpointError

    row = recorded(layout, config)
    if row is None:
        raise NotServable(
            f"configuration {config.id} has no result in {layout.root}: it has not run, or failed: {rerun}"
        )
    records = layout.endpoint_records
    try:
        model = embedders.make(config.embedder.spec, records, keep_record=False) if config.embedder else None
        reranker = make_reranker(config.reranker.spec, records, lm)
    except (EndpointError, OSError, ValueError) as exc:
        raise NotServable(f"configuration {config.id}: a model it names cannot be made now: {exc}") from None
    if config.fingerprint(identities_of(config, model, reranker)) != row["fingerprint"]:
        raise NotServable(
            f"configuration {config.id}: its result is for other settings or models than the file's now: {rerun}"
        )
    if corpus_hash(snapshot) != row["corpus_hash"]:
        raise NotServable(f"configuration {config.id}: the documents changed since it ran: {rerun}")
    chunked = chunk_arm(snapshot, config.chunker, counter_of(model))
    if chunked.fingerprint() != row["chunk_set"]:
        raise NotServable(
            f"configuration {config.id}: its chunker cuts other chunks now than its run measured (a chunking "
            f"library changed?): {rerun}"
        )
    query_model = model or embedders.packaged(gate_model)
    vectors = _vectors(layout, query_model, chunked.indexed["text"].tolist(), config, use if not fill else None)
    lists = access_by_document(snapshot)
    index = ChunkIndex.build(
        config.id,
        chunked.indexed,
        vectors,
        config.retriever.spec,
        [lists[d] for d in chunked.indexed["document_id"]],
    )
    packaged = getattr(config.embedder.spec, "packaged", None) if config.embedder else gate_model
    gate, source = _threshold(packaged, threshold, query_model)
    passages = with_titles(chunked.returned, snapshot)
    return ServedConfiguration(
        config, index, passages, chunked.returned_of, query_model, reranker, gate, source, packaged or ""
    )


def _vectors(layout, model, texts: list[str], config: Configuration, use: str | None) -> np.ndarray:
    """The chunks' vectors from the cache; those it lacks embedded into it when `use` is None."""
    cache = EmbeddingCache(layout.embedding_cache, model)
    if use is None:
        return cache.encode(texts)[0]
    vectors, missing = cache.stored(texts)
    if missing:
        raise NotServable(
            f"configuration {config.id}: {missing} of {len(texts)} chunks have no vector of {model.identity} in the "
            f"embedding cache of {layout.root} (was it emptied?): {use} embeds them"
        )
    return vectors


def _threshold(packaged: str | None, given: float | None, model) -> tuple[float, str]:
    """The refusal gate's cosine distance: the one given, else the packaged model's own, else the
    default model's, said to be uncalibrated for this one."""
    if given is not None:
        return given, "set by --threshold"
    if packaged in PACKAGED:
        return PACKAGED[packaged].threshold, PACKAGED[packaged].threshold_source
    return PACKAGED[DEFAULT_EMBEDDER].threshold, (
        f"{DEFAULT_EMBEDDER}'s, not calibrated for {model.identity}: set --threshold"
    )


class ConfigurationAnswerer(Answerer):
    """The lab's answer path (gate, context, answerer, citations, support) over a served
    configuration: it ranks with the configuration's retriever and reranker, and answers from the
    passages its hits return."""

    def __init__(self, served: ServedConfiguration, writer, threshold: float, tenant=None, judge=None):
        rerankers = [served.reranker] if served.reranker is not None else []
        super().__init__(
            served.index,
            served.passages,
            served.embedder,
            writer,
            served.retriever,
            threshold,
            rerankers,
            tenant,
            judge,
            served.model,
        )
        self.served = served

    def retrieve(self, question: str) -> tuple[list[str], list[float], float]:
        t0 = time.perf_counter()
        config = self.served.config
        vector = self.embedder.encode([question], query=True)
        runs = run_queries(
            self.index,
            pd.DataFrame({"query_id": ["q"], "query": [question]}),
            vector,
            np.zeros(1),
            self.rerankers,
            tenant=self.tenant,
            retrievers={config.id: config.retriever.spec},
            rerank_from=config.id,
        )
        run = runs[runs["retriever"] == (self.rerankers[0].name if self.rerankers else config.id)].iloc[0]
        ids, distances = returned(list(run["chunk_ids"]), list(run["distances"]), self.served.returned_of)
        return ids, distances, (time.perf_counter() - t0) * 1000


def answerer(served: ServedConfiguration, lm, answerer: str, budget: int, tenant=None, judge=None) -> Answerer:
    """The answerer `ask` and `serve` build over a served configuration: `extractive` (a sentence of
    its passages) or `generate` (`lm` writes); an LLM reranker scores with `lm` too."""
    if served.reranker is not None and served.config.reranker.kind == "llm":
        served = dataclasses.replace(served, reranker=rerank.LLMRelevanceReranker(lm, served.reranker.depth))
    writer = Extractive(served.embedder) if answerer == "extractive" else Generative(lm, budget)
    return ConfigurationAnswerer(served, writer, served.threshold, tenant, judge)
