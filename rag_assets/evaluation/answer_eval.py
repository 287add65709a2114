"""Answers on a fixed sample through the path `rag-assets ask` takes (gate, context budget,
answerer, citation and support checks), scored, once per answerer and compared paired by
question: what `generation_eval` materialises. The Dagster asset only hands in its inputs and
records the result's metadata."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rag_assets.answering import scoring
from rag_assets.answering.answerer import build_answerer, with_titles
from rag_assets.answering.output_cache import AnswerCache
from rag_assets.evaluation import comparisons
from rag_assets.evaluation.provenance import of_table as provenance_of_table
from rag_assets.ingest import ground_truth as gt
from rag_assets.ingest.access import ALL_TENANTS
from rag_assets.report import Markdown, Report
from rag_assets.retrieval.search import ChunkIndex

# (metric, the questions it is paired over, what a question scores): higher is better, except LOWER_IS_BETTER.
# The first is the headline: it compares like with like. The extractive answer is a source's own
# sentence, supported by construction, so "correct and supported" and "every sentence supported"
# measure the generator's support against a bar the extractive one cannot miss.
PAIRED_METRICS = [
    ("contains the answer", "answerable (scored)", "contains"),
    ("correct and supported", "answerable (scored)", "correct_supported"),
    ("exact match", "answerable (scored)", "em"),
    ("token F1", "answerable (scored)", "f1"),
    ("every sentence supported", "answered by both", "supported"),
    ("abstained", "answerable (scored)", "abstained"),
    ("bluffed", "unanswerable and out-of-domain", "bluffed"),
]
LOWER_IS_BETTER = {"abstained", "bluffed"}


@dataclass
class AnswerEvaluation:
    table: pd.DataFrame  # one row per (answerer, sampled question): the answer, its sources and citations, its scores
    scored: pd.DataFrame
    summary: pd.DataFrame  # per answerer
    latency: dict  # per answerer
    retriever: str
    comparison: pd.DataFrame  # answerers paired by question
    cache: dict = field(default_factory=dict)  # generated answers reused from the cache, and decoded
    failures: dict = field(default_factory=dict)  # an endpoint's failures by kind, retries included

    def report(
        self, strategy: str, generator: str, truth: pd.DataFrame, sample: pd.DataFrame, batch: int, left_out: str = ""
    ) -> Report:
        """The answerers compared paired by question (`comparison`: one Holm family), each one's
        summary, and the figures `generation_eval` shows; `generator` is the model's identity;
        `left_out`: why an answerer asked for was not run (answerers_left_out)."""
        origin = gt.origin_figures(truth)
        comparison = comparison_markdown(self.comparison, self.latency)
        summary = summary_markdown(self.summary)
        warning = f"> **{origin['drafted_questions_warning']}**\n\n" if "drafted_questions_warning" in origin else ""
        markdown = (
            f"# Answerers, paired by question\n\n{warning}- questions: `{origin['questions']}`\n"
            f"- generator: `{generator}`\n- strategy {strategy}, retriever {self.retriever}\n"
            + (f"- {left_out}\n" if left_out else "")
            + f"\n{comparison}\n\n"
            f"## Each answerer\n\n{summary}\n"
        )
        shown = self.scored[self.scored["kind"] == "answerable"].head(3)
        figures = {
            **origin,
            **({"answerers_left_out": left_out} if left_out else {}),
            "generator": generator,
            "strategy": strategy,
            "retriever": self.retriever,
            "sampled": sample["kind"].value_counts().to_dict(),
            "answerers": ", ".join(self.latency),
            "summary": Markdown(summary),
            "comparison": Markdown(comparison),
            "answer_cache": self.cache,
            "endpoint_failures": self.failures,
            "latency_ms": self.latency,
            "decoding": f"greedy, {batch} answers at a time"
            + (
                ": generation_ms is each batch's time divided by its size, not one question's latency"
                if batch > 1
                else ", as `ask` decodes"
            ),
            "examples": [
                {
                    "answerer": r.answerer,
                    "query": r.question,
                    "answer": r.answer,
                    "gold": r.answers,
                    "outcome": r.outcome,
                    "supported": r.supported,
                }
                for r in shown.itertuples()
            ],
        }
        return Report("answerers", markdown, self.table, figures=figures)


def evaluate_answers(
    layout,
    strategy: str,
    chunks: pd.DataFrame,
    embeddings: pd.DataFrame,
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    sample: pd.DataFrame,
    model,
    lm,
    threshold: float,
    budget: int,
    batch: int,
    answerers: list[str] = ("generate",),
    log: Callable[[str], None] = print,
) -> AnswerEvaluation:
    """`sample` (one phrasing per question) answered from `strategy`'s index for all tenants by
    each of `answerers` (`generate` decodes `batch` answers at a time, through the answer cache),
    each answer scored (SQuAD EM and F1, abstention, bluffs, citation validity, support, the
    failure decomposition) and stamped with the models and inputs it came from."""
    index = ChunkIndex.open(layout, strategy, chunks, embeddings, model.identity, snapshot)
    cache = AnswerCache(layout.answer_cache)
    titled = with_titles(chunks, snapshot)
    frames, summaries, latency, identities = [], [], {}, {}
    for name in answerers:
        answerer = build_answerer(
            index,
            titled,
            model,
            lm,
            answerer=name,
            threshold=threshold,
            budget=budget,
            tenant=ALL_TENANTS,
            cache=cache,
        )
        identities[name] = answerer.writer.identity
        answers = answerer.ask_many(
            sample["query"].tolist(), batch, lambda done, total: log(f"{name}: {done}/{total} answers past the gate")
        )
        rows = []
        for i, (q, answer) in enumerate(zip(sample.itertuples(), answers), start=1):
            a = answer.as_dict()
            rows.append(
                {
                    "query_id": q.query_id,
                    "kind": q.kind,
                    "needle": q.needle,
                    "answers": [] if q.answers is None else list(q.answers),
                    **a,
                }
            )
            shown = (
                f"refused ({a['refusal'] or a['refused_by']})"
                if a["refused"]
                else a["failure"] or f"{(a['answer'] or '')[:80]!r}"
            )
            log(f"{name} [{i}/{len(sample)}] {q.kind}: {shown}")
        scored = scoring.score_answers(pd.DataFrame(rows))
        frames.append(scored)
        summaries.append(scoring.summary(scored).assign(answerer=name))
        latency[name] = scoring.latency(scored)
    scored = pd.concat(frames, ignore_index=True)
    table = scored.assign(
        citations=[json.dumps(c) for c in scored["citations"]],
        sources=[json.dumps(s) for s in scored["sources"]],
        dangling=[json.dumps(d) for d in scored["dangling"]],
        omitted=[json.dumps(o) for o in scored["omitted"]],
        short_answer=[json.dumps(a, ensure_ascii=False) for a in scored["short_answer"]],
        support=[json.dumps(s, ensure_ascii=False) for s in scored["support"]],
        generator=scored["answerer"].map(identities),
        embedding_model=model.identity,
        corpus_hash=provenance_of_table(chunks, ["corpus_hash"])["corpus_hash"],
        ground_truth_hash=gt.ground_truth_hash(truth),
    )
    return AnswerEvaluation(
        table,
        scored,
        pd.concat(summaries, ignore_index=True),
        latency,
        answerer.retriever,
        compare_answerers(scored),
        {"reused": cache.reused, "decoded": cache.decoded},
        dict(getattr(lm, "failures", {})),
    )


def compare_answerers_on(
    layout,
    strategy: str,
    tables: Callable[[], tuple[pd.DataFrame, pd.DataFrame]],
    snapshot: pd.DataFrame,
    truth: pd.DataFrame,
    spec: gt.Sample,
    model,
    lm: Callable,
    threshold: float,
    budget: int,
    batch: int,
    answerers: list[str],
    log: Callable[[str], None] = print,
    left_out: str = "",
) -> Report:
    """`evaluate_answers` on the sample `spec` draws from `truth` (one phrasing per question),
    answered from `strategy` (`tables()` reads its chunks and embeddings; `lm()` loads the
    generator: neither runs when nothing is sampled), and its report."""
    sample = gt.sample(truth, spec).drop_duplicates("question_id")
    if sample.empty:
        skipped = (
            "no questions sampled (eval_answerable, eval_unanswerable and eval_out_of_domain are 0): "
            "nothing was generated or measured"
        )
        return Report(
            "answerers", "", pd.DataFrame(columns=["query_id", "kind", "answer"]), figures={"skipped": skipped}
        )
    generator = lm()
    chunks, embeddings = tables()
    result = evaluate_answers(
        layout,
        strategy,
        chunks,
        embeddings,
        snapshot,
        truth,
        sample,
        model,
        generator,
        threshold,
        budget,
        batch,
        answerers,
        log,
    )
    report = result.report(strategy, generator.identity, truth, sample, batch, left_out)
    report.figures.update(threshold=float(threshold), input_budget_tokens=budget)
    return report


def _per_question(scored: pd.DataFrame, questions: str, column: str) -> pd.DataFrame:
    """question x answerer values of `column` over the questions the metric is paired on."""
    ok = scored[scored["failure"].map(lambda f: not isinstance(f, str))]
    if questions == "answerable (scored)":
        ok = ok[ok["outcome"].notna()]
    elif questions == "unanswerable and out-of-domain":
        ok = ok[ok["kind"] != "answerable"]
    else:  # answered by both
        ok = ok[~ok["refused"] & ~ok["declined"]]
    values = ok.assign(abstained=ok["refused"] | ok["declined"])
    values = values.assign(**{column: values[column].astype(float)})
    return values.pivot(index="query_id", columns="answerer", values=column).dropna()


def compare_answerers(scored: pd.DataFrame) -> pd.DataFrame:
    """Every pair of answerers on every metric of PAIRED_METRICS, paired by question: wins and
    losses of the first (questions where it does better: scores higher, or for abstentions on
    answerable questions and bluffs, lower), the exact sign
    test and Holm's adjustment over the whole table."""
    names = list(dict.fromkeys(scored["answerer"]))
    rows = []
    for a, b in itertools.combinations(names, 2):
        for metric, questions, column in PAIRED_METRICS:
            table = _per_question(scored, questions, column)
            if a not in table or b not in table:
                continue
            sign = -1 if column in LOWER_IS_BETTER else 1
            tested = comparisons.paired(sign * table[a], sign * table[b])
            rows.append(
                {
                    "answerer_a": a,
                    "answerer_b": b,
                    "metric": metric,
                    "questions": questions,
                    "n": len(table),
                    "value_a": float(table[a].mean()) if len(table) else np.nan,
                    "value_b": float(table[b].mean()) if len(table) else np.nan,
                    **tested,
                }
            )
    out = pd.DataFrame(
        rows,
        columns=[
            "answerer_a",
            "answerer_b",
            "metric",
            "questions",
            "n",
            "value_a",
            "value_b",
            "wins",
            "losses",
            "p_value",
        ],
    )
    return comparisons.with_holm(out)


