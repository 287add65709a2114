"""Which packaged embedding models a run uses when none is named: the corpus's languages decide.

An English-only encoder reads another language as word pieces it never learnt (on XQuAD German
and the Bulgarian chapter its dense recall falls by a quarter to two thirds: docs/results.md,
"Languages and models"), so a corpus that is not mostly English gets the multilingual model, and a
mixed one both, the multilingual first (it serves `ask`: it reads every document). Languages are
weighed by characters of extracted text, each document's language as corpus_snapshot recorded it
(identified, or set in its front matter). A model the user named is never replaced: `uncovered`
says how much of the corpus it was not trained on, for a warning. A corpus of no text keeps the
English default.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rag_assets import catalog
from rag_assets.ingest.language import name_of

ENGLISH = 0.9  # a corpus with at least this share of its characters in English is English
NOT_ENGLISH = 0.1  # one with at most this share is not: between the two it is mixed
PART = 0.1  # a share of the corpus a model cannot read that is worth a warning


@dataclass(frozen=True)
class Choice:
    models: str  # comma-separated, the serving one first
    reason: str  # one line a user reads: the corpus's languages and what follows from them


def corpus_languages(snapshot: pd.DataFrame) -> dict[str, float]:
    """Share of the extracted characters per language, largest first ({} for no text); a document
    with no letters (`und`) has no language and is not counted."""
    ok = snapshot[(snapshot["status"] == "ok") & snapshot["language"].notna() & (snapshot["language"] != "und")]
    chars = ok["text"].str.len().groupby(ok["language"]).sum()
    total = chars.sum()
    if not total:
        return {}
    return {str(k): float(v / total) for k, v in chars.sort_values(ascending=False, kind="stable").items()}


def described(shares: dict[str, float]) -> str:
    """`Bulgarian 97 %, English 3 %` (the three largest)."""
    parts = [f"{name_of(k)} {v:.0%}" for k, v in list(shares.items())[:3]]
    return ", ".join(parts) + (", ..." if len(shares) > 3 else "") if parts else "no text"


def choose(shares: dict[str, float]) -> Choice:
    """The models for a corpus with these language shares, and why."""
    english = shares.get("en", 0.0)
    default, multilingual = catalog.DEFAULT_EMBEDDER, catalog.MULTILINGUAL_EMBEDDER
    corpus = f"the corpus is {described(shares)}"
    if not shares or english >= ENGLISH:
        return Choice(default, f"{corpus}: {default}, English")
    if english <= NOT_ENGLISH:
        return Choice(multilingual, f"{corpus}: {multilingual}, multilingual ({default} reads English only)")
    return Choice(
        f"{multilingual},{default}",
        f"{corpus}: {multilingual} (multilingual, serves) and {default} (English, compared)",
    )


def uncovered(model: str, shares: dict[str, float]) -> float:
    """Share of the corpus in languages the packaged `model` was not trained on (0 for a multilingual one)."""
    return outside(catalog.PACKAGED[model].languages, shares)


def outside(languages: tuple[str, ...], shares: dict[str, float]) -> float:
    """Share of the corpus not in `languages` (empty: every language)."""
    return 0.0 if not languages else sum(v for k, v in shares.items() if k not in languages)


def generator_cannot_write(packaged_generator: bool, shares: dict[str, float]) -> str:
    """Why the packaged generator cannot write for this corpus ("" when it can, or is not the one
    answering): it writes English only, and the corpus is mostly in other languages."""
    share = outside(catalog.GENERATOR_LANGUAGES, shares)
    if not packaged_generator or share < ENGLISH:
        return ""
    return (
        f"the packaged generator writes English only and {share:.0%} of this corpus is in other languages "
        f"({described(shares)})"
    )


def answerers_for(answerers: list[str], packaged_generator: bool, shares: dict[str, float]) -> tuple[list[str], str]:
    """The answerers to compare on this corpus, and why one was left out ("" when none was): on
    a corpus the packaged generator cannot write for, its answers would be English (or nonsense)
    about the sources, and the extractive answerer answers alone."""
    why = generator_cannot_write(packaged_generator, shares) if "generate" in answerers else ""
    if not why:
        return answerers, ""
    if answerers == ["generate"]:  # asked for alone: kept, and said
        return answerers, f"generate kept, as the only answerer asked for, although {why}"
    left_out = (
        f"generate left out: {why}; the extractive answerer quotes the sources in their own language (give "
        "--generator or --generator-url for a model that writes it)"
    )
    return [a for a in answerers if a != "generate"], left_out


def coverage_warning(
    model: str, shares: dict[str, float], over_window: dict[str, tuple[int, int]] | None = None
) -> str | None:
    """One line for a named model not trained on a part (PART or more) of the corpus, None
    otherwise: the share it cannot read and, once embedded, its chunks over the window per strategy
    (`over_window`: strategy -> (over, chunks)), which a model splitting unknown words into pieces fills."""
    share = uncovered(model, shares)
    if share < PART:
        return None
    trained = ", ".join(name_of(code) for code in catalog.PACKAGED[model].languages)
    cost = "; ".join(
        f"{o} of {n} chunks of strategy {s} exceed its window" for s, (o, n) in (over_window or {}).items()
    )
    return (
        f"{model} was trained on {trained} only and {share:.0%} of this corpus is in other languages "
        f"({described(shares)})" + (f": {cost}" if cost else "") + f"; without --models the run embeds it with "
        f"{catalog.MULTILINGUAL_EMBEDDER} (docs/results.md, Languages and models, gives the recall each loses)"
    )
