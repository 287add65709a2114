"""What `rag-assets ask` and `serve` answer from: one strategy's materialised index, never rebuilt,
and refused unless Dagster's own lineage says it is fresh (the same verdict the UI shows), its
blocking checks passed, and its files can be read; or the experiment configuration `rag-assets use`
chose, made from the specs its run measured and refused unless that run's result is for its
settings, models and documents now (rag_assets.experiment.served); and the answerer both build
over it, from the same `Settings`. Nothing here writes: the data dir and the instance may be
read-only. An experiment file is read only for the configuration chosen, and only its models are
called (its domain is not in the definitions built here)."""

import contextlib
import logging
import warnings
from datetime import UTC, datetime
from shlex import quote

import pandas as pd
from dagster import AssetCheckKey, AssetKey, AssetRecordsFilter, DagsterInstance, Definitions

# Dagster has no public API for the stale verdict the UI shows: these two are pinned by
# tests/test_layers.py and by the freshness tests, against dagster==1.13.27.
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver

from rag_assets.answering.answerer import build_answerer, serving_strategy, with_titles
from rag_assets.app import served_choice
from rag_assets.app.instance import (
    check_instance,
    described,
    open_instance,
    readable_home,
    storage_failure,
    use_data_dir,
)
from rag_assets.defs.external_sources import changed_source_events, versions_of
from rag_assets.defs.glue import label
from rag_assets.defs.partitions import model_and_strategy, model_strategy_key
from rag_assets.experiment import served as configurations
from rag_assets.layout import DataDir
from rag_assets.retrieval.ann import HnswIndex
from rag_assets.retrieval.lexical import IndexUnreadable
from rag_assets.retrieval.search import ChunkIndex
from rag_assets.settings import Settings

# The sources the served index is built from, and the asset that reads each (questions are not served).
SOURCE_READERS = {
    "corpus_files": "corpus_snapshot",
    "embedding_model": "embeddings",
    "chunker_settings": "chunk_sets",
    "bm25_settings": "bm25_index",
}


class IndexNotReady(RuntimeError):
    """The index is missing, stale, failed a check or cannot be read: answering would mislead."""


def answerer(
    settings: Settings,
    index: ChunkIndex,
    chunks: pd.DataFrame,
    embedder,
    lm,
    answerer: str,
    retriever: str,
    tenant=None,
    judge=None,
):
    """The answerer `ask` and `serve` build over an index (or a served configuration, which answers
    with its own models and retriever): every value from the same settings."""
    if isinstance(index, configurations.ServedConfiguration):
        if retriever != index.retriever:
            raise ValueError(
                f"configuration {index.config.id} ranks with {index.retriever}, not {retriever}: leave the "
                "retriever out, or name a strategy to answer from the lab's indexes"
            )
        return configurations.answerer(index, lm, answerer, settings.input_budget, tenant, judge)
    return build_answerer(
        index,
        chunks,
        embedder,
        lm,
        answerer=answerer,
        retriever=retriever,
        threshold=settings.served_threshold,
        budget=settings.input_budget,
        tenant=tenant,
        cross_encoder=settings.cross_encoder,
        llm_rerank_depth=settings.llm_rerank_depth,
        judge=judge,
        model=settings.served_model,
    )


def lab_or_chosen(settings: Settings, strategy: str | None, embedder: str | None, retriever: str | None) -> Settings:
    """The settings answers come from: the configuration `rag-assets use` chose, unless an option
    names a strategy, an embedder or a retriever of the lab's (then the lab's indexes, with the
    retriever named or the default one)."""
    from rag_assets.catalog import DEFAULT_RETRIEVER

    if not settings.chosen or not (strategy or embedder or retriever):
        return settings
    return settings.replace(chosen="", retriever=retriever or DEFAULT_RETRIEVER)


def local_generator(settings: Settings):
    """The local generator the settings name (its weights load on first use, if ever)."""
    from rag_assets.answering.generation import LocalLM

    return LocalLM(settings.generator, settings.max_new_tokens, settings.answer_prefix)


def stale_resolver(defs: Definitions, instance: DagsterInstance) -> CachingStaleStatusResolver:
    graph = defs.resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=datetime.now(UTC), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    return CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)


