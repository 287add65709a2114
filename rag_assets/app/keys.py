"""API keys for `rag-assets serve`: who is asking decides what they may see.

The keys file holds, per key, only its SHA-256 and whom it speaks for: one tenant or group
name, or the operator's view (every document). A key is shown once, when `rag-assets keys add`
makes it (32 random bytes, URL-safe). Looking a key up hashes what was presented and compares it
with every stored hash in constant time (`hmac.compare_digest`, no early exit), so neither the
answer nor its timing says which stored key came close.

    {"keys": [{"id": "alice", "sha256": "…", "tenant": "team-a"},
              {"id": "ops", "sha256": "…", "operator": true}]}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from rag_assets import storage
from rag_assets.ingest.access import ALL_TENANTS, Scope, check_tenant


class KeysFileError(ValueError):
    """The keys file cannot be read or holds an entry that names no one."""


@dataclass(frozen=True)
class Caller:
    key_id: str
    viewer: str | Scope  # a tenant or group name, or ALL_TENANTS


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class KeyRing:
    def __init__(self, entries: list[tuple[str, str, str | Scope]]):
        self.entries = entries  # (id, sha256, viewer)

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            rows = data["keys"]
        except FileNotFoundError:
            raise KeysFileError(f"no keys file at {path}: make one with `rag-assets keys add --keys {path}`") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise KeysFileError(f"{path} is not a keys file ({type(exc).__name__}: {exc})") from None
        entries = []
        for i, row in enumerate(rows):
            try:
                viewer = ALL_TENANTS if row.get("operator") is True else check_tenant(row["tenant"])
                sha = row["sha256"]
                if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
                    raise ValueError("sha256 is not 64 hexadecimal digits")
                entries.append((str(row.get("id", i)), sha, viewer))
            except (KeyError, ValueError, AttributeError, TypeError) as exc:
                raise KeysFileError(f"{path}: entry {i} names no tenant and is not the operator ({exc})") from None
        return cls(entries)

    def caller(self, presented: str | None) -> Caller | None:
        """Whom the presented key speaks for, or None; every stored hash is compared."""
        if not presented:
            return None
        theirs, found = digest(presented).encode(), None
        for key_id, sha, viewer in self.entries:
            if hmac.compare_digest(theirs, sha.encode()) and found is None:
                found = Caller(key_id, viewer)
        return found


def add_key(path: Path, key_id: str, tenant: str | None, operator: bool) -> str:
    """A new key for `tenant` (or the operator) appended to the keys file (made, mode 0600, if
    missing); returns the key, which is stored nowhere."""
    path = Path(path)
    rows = json.loads(path.read_text(encoding="utf-8"))["keys"] if path.exists() else []
    if any(row.get("id") == key_id for row in rows):
        raise KeysFileError(f"{path} already has a key with id {key_id!r}")
    key = secrets.token_urlsafe(32)
    entry = {"id": key_id, "sha256": digest(key)}
    entry.update({"operator": True} if operator else {"tenant": check_tenant(tenant or "")})
    storage.write_text(path, json.dumps({"keys": [*rows, entry]}, indent=2) + "\n")
    os.chmod(path, 0o600)
    return key
