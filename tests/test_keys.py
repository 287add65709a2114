"""API keys managed live: add, list, remove, rotate and expire through the command line; a keys file
written private from its first byte and never through a link; anything but a keys file refused in
one line; a server's key ring that sees a change within seconds and fails closed when the file
breaks."""

import json
import os
import stat
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from rag_assets.app.cli import main
from rag_assets.app.keys import RELOAD_S, KeyRing, expiry


def keys(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["keys", *args])
    out = capsys.readouterr()
    return code, out.out.strip(), out.err.strip()


def test_keys_are_added_listed_rotated_removed_and_expire(tmp_path, capsys):
    path = tmp_path / "keys.json"
    code, alice, _ = keys(capsys, "add", "--keys", str(path), "--id", "alice", "--tenant", "team-a")
    assert code == 0 and stat.S_IMODE(path.stat().st_mode) == 0o600 and alice not in path.read_text()
    _, ops, _ = keys(capsys, "add", "--keys", str(path), "--id", "ops", "--operator", "--expires", "30d")
    ring = KeyRing.load(path)
    assert ring.caller(alice).viewer == "team-a" and ring.caller(ops).key_id == "ops"
    code, listing, _ = keys(capsys, "list", "--keys", str(path))
    assert (
        code == 0 and "alice\ttenant team-a" in listing and "ops\tthe operator" in listing and "expires 20" in listing
    )
    _, rotated, _ = keys(capsys, "rotate", "--keys", str(path), "--id", "alice")
    ring = KeyRing.load(path)
    assert ring.caller(alice) is None and ring.caller(rotated).viewer == "team-a"
    assert keys(capsys, "remove", "--keys", str(path), "--id", "ops")[0] == 0
    assert KeyRing.load(path).caller(ops) is None
    code, _, err = keys(capsys, "remove", "--keys", str(path), "--id", "ops")
    assert code == 2 and "has no key with id 'ops'" in err
    rows = json.loads(path.read_text())
    rows["keys"][0]["expires"] = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    path.write_text(json.dumps(rows))
    assert KeyRing.load(path).caller(rotated) is None  # expired: refused like an unknown key
    with pytest.raises(ValueError, match="in the past"):
        expiry("2001-01-01")


def test_a_running_ring_sees_a_removed_key_within_seconds_and_fails_closed(tmp_path, capsys):
    path = tmp_path / "keys.json"
    _, alice, _ = keys(capsys, "add", "--keys", str(path), "--id", "alice", "--operator")
    _, bob, _ = keys(capsys, "add", "--keys", str(path), "--id", "bob", "--operator")
    ring = KeyRing.load(path)
    assert ring.caller(alice) and ring.caller(bob)
    keys(capsys, "remove", "--keys", str(path), "--id", "alice")
    time.sleep(RELOAD_S + 0.1)
    assert ring.caller(alice) is None and ring.caller(bob).key_id == "bob"
    path.write_text("{broken")
    time.sleep(RELOAD_S + 0.1)
    assert ring.caller(bob) is None and "not a keys file" in ring.broken  # no key until the file is whole again


@pytest.mark.parametrize("text", ["[]", "{}", '{"keys": 5}', "[5]", '"abc"', '{"keys": [{"id": "x"}]}'])
def test_keys_add_to_a_file_that_is_not_a_keys_file_is_refused_and_adds_nothing(tmp_path, capsys, text):
    path = tmp_path / "keys.json"
    path.write_text(text)
    code, out, err = keys(capsys, "add", "--keys", str(path), "--id", "x", "--operator")
    assert code == 2 and not out and len(err.splitlines()) == 1 and "Traceback" not in err
    assert path.read_text() == text


def test_special_files_and_links_are_refused_never_waited_on_or_written_through(tmp_path, capsys):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    result = {}
    worker = threading.Thread(
        target=lambda: result.update(code=main(["keys", "add", "--keys", str(fifo), "--id", "x", "--operator"]))
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive() and result["code"] == 2
    assert "not a regular file" in capsys.readouterr().err
    target = tmp_path / "elsewhere.json"
    (tmp_path / "link.json").symlink_to(target)  # dangling: a write through it would make `elsewhere.json`
    code, _, err = keys(capsys, "add", "--keys", str(tmp_path / "link.json"), "--id", "x", "--operator")
    assert code == 2 and "links" in err and not target.exists()
