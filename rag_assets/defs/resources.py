"""The resources every asset, sensor and reader of the graph shares, made from one `Settings`
(`from_settings`) and never read back: dataset, data dir, ground-truth sample, embedding models,
compute engine, BM25, rerankers, the generator."""

from functools import lru_cache
from pathlib import Path

from dagster import ConfigurableResource

from rag_assets import catalog, locking
from rag_assets.answering.answerer import serving_strategy
from rag_assets.answering.endpoint import EndpointLM
from rag_assets.answering.generation import LocalLM
from rag_assets.defs.io_manager import ParquetIOManagerFactory
from rag_assets.ingest.corpus import MAX_BYTES
from rag_assets.ingest.dataset import Dataset
from rag_assets.ingest.ground_truth import FULL, Sample
from rag_assets.layout import DataDir
from rag_assets.retrieval import embedders
from rag_assets.retrieval.embedding import Embedder
from rag_assets.retrieval.lexical import BM25Settings
from rag_assets.settings import ENGINES, Settings

LLM_RERANK_SAMPLE = 30  # answerable questions the opt-in LLM reranker scores


class DatasetResource(ConfigurableResource):
    """The corpus and questions a run reads (native dataset format, see the README)."""

    root: str
    full_ground_truth: bool = False
    sample_answerable: int = Sample.answerable
    sample_unanswerable: int = Sample.unanswerable
    sample_seed: int = Sample.seed
    max_file_mb: float = MAX_BYTES / 2**20
    questions: str = "auto"  # auto, written or drafted (rag_assets.drafting.question_set)
    min_written: int = 1  # auto drafts when questions.jsonl has fewer valid answerable questions
    draft_questions: int = Sample.answerable  # needles to draft a question for
    draft_seed: int = 13

    def dataset(self) -> Dataset:
        return Dataset(Path(self.root)).check()

    def sample(self) -> Sample:
        if self.full_ground_truth:
            return FULL
        return Sample(self.sample_answerable, self.sample_unanswerable, None, self.sample_seed)


class DataDirResource(ConfigurableResource):
    """The data dir: assets that are not tables (BM25 indexes) and reports live under it. A run
    that uses it holds the data dir's lock shared (see rag_assets.locking)."""

    root: str

    def setup_for_execution(self, context) -> None:
        locking.shared(self.root, log=context.log.info if context.log else None)

    @property
    def layout(self) -> DataDir:
        return DataDir(self.root)


class EmbedderResource(ConfigurableResource):
    """The embedding models, packaged ones by name (minilm, minilm-fp32, mpnet, me5-small;
    rag_assets.catalog.PACKAGED), comma-separated: each has its own partitions of embeddings and
    HNSW graphs, and retrieval runs compare them; the first is the one `ask` serves from."""

    models: str = catalog.DEFAULT_EMBEDDER
    chosen_because: str = ""  # who named them, or the corpus languages they were chosen for

    def names(self) -> list[str]:
        return catalog.model_names(self.models)

    @property
    def primary(self) -> str:
        return self.names()[0]

    def get(self, model: str | None = None) -> Embedder:
        """This process's one Embedder for `model` (default: the first; weights load on first use)."""
        return embedders.packaged(model or self.primary)

    def identity(self, model: str | None = None) -> str:
        """Name plus fingerprint; the files are hashed, not loaded."""
        return self.get(model).identity


