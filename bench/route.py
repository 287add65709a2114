"""The route a question or an experiment configuration takes through the code, as a reader would follow it.

    python bench/route.py ask --data-dir DIR
    python bench/route.py configuration --dataset DIR --data-dir DIR --experiment FILE [--config ID]

`ask`: from the command's function on (argument parsing excluded), a profiler records the files of
`rag_assets/app/` and `rag_assets/defs/` whose functions are called, in order, runs of calls in one
file collapsed; printed: how many files the route enters, how many times it comes back to a file it
had left, the lines of each file entered, and the route itself.

`configuration`: `rag-assets run --experiment` runs (its corpus steps first), and the profiler
records every call from one file of `rag_assets/` to another while the `experiment_runs` asset
measures one configuration (the first, or `--config`), from the asset's function to its return;
printed: the files it enters with their lines, and the distinct calls between them, each marked
where it climbs up the layers (a floor below calling one above: Dagster layer > experiment >
evaluation > answering > retrieval > chunking > ingest > the top-level modules).

Run it with PYTHONPATH pointing at another checkout to compare two versions of the code on the same
data (a configuration needs a fresh data dir each time: a fresh configuration is not run again).
"""

import argparse
import contextlib
import io
import sys
from pathlib import Path

QUESTION = "What is an example of a rotary engine without pistons?"


def package_root() -> str:
    from rag_assets.app import cli

    return str(Path(cli.__file__).resolve().parent.parent) + "/"


def summary(route: list[str], root: str) -> None:
    returns = sum(1 for i, file in enumerate(route) if file in route[:i])
    files = sorted(set(route))
    lines = {f: sum(1 for _ in open(root + f, encoding="utf-8")) for f in files}
    print(
        f"files entered: {len(files)}; returns to a file already left: {returns}; lines in them: {sum(lines.values())}"
    )
    for f in files:
        print(f"  {lines[f]:5d}  {f}")
    print(" -> ".join(route))


def ask(data_dir: str) -> None:
    from rag_assets.app import cli

    root, route = package_root(), []

    def record(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(root) and frame.f_code.co_name != "<module>":
            file = name[len(root) :]
            if file.startswith(("app/", "defs/")) and (not route or route[-1] != file):
                route.append(file)

    asked = cli.parser().parse_args(["ask", "--data-dir", data_dir, "--all-tenants", "--json", QUESTION])
    sys.setprofile(record)
    with contextlib.redirect_stdout(io.StringIO()):
        code = asked.func(asked)
    sys.setprofile(None)
    print(f"ask exit {code}")
    summary(route, root)


FLOORS = ("", "ingest", "chunking", "retrieval", "answering", "evaluation", "drafting", "experiment", "defs", "app")


def floor(file: str) -> int:
    top = file.split("/")[0] if "/" in file else ""
    return FLOORS.index(top) if top in FLOORS else 0


def configuration(dataset: str, data_dir: str, experiment: str, config: str | None) -> None:
    import collections
    import threading

    from rag_assets.app import cli

    root, depth = package_root(), [0]
    files: set[str] = set()
    edges: collections.Counter = collections.Counter()
    wanted = config

    def record(frame, event, arg):
        code = frame.f_code
        if depth[0] == 0:
            if event == "call" and code.co_name == "experiment_runs" and code.co_filename.startswith(root):
                partition = frame.f_locals.get("context").partition_key if "context" in frame.f_locals else None
                if wanted is None or partition == wanted:
                    depth[0] = 1
                    files.add(code.co_filename[len(root) :])
            return
        if event == "call":
            depth[0] += 1
            callee, caller = code.co_filename, frame.f_back.f_code.co_filename if frame.f_back else ""
            if callee.startswith(root) and code.co_name != "<module>":
                files.add(callee[len(root) :])
                if caller.startswith(root) and caller != callee:
                    edges[(caller[len(root) :], callee[len(root) :])] += 1
        elif event == "return":
            depth[0] -= 1
            if depth[0] == 0:  # the asset returned: only this configuration is traced
                sys.setprofile(None)
                threading.setprofile(None)

    arguments = ["run", "--dataset", dataset, "--data-dir", data_dir, "--experiment", experiment]
    sys.setprofile(record)
    threading.setprofile(record)
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(arguments)
    sys.setprofile(None)
    threading.setprofile(None)
    print(f"run --experiment exit {code}")
    lines = {f: sum(1 for _ in open(root + f, encoding="utf-8")) for f in sorted(files)}
    climbs = {e: n for e, n in edges.items() if floor(e[1]) > floor(e[0])}
    print(
        f"files entered: {len(files)}; lines in them: {sum(lines.values())}; distinct calls between files: "
        f"{len(edges)}, of which climb up a floor: {len(climbs)}"
    )
    for f, n in lines.items():
        print(f"  {n:5d}  {f}")
    for (a, b), n in sorted(edges.items()):
        print(f"  {'UP ' if (a, b) in climbs else '   '}{a} -> {b} ({n} calls)")


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="what", required=True)
    a = sub.add_parser("ask")
    a.add_argument("--data-dir", required=True)
    c = sub.add_parser("configuration")
    c.add_argument("--dataset", required=True)
    c.add_argument("--data-dir", required=True)
    c.add_argument("--experiment", required=True)
    c.add_argument("--config")
    args = p.parse_args()
    if args.what == "ask":
        ask(args.data_dir)
    else:
        configuration(args.dataset, args.data_dir, args.experiment, args.config)


if __name__ == "__main__":
    main()
