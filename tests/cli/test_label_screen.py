"""``skrisk label`` in a real 80x40 terminal (tmux): every question, with its reasons and both
records, fits on the screen; long cells are cut with a count of what is hidden; ``r`` and ``f``
show the reasons and the records whole."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

WIDTH, HEIGHT = 80, 40
N_ANSWERS = 26  # 6 starting pairs, risk sampling rounds of 10, 5 audit pairs after each (LearnRisk from round 2)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install tmux)")


@pytest.fixture(scope="module")
def abt_buy_tables(tmp_path_factory, data_home):
    """About 120 candidate pairs of Abt-Buy (long product descriptions), their tables and gold."""
    src = data_home / "abt_buy"
    cand = pd.read_csv(src / "valid.csv", dtype=str)
    pos = cand[cand["label"] == "1"].head(30)
    neg = cand[cand["label"] == "0"].head(90)
    cand = pd.concat([pos, neg]).sample(frac=1.0, random_state=0)
    a = pd.read_csv(src / "tableA.csv", dtype=str)
    b = pd.read_csv(src / "tableB.csv", dtype=str)
    folder = tmp_path_factory.mktemp("abt")
    a[a["id"].isin(cand["ltable_id"])].to_csv(folder / "A.csv", index=False)
    b[b["id"].isin(cand["rtable_id"])].to_csv(folder / "B.csv", index=False)
    pairs = cand.rename(columns={"ltable_id": "left_id", "rtable_id": "right_id"})[["left_id", "right_id"]]
    pairs.to_csv(folder / "P.csv", index=False)
    gold = set(zip(pos["ltable_id"], pos["rtable_id"]))
    return folder, gold


class Tmux:
    """One private tmux server (its own socket) running one command in an 80x40 pane."""

    def __init__(self, folder: Path, command: str) -> None:
        self.sock = f"skrisk-test-{os.getpid()}-{time.monotonic_ns()}"
        env = f"PYTHONUNBUFFERED=1 PYTHONHASHSEED=0 TERM=xterm"
        self._tmux("new-session", "-d", "-x", str(WIDTH), "-y", str(HEIGHT), "-s", "label",
                   f"cd {shlex.quote(str(folder))} && {env} {command}; sleep 600")

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.sock, *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> list[str]:
        return self._tmux("capture-pane", "-p", "-t", "label").splitlines()

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "label", *keys)

    def wait_prompt(self, before: tuple, timeout: float = 240) -> list[str]:
        """Wait for a screen other than ``before`` that ends with an empty prompt; return it."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            lines = self.screen()
            shown = tuple(ln for ln in lines if ln.strip())
            if shown and shown != before and shown[-1].startswith("Same entity?") and shown[-1].rstrip().endswith(":"):
                time.sleep(0.2)  # let the last redraw land
                return self.screen()
            time.sleep(0.1)
        raise AssertionError("no new prompt in time; screen:\n" + "\n".join(self.screen()))

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)


def _question(screen: list[str]) -> list[str]:
    """The last question on the screen, from its top rule to the prompt (it must all be there)."""
    tops = [i for i, ln in enumerate(screen) if ln == "=" * WIDTH]
    assert tops, "the question's top rule scrolled off the 40-line screen:\n" + "\n".join(screen)
    block = screen[tops[-1]:]
    while block and not block[-1].strip():
        block.pop()
    return block


