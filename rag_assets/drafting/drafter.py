"""Draft questions for sampled needles with a local language model, filter them, judge them.

For each needle the model writes a question in the words of the document (`document`), then
rewrites that question as a support ticket would put it (`ticket`): the two phrasings the
chapter's ground truth has. Both are asked for in the needle's language. Decoding is greedy
and batched (`LocalLM.generate_many`), so the same needle, prompt and model give the same
question; every reply and judgement is cached by (model, decoding settings, prompt text), so a
rerun generates nothing it has generated before (`OutputCache`).

The judge: the same model reads the question with its needle, and with a decoy (the sentence
that follows the needle among its document's candidates), and says yes or no to "does the
sentence answer the question?". A question is kept when its needle's log-odds of yes beat the
decoy's. The judge is not independent: it is the model that wrote the question, and it scores
the way the compared `rerank-llm` retriever does (the log-odds of yes), which every drafted
report says; no other generator is packaged for these machines. What the filter changes (tau
with and without it), how often it keeps written questions and how its verdicts track lexical
overlap are measured in docs/drafted-questions.md. Every verdict depends on the needle's own
document alone (decoys and duplicates are looked for within it), so adding or editing another
document changes no verdict here.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from shlex import quote

import pandas as pd

from rag_assets.answering.output_cache import OutputCache, decoding_identity
from rag_assets.drafting import candidates, filters, question_set
from rag_assets.ingest.language import name_of
from rag_assets.report import Outcome, table_markdown

PROMPT_VERSION = "draft1"
PREFIX = "Question:"  # the reply is started with it: SmolLM2-135M otherwise answers instead of asking
STYLES = {
    "document": 'Sentence: "{needle}"\n\nWrite a question about this sentence{language}. Reply with the question only.',
    "ticket": "Rewrite this question as a person with a problem would ask it, in plain everyday words{language}: "
    '"{question}"',
}
JUDGE = 'Sentence: "{needle}"\nQuestion: "{question}"\n\nDoes the sentence answer the question? Answer yes or no.'
JUDGE_ANSWERS = (("yes", "Yes"), ("no", "No"))
MAX_NEW_TOKENS = 40
STOP = ("?", "？", "\n")
BATCH = 8
DRAFT_COLUMNS = [
    "question_id",
    "document_id",
    "path",
    "section",
    "needle",
    "needle_start",
    "language",
    "phrasing",
    "style",
    "reply",
    "query",
    "overlap",
    "verdict",
    "detail",
    "judge_margin",
    "kept",
    "drafting_model",
    "prompts",
    "drafting_settings",
]


def prompt_identity() -> str:
    """Names the prompts: a version, and a hash of their text, so an edited prompt is a new one."""
    text = json.dumps([STYLES, JUDGE, PREFIX, MAX_NEW_TOKENS, STOP])
    return f"{PROMPT_VERSION}@{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def question_id(needle: str) -> str:
    """Stable across reruns and other documents' edits: the needle is unique in the corpus."""
    return "d-" + hashlib.sha256(needle.encode()).hexdigest()[:12]


def _in_language(language: str) -> str:
    return "" if language == "en" else f", in {name_of(language)}"


def decoys(needles: pd.DataFrame, pool: pd.DataFrame | None = None) -> dict[str, str]:
    """Each needle's decoy for the judge: the sentence of `pool` (by default the needles
    themselves) that follows it in its document, wrapping round. Only its own document's text
    decides it, so adding or editing another document never changes a verdict here; a needle
    whose document has no other sentence in `pool` has none. Both frames: `document_id`,
    `needle` and `needle_start`."""
    pool = needles if pool is None else pool
    decoy_of = {}
    for document, group in pool.groupby("document_id", sort=False):
        sentences = group.sort_values("needle_start")["needle"].tolist()
        if len(sentences) < 2:
            continue
        after = dict(zip(sentences, sentences[1:] + sentences[:1]))
        for n in needles.loc[needles["document_id"] == document, "needle"]:
            if n in after:
                decoy_of[n] = after[n]
    return decoy_of


