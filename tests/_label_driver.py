"""``skrisk label`` driven as a real subprocess, one answer at a time: the driver shared by the
command-line tests (``tests/cli``) and the hostile-session tests (``tests/hostile``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

PROMPT = "Same entity?"


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
