"""One question, start to end: retrieve, gate, build the context, answer, check citations and support.

The gate comes before any answerer: when no retrieved chunk is under the distance threshold
the answer is NO ANSWER, with the threshold and the nearest distance, and no model is called
(nor loaded). Otherwise an answerer writes from the numbered sources: `generate` (a language
model reads them) or `extractive` (one of their sentences, verbatim). The server keeps only
the citations whose [n] points at a real source, reports the rest, and checks every sentence
of the answer against what it cites (rag_assets.answering.support).
"""

from __future__ import annotations

import copy
import json
import logging
import time
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from rag_assets.answering import refusal
from rag_assets.answering.answerability import read_against, unread_language
from rag_assets.answering.citations import Citation, Context, build_context, check_citations, declines
from rag_assets.answering.extractive import Extractive
from rag_assets.answering.reading import read_question
from rag_assets.answering.support import check_support
from rag_assets.catalog import (
    ANSWERERS,
    DEFAULT_RETRIEVER,
    INPUT_BUDGET,
    LLM_RERANK_DEPTH,
    MULTILINGUAL_EMBEDDER,
    PACKAGED,
    RETRIEVERS,
    SERVING_FALLBACK,
)
from rag_assets.ingest.access import describe_viewer
from rag_assets.ingest.language import language_of
from rag_assets.retrieval.rerank import LLMRelevanceReranker, find_cross_encoder
from rag_assets.retrieval.search import ChunkIndex, run_queries

# The gate refuses when nothing is under the threshold. Only chunks of dense's own top 100 can fuse
# above dense's nearest (RRF >= 1/61), so hybrid's 100 (DEFAULT_RETRIEVER) keep it and hybrid refuses
# exactly when dense does: refusal_sweep, which sweeps dense, measures this retriever's refusals too.
log = logging.getLogger(__name__)


def serving_strategy(configured: str, present) -> str:
    """The configured serving strategy, or the first materialised one in order of preference."""
    return next(s for s in [configured, *SERVING_FALLBACK, *sorted(present)] if s in present)


def with_titles(chunks: pd.DataFrame, snapshot: pd.DataFrame) -> pd.DataFrame:
    """Chunks with their document's title, which citations show."""
    return chunks.merge(snapshot[["document_id", "title"]], on="document_id", how="left", validate="many_to_one")


def _language(row) -> str:
    """A kept chunk's language: its document's, as the snapshot identified it, else read from its text."""
    return row.get("language") or language_of(row["content"])


HIT_FIELDS = ["chunk_id", "document_id", "title", "section", "start", "end", "content", "locator", "language"]


@dataclass
class Answer:
    question: str
    strategy: str
    retriever: str
    threshold: float
    refused: bool  # by the gate or by the reading of the question, before any model call
    nearest_distance: float | None
    refused_by: str | None = None  # distance, language, terms, kind or negation (answering.answerability)
    refusal: str | None = None  # why, in one line a user reads
    asked: str | None = None  # the kind of answer the question asks for: date, number, person, place
    terms_held: list[str] = field(default_factory=list)  # the question's terms the kept sources hold
    terms_missing: list[str] = field(default_factory=list)  # and those they do not
    short_answer: dict | None = None  # the span that answers: {text, fragment} (the extractive answerer's)
    answerer: str = "generate"
    answer: str | None = None
    declined: bool = False  # the model itself wrote NO ANSWER
    failure: str | None = None  # no answer came back (an endpoint's timeout, an empty reply): never scored
    supported: bool | None = None  # every sentence's claims are in what it cites (None: no answer to check)
    support: list[dict] = field(default_factory=list)  # per sentence: text, cites, supported, missing claims
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
    cached: bool = False  # the answer came from the answer cache (generation_eval): generation_ms is the first decode's

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}  # shallow: every field is plain data
        out.update(
            citations=[c.as_dict() for c in self.citations],
            sources=[c.as_dict() for c in self.sources],
            dangling=list(self.dangling),
            omitted=list(self.omitted),
            support=list(self.support),
            terms_held=list(self.terms_held),
            terms_missing=list(self.terms_missing),
            short_answer=dict(self.short_answer) if self.short_answer else None,
        )
        return out