@dataclass
class DraftStats:
    needles: int = 0
    generated: int = 0
    generated_from_cache: int = 0
    judged: int = 0
    judged_from_cache: int = 0
    seconds_generating: float = 0.0
    seconds_judging: float = 0.0

    def add(self, stage: str, fresh: int, cached: int, seconds: float) -> None:
        if stage == "write":
            self.generated, self.generated_from_cache = self.generated + fresh, self.generated_from_cache + cached
            self.seconds_generating += seconds
        else:
            self.judged, self.judged_from_cache = self.judged + fresh, self.judged_from_cache + cached
            self.seconds_judging += seconds

    def as_dict(self) -> dict:
        return {k: round(v, 1) if isinstance(v, float) else v for k, v in asdict(self).items()}


class Drafter:
    """`lm`: a LocalLM (loaded on first use); `progress(stage, done, total)` after each batch."""

    def __init__(self, lm, cache: OutputCache, progress: Callable[[str, int, int], None] | None = None):
        self.writer = lm.with_decoding(MAX_NEW_TOKENS, PREFIX, STOP)
        self.judge = lm
        self.settings = {"write": decoding_identity(self.writer), "judge": f"log-odds of {JUDGE_ANSWERS}"}
        self.cache = cache
        self.progress = progress or (lambda stage, done, total: None)
        self.stats = DraftStats()

    def _cached(self, stage: str, prompts: list[str], compute: Callable[[list[str]], list[str]]) -> list[str]:
        """`compute` over the prompts not in the cache, 32 at a time, each chunk written as a shard;
        the stage's counts and seconds go to `stats`."""
        t0 = time.perf_counter()
        keys = [self.cache.key(f"{stage}\0{self.settings[stage]}\0{p}") for p in prompts]  # decoding settings too
        missing = sorted({k: p for k, p in zip(keys, prompts) if k not in self.cache.values}.items())
        done = len(prompts) - len(missing)
        self.progress(stage, done, len(prompts))  # a pass starts (write runs twice: one pass per phrasing)
        for start in range(0, len(missing), BATCH * 4):
            chunk = missing[start : start + BATCH * 4]
            self.cache.put(dict(zip((k for k, _ in chunk), compute([p for _, p in chunk]))))
            self.progress(stage, done + start + len(chunk), len(prompts))
        self.stats.add(stage, len(missing), done, time.perf_counter() - t0)
        return [self.cache.values[k] for k in keys]

    def _write(self, prompts: list[str]) -> list[str]:
        return self._cached("write", prompts, lambda ps: [g.text for g in self.writer.generate_many(ps, BATCH)])

    def _judge(self, prompts: list[str]) -> list[float]:
        scores = self._cached(
            "judge", prompts, lambda ps: [repr(float(x)) for x in self.judge.log_odds(ps, *JUDGE_ANSWERS)]
        )
        return [float(s) for s in scores]

    def margins(self, questions: list[str], needles: list[str], decoys: list[str]) -> list[float]:
        """The judge's verdict on each question: the log-odds that its needle answers it, minus
        the log-odds that its decoy does (above 0: the needle wins)."""
        own = [JUDGE.format(needle=n, question=q) for q, n in zip(questions, needles)]
        scores = self._judge(own + [JUDGE.format(needle=d, question=q) for q, d in zip(questions, decoys)])
        return [a - b for a, b in zip(scores[: len(own)], scores[len(own) :])]

    def draft(
        self, needles: pd.DataFrame, settings: dict | None = None, pool: pd.DataFrame | None = None
    ) -> pd.DataFrame:
        """One row per phrasing of every needle, kept or not, with the rule that dropped it;
        `settings` (what the sample was drawn with) are recorded on every row. `pool`: every
        candidate sentence (`candidates.candidates`), where the judge's decoys come from (by
        default the needles). A verdict depends on its own document alone: duplicates are looked
        for within a document, and decoys are its own sentences."""
        self.stats.needles = len(needles)
        rows = needles.to_dict("records")
        replies = self._write(
            [STYLES["document"].format(needle=n["needle"], language=_in_language(n["language"])) for n in rows]
        )
        first = [filters.cleaned(r, PREFIX) for r in replies]
        asked = [i for i, q in enumerate(first) if filters.not_a_question(q) is None]
        rewrites = self._write(
            [STYLES["ticket"].format(question=first[i], language=_in_language(rows[i]["language"])) for i in asked]
        )
        second = dict(zip(asked, rewrites))
        out, duplicates = [], {}
        for i, needle in enumerate(rows):
            for phrasing, (style, reply) in enumerate(zip(STYLES, (replies[i], second.get(i, "")))):
                query = filters.cleaned(reply, PREFIX)
                if phrasing == 1 and i not in second:
                    rule, detail = "not_a_question", "not asked: the first phrasing is not a question"
                else:
                    seen = duplicates.setdefault(needle["document_id"], filters.Duplicates())
                    rule, detail = filters.verdict(query, needle["needle"], needle["language"], seen)
                out.append(
                    {
                        "question_id": question_id(needle["needle"]),
                        "document_id": needle["document_id"],
                        "path": needle["path"],
                        "section": needle["section"],
                        "needle": needle["needle"],
                        "needle_start": int(needle["start"]),
                        "language": needle["language"],
                        "phrasing": phrasing,
                        "style": style,
                        "reply": reply,
                        "query": query,
                        "overlap": filters.overlap(query, needle["needle"]) if query else 0.0,
                        "verdict": rule or "kept",
                        "detail": detail,
                        "judge_margin": None,
                        "kept": rule is None,
                    }
                )
        table = pd.DataFrame(out, columns=DRAFT_COLUMNS)
        table["drafting_model"], table["prompts"] = self.cache.model_identity, prompt_identity()
        table["drafting_settings"] = json.dumps(settings or {}, sort_keys=True)
        return self._judged(table, pool)

    def _judged(self, table: pd.DataFrame, pool: pd.DataFrame | None) -> pd.DataFrame:
        """Judge each question on its first kept phrasing; a question its needle does not answer
        better than a decoy sentence loses every phrasing (verdict `not_answered`). A needle whose
        document has no other sentence to be its decoy is kept unjudged (no margin), and the
        detail says so."""
        needles = table.drop_duplicates("question_id")  # a question id names its needle
        if pool is not None:
            pool = pool.rename(columns={"start": "needle_start"})
        decoy_of = decoys(needles, pool)
        table["judge_margin"] = float("nan")
        lone = table["kept"] & ~table["needle"].isin(decoy_of)
        table.loc[lone, "detail"] = "not judged: its document has no other sentence to be a decoy"
        anchors = table[table["kept"] & ~lone].drop_duplicates("question_id")
        questions, texts = anchors["query"].tolist(), anchors["needle"].tolist()
        margin = dict(zip(anchors["question_id"], self.margins(questions, texts, [decoy_of[n] for n in texts])))
        judged = table["question_id"].isin(margin)
        table.loc[judged, "judge_margin"] = table.loc[judged, "question_id"].map(margin).astype("float64")
        fails = table["kept"] & (table["judge_margin"] <= 0)
        table.loc[fails, "verdict"] = "not_answered"
        table.loc[fails, "detail"] = table.loc[fails, "judge_margin"].map(lambda m: f"judge margin {m:.2f} <= 0")
        table.loc[fails, "kept"] = False
        return table