def comparison_markdown(comparison: pd.DataFrame, latency: dict) -> str:
    """The answerers' paired comparison (its Holm family named), and each one's answer latency."""
    lines = [
        f"Exact sign tests, paired by question; Holm over the {len(comparison)} rows of this table, one family. "
        "The first row is the headline. The extractive answer is a source's own sentence, supported by "
        "construction: the support rows measure the generator alone.",
        "",
        "| A | B | metric | over | n | A | B | A wins/losses | p (Holm) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in comparison.itertuples():
        p = f"{r.p_holm:.3g}"
        lines.append(
            f"| {r.answerer_a} | {r.answerer_b} | {r.metric} | {r.questions} | {r.n} | {r.value_a:.3f} | "
            f"{r.value_b:.3f} | {r.wins}/{r.losses} | {f'**{p}**' if r.p_holm < 0.05 else p} |"
        )
    lines += ["", "| answerer | answer ms p50 | p95 | n |", "|---|---|---|---|"]
    for name, stages in latency.items():
        g = stages.get("generation_ms") or {}
        lines.append(f"| {name} | {g.get('p50', '')} | {g.get('p95', '')} | {g.get('n', 0)} |")
    return "\n".join(lines)


def summary_markdown(summary: pd.DataFrame) -> str:
    """Each answerer's figures with their intervals, one row per metric and group."""
    lines = ["| answerer | metric | group | value | 95 % interval | count / n |", "|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        interval = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if pd.notna(r.ci_low) else ""
        count = f"{r.count}/{r.n}" if pd.notna(r.count) else f"n={r.n}"
        value = f"{r.value:.3f}" if pd.notna(r.value) else ""
        lines.append(f"| {r.answerer} | {r.metric} | {r.group} | {value} | {interval} | {count} |")
    return "\n".join(lines)