class Generative:
    """The `generate` answerer: a language model reads the numbered sources within the input
    budget. `lm`: anything with identity, load_weights, count_tokens, rendered and generate_many
    (a local model, or an endpoint); `cache`: an answer cache (generation_eval), or None."""

    name = "generate"

    def __init__(self, lm, budget: int = INPUT_BUDGET, cache=None):
        self.lm, self.budget, self.cache = lm, budget, cache
        self.answer_prefix = getattr(lm, "answer_prefix", "")

    @property
    def identity(self) -> str:
        return self.lm.identity

    def load(self) -> None:
        self.lm.load_weights()

    def prepare(self, question: str, hits: list[dict]) -> Context:
        return build_context(question, hits, self.lm.count_tokens, self.budget)

    def rendered(self, prompt: str) -> str:
        return self.lm.rendered(prompt)

    def write_many(self, questions: list[str], contexts: list[Context], batch_size: int = 1, progress=None):
        prompts = [c.prompt for c in contexts]
        if self.cache is None:
            return self.lm.generate_many(prompts, batch_size, progress)
        return self.cache.generate_many(self.lm, prompts, batch_size, progress)


def build_answerer(
    index: ChunkIndex,
    chunks: pd.DataFrame,
    embedder,
    lm,
    *,
    answerer: str = "generate",
    retriever: str = DEFAULT_RETRIEVER,
    threshold: float = refusal.THRESHOLD,
    budget: int = INPUT_BUDGET,
    tenant=None,
    cross_encoder: str = "",
    llm_rerank_depth: int = LLM_RERANK_DEPTH,
    cache=None,
    judge=None,
    model: str = "",
) -> Answerer:
    """The one answer path (`rag-assets ask` and generation_eval): the retriever with the
    reranker it needs, the gate, and the answerer (`generate` with `lm`, or `extractive`).
    ValueError when the retriever needs a reranker this machine does not have, saying why."""
    if answerer not in ANSWERERS:
        raise ValueError(f"unknown answerer {answerer!r}; choose from {', '.join(ANSWERERS)}")
    rerankers = []
    if retriever == "rerank":
        reranker, why = find_cross_encoder(cross_encoder or None)
        if reranker is None:
            raise ValueError(why)
        rerankers.append(reranker)
    elif retriever == "rerank-llm":
        rerankers.append(LLMRelevanceReranker(lm, llm_rerank_depth))
    writer = Extractive(embedder) if answerer == "extractive" else Generative(lm, budget, cache)
    return Answerer(index, chunks, embedder, writer, retriever, threshold, rerankers, tenant, judge, model)