EXAMPLES = 3  # dropped phrasings shown per rule


def data_version(table: pd.DataFrame) -> str:
    """The drafted set's version: its questions and verdicts (a rerun that drafts the same is no change)."""
    return hashlib.sha256(table[["question_id", "query", "verdict"]].to_json(orient="records").encode()).hexdigest()


def figures(table: pd.DataFrame, needles: int, counts: dict, settings: dict, drafter: Drafter) -> dict:
    """What a drafted set reports beside its table: counts, verdicts and examples of each rule,
    overlap with the needle, the drafting's own figures, and the questions kept."""
    verdicts = table["verdict"].value_counts().to_dict()
    asked = table[table["query"] != ""]
    bins = pd.cut(asked["overlap"], [-0.01, 0.2, 0.4, 0.6, 0.8, 1.0], labels=["0-0.2", "-0.4", "-0.6", "-0.8", "-1"])
    kept = table[table["kept"]]
    return {
        "drafted": int(table.groupby("question_id")["kept"].any().sum()),
        "needles": needles,
        "model": drafter.judge.identity,
        "prompts": prompt_identity(),
        "settings": settings,
        "candidates": counts,
        "phrasings_by_verdict": {k: int(v) for k, v in verdicts.items()},
        "questions_with_a_second_phrasing": int((kept.groupby("question_id").size() > 1).sum()),
        "dropped_examples": {
            rule: table.loc[table["verdict"] == rule, ["query", "detail"]].head(EXAMPLES).to_dict("records")
            for rule in (*filters.RULES, "not_answered")
        },
        "overlap_with_needle": {
            "all phrasings": bins.value_counts(sort=False).astype(int).to_dict(),
            "kept": bins[asked["kept"]].value_counts(sort=False).astype(int).to_dict(),
            "cap": filters.OVERLAP_CAP,
        },
        "mean_overlap_kept": float(kept["overlap"].mean()) if len(kept) else 0.0,
        "drafting": drafter.stats.as_dict(),
        "kept_questions": table_markdown(kept, rows=20, columns=["question_id", "style", "query", "needle"]),
    }


