"""What a user reads, on every question of a question file: answered with a reference answer,
refused when there is none, and the short answer's token F1.

    python bench/answers.py --data-dir DIR [--questions FILE] [--serve] [--answerer extractive]
                            [--skip-articles Normans,...] [--limit N]

`--data-dir`: where `rag-assets run` materialised the serving strategy (E; the model
$RAG_ASSETS_MODELS names first, default minilm, with its own threshold). Each question (its first
phrasing) is asked as `ask` asks it, in this process, for every tenant; with `--serve` a `rag-assets serve` process is
started on a free loopback port and each question is POSTed to /v1/ask with an operator key, the way
a user's client asks. Printed, per question kind (answerable, unanswerable, out_of_domain), with
Wilson 95 % intervals: refused (and by which reading: distance, language, terms, kind); for
answerable questions, answered with a sentence holding a reference answer (SQuAD normalisation),
the short answer's exact match and token F1 (a refused question scores 0); and the answer stage's
p50 in ms (sentence choice and short answer; warm). `--skip-articles` leaves out the questions whose
needle lies in those documents (XQuAD's articles that are also in the bundled corpus).

The questions come from the file as written: nothing here is built from the answerer's word lists.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np

from rag_assets import stats
from rag_assets.answering.scoring import contains_answer, exact_match, token_f1

sys.path.insert(0, str(Path(__file__).parent))
from common import served_index  # noqa: E402

CLI = str(Path(sys.executable).parent / "rag-assets")


def _questions(path: Path, skip: set[str], documents: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if skip:
        texts = [(documents / name).read_text(encoding="utf-8") for name in os.listdir(documents)]
        skipped = [t for name, t in zip(os.listdir(documents), texts) if Path(name).stem in skip]
        rows = [r for r in rows if not (r.get("needle") and any(r["needle"] in t for t in skipped))]
    return rows


def _in_process(data_dir: str, answerer: str, questions: list[str]) -> list[dict]:
    from rag_assets.answering.answerer import build_answerer
    from rag_assets.catalog import PACKAGED, model_names
    from rag_assets.ingest.access import ALL_TENANTS
    from rag_assets.settings import Settings

    index, chunks, embedder = served_index(data_dir, "E")
    model = model_names(Settings.from_environment().models)[0]
    asker = build_answerer(
        index,
        chunks,
        embedder,
        None,
        answerer=answerer,
        tenant=ALL_TENANTS,
        model=model,
        threshold=PACKAGED[model].threshold,
    )
    out = []
    for i, q in enumerate(questions, start=1):
        out.append(asker.ask(q).as_dict())
        if i % 500 == 0:
            print(f"  {i}/{len(questions)} asked", file=sys.stderr)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _served(data_dir: str, answerer: str, questions: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as work:
        keys = Path(work) / "keys.json"
        key = subprocess.run(
            [CLI, "keys", "add", "--keys", str(keys), "--id", "bench", "--operator"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        port = _free_port()
        command = [CLI, "serve", "--data-dir", data_dir, "--port", str(port), "--keys", str(keys)]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    with urllib.request.urlopen(f"{base}/readyz", timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    time.sleep(1)
            else:
                sys.exit("serve did not become ready in 600 s")
            out = []
            for i, q in enumerate(questions, start=1):
                body = json.dumps({"question": q, "answerer": answerer}).encode()
                request = urllib.request.Request(
                    f"{base}/v1/ask",
                    body,
                    {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=600) as r:
                    out.append(json.loads(r.read()))
                if i % 500 == 0:
                    print(f"  {i}/{len(questions)} asked", file=sys.stderr)
            return out
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)


def _rate(label: str, hits: int, n: int) -> str:
    low, high = stats.wilson(hits, n)
    return f"| {label} | {hits}/{n} | {hits / n if n else float('nan'):.3f} | [{low:.3f}, {high:.3f}] |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--questions", help="a questions.jsonl (default: the data dir's dataset's)")
    p.add_argument("--answerer", default="extractive")
    p.add_argument("--serve", action="store_true", help="ask through a real `rag-assets serve` process")
    p.add_argument("--skip-articles", default="", help="comma-separated document names whose questions are left out")
    p.add_argument("--limit", type=int, help="the first N questions only")
    p.add_argument("--dump", help="write every answer, with its question's kind, to this JSONL file")
    p.add_argument("--misses", type=int, default=0, help="print this many answerable misses and bluffs")
    args = p.parse_args()
    dataset = Path(json.loads((Path(args.data_dir) / "dataset.json").read_text())["dataset"])
    path = Path(args.questions) if args.questions else dataset / "questions.jsonl"
    skip = {s for s in args.skip_articles.split(",") if s}
    rows = _questions(path, skip, dataset / "documents")[: args.limit]
    asked = [r["phrasings"][0] for r in rows]
    t0 = time.perf_counter()
    answers = (_served if args.serve else _in_process)(args.data_dir, args.answerer, asked)
    took = time.perf_counter() - t0
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as out:
            for r, a in zip(rows, answers):
                out.write(json.dumps({"question": r, "answer": a}, ensure_ascii=False) + "\n")
    by_kind = Counter(r["kind"] for r in rows)
    print(f"{len(rows)} questions of {path} ({dict(by_kind)}), answerer {args.answerer}, ", end="")
    print(f"{'through serve' if args.serve else 'in process'}, {took:.0f} s")
    print("| measure | count | share | 95 % interval |\n|---|---|---|---|")
    misses = []
    for kind in ("answerable", "unanswerable", "out_of_domain"):
        pairs = [(r, a) for r, a in zip(rows, answers) if r["kind"] == kind]
        if not pairs:
            continue
        refused = [a["refused"] for _, a in pairs]
        print(_rate(f"{kind}: refused", sum(refused), len(pairs)))
        why = Counter(a.get("refused_by") or "distance" for _, a in pairs if a["refused"])
        for reason, n in sorted(why.items()):
            print(_rate(f"{kind}: refused by {reason}", n, len(pairs)))
        if kind != "answerable":
            misses += [(kind, r["phrasings"][0], a.get("answer")) for r, a in pairs if not a["refused"]]
            continue
        scored = [(r, a) for r, a in pairs if r.get("answers")]
        texts = [(a.get("answer") or "").removesuffix(" [1]") if not a["refused"] else "" for _, a in scored]
        shorts = [((a.get("short_answer") or {}).get("text", "")) if not a["refused"] else "" for _, a in scored]
        golds = [list(r["answers"]) for r, _ in scored]
        hits = [bool(t) and contains_answer(t, g) for t, g in zip(texts, golds)]
        print(_rate("answerable: answered with a reference answer", sum(hits), len(scored)))
        held = [
            any(contains_answer(c["quote"], g) for c in a.get("sources") or [])
            for (_, a), g in zip(scored, golds)
            if not a["refused"]
        ]
        print(_rate("answerable: answered, and a kept source holds a reference answer", sum(held), len(held)))
        answered = [h for (_, a), h in zip(scored, hits) if not a["refused"]]
        print(_rate("answerable: answered, and the answer holds a reference answer", sum(answered), len(answered)))
        em = np.mean([exact_match(s, g) for s, g in zip(shorts, golds)])
        f1 = np.mean([token_f1(s, g) for s, g in zip(shorts, golds)])
        print(f"| answerable: short answer exact match | | {em:.3f} | |")
        print(f"| answerable: short answer token F1 | | {f1:.3f} | |")
        misses += [
            ("answerable", r["phrasings"][0], a.get("answer") if not a["refused"] else a.get("refusal"))
            for (r, a), h in zip(scored, hits)
            if not h
        ]
    stage = [a["generation_ms"] for a in answers if not a["refused"] and a.get("answerer") == "extractive"]
    if stage:
        print(
            f"answer stage (sentence choice and short answer) p50 {np.percentile(stage, 50):.1f} ms, "
            f"p95 {np.percentile(stage, 95):.1f} ms over {len(stage)} answers"
        )
    for kind, q, a in misses[: args.misses]:
        print(f"- {kind}: {q!r} -> {a!r}")


if __name__ == "__main__":
    main()
