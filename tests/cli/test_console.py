"""The ``skrisk`` console script as a person runs it: a process of its own."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd

from _match_fixtures import dedup_model, febrl_split  # noqa: F401 - fixtures


def test_a_match_process_writes_everything_and_says_so(dedup_model, febrl_split, tmp_path):  # noqa: F811
    """``skrisk match`` ends without the interpreter's teardown: its files are whole, its output
    complete and its exit code the command's (0, then 2 for a bad input)."""
    _, new, _ = febrl_split
    model = dedup_model.save(tmp_path / "model.skrisk")
    new.rename_axis("id").reset_index().to_csv(tmp_path / "new.csv", index=False)
    cmd = [sys.executable, "-m", "skrisk.cli", "match", "--model", str(model), "--left", str(tmp_path / "new.csv"),
           "--out", str(tmp_path / "out"), "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("entities.csv.")  # the last line, flushed
    ent = pd.read_csv(tmp_path / "out" / "entities.csv", dtype=str)
    assert set(ent["record_id"]) == set(new.index.astype(str))
    assert not (tmp_path / "out" / ".skrisk.lock").read_bytes()  # released (an empty lock file stays)
    bad = subprocess.run([*cmd[:7], str(tmp_path / "missing.csv"), *cmd[8:]], capture_output=True, text=True,
                         timeout=600)
    assert bad.returncode == 2 and "missing.csv" in bad.stderr
