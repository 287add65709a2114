"""API keys for `rag-assets serve` and `serve-model`: who is asking decides what they may see.

The keys file holds, per key, only its SHA-256, whom it speaks for (one tenant or group name, or the
operator's view: every document), when it was made and, if it was given one, when it expires. A key
is shown once, when `rag-assets keys add` (or `rotate`) makes it (32 random bytes, URL-safe).
Looking a key up hashes what was presented and compares it with every stored hash in constant time
(`hmac.compare_digest`, no early exit), so neither the answer nor its timing says which stored key
came close. An expired key is refused like an unknown one.

A server re-reads the file when it changes (checked at most once a second), so a removed or rotated
key is refused within seconds, without a restart. A file that cannot be read any more refuses every
key until it can (fails closed). The file is written whole (a new file renamed over the old), created
readable by its owner only, and never through a link; anything but a regular file is refused (a
link to one is read: a mounted secret often is one). A change (add, remove, rotate) reads and writes
it holding an exclusive lock on `.<name>.lock` beside it, so changes from several processes at once
all land, one after another: an add that read the file before a removal never writes the removed
key back.

    {"keys": [{"id": "alice", "sha256": "…", "tenant": "team-a", "created": "…", "expires": "…"},
              {"id": "ops", "sha256": "…", "operator": true, "created": "…"}]}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from shlex import quote

from rag_assets.ingest.access import ALL_TENANTS, Scope, check_tenant
from rag_assets.locking import file_lock

MAX_FILE_BYTES = 4 << 20
KEY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
RELOAD_S = 1.0
LOCK_WAIT_S = 30.0  # how long a change waits for another process's change to the same file


class KeysFileError(ValueError):
    """The keys file cannot be read or holds an entry that names no one."""


@dataclass(frozen=True)
class Caller:
    key_id: str
    viewer: str | Scope  # a tenant or group name, or ALL_TENANTS


@dataclass(frozen=True)
class Entry:
    key_id: str
    sha256: str
    viewer: str | Scope
    created: str | None
    expires: datetime | None

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and now >= self.expires

    def whom(self) -> str:
        return "the operator (every document)" if self.viewer is ALL_TENANTS else f"tenant {self.viewer}"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _read(path: Path) -> list[dict]:
    """The file's rows; KeysFileError when it is missing, not a regular file, too large or not a
    keys file. Opened without blocking, so a FIFO is refused, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise KeysFileError(
            f"no keys file at {path}: make one with "
            f"`rag-assets keys add --keys {quote(str(path))} --id NAME --tenant TENANT` "
            "(NAME: the key's name; TENANT: whose documents it sees, or --operator for all)"
        ) from None
    except OSError as exc:
        raise KeysFileError(f"{path} cannot be opened: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeysFileError(f"{path} is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise KeysFileError(f"{path} is {info.st_size:,} bytes: not a keys file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = json.loads(fh.read(MAX_FILE_BYTES + 1))
    except (OSError, ValueError, RecursionError) as exc:
        if isinstance(exc, KeysFileError):
            raise
        raise KeysFileError(f"{path} is not a keys file ({type(exc).__name__})") from None
    finally:
        os.close(fd)
    rows = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise KeysFileError(f'{path} is not a keys file: it needs {{"keys": [...]}}, one object per key')
    return rows


def _entry(path: Path, i: int, row: dict) -> Entry:
    try:
        key_id = row["id"]
        if not isinstance(key_id, str) or not KEY_ID.match(key_id):
            raise ValueError(f"id {key_id!r} is not 1-64 letters, digits, '_', '.', '@' or '-'")
        viewer = ALL_TENANTS if row.get("operator") is True else check_tenant(row["tenant"])
        sha = row["sha256"]
        if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError("sha256 is not 64 hexadecimal digits")
        expires = row.get("expires")
        expires = datetime.fromisoformat(expires) if expires is not None else None
        if expires is not None and expires.tzinfo is None:
            raise ValueError("expires has no time zone")
        return Entry(key_id, sha, viewer, row.get("created"), expires)
    except (KeyError, ValueError, AttributeError, TypeError) as exc:
        raise KeysFileError(f"{path}: entry {i} is not a key that names someone ({exc})") from None


def _entries(path: Path) -> list[Entry]:
    entries = [_entry(path, i, row) for i, row in enumerate(_read(path))]
    ids = [e.key_id for e in entries]
    if len(set(ids)) != len(ids):
        raise KeysFileError(f"{path}: an id is given twice")
    return entries


class KeyRing:
    def __init__(self, entries: list[Entry], path: Path | None = None):
        self.entries, self.path = entries, path
        self._seen = self._stamp() if path else None
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        self.broken: str | None = None  # why the file cannot be read now (every key refused meanwhile)

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        return cls(_entries(Path(path)), Path(path))

    def _stamp(self):
        try:
            info = os.stat(self.path)
            return info.st_ino, info.st_size, info.st_mtime_ns
        except OSError:
            return None

    def _refresh(self) -> None:
        """Read the file again when it changed since the last look (at most once a RELOAD_S)."""
        if self.path is None or time.monotonic() - self._checked < RELOAD_S:
            return
        with self._lock:
            self._checked = time.monotonic()
            stamp = self._stamp()
            if stamp == self._seen and self.broken is None:
                return
            try:
                self.entries, self.broken = _entries(self.path), None
            except KeysFileError as exc:
                self.entries, self.broken = [], str(exc)
            self._seen = stamp

    def caller(self, presented: str | None) -> Caller | None:
        """Whom the presented key speaks for, or None; every stored hash is compared."""
        self._refresh()
        if not presented:
            return None
        theirs, found, now = digest(presented).encode(), None, datetime.now(UTC)
        for entry in self.entries:
            if hmac.compare_digest(theirs, entry.sha256.encode()) and found is None and not entry.expired(now):
                found = Caller(entry.key_id, entry.viewer)
        return found


def expiry(value: str | None, now: datetime | None = None) -> datetime | None:
    """`30d`, `12h` or an ISO date (UTC unless it says otherwise) as a moment; None for None."""
    if value is None:
        return None
    now = now or datetime.now(UTC)
    found = re.fullmatch(r"(\d{1,5})([dh])", value.strip())
    if found:
        amount = int(found.group(1))
        if amount < 1:
            raise ValueError("an expiry is at least 1 hour or day away")
        return now + (timedelta(days=amount) if found.group(2) == "d" else timedelta(hours=amount))
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"an expiry is 30d, 12h or an ISO date such as 2027-01-31, not {value!r}") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if moment <= now:
        raise ValueError(f"the expiry {moment.isoformat()} is in the past")
    return moment


def _write(path: Path, rows: list[dict]) -> None:
    """The file written whole and private from its first byte: a new file (0600, never through a
    link) renamed over the old one."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise KeysFileError(f"{path} is not a regular file: keys are not written through links or into special files")
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"keys": rows}, indent=2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextmanager
def _changing(path: Path):
    """The block holds the keys file's lock: what it reads is what it replaces."""
    try:
        with file_lock(path.with_name(f".{path.name}.lock"), LOCK_WAIT_S):
            yield
    except TimeoutError as exc:
        raise KeysFileError(f"{path} is being changed: {exc}") from None


def _rows(path: Path) -> list[dict]:
    """The rows of an existing, valid keys file that is about to be written (checked whole: nothing
    is added to one a server would refuse), or [] when there is none."""
    if path.is_symlink():
        raise KeysFileError(f"{path} is a link: keys are not written through links")
    if not path.exists():
        return []
    _entries(path)
    return _read(path)


def add_key(path: Path, key_id: str, tenant: str | None, operator: bool, expires: datetime | None = None) -> str:
    """A new key for `tenant` (or the operator) added to the keys file (made, 0600, if missing);
    returns the key, which is stored nowhere."""
    path = Path(path)
    with _changing(path):
        rows = _rows(path)
        if any(row.get("id") == key_id for row in rows):
            raise KeysFileError(
                f"{path} already has a key with id {key_id!r} "
                f"(rotate it: `rag-assets keys rotate --id {quote(key_id)} --keys {quote(str(path))}`)"
            )
        key = secrets.token_urlsafe(32)
        entry = {"id": key_id, "sha256": digest(key), "created": datetime.now(UTC).isoformat(timespec="seconds")}
        entry.update({"operator": True} if operator else {"tenant": check_tenant(tenant or "")})
        if expires is not None:
            entry["expires"] = expires.isoformat(timespec="seconds")
        _entry(path, len(rows), entry)  # the entry a server would read, checked before it is written
        _write(path, [*rows, entry])
    return key


def remove_key(path: Path, key_id: str) -> Entry:
    path = Path(path)
    with _changing(path):
        rows = _rows(path)
        kept = [row for row in rows if row.get("id") != key_id]
        if len(kept) == len(rows):
            raise KeysFileError(f"{path} has no key with id {key_id!r}")
        _write(path, kept)
    return _entry(path, 0, next(row for row in rows if row.get("id") == key_id))


def rotate_key(path: Path, key_id: str, expires: datetime | None = None) -> str:
    """A new key for whom `key_id` spoke for, under the same id; the old one is refused from now."""
    path = Path(path)
    with _changing(path):
        rows = _rows(path)
        old = next((row for row in rows if row.get("id") == key_id), None)
        if old is None:
            raise KeysFileError(f"{path} has no key with id {key_id!r}")
        key = secrets.token_urlsafe(32)
        new = {k: v for k, v in old.items() if k not in ("sha256", "created", "expires")}
        new.update(sha256=digest(key), created=datetime.now(UTC).isoformat(timespec="seconds"))
        if expires is not None:
            new["expires"] = expires.isoformat(timespec="seconds")
        _write(path, [new if row is old else row for row in rows])
    return key


def listed(path: Path) -> list[Entry]:
    return _entries(Path(path))
