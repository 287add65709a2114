"""An experiment's arms made real: chunk sets, embedders and rerankers from their settings."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rag_assets.chunking import placed
from rag_assets.chunking.strategies import STRATEGIES, Strategy, chunk_document, chunk_documents
from rag_assets.experiment.spec import Arm
from rag_assets.retrieval.embedding import Embedder
from rag_assets.retrieval.remote import BATCH, Endpoint, EndpointEmbedder, EndpointReranker


@dataclass
class ChunkedArm:
    """What a chunker arm made: the chunks indexed, the passages a hit returns (the same table
    for plain chunking) and which passage each indexed chunk returns (None: itself)."""

    indexed: pd.DataFrame
    returned: pd.DataFrame
    returned_of: dict[str, str] | None


def _pieces(arm: Arm, count_tokens):
    """The library's cut of one text: (pieces, its own offsets or None)."""
    s = arm.settings
    size, overlap = s["size"], s.get("overlap", 0)
    counter = count_tokens if s.get("unit") == "tokens" else len
    if arm.kind == "semchunk":
        import semchunk

        chunker = semchunk.chunkerify(counter, size)
        return lambda text: chunker(text, offsets=True, overlap=overlap or None)
    import chonkie

    tokenizer = counter if s.get("unit") == "tokens" else "character"
    made = {
        "recursive": lambda: chonkie.RecursiveChunker(tokenizer=tokenizer, chunk_size=size),
        "token": lambda: chonkie.TokenChunker(tokenizer=tokenizer, chunk_size=size, chunk_overlap=overlap),
        "sentence": lambda: chonkie.SentenceChunker(tokenizer=tokenizer, chunk_size=size, chunk_overlap=int(overlap)),
    }[s["chonkie"]]()

    def cut(text: str):
        chunks = made.chunk(text)
        return [c.text for c in chunks], [(c.start_index, c.end_index) for c in chunks]

    return cut


def chunk_arm(documents: pd.DataFrame, arm: Arm, count_tokens=None) -> ChunkedArm:
    """The chunk set of `arm` over a snapshot's documents. `count_tokens(text)`: the embedding
    model's token count, for sizes in tokens. UnplacedChunks when a library chunk is nowhere in
    its document."""
    s = arm.settings
    if arm.kind == "preset":
        strategy = STRATEGIES[s["preset"]]
        small = lambda d, title, text, language: chunk_document(d, title, text, strategy)  # noqa: E731
    elif arm.kind == "cut" and s["cut"] == "sentences":
        small = lambda d, title, text, language: placed.sentence_chunks(d, arm.name, text, language)  # noqa: E731
    elif arm.kind == "cut":
        strategy = Strategy(arm.name, s["cut"], bool(s.get("header")), int(s.get("overlap", 0)), s["size"])
        small = lambda d, title, text, language: chunk_document(d, title, text, strategy)  # noqa: E731
    else:
        cut, unplaced = _pieces(arm, count_tokens), {}

        def small(d, title, text, language):
            pieces, hints = cut(text)
            made = placed.placed_chunks(d, arm.name, text, pieces, hints)
            if made.unplaced:
                unplaced[d] = made.unplaced
            return made.chunks

    returned_by_document, returned_of = {}, {}

    def indexed(d, title, text, language):
        chunks = small(d, title, text, language)
        if "parent_size" in s:
            returned_by_document[d], of = placed.parents(d, arm.name, title, text, chunks, s["parent_size"])
            returned_of.update(of)
        elif s.get("window"):
            returned_by_document[d], of = placed.windows(arm.name, text, chunks, s["window"])
            returned_of.update(of)
        return chunks

    frame = chunk_documents(documents, indexed)
    if arm.kind in ("semchunk", "chonkie"):
        placed.refuse_unplaced(arm.name, unplaced)
    if not returned_of:
        return ChunkedArm(frame, frame, None)
    returned = chunk_documents(documents, lambda d, title, text, language: returned_by_document.get(d, []))
    return ChunkedArm(frame, returned, returned_of)


