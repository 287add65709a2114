"""An experiment's costs on this machine: `check` time, a 30-configuration one-factor sweep on the
bundled corpus with packaged models (cold cache, then a rerun that finds nothing stale), and
embedding through infinity-emb on loopback against the same model in process.

    python bench/experiment.py [--infinity .ci/infinity/bin/infinity_emb] [--skip-sweep] [--skip-rerank]

The sweep runs `rag-assets run --experiment` in a fresh data dir on a copy of the bundled
corpus. The throughput comparison alternates endpoint and in-process rounds (the machine is shared
and noisy) on the same 1,000 passages and compares medians; the endpoint gets requests of 32 texts
and of the default (rag_assets.retrieval.specs.BATCH), two at a time, the in-process model
(minilm-fp32: the same fp32 weights on torch) encodes in batches of 32. Last, the LLM reranker
behind `rag-assets serve-model`'s /rerank: seconds per question at depth 10 on passages of
strategy E (5 questions, median).
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))
from common import bundled_chunks  # noqa: E402

from rag_assets.catalog import BUNDLED_DATASET  # noqa: E402

CLI = [sys.executable, "-m", "rag_assets.app.cli"]
SWEEP = """search: one-factor
rank_by: recall@4
chunkers:
  E: E
  C: C
  F: F
  b256: {cut: boundaries, size: 256}
  b384: {cut: boundaries, size: 384}
  b640: {cut: boundaries, size: 640}
  b768: {cut: boundaries, size: 768}
  b1024: {cut: boundaries, size: 1024}
  b1536: {cut: boundaries, size: 1536}
  b2048: {cut: boundaries, size: 2048}
  b512h: {cut: boundaries, size: 512, header: true, overlap: 64}
  blind512: {cut: blind, size: 512}
  blind1024: {cut: blind, size: 1024}
  sem128t: {semchunk: true, size: 128, unit: tokens}
  sem256t: {semchunk: true, size: 256, unit: tokens}
  sem512c: {semchunk: true, size: 512}
  sem1024c: {semchunk: true, size: 1024, overlap: 0.2}
  chk-rec512: {chonkie: recursive, size: 512}
  chk-sent128t: {chonkie: sentence, size: 128, unit: tokens}
  chk-tok512: {chonkie: token, size: 512, overlap: 64}
  parent256: {cut: boundaries, size: 256, parent_size: 1024}
  parent512: {cut: boundaries, size: 512, parent_size: 2048}
  window1: {cut: sentences, window: 1}
  window2: {cut: sentences, window: 2}
embedders: [minilm, minilm-fp32]
retrievers:
  hybrid: hybrid
  dense: dense
  bm25: bm25
  hnsw: {dense: true, index: hnsw, m: 16, ef_search: 128}
  weighted: {hybrid: true, dense_weight: 0.7}
  rrf10: {hybrid: true, rrf_k: 10}
"""


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - t0, done


def sweep() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "corpus"
        shutil.copytree(BUNDLED_DATASET, dataset)
        (dataset / "experiment.yaml").write_text(SWEEP)
        data = ["--dataset", str(dataset), "--data-dir", str(Path(tmp) / "data")]
        checks = [timed([*CLI, "check", *data])[0] for _ in range(3)]
        seconds, done = timed([*CLI, "check", *data])
        print(done.stdout.strip().splitlines()[0])
        print(f"check: {statistics.median(checks + [seconds]):.2f} s (median of 4, a new process each)")
        cold, done = timed([*CLI, "run", *data, "--experiment"])
        if done.returncode != 0:
            sys.exit(f"the sweep failed:\n{done.stderr[-3000:]}")
        print(f"sweep, cold cache: {cold:.0f} s ({cold / 60:.1f} min)")
        warm, done = timed([*CLI, "run", *data, "--experiment"])
        print(f"sweep again, nothing changed: {warm:.0f} s")
        print((Path(tmp) / "data" / "reports" / "experiment_leaderboard.md").read_text()[:4000])


def throughput(rounds: int = 3) -> None:
    from rag_assets.retrieval import packaged
    from rag_assets.retrieval.embedding import model_path
    from rag_assets.retrieval.remote import EndpointEmbedder
    from rag_assets.retrieval.specs import BATCH, EmbeddingEndpoint
    from tests.servers import infinity_server

    _, chunks = bundled_chunks("C")
    texts = chunks["text"].tolist()[:1000]
    local = packaged.embedder("minilm-fp32")
    reference = local.encode(texts[:200])
    with infinity_server(model_path()) as base:
        for batch in sorted({32, BATCH}):
            spec = EmbeddingEndpoint(
                url=base, model=f"{model_path().parent.name}/model", batch_size=batch, concurrency=2
            )
            served = EndpointEmbedder(spec, None)
            served.encode(texts[:64])
            rates = {"endpoint": [], "in process": []}
            for _ in range(rounds):
                for name, model in (("endpoint", served), ("in process", local)):
                    t0 = time.perf_counter()
                    model.encode(texts)
                    rates[name].append(len(texts) / (time.perf_counter() - t0))
            medians = {k: statistics.median(v) for k, v in rates.items()}
            agreement = float((served.encode(texts[:200]) * reference).sum(axis=1).min())
            print(f"requests of {batch} texts, 2 at a time:")
            for name, rate in medians.items():
                each = ", ".join(f"{r:.0f}" for r in rates[name])
                print(f"  {name}: {rate:.0f} passages/s (median of {rounds}: {each})")
            print(f"  endpoint / in process: {medians['endpoint'] / medians['in process']:.2f}")
            print(f"  lowest cosine against in process, 200 passages: {agreement:.7f}")


def rerank_cost(questions: int = 5, depth: int = 10) -> None:
    from rag_assets.retrieval.remote import EndpointReranker
    from rag_assets.retrieval.specs import RerankEndpoint
    from tests.servers import model_server

    _, chunks = bundled_chunks("E")
    texts = chunks["text"].tolist()
    with model_server() as base:
        reranker = EndpointReranker(RerankEndpoint(url=base, model="smollm2-135m-instruct", depth=depth))
        reranker.score("warm up", texts[:2])
        seconds = []
        for i in range(questions):
            t0 = time.perf_counter()
            reranker.score("What is computational complexity theory?", texts[i * depth : (i + 1) * depth])
            seconds.append(time.perf_counter() - t0)
    each = ", ".join(f"{s:.2f}" for s in seconds)
    print(f"LLM reranker behind /rerank, depth {depth}: {statistics.median(seconds):.2f} s per question ({each})")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--infinity", type=Path, default=Path(".ci/infinity/bin/infinity_emb"))
    p.add_argument("--skip-sweep", action="store_true")
    p.add_argument("--skip-rerank", action="store_true")
    args = p.parse_args()
    if not args.skip_sweep:
        sweep()
    if args.infinity.exists():
        import os

        os.environ["RAG_ASSETS_INFINITY"] = str(args.infinity.resolve())
        throughput()
    else:
        print(f"no infinity-emb at {args.infinity}: the throughput comparison is skipped")
    if not args.skip_rerank:
        rerank_cost()


if __name__ == "__main__":
    main()