def draft_anyway(written: Path, cache_root) -> str:
    """The command that drafts anyway, as printed: the dataset the written set belongs to and the
    data dir whose draft cache `cache_root` is (DataDir.draft_cache: <data dir>/cache/drafts)."""
    data_dir = cache_root.parent.parent if Path(str(cache_root)).parts[-2:] == ("cache", "drafts") else None
    where = f" --data-dir {quote(str(data_dir))}" if data_dir is not None else ""
    return f"rag-assets run --dataset {quote(str(Path(written).parent))}{where} --questions drafted"


class NeedsLocalGenerator(RuntimeError):
    """Drafting reads token log-probabilities, which only a model this process loads gives."""


def draft_set(
    snapshot: pd.DataFrame, written: Path, settings: dict, *, mode: str, min_written: int, load_lm, cache_root, progress
) -> Outcome:
    """The drafted question set of `snapshot`, when `mode` and the written file call for one
    (question_set.drafts); else an empty table that says why. `settings`: needles, seed and
    overlap cap; `load_lm()` gives the local generator (raising NeedsLocalGenerator otherwise),
    whose replies `cache_root` keeps."""
    records, _ = question_set.written_records(written)
    have = question_set.answerable_count(records, snapshot) if records else 0
    if not question_set.drafts(mode, have, min_written):
        why = (
            f"questions.jsonl has {have} valid answerable questions (at least {min_written}): the written set is "
            f"used; `{draft_anyway(written, cache_root)}` drafts anyway"
        )
        return Outcome(pd.DataFrame(columns=DRAFT_COLUMNS), {"drafted": 0, "why": why}, version="not drafted")
    found, counts = candidates.candidates(snapshot, settings["seed"])
    needles = candidates.sample(found, snapshot, settings["needles"])
    if needles.empty:  # no document extracted `ok`, or none has a sentence worth asking about
        nothing = {"drafted": 0, "why": "no candidate needle", "candidates": counts}
        warning = f"no question can be drafted: no candidate needle ({counts})"
        return Outcome(
            pd.DataFrame(columns=DRAFT_COLUMNS), nothing, version="nothing to draft from", warnings=[warning]
        )
    lm = load_lm()
    drafter = Drafter(lm, OutputCache(cache_root, lm.identity), progress)
    table = drafter.draft(needles, settings, pool=found)  # decoys: each document's own sentences
    note = (
        f"drafted questions for {len(needles)} needles ({counts['kept']} candidates of {counts['sentences']} "
        "sentences); replies already in the cache were not generated again"
    )
    why = f"questions.jsonl has {have} valid answerable questions; --questions {mode}"
    return Outcome(
        table,
        {**figures(table, len(needles), counts, settings, drafter), "why": why},
        version=data_version(table),
        notes=[note],
    )