class Served:
    """A data dir's served indexes as its instance knows them: whether one can be served (and
    why not), its version, and the index itself. Reads only."""

    def __init__(self, defs: Definitions, instance: DagsterInstance, settings: Settings, chosen=None):
        """`chosen`: (experiment file, Configuration) to answer with; by default the one `rag-assets
        use` chose (settings.chosen), if any."""
        self.defs, self.instance, self.settings = defs, instance, settings
        self.layout, self.model = DataDir(settings.data_dir), settings.served_model
        if chosen is None and settings.chosen:
            chosen = served_choice.configuration(self.layout, settings.chosen)
        self.experiment, self.configuration = chosen or (None, None)

    def chosen(self, strategy: str) -> bool:
        """Whether `strategy` names the chosen configuration rather than one of the lab's strategies."""
        return self.configuration is not None and strategy == self.configuration.id

    def rerun(self) -> str:
        """The command that runs the chosen configuration's experiment again, as it works when printed."""
        return f"`rag-assets run --data-dir {quote(str(self.layout.root))} --experiment {quote(str(self.experiment))}`"

    def parts(self, strategy: str) -> list[tuple[AssetKey, str | None]]:
        """The partitions a strategy's served index is made of (the served model's embeddings), or
        the chosen configuration's (the snapshot and its run's result)."""
        if self.chosen(strategy):
            return [(AssetKey("corpus_snapshot"), None), (AssetKey(configurations.RUNS), strategy)]
        return [
            (AssetKey("corpus_snapshot"), None),
            (AssetKey("chunk_sets"), strategy),
            (AssetKey("embeddings"), model_strategy_key(self.model, strategy)),
            (AssetKey("bm25_index"), strategy),
        ]

    def problems(self, strategy: str) -> list[str]:
        """Why the strategy's index cannot be served, one phrase each (empty: it can): a file
        that cannot be read, a stale or missing part, a blocking check failed or never run."""
        latest = self.latest_parts(strategy)  # read once, for both checks that need it
        return (
            self.unreadable(strategy, latest) + self.freshness_problems(strategy) + self.failed_checks(strategy, latest)
        )

    def not_ready(self, strategy: str, problems: list[str]) -> IndexNotReady:
        """The one message a refused index gets, in `ask` and in `serve`."""
        if self.chosen(strategy):
            return IndexNotReady(
                f"configuration {strategy} cannot be served: {'; '.join(problems)}; run it again ({self.rerun()}) "
                "before asking"
            )
        model = self.model
        others = sorted(
            m
            for m, s in map(model_and_strategy, self.instance.get_materialized_partitions(AssetKey("embeddings")))
            if s == strategy and m != model
        )
        hint = f" (or answer with a model materialised for it: --embedder {' | '.join(others)})" if others else ""
        return IndexNotReady(
            f"the index of strategy {strategy} cannot be served: {'; '.join(problems)}; "
            f"materialise it again (`rag-assets run --data-dir {quote(str(self.layout.root))} --models {model}`, "
            "or from the UI) "
            f"before asking{hint}"
        )

    def unreadable(self, strategy: str, latest: list | None = None) -> list[str]:
        """The materialised parts of the strategy's index whose file this process cannot open now
        (a byte of each is read; one never materialised is the stale verdict's to name)."""
        out = []
        for key, partition, record in latest or self.latest_parts(strategy):
            if record is None:
                continue
            try:
                with self._file(key.to_user_string(), partition).open("rb") as f:
                    f.read(1)
            except OSError as exc:
                out.append(f"{label(key, partition)} cannot be read ({type(exc).__name__})")
        return out

    def _file(self, name: str, partition: str | None):
        """A file that holds a part: its Parquet table, or a BM25 index's parameters (on object
        storage the index is one archive object)."""
        layout = self.layout
        if name != "bm25_index":
            return layout.table(name, partition)
        return layout.bm25(partition) if layout.remote else layout.bm25(partition) / "params.index.json"

    def freshness_problems(self, strategy: str) -> list[str]:
        """Source versions (corpus folder, embedding model, chunker settings) are compared with
        the ones last recorded without recording anything, so an edit made since then is seen now."""
        problems, model, parts = [], self.model, self.parts(strategy)
        resolver = stale_resolver(self.defs, self.instance)
        status = {}
        for key, partition in parts:
            if key == AssetKey(configurations.RUNS):  # not in the served definitions: present, or not
                made = self.instance.get_materialized_partitions(key)
                status[key, partition] = "FRESH" if partition in made else "MISSING"
            else:
                status[key, partition] = resolver.get_status(key, partition).value
        readers = dict(parts[1:])
        for event in changed_source_events(self.instance, versions_of(self.defs)):
            source = event.asset_key.to_user_string()
            if source in SOURCE_READERS and event.partition in (None, strategy, model):
                reader = AssetKey(SOURCE_READERS[source])
                part = (reader, readers.get(reader))
                if status.get(part, "MISSING") == "MISSING":  # not part of it, or never made: said below
                    continue
                problems.append(
                    f"{label(*part)} is stale: {label(event.asset_key, event.partition)} changed since the last run"
                )
        for key, partition in parts:
            if status[key, partition] == "MISSING":
                problems.append(f"{label(key, partition)} has never been materialised")
            elif status[key, partition] == "STALE":
                causes = sorted(
                    {
                        f"{c.reason}"
                        + (f" ({label(c.dependency.asset_key, c.dependency.partition_key)})" if c.dependency else "")
                        for c in resolver.get_stale_causes(key, partition)
                    }
                )
                problems.append(f"{label(key, partition)} is stale: {'; '.join(causes)}")
        return problems

    def latest_parts(self, strategy: str) -> list[tuple[AssetKey, str | None, object]]:
        """(asset, partition, its newest materialisation record or None) for each part of the index."""
        out = []
        for key, partition in self.parts(strategy):
            records = self.instance.fetch_materializations(
                AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
            ).records
            out.append((key, partition, records[0] if records else None))
        return out

    def version(self, strategy: str) -> tuple:
        """The storage ids of the newest materialisations the strategy's index is made of."""
        return tuple(getattr(record, "storage_id", None) for _, _, record in self.latest_parts(strategy))

    def failed_checks(self, strategy: str, latest: list | None = None) -> list[str]:
        """The served assets' blocking checks that failed on, or never ran on, their latest materialisation."""
        graph = self.defs.resolve_asset_graph()
        out = []
        for key, partition, record in latest or self.latest_parts(strategy):
            for check in sorted(
                (c for c in graph.asset_check_keys if c.asset_key == key and graph.get_check_spec(c).blocking),
                key=lambda c: c.name,
            ):
                passed = _evaluation(self.instance, check, record) if record else True
                if passed is False:
                    out.append(f"{label(key, partition)} failed its check {check.name}")
                elif passed is None:
                    out.append(f"{label(key, partition)} has no result of its check {check.name}")
        return out

    def default_strategy(self) -> str:
        """The strategy answers come from when none is named: the rule the refusal sweep and
        generation_eval use (`serving_strategy`), over the strategies whose chunk set and
        embeddings of the served model have been materialised; the configured one when none has
        (refused later, by name)."""
        if self.configuration is not None:
            return self.configuration.id
        model = self.model
        partitions = map(model_and_strategy, self.instance.get_materialized_partitions(AssetKey("embeddings")))
        embedded = {s for m, s in partitions if m == model}
        present = set(self.instance.get_materialized_partitions(AssetKey("chunk_sets"))) & embedded
        configured = self.settings.serving_strategy
        return serving_strategy(configured, present) if present else configured

    def load(self, strategy: str, model_identity: str, fill: bool = False) -> tuple[ChunkIndex, pd.DataFrame]:
        """(the strategy's index, its chunks with document titles), or IndexNotReady saying why not.
        For the chosen configuration: (its ServedConfiguration, its passages); `fill`: embed into
        the cache the vectors it lacks (`use` only)."""
        problems = self.problems(strategy)
        if problems:
            raise self.not_ready(strategy, problems)
        layout = self.layout
        if self.chosen(strategy):
            try:
                served = configurations.open_configuration(
                    self.configuration,
                    layout,
                    _load(layout, "corpus_snapshot"),
                    self.model,
                    self.settings.threshold,
                    f"run it again with {self.rerun()}",
                    f"`rag-assets use {strategy} --data-dir {quote(str(layout.root))} "
                    f"--experiment {quote(str(self.experiment))}`",
                    lm=lambda: local_generator(self.settings),
                    fill=fill,
                )
            except configurations.NotServable as exc:
                raise IndexNotReady(str(exc)) from None
            return served, served.passages
        chunks, vectors, snapshot = (
            _load(layout, "chunk_sets", strategy),
            _load(layout, "embeddings", model_strategy_key(self.model, strategy)),
            _load(layout, "corpus_snapshot"),
        )
        try:
            index = ChunkIndex.open(layout, strategy, chunks, vectors, model_identity, snapshot)
        except IndexUnreadable as exc:
            raise IndexNotReady(f"bm25_index[{strategy}] cannot be read ({exc}): materialise it again") from None
        except ValueError as exc:  # IdentityMismatch and misaligned vectors included
            raise IndexNotReady(str(exc)) from None
        index.ann, index.dense_search = self.approximate_index(strategy, model_identity, len(chunks))
        return index, with_titles(chunks, snapshot)

    def approximate_index(self, strategy: str, model_identity: str, rows: int) -> tuple[HnswIndex | None, str]:
        """(the strategy's HNSW graph, or None; how dense search runs, in words). The graph is used
        from `ann_min_chunks` chunks on, when it is fresh and was built from these very vectors;
        otherwise dense search is exact, and the words say why."""
        threshold, model = self.settings.ann_min_chunks, self.model
        if rows < threshold:
            return None, f"exact ({rows} chunks, under ann_min_chunks = {threshold})"
        key, partition = AssetKey("hnsw_index"), model_strategy_key(model, strategy)
        status = stale_resolver(self.defs, self.instance).get_status(key, partition).value
        if status != "FRESH":
            return None, f"exact: {label(key, partition)} is {status.lower()}"
        layout = self.layout
        try:
            row = layout.read_table("hnsw_index", partition).iloc[0]
            if not row["built"] or row["model_id"] != model_identity or row["rows"] != rows:
                return (
                    None,
                    f"exact: {label(key, partition)} was not built for these {rows} vectors of {model_identity}",
                )
            graph = HnswIndex.load(layout.hnsw(model, strategy))
        except Exception as exc:  # a damaged file: exact search still answers
            return None, f"exact: {label(key, partition)} cannot be read ({type(exc).__name__})"
        return graph, (
            f"hnsw ({label(key, partition)}: recall@10 {row['recall_at_10']:.3f}, "
            f"recall@100 {row['recall_at_100']:.3f} against exact search)"
        )