def test_every_question_with_reasons_and_both_records_fits_in_40_lines(abt_buy_tables):
    folder, gold = abt_buy_tables
    cmd = (f"{shlex.quote(sys.executable)} -m skrisk.cli label --left A.csv --right B.csv --pairs P.csv "
           "--session sess")
    tmux = Tmux(folder, cmd)
    try:
        prev, risk_questions, with_reasons, audits = (), 0, 0, 0
        for _ in range(N_ANSWERS):
            screen = tmux.wait_prompt(prev)
            prev = tuple(ln for ln in screen if ln.strip())
            q = _question(screen)
            assert len(q) <= HEIGHT and q[-1].startswith("Same entity?")
            assert all(len(ln) <= WIDTH for ln in q)
            ids = [ln for ln in q if "left record" in ln and "right record" in ln]
            assert len(ids) == 1, "\n".join(q)
            left_id = ids[0].split("left record")[1].split()[0]
            right_id = ids[0].split("right record")[1].split()[0]
            for attr in ("name", "description", "price"):
                assert any(ln.startswith(attr) for ln in q), f"{attr} is not on screen:\n" + "\n".join(q)
            audits += any(ln.startswith("Audit after round") for ln in q)
            if any(ln.startswith("Matcher says") for ln in q):
                risk_questions += 1
                why = [i for i, ln in enumerate(q) if ln.startswith("Why risk sampling picked it")]
                reasons = [ln for ln in q[why[0] + 1:] if ln.startswith("  - ")] if why else []
                if reasons:  # LearnRisk is trained: at most three reasons, each in words
                    with_reasons += 1
                    assert len(reasons) <= 3, "\n".join(q)
                    assert not any(" x1" in ln or "x0 " in ln for ln in reasons)
                    if with_reasons == 1:  # the full list is behind r, the whole records behind f
                        tmux.send("r", "Enter")
                        screen = tmux.wait_prompt(prev)
                        prev = tuple(ln for ln in screen if ln.strip())
                        assert any(ln.startswith("All ") and "reason(s)" in ln for ln in screen)
                        tmux.send("f", "Enter")
                        screen = tmux.wait_prompt(prev)
                        prev = tuple(ln for ln in screen if ln.strip())
                        assert not any("more characters]" in ln for ln in screen[-HEIGHT // 2:])
            tmux.send("y" if (left_id, right_id) in gold else "n", "Enter")
        assert risk_questions >= 4 and with_reasons >= 1 and audits >= 1
        tmux.send("q", "Enter")
        end = time.monotonic() + 120  # the session reads the last answer and q, then ends: wait for it
        while time.monotonic() < end and _answers(folder) < N_ANSWERS:
            time.sleep(0.2)
    finally:
        tmux.close()
    assert _answers(folder) == N_ANSWERS


def _answers(folder: Path) -> int:
    journal = folder / "sess" / "journal.jsonl"
    lines = journal.read_text().splitlines() if journal.exists() else []
    return sum('"event": "answer"' in ln or '"event":"answer"' in ln for ln in lines)


def _long_cell_session(tmp_path, monkeypatch, capsys, answers):
    import io

    from skrisk.cli import main

    long_text = " ".join(f"word{i}" for i in range(1500))
    (tmp_path / "A.csv").write_text(f"id,name,description\n1,blue cafe,{long_text}\n2,red bar,short\n")
    (tmp_path / "B.csv").write_text("id,name,description\n10,blue cafe,a short text\n20,red pub,short\n")
    (tmp_path / "P.csv").write_text("left_id,right_id\n1,10\n")
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("LINES", str(HEIGHT))
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(a + "\n" for a in answers)))
    args = ["--left", str(tmp_path / "A.csv"), "--right", str(tmp_path / "B.csv"), "--pairs", str(tmp_path / "P.csv")]
    assert main(["label", *args, "--session", str(tmp_path / "s")]) == 0
    return capsys.readouterr().out


def test_a_long_cell_is_cut_to_fit_the_screen_and_f_shows_it_whole(tmp_path, monkeypatch, capsys):
    out = _long_cell_session(tmp_path, monkeypatch, capsys, ["f", "q"])
    first = out[out.index("=" * WIDTH):]
    question = first[: first.index("Same entity?")].splitlines()
    assert len(question) + 2 <= HEIGHT  # with the blank line before it and the prompt
    assert any("more characters]" in ln for ln in question), "\n".join(question)
    assert "word200 " not in first[: first.index("Same entity?")]
    whole = first[first.index("Same entity?"):]
    assert "word200 " in whole  # f: the whole value (its first 2000 characters, then a count)
    assert all(len(ln) <= WIDTH for ln in first.splitlines() if not ln.startswith("Same entity?"))


def test_reasons_edited_in_the_journal_are_shown_as_text_or_skipped(tmp_path, monkeypatch, capsys):
    import json

    from skrisk.labelling import JupyterLabeller

    _long_cell_session(tmp_path, monkeypatch, capsys, ["q"])  # one question asked, the batch journaled
    journal = tmp_path / "s" / "journal.jsonl"
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    batch = next(e for e in events if e["event"] == "batch")
    batch["items"][0]["reasons"] = [
        "junk", None, {"text": 5, "weight": "heavy"}, {"text": "", "weight": 1},
        {"text": "names are the same: blue cafe", "direction": "match", "weight": -0.2, "rule": "<b>r</b>"},
    ]
    journal.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = _long_cell_session(tmp_path, monkeypatch, capsys, ["r", "q"])
    assert "- 5 (suggests ?)" in out and "- names are the same: blue cafe (suggests match)" in out
    assert "All 2 reason(s)" in out and "junk" not in out
    labeller = JupyterLabeller(tmp_path / "s")
    try:
        assert "names are the same: blue cafe" in labeller.reasons.value
        assert "&lt;b&gt;r&lt;/b&gt;" in labeller.all_reasons.value and "<b>r</b>" not in labeller.all_reasons.value
    finally:
        labeller.close()