class ComputeResource(ConfigurableResource):
    """Where the heavy work runs: `local` (this process; the default) or `ray`: documents are
    extracted and queries searched in batches as Ray tasks, and the texts the embedding cache
    lacks are encoded in shards by a pool of Ray actors (`ray_workers`, 0 = one per CPU of the
    cluster) that write each shard to the cache. `ray_address`: empty starts a Ray cluster for
    the run; `auto`, `host:port` or `ray://host:port` joins one."""

    engine: str = "local"
    ray_address: str = ""
    ray_workers: int = 0

    def runner(self, log):
        """None for local work; else the Ray engine, logging per-shard progress to `log`."""
        if self.engine not in ENGINES:
            raise ValueError(f"compute engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.engine == "local":
            return None
        from rag_assets.retrieval.ray_engine import RayEngine

        return RayEngine(address=self.ray_address, workers=self.ray_workers, log=log)


class RetrievalSettings(ConfigurableResource):
    """BM25 parameters, the rerankers, and how questions are answered: the serving strategy
    (the refusal sweep, the LLM reranker, generation_eval and `ask` use it) and the refusal
    gate's threshold. The cross-encoder is a local folder or a cached name. The LLM reranker is
    opt-in (0 questions: off): it measured worse than no reranking on every corpus tried, and
    on a CPU it costs seconds per question, so it runs on a fixed sample of answerable questions
    (`LLM_RERANK_SAMPLE` with `rag-assets run --rerank-llm`)."""

    bm25_variant: str = "lucene"
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_analyzer: str = catalog.DEFAULT_ANALYZER
    cross_encoder: str = ""
    llm_rerank_questions: int = 0
    llm_rerank_depth: int = catalog.LLM_RERANK_DEPTH
    serving_strategy: str = catalog.SERVING_STRATEGY
    refusal_threshold: float | None = None  # None: the threshold of the model that retrieves (catalog.PACKAGED)
    # hnsw_index is built, and `ask` searches it instead of every vector, from this many chunks on
    ann_min_chunks: int = catalog.ANN_MIN_CHUNKS

    def bm25(self) -> BM25Settings:
        return BM25Settings(
            variant=self.bm25_variant,
            k1=self.bm25_k1,
            b=self.bm25_b,
            analyzer=self.bm25_analyzer,
        )

    def threshold(self, model: str) -> float:
        """The refusal gate's threshold for `model`'s distances: the one configured, else the model's own."""
        return self.refusal_threshold if self.refusal_threshold is not None else catalog.PACKAGED[model].threshold

    def serving(self, present) -> str:
        return serving_strategy(self.serving_strategy, present)


class GeneratorResource(ConfigurableResource):
    """The language model that answers (and scores passages for `rerank-llm`): a .gguf file or
    a transformers model folder; empty = the packaged SmolLM2-135M-Instruct; or, with `url`, the
    model `url_model` behind an OpenAI-compatible endpoint (its key from $RAG_ASSETS_GENERATOR_KEY,
    never a setting). `answerers`: what generation_eval compares, paired by question. Greedy decoding;
    prompts longer than `input_budget` tokens keep whole chunks while they fit; the answer starts
    with `answer_prefix` (empty: the model starts it). `generation_eval` decodes its sample
    `eval_batch` answers at a time (1: one at a time, as `ask` does, so that its generation
    times are latencies)."""

    model: str = ""
    url: str = ""
    url_model: str = ""
    url_timeout_s: float = 120.0
    answerers: str = "generate,extractive"
    max_new_tokens: int = catalog.MAX_NEW_TOKENS
    input_budget: int = catalog.INPUT_BUDGET
    answer_prefix: str = catalog.ANSWER_PREFIX
    eval_answerable: int = 20
    eval_unanswerable: int = 8
    eval_out_of_domain: int = 8
    eval_seed: int = 7
    eval_batch: int = 8

    def get(self):
        """This process's one generator for these settings (the weights load on first use; an
        endpoint is checked first, and refused in one line when it cannot answer)."""
        if self.url:
            return _endpoint(self.url, self.url_model, self.max_new_tokens, self.url_timeout_s)
        return _lm(self.model, self.max_new_tokens, self.answer_prefix)

    def answerer_names(self) -> list[str]:
        return catalog.answerer_names(self.answerers)

    @property
    def packaged(self) -> bool:
        """Whether the answers come from the packaged generator (English only)."""
        return not self.model and not self.url

    def eval_sample(self) -> Sample:
        return Sample(self.eval_answerable, self.eval_unanswerable, self.eval_out_of_domain, self.eval_seed)


@lru_cache(maxsize=1)
def _endpoint(url: str, model: str, max_new_tokens: int, timeout_s: float) -> EndpointLM:
    lm = EndpointLM(url, model, max_new_tokens, timeout_s)
    lm.check()
    return lm


@lru_cache(maxsize=1)
def _lm(model: str, max_new_tokens: int, answer_prefix: str) -> LocalLM:
    """One loaded generator per process: the LLM reranker and generation_eval share it."""
    return LocalLM(model, max_new_tokens, answer_prefix)


def from_settings(settings: Settings) -> dict:
    """The resources every asset, sensor and reader of the graph shares, from `settings`."""
    layout = DataDir(settings.data_dir)
    return {
        "io_manager": ParquetIOManagerFactory(base_path=str(layout.assets)),
        "dataset": DatasetResource(
            root=settings.dataset,
            full_ground_truth=settings.full_ground_truth,
            questions=settings.questions,
            **({"draft_questions": settings.draft_questions} if settings.draft_questions else {}),
            **({"max_file_mb": settings.max_file_mb} if settings.max_file_mb else {}),
        ),
        "data_dir": DataDirResource(root=str(layout.root)),
        "embedder": EmbedderResource(models=settings.models, chosen_because=settings.model_choice),
        "compute": ComputeResource(engine=settings.engine, ray_address=settings.ray_address),
        "retrieval": RetrievalSettings(
            cross_encoder=settings.cross_encoder,
            llm_rerank_questions=LLM_RERANK_SAMPLE if settings.rerank_llm else 0,
            llm_rerank_depth=settings.llm_rerank_depth,
            serving_strategy=settings.serving_strategy,
            refusal_threshold=settings.threshold,
            ann_min_chunks=settings.ann_min_chunks,
            **({"bm25_analyzer": settings.bm25_analyzer} if settings.bm25_analyzer else {}),
        ),
        "generator": GeneratorResource(
            model=settings.generator,
            url=settings.generator_url,
            url_model=settings.generator_model,
            url_timeout_s=settings.generator_timeout_s,
            max_new_tokens=settings.max_new_tokens,
            input_budget=settings.input_budget,
            answer_prefix=settings.answer_prefix,
            **({"answerers": settings.answerers} if settings.answerers else {}),
            **({} if settings.llm else {"eval_answerable": 0, "eval_unanswerable": 0, "eval_out_of_domain": 0}),
        ),
    }
