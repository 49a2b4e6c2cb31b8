"""Fixtures of the command-line tests: small real tables cut from Fodors-Zagats, a gold oracle."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

_PAIR_RE = re.compile(r"left record (\S+)\s+\|\s+right record (\S+)")
PROMPT = "Same entity?"


@pytest.fixture(scope="session")
def fz_tables(tmp_path_factory, data_home):
    """Left/right CSVs (about 45 x 40 restaurants, 20 true matches) and the gold match set."""
    src = data_home / "fodors_zagats"
    a = pd.read_csv(src / "tableA.csv", dtype=str)
    b = pd.read_csv(src / "tableB.csv", dtype=str)
    m = pd.concat([pd.read_csv(src / f"{s}.csv", dtype=str) for s in ("train", "valid", "test")])
    pos = m[m["label"] == "1"].head(20)
    left = a[a["id"].isin(pos["ltable_id"]) | a["id"].isin([str(i) for i in range(25)])]
    right = b[b["id"].isin(pos["rtable_id"]) | b["id"].isin([str(i) for i in range(20)])]
    folder = tmp_path_factory.mktemp("fz")
    left.to_csv(folder / "A.csv", index=False)
    right.to_csv(folder / "B.csv", index=False)
    gold = set(zip(pos["ltable_id"], pos["rtable_id"]))
    return folder / "A.csv", folder / "B.csv", gold


def current_pair(text: str) -> tuple[str, str]:
    """The pair shown last in a session transcript."""
    found = _PAIR_RE.findall(text)
    assert found, "no pair shown yet"
    return found[-1]


def journal_events(session: Path) -> list[dict]:
    from skrisk.labelling import read_events

    return read_events(session / "journal.jsonl")


def n_decisions(session: Path) -> int:
    return sum(e["event"] in ("answer", "undo") for e in journal_events(session))


class LabelProcess:
    """``skrisk label`` as a subprocess, answered one question at a time."""

    def __init__(self, args: list[str], cwd: Path, log: Path) -> None:
        self.log = log
        self.fh = log.open("w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "skrisk.cli", "label", *args],
            stdin=subprocess.PIPE, stdout=self.fh, stderr=subprocess.STDOUT, cwd=cwd, env=env, text=True,
        )

    def text(self) -> str:
        return self.log.read_text()

    def wait_prompt(self, n: int, timeout: float = 120) -> str:
        """Wait until the ``n``-th prompt is on screen; return the transcript."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            t = self.text()
            if t.count(PROMPT) >= n:
                return t
            if self.proc.poll() is not None:
                raise AssertionError(f"skrisk label exited ({self.proc.returncode}):\n{t[-3000:]}")
            time.sleep(0.05)
        raise AssertionError(f"no prompt #{n} within {timeout} s:\n{self.text()[-3000:]}")

    def send(self, answer: str) -> None:
        self.proc.stdin.write(answer + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.fh.close()


def wait_until(predicate, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")
