"""One question, start to end: retrieve, gate, build the context, generate, check citations.

The gate comes before the model: when no retrieved chunk is under the distance threshold
the answer is NO ANSWER, with the threshold and the nearest distance, and the model is not
called (nor loaded). Otherwise the model reads the numbered sources and the server keeps
only the citations whose [n] points at a real source; the rest are reported.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from rag_assets.answering import refusal
from rag_assets.answering.citations import NO_ANSWER, Citation, build_context, check_citations
from rag_assets.answering.generation import INPUT_BUDGET
from rag_assets.ingest.access import describe_viewer
from rag_assets.retrieval.rerank import LLMRelevanceReranker, find_cross_encoder
from rag_assets.retrieval.search import ChunkIndex, run_queries

RETRIEVERS = ("dense", "bm25", "hybrid", "rerank", "rerank-llm")
# The gate refuses when nothing is under the threshold. Only chunks of dense's own top 100 can fuse
# above dense's nearest (RRF >= 1/61), so hybrid's 100 keep it and hybrid refuses exactly when
# dense does: refusal_sweep, which sweeps dense, measures this retriever's refusals too.
DEFAULT_RETRIEVER = "hybrid"
SERVING_STRATEGY = "E"  # the strategy answers come from; failing that, the first materialised in this order
SERVING_FALLBACK = ["E", "C", "F", "D", "B", "A", "W", "doc"]  # the chapter's order of preference
log = logging.getLogger(__name__)


def serving_strategy(configured: str, present) -> str:
    """The configured serving strategy, or the first materialised one in order of preference."""
    return next(s for s in [configured, *SERVING_FALLBACK, *sorted(present)] if s in present)


def with_titles(chunks: pd.DataFrame, snapshot: pd.DataFrame) -> pd.DataFrame:
    """Chunks with their document's title, which citations show."""
    return chunks.merge(snapshot[["document_id", "title"]], on="document_id", how="left", validate="many_to_one")


HIT_FIELDS = ["chunk_id", "document_id", "title", "section", "start", "end", "content", "locator"]


@dataclass
class Answer:
    question: str
    strategy: str
    retriever: str
    threshold: float
    refused: bool  # by the gate, before any model call
    nearest_distance: float | None
    answer: str | None = None
    declined: bool = False  # the model itself wrote NO ANSWER
    citations: list[Citation] = field(default_factory=list)  # the sources the answer cites, checked
    dangling: list[int] = field(default_factory=list)  # [n] in the answer that point at no source
    sources: list[Citation] = field(default_factory=list)  # everything the model was shown
    omitted: list[str] = field(default_factory=list)  # chunks that passed the gate but not the budget
    prompt: str | None = None  # all the model read: chat template, sources, question, answer prefix
    model: str | None = None
    prompt_tokens: int | None = None
    retrieval_ms: float = 0.0
    context_ms: float = 0.0
    generation_ms: float = 0.0
    load_ms: float = 0.0  # loading the generator on first use: not part of any stage
    dense_search: str = "exact"  # exact, or the HNSW graph with its measured recall

    def as_dict(self) -> dict:
        out = asdict(self)
        out["citations"] = [c.as_dict() for c in self.citations]
        out["sources"] = [c.as_dict() for c in self.sources]
        return out


def build_answerer(
    index: ChunkIndex,
    chunks: pd.DataFrame,
    embedder,
    lm,
    *,
    retriever: str = DEFAULT_RETRIEVER,
    threshold: float = refusal.THRESHOLD,
    budget: int = INPUT_BUDGET,
    tenant=None,
    cross_encoder: str = "",
    llm_rerank_depth: int = 10,
) -> Answerer:
    """The one answer path (`rag-assets ask` and generation_eval): the retriever with the
    reranker it needs, the gate, the context budget and the generator. ValueError when the
    retriever needs a reranker this machine does not have, saying why."""
    rerankers = []
    if retriever == "rerank":
        reranker, why = find_cross_encoder(cross_encoder or None)
        if reranker is None:
            raise ValueError(why)
        rerankers.append(reranker)
    elif retriever == "rerank-llm":
        rerankers.append(LLMRelevanceReranker(lm, llm_rerank_depth))
    return Answerer(index, chunks, embedder, lm, retriever, threshold, budget, rerankers, tenant)