class Prefixed:
    """A local model with the prefixes it was trained with (e5, bge): its identity carries them."""

    def __init__(self, inner: Embedder, query_prefix: str, passage_prefix: str):
        self.inner, self.query_prefix, self.passage_prefix = inner, query_prefix, passage_prefix
        tag = hashlib.sha256(f"{query_prefix}\0{passage_prefix}".encode()).hexdigest()[:8]
        self.identity = f"{inner.identity}+prefixes:{tag}"
        self.name, self.dim = inner.name, inner.dim

    def encode(self, texts: list[str], progress: bool = False, query: bool = False):
        prefix = self.query_prefix if query else self.passage_prefix
        return self.inner.encode([prefix + t for t in texts], progress)

    def count_tokens(self, texts, special_tokens: bool = True):
        return self.inner.count_tokens(texts, special_tokens)


def endpoint_of(arm: Arm) -> Endpoint:
    s = arm.settings
    return Endpoint(s["url"], s.get("model"), s.get("key_env"), s.get("retries", 3), s.get("timeout_s", 30.0))


def record_of(records: Path, endpoint: Endpoint) -> Path:
    """Where an embedding endpoint's probe vectors are kept between runs."""
    return records / (hashlib.sha256(f"{endpoint.url}\0{endpoint.model}".encode()).hexdigest()[:16] + ".json")


def embedder_of(arm: Arm, records: Path, endpoint: Endpoint | None = None, keep_record: bool = True):
    """The embedder an arm names. An endpoint is probed here (its identity is what it returns);
    `records` keeps each endpoint's probe vectors between runs (`keep_record=False`: only read).
    `endpoint`: the arm's endpoint called otherwise (fewer retries, a shorter timeout)."""
    from rag_assets.retrieval import packaged

    s = arm.settings
    if arm.kind == "packaged":
        return packaged.embedder(s["packaged"])
    if arm.kind == "path":
        model = Embedder(Path(s["path"]), s.get("name", Path(s["path"]).name), s.get("batch_size", 32))
        if s.get("query_prefix") or s.get("passage_prefix"):
            return Prefixed(model, s.get("query_prefix", ""), s.get("passage_prefix", ""))
        return model
    endpoint = endpoint or endpoint_of(arm)
    return EndpointEmbedder(
        endpoint,
        record_of(records, endpoint),
        s.get("batch_size", BATCH),
        s.get("concurrency", 2),
        s.get("query_prefix", ""),
        s.get("passage_prefix", ""),
        keep_record,
    )


def reranker_of(arm: Arm, lm=None):
    """The reranker an arm names (None for `none`); `lm()` gives the local generator for `llm`."""
    from rag_assets.retrieval.rerank import CrossEncoderReranker, LLMRelevanceReranker

    s = arm.settings
    depth = s.get("depth", 25)
    if arm.kind == "none":
        return None
    if arm.kind == "url":
        return EndpointReranker(endpoint_of(arm), depth)
    if arm.kind == "llm":
        return LLMRelevanceReranker(lm(), depth)
    from sentence_transformers import CrossEncoder

    reranker = CrossEncoderReranker(CrossEncoder(s["cross_encoder"], device="cpu"), s["cross_encoder"])
    reranker.depth = depth
    return reranker


def fingerprints(experiment, records: Path, log=print) -> dict[str, str]:
    """Each configuration's fingerprint with its embedder's identity (each embedder made once; an
    endpoint probed). A configuration whose embedder cannot be made is left out, and said."""
    from rag_assets.retrieval.remote import EndpointError

    identities: dict[str, str | None] = {}
    for arm in experiment.arms["embedders"]:
        if any(c.embedder is arm for c in experiment.configurations):
            try:
                identities[arm.name] = embedder_of(arm, records).identity
            except (EndpointError, OSError, ValueError) as exc:
                log(f"embedder {arm.name}: {exc}")
                identities[arm.name] = None
    out = {}
    for c in experiment.configurations:
        if c.embedder is None:
            out[c.id] = c.fingerprint()
        elif identities.get(c.embedder.name):
            out[c.id] = c.fingerprint({c.embedder.name: identities[c.embedder.name]})
    return out
