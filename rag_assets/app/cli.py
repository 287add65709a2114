"""`rag-assets`: materialise the graph, ask questions, serve answers, open the UI, import data sets."""

from __future__ import annotations

import argparse
import sys

from rag_assets.app.options import CommandError


def parser() -> argparse.ArgumentParser:
    from rag_assets.app.commands import COMMANDS

    p = argparse.ArgumentParser(prog="rag-assets", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"rag-assets {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