class Answerer:
    """Answers questions over one materialised chunk set.

    `chunks`: the chunk set's rows with the document title; `lm`: the generator (anything with
    identity, load_weights, count_tokens, rendered and generate_many), touched only when the gate lets a
    question through."""

    def __init__(
        self,
        index: ChunkIndex,
        chunks: pd.DataFrame,
        embedder,
        lm,
        retriever: str = DEFAULT_RETRIEVER,
        threshold: float = refusal.THRESHOLD,
        budget: int = INPUT_BUDGET,
        rerankers=(),
        tenant=None,
    ):
        if retriever not in RETRIEVERS:
            raise ValueError(f"unknown retriever {retriever!r}; choose from {', '.join(RETRIEVERS)}")
        if retriever.startswith("rerank") and not any(r.name == retriever for r in rerankers):
            raise ValueError(f"retriever {retriever!r} needs its reranker")
        self.index, self.embedder, self.lm = index, embedder, lm
        self.retriever, self.threshold, self.budget, self.rerankers = retriever, threshold, budget, rerankers
        self.tenant = tenant  # None: public documents only; ALL_TENANTS: everything
        self.rows = chunks.set_index("chunk_id")[HIT_FIELDS[1:]]
        embedder.encode(["warm-up"])  # load the query model now, so retrieval times the retrieval only

    def retrieve(self, question: str) -> tuple[list[str], list[float], float]:
        """(ranked chunk ids, their cosine distances, milliseconds) from the chosen retriever."""
        t0 = time.perf_counter()
        vector = self.embedder.encode([question])
        chosen = [r for r in self.rerankers if r.name == self.retriever]
        runs = run_queries(
            self.index,
            pd.DataFrame({"query_id": ["q"], "query": [question]}),
            vector,
            np.zeros(1),
            chosen,
            tenant=self.tenant,
        )
        run = runs[runs["retriever"] == self.retriever].iloc[0]
        return list(run["chunk_ids"]), list(run["distances"]), (time.perf_counter() - t0) * 1000

    def ask(self, question: str) -> Answer:
        return self.ask_many([question])[0]

    def ask_many(self, questions: list[str], batch_size: int = 1, progress=None) -> list[Answer]:
        """Answers in `questions` order; the questions past the gate are decoded `batch_size` at a
        time (`generate_many`, which calls `progress`): `ask` decodes one, and its
        `generation_ms` is its latency."""
        prepared = [self._prepare(q) for q in questions]
        asked = [(result, context) for result, context in prepared if context is not None]
        prompts = [context.prompt for _, context in asked]
        generations = self.lm.generate_many(prompts, batch_size, progress) if asked else []
        for (result, context), generation in zip(asked, generations):
            self._complete(result, context, generation)
        return [result for result, _ in prepared]

    def _prepare(self, question: str):
        """The answer so far, and the context the model will read (None when the gate refuses)."""
        if not question.strip():
            raise ValueError("the question is empty")
        ids, distances, retrieval_ms = self.retrieve(question)
        kept = refusal.gate(ids, distances, self.threshold)
        log.info(
            json.dumps(
                {  # ids, ranks and distances only: never document text, nor the question
                    "event": "retrieved",
                    "strategy": self.index.strategy,
                    "retriever": self.retriever,
                    "tenant": describe_viewer(self.tenant),
                    "ranked": [
                        [rank, c, round(d, 4)] for rank, (c, d) in enumerate(zip(ids[:10], distances[:10]), start=1)
                    ],
                    "kept": kept,
                    "threshold": self.threshold,
                }
            )
        )
        result = Answer(
            question,
            self.index.strategy,
            self.retriever,
            self.threshold,
            refused=not kept,
            nearest_distance=float(min(distances)) if distances else None,
            retrieval_ms=retrieval_ms,
            dense_search=self.index.dense_search,
        )
        if not kept:
            return result, None
        t0 = time.perf_counter()
        self.lm.load_weights()
        result.load_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        distance_of = dict(zip(ids, distances))
        hits = [{"chunk_id": c, **self.rows.loc[c].to_dict(), "cosine_distance": distance_of[c]} for c in kept]
        context = build_context(question, hits, self.lm.count_tokens, self.budget)
        result.context_ms = (time.perf_counter() - t0) * 1000
        return result, context

    def _complete(self, result: Answer, context, generation) -> None:
        used, dangling = check_citations(generation.text, context.citations)
        result.answer, result.citations, result.dangling = generation.text, used, dangling
        result.declined = NO_ANSWER in generation.text.upper()
        result.sources, result.omitted, result.prompt = (
            context.citations,
            context.omitted,
            self.lm.rendered(context.prompt),
        )
        result.model, result.prompt_tokens, result.generation_ms = (
            self.lm.identity,
            generation.prompt_tokens,
            generation.ms,
        )
