"""``skrisk label``: scripted sessions through stdin, kill and resume, undo/unsure, export."""

from __future__ import annotations

import collections
import io
import os

import pandas as pd
import pytest

from skrisk.cli import main
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.labelling._journal import read_events, replay

from .conftest import LabelProcess, current_pair, journal_events, n_decisions, wait_until


def _oracle(pair, gold):
    return "y" if tuple(pair) in gold else "n"


def _drive(proc, session, script, gold, expected, stack, answered, start_prompt):
    """Answer ``script`` ("o" = the gold answer, or a literal answer); wait for each to be journaled."""
    n_prompt = start_prompt
    for step in script:
        n_prompt += 1
        pair = current_pair(proc.wait_prompt(n_prompt))
        ans = _oracle(pair, gold) if step == "o" else step
        before = n_decisions(session)
        proc.send(ans)
        if ans == "z":
            expected.pop(stack.pop())
        else:
            expected[pair] = {"y": "yes", "n": "no", "u": "unsure"}[ans]
            if pair in stack:
                stack.remove(pair)
            stack.append(pair)
            answered[pair] += 1
        wait_until(lambda: n_decisions(session) == before + 1)  # durable before we go on
    return n_prompt


def test_kill_mid_session_then_resume_keeps_every_answer_once(fz_tables, tmp_path):
    A, B, gold = fz_tables
    session = tmp_path / "sess"
    expected, stack, answered = {}, [], collections.Counter()
    first = LabelProcess(
        ["--left", str(A), "--right", str(B), "--session", str(session), "--batch", "4"], tmp_path, tmp_path / "1.log"
    )
    try:
        _drive(first, session, ["o", "o", "u", "o", "z", "o", "o", "o", "o", "o"], gold, expected, stack, answered, 0)
        first.proc.kill()  # killed between two answers (it is computing / showing the next pair)
        first.proc.wait(30)
    finally:
        first.close()
    state = replay(journal_events(session))
    assert {k: v for k, v in state.answers.items()} == expected

    second = LabelProcess(["--session", str(session)], tmp_path, tmp_path / "2.log")
    try:
        t = second.wait_prompt(1)
        assert f"{len(expected)} answer(s) so far" in t
        assert current_pair(t) not in expected  # resumes at an unanswered pair
        n = _drive(second, session, ["o"] * 9, gold, expected, stack, answered, 0)
        second.wait_prompt(n + 1)
        second.send("q")
        assert second.proc.wait(120) == 0
        log = second.text()
    finally:
        second.close()
    assert "Matcher says" in log and "risk that this label is wrong" in log  # risk rounds were shown

    events = read_events(session / "journal.jsonl")
    state = replay(events)
    assert state.answers == expected  # none lost
    per_pair = collections.Counter(
        (e["left_id"], e["right_id"]) for e in events if e["event"] == "answer"
    )
    assert per_pair == answered  # none duplicated: one journal answer per answer given
    assert len({e["seq"] for e in events}) == len(events)

    labels = pd.read_csv(session / "labels.csv", dtype=str, keep_default_na=False)
    assert len(labels) == len(expected)
    assert not labels.duplicated(["left_id", "right_id"]).any()
    got = dict(zip(zip(labels["left_id"], labels["right_id"]), labels["answer"]))
    assert got == expected
    pred = pd.read_csv(session / "predicted_matches.csv", dtype=str)
    assert {"left_id", "right_id", "probability", "source"} <= set(pred.columns)
    yes = {k for k, v in expected.items() if v == "yes"}
    assert yes <= set(zip(pred["left_id"], pred["right_id"]))


def _run(monkeypatch, capsys, argv, answers):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(a + "\n" for a in answers)))
    rc = main(argv)
    return rc, capsys.readouterr()


