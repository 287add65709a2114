"""An experiment's arms made real: chunk sets from their settings, and the identity of every model
the arms name (made by the lab's own factories: rag_assets.retrieval.embedders, .rerank)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rag_assets.chunking import placed
from rag_assets.chunking.strategies import STRATEGIES, Strategy, chunk_document, chunk_documents
from rag_assets.experiment.spec import Arm, Experiment
from rag_assets.retrieval import embedders, rerank


@dataclass
class ChunkedArm:
    """What a chunker arm made: the chunks indexed, the passages a hit returns (the same table
    for plain chunking) and which passage each indexed chunk returns (None: itself)."""

    indexed: pd.DataFrame
    returned: pd.DataFrame
    returned_of: dict[str, str] | None

    def fingerprint(self) -> str:
        """The chunk set's content, whatever its arm is called: two arms with one fingerprint made
        the same chunks (same spans, same embedded texts) and the same passages."""
        digest = hashlib.sha256()
        for frame in (self.indexed, self.returned):
            for row in frame[["document_id", "start", "end", "text"]].itertuples(index=False):
                digest.update(f"{row.document_id}\0{row.start}\0{row.end}\0{row.text}\n".encode())
            digest.update(b"\1")
        return digest.hexdigest()[:16]


def _pieces(spec, count_tokens):
    """The library's cut of one text: (pieces, its own offsets or None). `count_tokens(text)`: the
    embedding model's count, for sizes in tokens."""
    size, overlap = spec.size, spec.absolute_overlap()
    tokens = spec.unit == "tokens"
    if spec.kind == "semchunk":
        import semchunk

        chunker = semchunk.chunkerify(count_tokens if tokens else len, size)  # it reads a share below 1 itself
        return lambda text: chunker(text, offsets=True, overlap=spec.overlap or None)
    import chonkie

    counter = count_tokens if tokens else "character"
    made = {
        "recursive": lambda: chonkie.RecursiveChunker(tokenizer=counter, chunk_size=size),
        "token": lambda: chonkie.TokenChunker(tokenizer=counter, chunk_size=size, chunk_overlap=overlap),
        "sentence": lambda: chonkie.SentenceChunker(tokenizer=counter, chunk_size=size, chunk_overlap=overlap),
    }[spec.chonkie]()

    def cut(text: str):
        chunks = made.chunk(text)
        return [c.text for c in chunks], [(c.start_index, c.end_index) for c in chunks]

    return cut


def chunk_arm(documents: pd.DataFrame, arm: Arm, count_tokens=None) -> ChunkedArm:
    """The chunk set of `arm` over a snapshot's documents. `count_tokens(text)`: the embedding
    model's count, for sizes in tokens. UnplacedChunks when a library chunk is nowhere in its document."""
    spec = arm.spec
    if spec.kind == "preset":
        strategy = STRATEGIES[spec.preset]
        small = lambda d, title, text, language: chunk_document(d, title, text, strategy)  # noqa: E731
    elif spec.kind == "cut" and spec.cut == "sentences":
        small = lambda d, title, text, language: placed.sentence_chunks(d, arm.name, text, language)  # noqa: E731
    elif spec.kind == "cut":
        strategy = Strategy(arm.name, spec.cut, spec.header, spec.absolute_overlap(), spec.size)
        small = lambda d, title, text, language: chunk_document(d, title, text, strategy)  # noqa: E731
    else:
        cut, unplaced = _pieces(spec, count_tokens), {}

        def small(d, title, text, language):
            pieces, hints = cut(text)
            made = placed.placed_chunks(d, arm.name, text, pieces, hints)
            if made.unplaced:
                unplaced[d] = made.unplaced
            return made.chunks

    returned_by_document, returned_of = {}, {}
    parent_size, window = getattr(spec, "parent_size", None), getattr(spec, "window", None)

    def indexed(d, title, text, language):
        chunks = small(d, title, text, language)
        if parent_size:
            returned_by_document[d], of = placed.parents(d, arm.name, title, text, chunks, parent_size)
            returned_of.update(of)
        elif window:
            returned_by_document[d], of = placed.windows(arm.name, text, chunks, window)
            returned_of.update(of)
        return chunks

    frame = chunk_documents(documents, indexed)
    if spec.kind in ("semchunk", "chonkie"):
        placed.refuse_unplaced(arm.name, unplaced)
    if not returned_of:
        return ChunkedArm(frame, frame, None)
    returned = chunk_documents(documents, lambda d, title, text, language: returned_by_document.get(d, []))
    return ChunkedArm(frame, returned, returned_of)


def counter_of(model):
    """What a chunker counts the model's tokens with (special tokens aside); None where its
    tokenizer is not here."""
    if model is None or model.count_tokens(["probe"]) is None:
        return None
    return lambda text: int(model.count_tokens([text], special_tokens=False)[0])


def identities(experiment: Experiment, records: Path, lm=None, log=print, keep_record: bool = True) -> dict:
    """arm name -> the identity of the model it names (embedders and rerankers; made once each, an
    endpoint probed), None for one that cannot be made now (said through `log`)."""
    from rag_assets.retrieval.remote import EndpointError

    used = {a for c in experiment.configurations for a in (c.embedder, c.reranker) if a is not None}
    out: dict[str, str | None] = {}
    for arm in used:
        if arm.kind == "none":
            continue
        try:
            if arm.axis == "embedders":
                out[arm.name] = embedders.make(arm.spec, records, keep_record).identity
            elif arm.kind == "llm":
                out[arm.name] = lm().identity if lm else "the local generator"
            else:
                out[arm.name] = rerank.make(arm.spec, lm, records).model
        except (EndpointError, OSError, ValueError) as exc:
            log(f"{arm.axis[:-1]} {arm.name}: {exc}")
            out[arm.name] = None
    return out


UNAVAILABLE = "unavailable"  # the identity of a model that cannot be made now


def fingerprints(experiment: Experiment, records: Path, lm=None, log=print) -> dict[str, str]:
    """Each configuration's fingerprint with its models' identities. A model that cannot be made
    now (an endpoint down) counts as UNAVAILABLE: its configurations are stale, run again, and fail
    in the open, rather than keep a result of their earlier settings as if it were theirs."""
    known = identities(experiment, records, lm, log)
    return {
        c.id: c.fingerprint(
            {
                a.name: known.get(a.name) or UNAVAILABLE
                for a in (c.embedder, c.reranker)
                if a is not None and a.kind != "none"
            }
        )
        for c in experiment.configurations
    }
