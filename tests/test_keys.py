"""API keys managed live: add, list, remove, rotate and expire through the command line; a keys file
written private from its first byte and never through a link; anything but a keys file refused in
one line; a server's key ring that sees a change within seconds and fails closed when the file
breaks."""

import json
import os
import stat
import subprocess
import sys
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


# A real `rag-assets keys` process each: every one imports first and says so, then all are let go at once.
TOGETHER = (
    "import os, sys, time\n"
    "from rag_assets.app.cli import main\n"
    "print('ready', file=sys.stderr, flush=True)\n"
    "while not os.path.exists(sys.argv[1]):\n"
    "    time.sleep(0.001)\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def at_once(folder, *commands: list[str]) -> list[subprocess.CompletedProcess]:
    go = folder / f"go-{time.monotonic_ns()}"
    started = [
        subprocess.Popen(
            [sys.executable, "-c", TOGETHER, str(go), "keys", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in commands
    ]
    for process in started:
        assert process.stderr.readline().strip() == "ready"
    go.touch()
    done = []
    for process, argv in zip(started, commands):
        out, err = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(argv, process.returncode, out.strip(), err.strip()))
    return done


def test_ten_keys_added_at_once_by_ten_processes_all_land(tmp_path):
    path = tmp_path / "keys.json"
    done = at_once(tmp_path, *(["add", "--keys", str(path), "--id", f"k{i}", "--operator"] for i in range(10)))
    assert [d.returncode for d in done] == [0] * 10, [d.stderr for d in done]
    ring = KeyRing.load(path)
    assert [ring.caller(d.stdout).key_id for d in done] == [f"k{i}" for i in range(10)]


@pytest.mark.parametrize("change", ["remove", "rotate"])
def test_a_removed_or_rotated_key_is_never_written_back_by_adds_racing_it(tmp_path, capsys, change):
    for trial in range(4):
        path = tmp_path / f"keys-{trial}.json"
        _, victim, _ = keys(capsys, "add", "--keys", str(path), "--id", "victim", "--operator")
        adds = [["add", "--keys", str(path), "--id", f"a{i}", "--tenant", "team-a"] for i in range(5)]
        first, *added = at_once(tmp_path, [change, "--keys", str(path), "--id", "victim"], *adds)
        assert first.returncode == 0 and all(d.returncode == 0 for d in added), first.stderr
        ring = KeyRing.load(path)
        assert ring.caller(victim) is None  # the revoked key stays revoked
        assert [ring.caller(d.stdout).key_id for d in added] == [f"a{i}" for i in range(5)]
        if change == "rotate":
            assert ring.caller(first.stdout).key_id == "victim"
        else:
            assert "victim" not in {e.key_id for e in ring.entries}
