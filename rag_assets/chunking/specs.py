"""What a chunker is, as settings: a preset strategy, the built-in cuts, semchunk or chonkie, and
what a hit returns (the chunk, its parent passage, or a window of sentences around it). Typed,
frozen and checked when made (pydantic), every setting applied or refused: a setting a chunker
cannot honour is an error, never ignored. Light (the catalog and pydantic), for `rag-assets check`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_assets.catalog import STRATEGIES

MAX_SIZE = 100_000  # characters or tokens of one chunk
MAX_WINDOW = 50  # sentences either side


class Chunker(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    def settings(self) -> dict:
        return self.model_dump(mode="json")

    def absolute_overlap(self) -> int:
        """The overlap in the chunker's unit: below 1 it is a share of `size`."""
        return _absolute(getattr(self, "overlap", 0), getattr(self, "size", None) or 0)


def _absolute(overlap: int | float, size: int) -> int:
    return round(overlap * size) if overlap < 1 else int(overlap)


def _check_sizes(size: int, overlap: int | float, parent_size: int | None) -> None:
    if overlap >= 1 and overlap != int(overlap):
        raise ValueError(f"overlap {overlap} must be a whole number, or below 1 a share of size")
    if _absolute(overlap, size) >= size:
        raise ValueError(f"overlap {overlap:g} must be smaller than size {size}")
    if parent_size is not None and parent_size <= size:
        raise ValueError(f"parent_size {parent_size} must be larger than size {size}")


class _Sized(Chunker):
    size: int = Field(ge=1, le=MAX_SIZE)
    overlap: int | float = Field(0, ge=0)  # characters or tokens, or below 1 a share of size
    parent_size: int | None = Field(None, ge=1, le=MAX_SIZE)  # index the chunks, return the passage

    @model_validator(mode="after")
    def _fits(self):
        _check_sizes(self.size, self.overlap, self.parent_size)
        return self


class Preset(Chunker):
    """One of the chapter's strategies (A-F, W, doc), as the lab cuts it."""

    preset: Literal[STRATEGIES]  # type: ignore[valid-type]

    kind: ClassVar[str] = "preset"


class Cut(Chunker):
    """The built-in cuts: `blind` every `size` characters, `boundaries` (never inside a paragraph,
    sentences when one exceeds `size`), or `sentences` (one chunk a sentence, returning `window`
    sentences either side); `header` prepends `[Title > Section]` to what is embedded."""

    cut: Literal["blind", "boundaries", "sentences"]
    size: int | None = Field(None, ge=1, le=MAX_SIZE)
    overlap: int | float = Field(0, ge=0)  # characters, or below 1 a share of size
    header: bool = False
    parent_size: int | None = Field(None, ge=1, le=MAX_SIZE)
    window: int | None = Field(None, ge=0, le=MAX_WINDOW)

    kind: ClassVar[str] = "cut"

    @model_validator(mode="after")
    def _fits(self):
        if self.cut == "sentences":
            extra = [k for k in ("size", "parent_size", "header") if getattr(self, k)] + (
                ["overlap"] * bool(self.overlap)
            )
            if extra:
                raise ValueError(f"cut: sentences makes one chunk per sentence: {', '.join(extra)} cannot apply")
            return self
        if self.window is not None:
            raise ValueError("window (sentences returned around a hit) needs cut: sentences")
        if self.size is None:
            raise ValueError("size must be a whole number ≥ 1")
        _check_sizes(self.size, self.overlap, self.parent_size)
        return self


class Semchunk(_Sized):
    """semchunk, in characters or in the configuration's embedder's tokens."""

    semchunk: Literal[True] = True
    unit: Literal["characters", "tokens"] = "characters"

    kind: ClassVar[str] = "semchunk"


class Chonkie(_Sized):
    """chonkie's recursive or sentence chunker (characters or the embedder's tokens), or its token
    chunker (characters)."""

    chonkie: Literal["recursive", "token", "sentence"]
    unit: Literal["characters", "tokens"] = "characters"

    kind: ClassVar[str] = "chonkie"

    @model_validator(mode="after")
    def _honoured(self):
        if self.chonkie == "recursive" and self.overlap:
            raise ValueError("chonkie's recursive chunker has no overlap: drop overlap, or use chonkie: sentence")
        if self.chonkie == "token" and self.unit == "tokens":
            raise ValueError(
                "chonkie's token chunker counts characters here; for model tokens use chonkie: recursive or "
                "sentence, or semchunk"
            )
        return self


ChunkerSpec = Preset | Cut | Semchunk | Chonkie
