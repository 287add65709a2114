"""The route one `ask` takes through the shell and the Dagster layer, as a reader would follow it.

    python bench/ask_route.py --data-dir DIR

From the command's function on (argument parsing excluded), a profiler records the files of
`rag_assets/app/` and `rag_assets/defs/` whose functions are called, in order, runs of calls in
one file collapsed; it prints how many files the route enters, how many times it comes back to a
file it had left, and the route itself. Run it from another checkout (PYTHONPATH pointing at it)
to compare two versions of the code on the same data dir.
"""

import argparse
import contextlib
import io
import sys
from pathlib import Path

QUESTION = "What is an example of a rotary engine without pistons?"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    args = p.parse_args()
    from rag_assets.app import cli

    root = str(Path(cli.__file__).resolve().parent.parent) + "/"
    route: list[str] = []

    def record(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(root) and frame.f_code.co_name != "<module>":
            file = name[len(root) :]
            if file.startswith(("app/", "defs/")) and (not route or route[-1] != file):
                route.append(file)

    asked = cli.parser().parse_args(["ask", "--data-dir", args.data_dir, "--all-tenants", "--json", QUESTION])
    sys.setprofile(record)
    with contextlib.redirect_stdout(io.StringIO()):
        code = asked.func(asked)
    sys.setprofile(None)
    returns = sum(1 for i, file in enumerate(route) if file in route[:i])
    print(f"exit {code}; files entered: {len(set(route))}; returns to a file already left: {returns}")
    print(" -> ".join(route))


if __name__ == "__main__":
    main()
