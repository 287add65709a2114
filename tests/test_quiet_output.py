"""What `rag-assets run` writes where its output is no terminal (a log file, a pipe, CI): one line
per stage, no progress bar redrawn line after line, no third-party warning."""

import re
import subprocess

from conftest import TINY_DOCS, TINY_QUESTIONS, write_dataset
from servers import CLI


def test_a_redirected_run_writes_a_line_per_stage_and_no_bar(tmp_path):
    dataset = write_dataset(tmp_path / "dataset", TINY_DOCS, TINY_QUESTIONS)
    log = tmp_path / "run.log"
    with log.open("w") as out:  # a file, as `> run.log 2>&1` gives: no terminal
        done = subprocess.run(
            [*CLI, "run", "--dataset", str(dataset), "--data-dir", str(tmp_path / "data"), "--strategies", "C"],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=900,
        )
    text = log.read_text()
    assert done.returncode == 0, text
    assert "\r" not in text and not re.search(r"\d+%\|", text), text  # no bar, whole or in fragments
    assert not re.search(r"Warning:|https?://", text), text  # no Python warning, no library's advice with a URL
    embedded = [line for line in text.splitlines() if line.startswith("embeddings[minilm|C]:")]
    assert len(embedded) == 1 and re.fullmatch(r"embeddings\[minilm\|C\]: (\d+)/\1 in \d+\.\d s", embedded[0])
    assert len(text.splitlines()) < 60, text