def test_undo_and_unsure_then_eof_and_resume(fz_tables, tmp_path, monkeypatch, capsys):
    A, B, _ = fz_tables
    session = tmp_path / "s"
    argv = ["label", "--left", str(A), "--right", str(B), "--session", str(session)]
    rc, cap = _run(monkeypatch, capsys, argv, ["y", "u", "z", "z", "n", "maybe", "u"])
    assert rc == 0, cap.err
    assert "Unknown answer 'maybe'" in cap.out
    events = read_events(session / "journal.jsonl")
    kinds = [e["event"] for e in events if e["event"] != "batch"]
    assert kinds == ["answer", "answer", "undo", "undo", "answer", "answer"]
    state = replay(events)
    ans = [e for e in events if e["event"] == "answer"]
    # both first answers undone; the first pair, asked again, got "n"; then "u" for the next one
    assert (ans[2]["left_id"], ans[2]["right_id"]) == (ans[0]["left_id"], ans[0]["right_id"])
    assert list(state.answers.values()) == ["no", "unsure"]
    unsure_pair = (ans[3]["left_id"], ans[3]["right_id"])
    # resume: the unsure pair is never asked again and is not a training label
    rc, cap = _run(monkeypatch, capsys, ["label", "--session", str(session)], ["n", "y", "n"])
    assert rc == 0, cap.err
    events = read_events(session / "journal.jsonl")
    asked_after = [(e["left_id"], e["right_id"]) for e in events if e["event"] == "answer"][4:]
    assert unsure_pair not in asked_after and len(asked_after) == 3
    state = replay(events)
    assert unsure_pair not in state.labels() and state.answers[unsure_pair] == "unsure"
    labels = pd.read_csv(session / "labels.csv", dtype=str, keep_default_na=False)
    assert len(labels) == 5 and (labels["answer"] == "unsure").sum() == 1
    assert labels.loc[labels["answer"] == "unsure", "label"].tolist() == [""]


def test_undo_with_nothing_to_undo_and_export_only(fz_tables, tmp_path, monkeypatch, capsys):
    A, B, _ = fz_tables
    session = tmp_path / "s"
    rc, cap = _run(monkeypatch, capsys,
                   ["label", "--left", str(A), "--right", str(B), "--session", str(session)], ["z", "y", "e", "q"])
    assert rc == 0, cap.err
    assert "Nothing to undo." in cap.out and "Exported 1 label(s)" in cap.out
    (session / "labels.csv").unlink()
    rc, cap = _run(monkeypatch, capsys, ["label", "--session", str(session), "--export"], [])
    assert rc == 0 and (session / "labels.csv").is_file() and (session / "predicted_matches.csv").is_file()


def test_ctrl_c_at_the_prompt_keeps_the_session(fz_tables, tmp_path, monkeypatch, capsys):
    A, B, _ = fz_tables
    session = tmp_path / "s"
    answers = iter(["y", "n"])

    def fake_input(prompt=""):
        try:
            return next(answers)
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr("builtins.input", fake_input)
    rc = main(["label", "--left", str(A), "--right", str(B), "--session", str(session)])
    err = capsys.readouterr().err
    assert rc == 130 and "Interrupted" in err and "resume" in err
    assert len(replay(read_events(session / "journal.jsonl")).answers) == 2


def test_torn_last_line_is_cut_on_resume(fz_tables, tmp_path, monkeypatch, capsys):
    A, B, _ = fz_tables
    session = tmp_path / "s"
    _run(monkeypatch, capsys, ["label", "--left", str(A), "--right", str(B), "--session", str(session)], ["y", "n"])
    with (session / "journal.jsonl").open("a") as fh:
        fh.write('{"seq": 99, "event": "ans')  # a kill in the middle of an append
    rc, cap = _run(monkeypatch, capsys, ["label", "--session", str(session)], ["n"])
    assert rc == 0, cap.err
    events = read_events(session / "journal.jsonl")
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert len(replay(events).answers) == 3


def test_failed_write_is_reported_and_the_session_kept(fz_tables, tmp_path, monkeypatch, capsys):
    A, B, _ = fz_tables
    session = tmp_path / "s"
    _run(monkeypatch, capsys, ["label", "--left", str(A), "--right", str(B), "--session", str(session)], ["y", "n"])
    before = (session / "journal.jsonl").read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)  # every durable write of the journal
    rc, cap = _run(monkeypatch, capsys, ["label", "--session", str(session)], ["y"])
    assert rc == 2
    assert "Cannot write" in cap.err and "No space left on device" in cap.err and "--session" in cap.err
    monkeypatch.undo()
    after = read_events(session / "journal.jsonl")
    assert (session / "journal.jsonl").read_bytes().startswith(before)
    assert len(replay(after).answers) >= 2


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_session_folder(fz_tables, tmp_path, monkeypatch, capsys):
    A, B, _ = fz_tables
    session = tmp_path / "s"
    _run(monkeypatch, capsys, ["label", "--left", str(A), "--right", str(B), "--session", str(session)], ["y"])
    before = (session / "journal.jsonl").read_bytes()
    os.chmod(session / "journal.jsonl", 0o444)
    os.chmod(session, 0o555)
    try:
        rc, cap = _run(monkeypatch, capsys, ["label", "--session", str(session)], ["n"])
    finally:
        os.chmod(session, 0o755)
        os.chmod(session / "journal.jsonl", 0o644)
    assert rc == 2 and "Cannot write" in cap.err
    assert (session / "journal.jsonl").read_bytes() == before
