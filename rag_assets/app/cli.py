"""`rag-assets`: materialise the graph, ask questions, serve answers, open the UI, import data sets."""

from __future__ import annotations

import argparse
import sys

from rag_assets.app.options import CommandError, printable


class Parser(argparse.ArgumentParser):
    """A refused option is one line and exit code 2, as every refusal is (`--help` shows the usage)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def parser() -> argparse.ArgumentParser:
    from rag_assets.app.commands import COMMANDS

    p = Parser(prog="rag-assets", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"rag-assets {args.command}: error: {printable(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
