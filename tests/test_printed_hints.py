"""Every hint a command prints is a command that works as printed: run with a data dir and a dataset
that are not the defaults, the commands `init` and `check` suggest are run as they were printed, and
the hints that would start a long run are parsed with the same options the user gave."""

import re
import shlex
import shutil
from pathlib import Path

import pytest

from rag_assets.app.cli import main, parser


def hint(text: str) -> str:
    """The one `rag-assets ...` command quoted in `text`."""
    found = re.findall(r"`(rag-assets [^`]+)`", text)
    assert len(found) == 1, text
    return found[0]


def run_as_printed(command: str) -> int:
    words = shlex.split(command)
    assert words[0] == "rag-assets"
    return main(words[1:])


def test_init_and_check_hints_run_as_printed_with_a_data_dir_of_their_own(tmp_path, tiny_dataset, capsys):
    dataset = Path(shutil.copytree(tiny_dataset, tmp_path / "our docs"))  # a space: quoted in every hint
    data = tmp_path / "our data"
    where = ["--dataset", str(dataset), "--data-dir", str(data)]
    assert main(["check", *where]) == 2  # no experiment.yaml yet: the init that writes it, for these
    init = hint(capsys.readouterr().err)
    assert f"--dataset {shlex.quote(str(dataset))}" in init and f"--data-dir {shlex.quote(str(data))}" in init
    assert run_as_printed(init) == 0 and (dataset / "experiment.yaml").is_file()
    check = hint(capsys.readouterr().out)
    assert f"--data-dir {shlex.quote(str(data))}" in check and f"--dataset {shlex.quote(str(dataset))}" in check
    assert main(["init", *where]) == 2  # it exists: the same check, for these
    assert hint(capsys.readouterr().err) == check
    assert run_as_printed(check) == 0
    out = capsys.readouterr().out
    assert "estimate: about" in out and "sampled here" in out and "ok: nothing was run" in out
    other = tmp_path / "other.yaml"
    assert main(["check", *where, "--experiment", str(other)]) == 2  # a file named that is not there
    init = hint(capsys.readouterr().err)
    assert f"--data-dir {shlex.quote(str(data))}" in init and f"--out {other}" in init
    assert run_as_printed(init) == 0 and other.is_file()
    assert run_as_printed(hint(capsys.readouterr().out)) == 0
    assert not data.exists()  # init and check wrote nothing into the data dir, nor built it


def test_hints_that_start_a_run_carry_the_data_dir_and_dataset(tmp_path):
    from rag_assets.drafting.drafter import draft_anyway
    from rag_assets.settings import Settings, SettingsError

    dataset, data = tmp_path / "our docs", tmp_path / "our data"
    drafted = draft_anyway(dataset / "questions.jsonl", data / "cache" / "drafts")
    args = parser().parse_args(shlex.split(drafted)[1:])
    assert (args.command, args.dataset, args.data_dir, args.questions) == ("run", str(dataset), str(data), "drafted")
    dataset.mkdir()
    with pytest.raises(SettingsError) as refused:
        Settings(data_dir=str(data), dataset=str(dataset), experiment=str(tmp_path / "gone.yaml"))
    args = parser().parse_args(shlex.split(hint(str(refused.value)))[1:])
    assert (args.command, args.data_dir, args.out) == ("init", str(data), str(tmp_path / "gone.yaml"))
