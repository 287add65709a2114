"""Who may see a document: access lists, tenant names, and the operator's view.

A document is public, or restricted to the tenants (or groups) its access list names. The
list comes from YAML front matter (`access: [team-a, admins]`) or from a sidecar file
`<file>.access` (one name per line, or comma-separated); the sidecar wins when both exist.

Everything here fails closed: a list that cannot be read, or that names something that is
not a valid tenant name, raises BadAccessList and the document is indexed for nobody
(a `failed` row with reason `bad_access_list`), never made public. An empty list
(`access: []`, or an empty sidecar) means nobody but the operator.

Tenant names: 1 to 128 characters of ASCII letters, digits and `. _ - @`, starting with a
letter or digit, compared exactly: `Team-A` and `team-a` are two tenants. Anything else (`*`
included) is refused wherever a name is read, so no name can collide with the operator's view,
which is a value of its own (ALL_TENANTS) that only the `--all-tenants` flag and the
evaluation assets use.
"""

from __future__ import annotations

import enum
import json
import os
import re
import stat
from pathlib import Path

import pandas as pd

SIDECAR_SUFFIX = ".access"
TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
TENANT_RULE = "1-128 ASCII letters, digits, '.', '_', '-' or '@', starting with a letter or digit"


class Scope(enum.Enum):
    """The operator's view: every document, restricted or not. Not a string, so no tenant
    name can ever equal it."""

    ALL_TENANTS = "all tenants"


ALL_TENANTS = Scope.ALL_TENANTS


class BadAccessList(ValueError):
    """An access list that cannot be read: the document must be visible to nobody."""


def check_tenant(name: str) -> str:
    """`name` if it is a valid tenant name; ValueError naming the rule otherwise."""
    if not isinstance(name, str) or not TENANT_NAME.fullmatch(name):
        raise ValueError(f"invalid tenant name {name!r}: use {TENANT_RULE}")
    return name


def parse_access(value) -> list[str]:
    """An access list from front matter (`[a, b]` or `a, b`) or sidecar lines, sorted and
    deduplicated; BadAccessList for anything else (no value, a mapping, a bad name)."""
    if value is None:
        raise BadAccessList(
            "`access:` has no value: list the tenants (access: [team-a]) or remove the key for a public document"
        )
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(i, str) for i in value):
        items = value
    else:
        raise BadAccessList(f"`access:` must be a list of tenant names, got {type(value).__name__} {value!r}")
    names = sorted({i.strip() for i in items if i.strip()})
    bad = [n for n in names if not TENANT_NAME.fullmatch(n)]
    if bad:
        raise BadAccessList(f"access list names {bad[0]!r}, which is not a tenant name ({TENANT_RULE})")
    return names


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def read_sidecar(path: Path, inside=None) -> list[str] | None:
    """The access list in `<path>.access`, None when there is no entry of that name at all.

    An entry that exists in any form and is not a regular file that can be read (a dangling or
    looping link, a folder, a FIFO, a socket, a device, a link out of the dataset where
    `inside(target)` says so) is BadAccessList: it meant to restrict the document, so the
    document fails closed. A FIFO is never opened (open() would wait for a writer for ever)."""
    sidecar = sidecar_of(path)
    try:
        os.lstat(sidecar)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a name over the file system's limit, say: it cannot be checked
        raise BadAccessList(f"access sidecar {sidecar.name!r} cannot be checked ({exc.strerror or exc})") from None
    if sidecar.is_symlink():
        try:
            target = sidecar.resolve(strict=True)
        except (OSError, RuntimeError):
            raise BadAccessList(
                f"access sidecar {sidecar.name} is a broken symbolic link: fix it or remove it"
            ) from None
        if inside is not None and not inside(target):
            raise BadAccessList(f"access sidecar {sidecar.name} is a link out of the dataset folder: never read")
    try:
        mode = os.stat(sidecar).st_mode
    except OSError as exc:
        raise BadAccessList(f"access sidecar {sidecar.name} cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket or device)"
        raise BadAccessList(f"access sidecar {sidecar.name} is {kind}: make it a text file or remove it")
    try:
        text = sidecar.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadAccessList(f"access sidecar {sidecar.name} cannot be read ({exc}): fix it or remove it") from None
    return parse_access(text.replace("\n", ","))


def access_by_document(snapshot: pd.DataFrame) -> dict[str, frozenset[str] | None]:
    """document id -> the tenants or groups allowed to see it; None: public."""
    return {
        d: None if pd.isna(a) else frozenset(json.loads(a)) for d, a in zip(snapshot["document_id"], snapshot["access"])
    }


def names_differing_by_case(snapshot: pd.DataFrame) -> list[list[str]]:
    """Groups of tenant names in the snapshot's access lists that differ only by case
    (`Team-A`, `team-a`): names are case-sensitive, so these are different tenants, which is
    rarely what was meant."""
    groups: dict[str, set[str]] = {}
    for names in access_by_document(snapshot).values():
        for name in names or ():
            groups.setdefault(name.casefold(), set()).add(name)
    return [sorted(g) for _, g in sorted(groups.items()) if len(g) > 1]


def describe_viewer(tenant: str | Scope | None) -> str:
    """How a viewer is named in logs: the tenant, '(public only)' or '(all tenants)'."""
    if tenant is None:
        return "(public only)"
    return "(all tenants)" if tenant is ALL_TENANTS else tenant