class Answerer:
    """Answers questions over one materialised chunk set.

    `chunks`: the chunk set's rows with the document title; `writer`: the answerer
    (`Generative` or `Extractive`), touched only when the gate lets a question through; `model`: the
    packaged name of the query model (its languages decide which questions it can read), if it is one."""

    def __init__(
        self,
        index: ChunkIndex,
        chunks: pd.DataFrame,
        embedder,
        writer,
        retriever: str = DEFAULT_RETRIEVER,
        threshold: float = refusal.THRESHOLD,
        rerankers=(),
        tenant=None,
        judge=None,
        model: str = "",
    ):
        if retriever not in RETRIEVERS:
            raise ValueError(f"unknown retriever {retriever!r}; choose from {', '.join(RETRIEVERS)}")
        if retriever.startswith("rerank") and not any(r.name == retriever for r in rerankers):
            raise ValueError(f"retriever {retriever!r} needs its reranker")
        self.index, self.embedder, self.writer = index, embedder, writer
        self.retriever, self.threshold, self.rerankers = retriever, threshold, rerankers
        self.tenant = tenant  # None: public documents only; ALL_TENANTS: everything
        self.judge = judge  # answering.judge.Judge: a model's verdict beside the rule check's (None: none)
        self.model = model
        self.model_languages = PACKAGED[model].languages if model in PACKAGED else ()
        self.rows = chunks.set_index("chunk_id")[[f for f in HIT_FIELDS[1:] if f in chunks.columns]]
        embedder.encode(["warm-up"])  # load the query model now, so retrieval times the retrieval only

    def for_viewer(self, tenant) -> Answerer:
        """The same answerer (index, models, settings) for another viewer: what a service does per caller."""
        other = copy.copy(self)
        other.tenant = tenant
        return other

    def retrieve(self, question: str) -> tuple[list[str], list[float], float]:
        """(ranked chunk ids, their cosine distances, milliseconds) from the chosen retriever."""
        t0 = time.perf_counter()
        vector = self.embedder.encode([question], query=True)
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
        """Answers in `questions` order; the questions past the gate are answered `batch_size` at a
        time (the generator decodes them together and calls `progress`): `ask` answers one, and
        its `generation_ms` is its latency."""
        prepared = [self._prepare(q) for q in questions]
        asked = [(result, context) for result, context in prepared if context is not None]
        written = (
            self.writer.write_many([r.question for r, _ in asked], [c for _, c in asked], batch_size, progress)
            if asked
            else []
        )
        for (result, context), generation in zip(asked, written):
            self._complete(result, context, generation)
        return [result for result, _ in prepared]

    def _prepare(self, question: str):
        """The answer so far, and the context the answerer will read (None when the gate refuses)."""
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
            answerer=self.writer.name,
            retrieval_ms=retrieval_ms,
            dense_search=self.index.dense_search,
            refused_by=None if kept else "distance",
        )
        if not kept:  # nothing near: and if the model cannot read the question's language, say so
            language = _language(self.rows.loc[ids[0]]) if ids else "en"
            unread = unread_language(question, language, self.model, self.model_languages, MULTILINGUAL_EMBEDDER)
            if unread:
                result.refused_by, result.refusal = "language", unread
            return result, None
        t0 = time.perf_counter()
        distance_of = dict(zip(ids, distances))
        hits = [{"chunk_id": c, **self.rows.loc[c].to_dict(), "cosine_distance": distance_of[c]} for c in kept]
        if self._refused_on_reading(result, hits):
            return result, None
        read_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        self.writer.load()
        result.load_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        context = self.writer.prepare(question, hits)
        result.context_ms = (time.perf_counter() - t0) * 1000 + read_ms
        return result, context

    def _refused_on_reading(self, result: Answer, hits: list[dict]) -> bool:
        """The question read against the kept chunks (answering.answerability): its asked kind and
        terms recorded, and True (with the reason) when they cannot answer it."""
        language = _language(hits[0])
        bm25 = getattr(self.index, "bm25", None)
        reading = read_against(
            read_question(result.question, language),
            [f"{h.get('title') or ''}\n{h.get('section') or ''}\n{h['content']}" for h in hits],
            bm25.document_share if bm25 is not None else None,
            self.model,
            self.model_languages,
            MULTILINGUAL_EMBEDDER,
        )
        result.asked, result.terms_held, result.terms_missing = reading.asked, reading.held, reading.missing
        if reading.refused_by:
            result.refused, result.refused_by, result.refusal = True, reading.refused_by, reading.reason
        return result.refused

    def _judge(self, result: Answer, support: list, quotes: dict[int, str]) -> None:
        """The judge's verdict beside each sentence's (the quotes it cites; none cited: all shown);
        a judge that fails says so there, and the answer stands."""
        cited = [[quotes[n] for n in s.cites if n in quotes] or list(quotes.values()) for s in support]
        try:
            verdicts = self.judge.verdicts([s.text for s in support], cited)
        except Exception as exc:  # a second opinion never costs the answer
            verdicts = [{"model": self.judge.identity, "verdict": f"failed: {type(exc).__name__}", "reply": ""}] * len(
                support
            )
        for row, verdict in zip(result.support, verdicts, strict=True):
            row["judge"] = dict(verdict)

    def _complete(self, result: Answer, context: Context, generation) -> None:
        result.sources, result.omitted, result.prompt = (
            context.citations,
            context.omitted,
            self.writer.rendered(context.prompt),
        )
        result.model, result.prompt_tokens, result.generation_ms, result.cached = (
            self.writer.identity,
            generation.prompt_tokens,
            generation.ms,
            generation.cached,
        )
        if generation.failure:
            result.failure = generation.failure
            return
        pointed = generation.sources if generation.sources is not None else context.citations
        used, dangling = check_citations(generation.text, pointed)
        result.answer, result.citations, result.dangling = generation.text, used, dangling
        result.short_answer = generation.short
        result.declined = declines(generation.text)
        if not result.declined:
            support = check_support(
                generation.text,
                [self.writer.answer_prefix],
                {c.index: c.quote for c in pointed},
                (pointed[0].language or language_of(pointed[0].quote)) if pointed else "en",
                question=result.question,
                titles={c.index: c.locator_label for c in pointed},  # `document > section`: the source's text too
            )
            result.support = [s.as_dict() for s in support]
            result.supported = all(s.supported for s in support)
            if self.judge is not None and support:
                self._judge(result, support, {c.index: c.quote for c in pointed})
