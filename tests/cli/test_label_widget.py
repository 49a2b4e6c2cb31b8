"""The Jupyter labeller, driven from Python (``button.click()``), over the same session folder,
journal and lock as ``skrisk label``: a session moves from the console to the notebook and back."""

from __future__ import annotations

import collections

import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk._fileio import FolderInUseError
from skrisk.labelling import JupyterLabeller, LabellingSession
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.labelling._journal import read_events, replay

from .conftest import LabelProcess, current_pair, journal_events, n_decisions, wait_until

pytest.importorskip("ipywidgets")


def _gold_answer(key, gold):
    return "yes" if tuple(key) in gold else "no"


def _answer_then_quit(proc, session, n_answers, gold, expected):
    """Answer ``n_answers`` console questions from the gold (each journaled before the next), then quit."""
    for n in range(1, n_answers + 1):
        pair = current_pair(proc.wait_prompt(n))
        before = n_decisions(session)
        proc.send("y" if pair in gold else "n")
        expected[pair] = _gold_answer(pair, gold)
        wait_until(lambda: n_decisions(session) == before + 1)
    proc.wait_prompt(n_answers + 1)
    proc.send("q")
    proc.proc.wait(60)


def test_console_then_widget_then_console_keeps_every_answer_once(fz_tables, tmp_path):
    A, B, gold = fz_tables
    session = tmp_path / "sess"
    expected: dict = {}
    # 1. the console: four answers, then quit
    first = LabelProcess(["--left", str(A), "--right", str(B), "--session", str(session), "--batch", "4"],
                         tmp_path, tmp_path / "1.log")
    try:
        _answer_then_quit(first, session, 4, gold, expected)
    finally:
        first.close()
    # 2. the notebook: the same folder, the next question, buttons clicked from Python
    labeller = JupyterLabeller(session)
    try:
        assert labeller.question is not None and labeller.question.key not in expected
        with pytest.raises(FolderInUseError):  # one process at a time: the console must wait
            LabellingSession.open(session)
        for _ in range(5):
            key = labeller.question.key
            assert f"left record {key[0]}" in labeller.pair.value and f"right record {key[1]}" in labeller.pair.value
            labeller.buttons[_gold_answer(key, gold)].click()
            expected[key] = _gold_answer(key, gold)
        undone = list(expected)[-1]
        labeller.buttons["undo"].click()  # undo the last answer: its pair is asked again
        assert labeller.question.key == undone
        labeller.buttons["unsure"].click()
        expected[undone] = "unsure"
        risk_q = labeller.question
        assert risk_q is not None
        if "probability" in risk_q.item:  # a risk sampling question shows the matcher's verdict
            assert "Matcher says" in labeller.verdict.value
        # a risk round was trained in the notebook: its estimate and stopping state are on show
        assert "Stopping rule 1" in labeller.status.value and "Stopping rule 2" in labeller.status.value
        assert labeller.session.status_text() and "Estimate" in labeller.status.value
    finally:
        labeller.close()
    assert all(b.disabled for b in labeller.buttons.values())
    with pytest.raises(RuntimeError, match="closed"):
        labeller.answer("yes")
    # 3. back to the console: it resumes where the notebook stopped
    second = LabelProcess(["--session", str(session)], tmp_path, tmp_path / "2.log")
    try:
        pair = current_pair(second.wait_prompt(1))
        assert pair == risk_q.key
        _answer_then_quit(second, session, 3, gold, expected)
    finally:
        second.close()
    events = journal_events(session)
    assert replay(events).answers == expected
    answered = collections.Counter((e["left_id"], e["right_id"]) for e in events if e["event"] == "answer")
    # every answer once; the one pair answered twice is the one whose first answer was undone
    assert {k for k, c in answered.items() if c > 1} == {undone} and answered[undone] == 2
    assert sum(e["event"] == "undo" for e in events) == 1


def test_cells_are_escaped_and_the_widget_works_over_an_open_session(tmp_path):
    (tmp_path / "A.csv").write_text(
        'id,name\n1,"<script>alert(1)</script> blue \x1b[31mcafe"\n2,red bar\n3,green inn\n', encoding="utf-8"
    )
    (tmp_path / "B.csv").write_text("id,name\n10,<b>blue cafe</b>\n20,red pub\n30,old mill\n", encoding="utf-8")
    (tmp_path / "P.csv").write_text("left_id,right_id\n1,10\n2,20\n3,30\n1,20\n", encoding="utf-8")
    session = LabellingSession.open(tmp_path / "s", left=tmp_path / "A.csv", right=tmp_path / "B.csv",
                                    pairs=tmp_path / "P.csv")
    try:
        labeller = JupyterLabeller(session)
        shown = {labeller.question.key: labeller.pair.value}
        while labeller.question is not None and len(shown) < 4:
            labeller.buttons["no" if len(shown) % 2 else "yes"].click()
            if labeller.question is not None:
                shown[labeller.question.key] = labeller.pair.value
        page = "".join(shown.values())
        assert "<script>" not in page and "&lt;script&gt;" in page
        assert "<b>blue cafe</b>" not in page and "&lt;b&gt;blue cafe&lt;/b&gt;" in page
        assert "\x1b" not in page and "\\x1b[31m" in page
        labeller.close()
        # the session stays open (the labeller did not open it), its output goes back to the console
        assert session.store.locked and session.out is not labeller._log
        n = len(session.state.answers)
        q = session.next_question()
        if q is not None:
            session.answer(q.key, "unsure")
            assert len(session.state.answers) == n + 1
    finally:
        session.close()
    assert len(replay(read_events(tmp_path / "s" / "journal.jsonl")).answers) >= 4


def test_open_arguments_with_an_open_session_are_refused(tmp_path):
    (tmp_path / "A.csv").write_text("id,name\n1,a\n2,b\n", encoding="utf-8")
    (tmp_path / "B.csv").write_text("id,name\n10,a\n20,c\n", encoding="utf-8")
    (tmp_path / "P.csv").write_text("left_id,right_id\n1,10\n2,20\n", encoding="utf-8")
    session = LabellingSession.open(tmp_path / "s", left=tmp_path / "A.csv", right=tmp_path / "B.csv",
                                    pairs=tmp_path / "P.csv")
    try:
        with pytest.raises(TypeError, match="only apply"):
            JupyterLabeller(session, left=tmp_path / "A.csv")
    finally:
        session.close()
