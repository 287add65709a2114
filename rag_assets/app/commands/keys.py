"""`rag-assets keys add | list | remove | rotate`: the API keys of `rag-assets serve` (and
`serve-model`), for a tenant or the operator; a server reads a change within seconds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_assets.app.options import refusing, tenant


def add(sub) -> None:
    keys = sub.add_parser("keys", help="API keys of `rag-assets serve`: add, list, remove, rotate")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)

    def keys_file(p):
        p.add_argument("--keys", required=True, help="the keys file (holds hashes only)")

    def expires(p):
        p.add_argument("--expires", metavar="WHEN", help="when the key stops working: 30d, 12h or an ISO date (UTC)")

    add_key = keys_sub.add_parser("add", help="make a key for a tenant (or the operator); it is printed once")
    keys_file(add_key)
    add_key.add_argument("--id", required=True, help="a name for the key, for logs")
    whom = add_key.add_mutually_exclusive_group(required=True)
    whom.add_argument("--tenant", type=tenant, help="the tenant or group whose documents the key sees")
    whom.add_argument("--operator", action="store_true", help="the operator's view: every document")
    expires(add_key)
    add_key.set_defaults(func=add_command)
    listing = keys_sub.add_parser("list", help="the keys: id, whom each speaks for, made and expiring when")
    keys_file(listing)
    listing.set_defaults(func=list_command)
    remove = keys_sub.add_parser("remove", help="revoke a key (a running server refuses it within seconds)")
    keys_file(remove)
    remove.add_argument("--id", required=True)
    remove.set_defaults(func=remove_command)
    rotate = keys_sub.add_parser("rotate", help="a new key under the same id; the old one is refused from now")
    keys_file(rotate)
    rotate.add_argument("--id", required=True)
    expires(rotate)
    rotate.set_defaults(func=rotate_command)


def add_command(args: argparse.Namespace) -> int:
    from rag_assets.app.keys import KeysFileError, add_key, expiry

    with refusing(KeysFileError, ValueError, OSError):
        key = add_key(Path(args.keys), args.id, args.tenant, args.operator, expiry(args.expires))
    whom = "the operator (every document)" if args.operator else f"tenant {args.tenant}"
    print(key)
    print(f"key {args.id!r} for {whom} added to {args.keys}; it is shown only this once", file=sys.stderr)
    return 0


def list_command(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from rag_assets.app.keys import KeysFileError, listed

    with refusing(KeysFileError, OSError):
        entries = listed(Path(args.keys))
    now = datetime.now(UTC)
    for e in entries:
        until = (
            "no expiry" if e.expires is None else ("EXPIRED " if e.expired(now) else "expires ") + e.expires.isoformat()
        )
        print(f"{e.key_id}\t{e.whom()}\tmade {e.created or 'unknown'}\t{until}")
    return 0


def remove_command(args: argparse.Namespace) -> int:
    from rag_assets.app.keys import KeysFileError, remove_key

    with refusing(KeysFileError, OSError):
        gone = remove_key(Path(args.keys), args.id)
    print(f"key {args.id!r} for {gone.whom()} removed from {args.keys}: a running server refuses it within seconds")
    return 0


def rotate_command(args: argparse.Namespace) -> int:
    from rag_assets.app.keys import KeysFileError, expiry, rotate_key

    with refusing(KeysFileError, ValueError, OSError):
        key = rotate_key(Path(args.keys), args.id, expiry(args.expires))
    print(key)
    print(
        f"key {args.id!r} rotated in {args.keys}: the old key is refused from now; this one is shown only once",
        file=sys.stderr,
    )
    return 0
