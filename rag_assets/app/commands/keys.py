"""`rag-assets keys add`: an API key of `rag-assets serve` for a tenant, or the operator."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_assets.app.options import refusing, tenant


def add(sub) -> None:
    keys = sub.add_parser("keys", help="API keys of `rag-assets serve`")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    add_key = keys_sub.add_parser("add", help="make a key for a tenant (or the operator); it is printed once")
    add_key.add_argument("--keys", required=True, help="the keys file (made if missing; holds hashes only)")
    add_key.add_argument("--id", required=True, help="a name for the key, for logs")
    whom = add_key.add_mutually_exclusive_group(required=True)
    whom.add_argument("--tenant", type=tenant, help="the tenant or group whose documents the key sees")
    whom.add_argument("--operator", action="store_true", help="the operator's view: every document")
    add_key.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from rag_assets.app.keys import KeysFileError, add_key

    with refusing(KeysFileError, ValueError, OSError):
        key = add_key(Path(args.keys), args.id, args.tenant, args.operator)
    whom = "the operator (every document)" if args.operator else f"tenant {args.tenant}"
    print(key)
    print(f"key {args.id!r} for {whom} added to {args.keys}; it is shown only this once", file=sys.stderr)
    return 0
