"""Helpers of the hostile-session tests: tiny tables written in the test, a ``skrisk label`` driver."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from skrisk.cli import main

PROMPT = "Same entity?"

LEFT = (
    "id,name,city\n"
    "1,blue cafe,paris\n2,red bar,rome\n3,green inn,oslo\n4,yellow house,lima\n5,black cat,kyiv\n"
    "6,white lily,bern\n"
)
RIGHT = (
    "id,name,city\n"
    "10,blue cafe,paris\n20,red pub,rome\n30,old mill,bergen\n40,yellow house,lima\n50,grey dog,kyiv\n"
    "60,white lily,bern\n"
)
#: candidate pairs; two are pre-labelled (one match, one non-match) so risk rounds start at once
PAIRS = (
    "left_id,right_id,label\n"
    "1,10,1\n2,20,0\n3,30,\n4,40,\n5,50,\n6,60,\n1,20,\n2,10,\n4,50,\n5,40,\n6,30,\n3,60,\n"
)


def write_tables(folder: Path, left: str = LEFT, right: str = RIGHT, pairs: str | None = PAIRS):
    """Write the tables (and candidate pairs) into ``folder``; return the label arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "A.csv").write_text(left, encoding="utf-8")
    (folder / "B.csv").write_text(right, encoding="utf-8")
    args = ["--left", str(folder / "A.csv"), "--right", str(folder / "B.csv")]
    if pairs is not None:
        (folder / "P.csv").write_text(pairs, encoding="utf-8")
        args += ["--pairs", str(folder / "P.csv")]
    return args


def label(monkeypatch, capsys, argv: list[str], answers: list[str]):
    """Run ``skrisk label`` in-process with ``answers`` on stdin; return (exit code, captured)."""
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(a + "\n" for a in answers)))
    rc = main(["label", *argv])
    return rc, capsys.readouterr()


def answers_in_force(session: Path) -> dict:
    from skrisk.labelling import read_events, replay

    return replay(read_events(session / "journal.jsonl")).answers


class LabelProcess:
    """``python -m skrisk.cli label`` as a real subprocess, answered one question at a time."""

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