def _evaluation(instance: DagsterInstance, check: AssetCheckKey, materialization) -> bool | None:
    """Whether `check` passed on that materialisation (None: it never ran on it). Dagster 1.13
    records a partitioned asset's check without its partition, so each evaluation is matched
    to the materialisation it evaluated; newest first, never further back than it."""
    cursor = None
    while True:
        page = instance.event_log_storage.get_asset_check_execution_history(check, limit=50, cursor=cursor)
        for record in page:
            evaluation = record.event.dagster_event.event_specific_data if record.event else None
            target = getattr(evaluation, "target_materialization_data", None)
            if target and target.storage_id == materialization.storage_id:
                return evaluation.passed
            if record.create_timestamp < materialization.timestamp - 60:  # planned before it was made
                return None
        if len(page) < 50:
            return None
        cursor = page[-1].id


def _load(layout: DataDir, name: str, partition: str | None = None) -> pd.DataFrame:
    try:
        return layout.read_table(name, partition)
    except Exception as exc:  # a deleted, truncated or foreign file: say which asset, never a traceback
        raise IndexNotReady(
            f"{label(AssetKey(name), partition)} cannot be read ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}): materialise it again"
        ) from None


@contextlib.contextmanager
def opened(settings: Settings, chosen=None):
    """The data dir's `Served`, its instance open for reading only while the block runs. Refused
    (IndexNotReady, ValueError) when nothing was materialised or the history cannot be read.
    `chosen`: (experiment file, Configuration) to answer with, instead of the one `use` chose."""
    from rag_assets.defs import build_served_definitions

    layout = DataDir(settings.data_dir)
    home = layout.dagster_home
    if not layout.remote and not (home / "dagster.yaml").is_file():
        raise IndexNotReady(
            f"nothing has been materialised in {layout.root}: "
            f"run `rag-assets run --data-dir {quote(str(layout.root))}` first"
        )
    if layout.remote:  # its history is in PostgreSQL; its home is this machine's, made here if new
        use_data_dir(layout.root, settings.postgres)  # checks the instance too
    else:
        check_instance(home, settings.postgres)
    warnings.filterwarnings("ignore", module="dagster")
    logging.getLogger("dagster").setLevel(logging.WARNING)  # stdout is the answer (or its JSON) only
    try:
        with readable_home(home) as readable, open_instance(readable, settings.postgres) as instance:
            defs = build_served_definitions(settings)  # once the instance is entered (see the run command)
            yield Served(defs, instance, settings, chosen)
    except (IndexNotReady, ValueError):
        raise
    except Exception as exc:  # a full disk under the instance (or under the private copy of it)
        cause = storage_failure(exc)
        if cause is None:
            raise
        raise IndexNotReady(
            f"cannot read the run history of {layout.root}: {described(cause)} (is the disk, or the temporary "
            "folder, full? is the database up?)"
        ) from None
