"""Hostile input to ``skrisk label`` sessions: concurrency, full disks, damaged or shrunk journals,
moved tables, bad options, edited manifests, spreadsheet formulas in exported cells.

Every test here failed on the code before issue #15 was fixed, except the ones marked "(kept)",
which pin behaviour that was already right.
"""

from __future__ import annotations

import collections
import errno
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.labelling._journal import Journal, SessionWriteError, read_events, replay

from ._session_util import LabelProcess, answers_in_force, label, wait_until, write_tables


def _n_answers(session):
    return sum(e["event"] in ("answer", "undo") for e in read_events(session / "journal.jsonl"))


# --------------------------------------------------------------------------- item 7: concurrency
def test_second_label_process_on_one_folder_is_refused(tmp_path):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    first = LabelProcess([*args, "--session", str(session), "--batch", "3", "--initial", "2"], tmp_path,
                         tmp_path / "1.log")
    try:
        given = []
        for n, ans in enumerate(["y", "n"], start=1):
            first.wait_prompt(n)
            first.send(ans)
            given.append(ans)
            wait_until(lambda: _n_answers(session) == len(given))
        first.wait_prompt(3)
        # a second real process on the same folder, while the first waits at its prompt
        second = subprocess.run(
            [sys.executable, "-m", "skrisk.cli", "label", "--session", str(session)],
            input="y\ny\ny\nq\n", capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"in use by pid {first.proc.pid}" in second.stderr
        assert "Traceback" not in second.stderr
        assert _n_answers(session) == 2  # the refused process wrote nothing
        first.send("y")
        wait_until(lambda: _n_answers(session) == 3)
        first.wait_prompt(4)
        first.send("q")
        assert first.proc.wait(120) == 0
    finally:
        first.close()
    events = read_events(session / "journal.jsonl")
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [e["answer"] for e in events if e["event"] == "answer"] == ["yes", "no", "yes"]
    labels = pd.read_csv(session / "labels.csv", dtype=str, keep_default_na=False)
    assert (labels["answer"] != "given").sum() == 3
    # the lock dies with its holder: the session resumes at once
    third = subprocess.run([sys.executable, "-m", "skrisk.cli", "label", "--session", str(session)],
                           input="q\n", capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert third.returncode == 0, third.stderr
    assert "3 answer(s) so far" in third.stdout


# --------------------------------------------------------------------------- item 8: failed appends
def test_failed_append_leaves_no_trace_and_no_duplicate_sequence_number(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    with Journal(path) as j:
        j.append("answer", left_id="a", right_id="b", answer="yes")
        j.append("answer", left_id="c", right_id="d", answer="no")
    before = path.read_bytes()
    real_fsync = os.fsync
    calls = collections.Counter()

    def fsync_fails_once(fd):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_fails_once)
    with Journal(path) as j:
        with pytest.raises(SessionWriteError, match="No space left on device"):
            j.append("answer", left_id="e", right_id="f", answer="yes")  # not acknowledged
        assert path.read_bytes() == before  # no trace of the failed answer
        j.append("answer", left_id="g", right_id="h", answer="no")  # acknowledged
    events = read_events(path)
    assert [e["seq"] for e in events] == [0, 1, 2]
    assert replay(events).answers == {("a", "b"): "yes", ("c", "d"): "no", ("g", "h"): "no"}


def _mount_tmpfs(where, size="256k"):
    if sys.platform != "linux" or not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("a real full disk needs root to mount a small tmpfs")
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")


def test_real_full_disk_during_an_answer(tmp_path, monkeypatch, capsys):
    """A tmpfs of 256 KiB is filled while the labeller thinks; the answer that does not fit is refused
    with the helpful message, leaves no trace, and the session resumes with every answer given before."""
    args = write_tables(tmp_path / "t")
    disk = tmp_path / "disk"
    _mount_tmpfs(disk)
    session = disk / "s"
    journal = session / "journal.jsonl"
    page = os.statvfs(disk).f_bsize
    state = {"asked": 0, "filled": False, "before": b"", "last_len": {}}
    answers = ["y", "z"]  # answer and undo the same pair: lines of a steady length, no model training

    def fill_disk():
        with open(disk / "filler", "wb", buffering=0) as fh:
            for chunk in (page, 1):
                while True:
                    try:
                        fh.write(b"\0" * chunk)
                    except OSError as exc:
                        assert exc.errno == errno.ENOSPC
                        break

    def fake_input(prompt=""):
        if state["filled"]:
            raise AssertionError("asked again after the failed write")
        ans = answers[state["asked"] % 2]
        state["asked"] += 1
        size = journal.stat().st_size
        lines = journal.read_bytes().splitlines()
        kind = "answer" if ans == "y" else "undo"
        prev = [len(x) + 1 for x in lines if json.loads(x)["event"] == kind]
        # fill the disk once the next line (at least as long as the last of its kind) needs a new page
        if prev and page - size % page < prev[-1]:
            state["before"] = journal.read_bytes()
            fill_disk()
            state["filled"] = True
        if state["asked"] > 200:
            raise AssertionError("never reached a page boundary")
        return ans

    import builtins

    from skrisk.cli import main

    real_input = builtins.input
    monkeypatch.setattr("builtins.input", fake_input)

    try:
        rc = main(["label", *args, "--session", str(session), "--initial", "2", "--batch", "3"])
        err = capsys.readouterr().err
        assert state["filled"]
        assert rc == 2, err
        assert "Cannot write" in err and "journal.jsonl" in err and "No space left on device" in err
        assert "disk is not full" in err and "Traceback" not in err
        assert journal.read_bytes() == state["before"]  # the refused answer left no trace
        acknowledged = replay(read_events(journal))
        (disk / "filler").unlink()
        monkeypatch.setattr("builtins.input", real_input)
        rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["n", "q"])
        assert rc == 0, cap.err
        events = read_events(journal)
        assert [e["seq"] for e in events] == list(range(len(events)))
        after = replay(events)
        assert len(after.answers) == len(acknowledged.answers) + 1
        assert set(acknowledged.answers.items()) <= set(after.answers.items())
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


# --------------------------------------------------------------------------- item 9: exports never shrink
@pytest.mark.parametrize("damage", ["emptied", "deleted", "cut"])
def test_a_shrunk_journal_is_refused_and_labels_csv_kept(damage, tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--batch", "4"],
                    ["y", "n", "y", "n", "q"])
    assert rc == 0, cap.err
    labels_before = (session / "labels.csv").read_bytes()
    assert labels_before.count(b"\n") == 7  # header, 2 given, 4 answers
    journal = session / "journal.jsonl"
    if damage == "emptied":
        journal.write_bytes(b"")
    elif damage == "deleted":
        journal.unlink()
    else:
        journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:3]))
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["y", "q"])
    assert rc == 2
    assert "journal.jsonl" in cap.err and "labels.csv" in cap.err and "--force" in cap.err
    assert "backup" in cap.err
    assert (session / "labels.csv").read_bytes() == labels_before
    # --force goes on, and keeps the old labels.csv beside the new one
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--force"], ["y", "q"])
    assert rc == 0, cap.err
    backups = list(session.glob("labels.before-*.csv"))
    assert len(backups) == 1 and backups[0].read_bytes() == labels_before
    assert "kept as" in cap.out


def test_export_refuses_to_drop_answers_of_an_older_labels_file(tmp_path, monkeypatch, capsys):
    """A session written before the manifest recorded its exports: labels.csv itself is checked."""
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--batch", "4"],
                    ["y", "n", "y", "q"])
    assert rc == 0, cap.err
    manifest = json.loads((session / "session.json").read_text())
    del manifest["exported"]
    (session / "session.json").write_text(json.dumps(manifest))
    (session / "journal.jsonl").write_bytes(b"")
    before = (session / "labels.csv").read_bytes()
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["n", "q"])
    assert rc == 2
    assert "Not overwriting" in cap.err and "labels.csv" in cap.err and "journal.jsonl" in cap.err
    assert (session / "labels.csv").read_bytes() == before


def test_undo_after_an_export_is_not_a_shrink(tmp_path, monkeypatch, capsys):  # (kept, with the check)
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--batch", "4"],
                    ["y", "n", "e", "z", "z", "q"])
    assert rc == 0, cap.err
    labels = pd.read_csv(session / "labels.csv", dtype=str, keep_default_na=False)
    assert (labels["answer"] != "given").sum() == 0  # both answers undone: the export follows


# --------------------------------------------------------------------------- item 10: options
@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_bad_seed_is_refused_before_anything_is_written(seed, tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--seed", seed], ["y"])
    assert rc == 2
    assert "seed must be an integer from 0 to 4294967295" in cap.err
    assert not session.exists()


def test_large_seed_session_runs_risk_rounds_resumes_and_exports(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    argv = [*args, "--session", str(session), "--seed", "600000", "--initial", "2", "--batch", "2", "--audit", "0"]
    rc, cap = label(monkeypatch, capsys, argv, ["y", "n", "y", "q"])
    assert rc == 0, cap.err
    assert "Risk sampling round 2" in cap.out  # a second risk round was chosen with this seed
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["n", "q"])
    assert rc == 0, cap.err
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--export"], [])
    assert rc == 0, cap.err
    assert "Exported 6 label(s)" in cap.out


def test_resume_with_other_fixed_options_says_so_and_keeps_the_stored_ones(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--seed", "3"], ["y", "q"])
    assert rc == 0, cap.err
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--seed", "5", "--encoding", "latin-1",
                                          "--batch", "7"], ["q"])
    assert rc == 0, cap.err
    assert "--seed, --encoding are fixed when a session starts" in cap.err
    params = json.loads((session / "session.json").read_text())["params"]
    assert params["seed"] == 3 and params["n_instances"] == 7 and "batch" not in params


def test_manifest_written_with_the_old_name_batch_is_read_as_n_instances(tmp_path, monkeypatch, capsys):
    from skrisk.labelling import LabellingSession

    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--batch", "4"], ["y", "q"])
    assert rc == 0, cap.err
    path = session / "session.json"
    manifest = json.loads(path.read_text())
    params = manifest["params"]
    params["batch"] = params.pop("n_instances")  # the manifest as sessions wrote it before the rename
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    opened = LabellingSession.open(session)
    try:
        assert opened.config.n_instances == 4
    finally:
        opened.close()
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--batch", "6"], ["q"])
    assert rc == 0, cap.err
    assert json.loads(path.read_text())["params"]["n_instances"] == 6


# --------------------------------------------------------------------------- item 12: moved tables
def test_moved_tables_are_found_by_checksum(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session)], ["y", "q"])
    assert rc == 0, cap.err
    new = tmp_path / "new" / "place"
    new.mkdir(parents=True)
    shutil.move(str(tmp_path / "t" / "A.csv"), new / "left.csv")
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2 and "is gone: pass its new location with --left" in cap.err
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--left", str(new / "left.csv")], ["n", "q"])
    assert rc == 0, cap.err
    assert "now" in cap.out and "same contents" in cap.out
    manifest = json.loads((session / "session.json").read_text())
    assert manifest["inputs"]["left"]["path"] == str((new / "left.csv").resolve())
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])  # the new place is stored
    assert rc == 0, cap.err
    assert "2 answer(s) so far" in cap.out
    other = new / "other.csv"
    other.write_text("id,name,city\n1,blue cafe,paris\n")
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--left", str(other)], ["q"])
    assert rc == 2 and "is not the file this session started with" in cap.err
    assert len(answers_in_force(session)) == 2


# --------------------------------------------------------------------------- item 14: formulas in exports
def test_exports_neutralise_spreadsheet_formulas(tmp_path, monkeypatch, capsys):
    hostile = ['=HYPERLINK("http://evil","x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tTAB", "'quoted"]
    left = "id,name,city\n" + "".join(f'=x{i},"{v.replace(chr(34), 2 * chr(34))}",paris\n'
                                      for i, v in enumerate(hostile)) + "-5,-5,paris\n"
    right = "id,name,city\n" + "".join(f'r{i},"{v.replace(chr(34), 2 * chr(34))}",paris\n'
                                       for i, v in enumerate(hostile)) + "r9,-5,paris\n"
    pairs = "left_id,right_id,label\n=x0,r0,1\n=x1,r2,0\n" + "".join(f"=x{i},r{i},\n" for i in range(1, 6)) + \
        "-5,r9,\n"
    args = write_tables(tmp_path / "t", left, right, pairs)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2"],
                    ["y"] * 6 + ["q"])
    assert rc == 0, cap.err
    for name in ("labels.csv", "predicted_matches.csv"):
        cells = [c for row in pd.read_csv(session / name, dtype=str, keep_default_na=False).itertuples(index=False)
                 for c in row]
        for c in cells:
            assert not c.startswith(("=", "+", "@", "\t", "\r")), (name, c)
            assert not (c.startswith("-") and c != "-5"), (name, c)
    labels = pd.read_csv(session / "labels.csv", dtype=str, keep_default_na=False)
    assert "'=x0" in set(labels["left_id"]) and "-5" in set(labels["left_id"])  # a plain number stays
    assert "''quoted" in set(labels["left_name"])  # one quote removed gives back every value
    # the export still round-trips: exporting again does not take the quoted ids for lost answers
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--export"], [])
    assert rc == 0, cap.err


# --------------------------------------------------------------------------- further hostile sessions
def _session_with_answers(tmp_path, monkeypatch, capsys, answers=("y", "n", "y")):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--batch", "4"],
                    [*answers, "q"])
    assert rc == 0, cap.err
    return session


def test_journal_line_edited_to_an_unknown_answer_is_named(tmp_path, monkeypatch, capsys):
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    journal = session / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    i = next(k for k, x in enumerate(lines) if '"answer":"no"' in x)
    lines[i] = lines[i].replace('"answer":"no"', '"answer":"maybe"')
    journal.write_text("".join(lines))
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2
    assert f"journal.jsonl, line {i + 1}" in cap.err and "'maybe'" in cap.err and "delete that line" in cap.err


def test_journal_last_line_saved_without_newline_is_kept(tmp_path, monkeypatch, capsys):
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    journal = session / "journal.jsonl"
    before = answers_in_force(session)
    journal.write_bytes(journal.read_bytes().rstrip(b"\n"))  # an editor dropped the final newline
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["n", "q"])
    assert rc == 0, cap.err
    assert "3 answer(s) so far" in cap.out
    after = answers_in_force(session)
    assert set(before.items()) <= set(after.items()) and len(after) == 4


def test_two_different_events_with_one_sequence_number_are_refused(tmp_path, monkeypatch, capsys):
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    journal = session / "journal.jsonl"
    events = read_events(journal)
    last = events[-1]
    forged = {**last, "answer": "no" if last["answer"] == "yes" else "yes", "left_id": "6", "right_id": "60"}
    with journal.open("a") as fh:
        fh.write(json.dumps(forged) + "\n")  # what the old buffered journal wrote after a failed append
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2
    assert "same sequence number" in cap.err and f"lines {len(events)} and {len(events) + 1}" in cap.err


def test_journal_with_a_seq_that_is_not_a_number(tmp_path, monkeypatch, capsys):
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    journal = session / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    ev = json.loads(lines[1])
    ev["seq"] = "one"
    lines[1] = json.dumps(ev) + "\n"
    journal.write_text("".join(lines))
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2 and "journal.jsonl, line 2" in cap.err and "'one'" in cap.err


def test_journal_of_another_session_is_refused(tmp_path, monkeypatch, capsys):  # (kept)
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    other = tmp_path / "other"
    args = write_tables(other, pairs="left_id,right_id,label\n1,10,1\n2,20,0\n")  # only pre-labelled pairs
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(other / "s"), "--initial", "2"], ["q"])
    assert rc == 0, cap.err
    shutil.copy(session / "journal.jsonl", other / "s" / "journal.jsonl")
    rc, cap = label(monkeypatch, capsys, ["--session", str(other / "s")], ["q"])
    # since issue #29 every journal line carries its session's identity: line 1 is named
    assert rc == 2 and "line 1, was written by another session" in cap.err


@pytest.mark.parametrize("damage", ["directory", "deleted"])
def test_session_json_replaced_by_a_directory_or_deleted_keeps_the_session(damage, tmp_path, monkeypatch, capsys):
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    manifest = session / "session.json"
    journal = (session / "journal.jsonl").read_bytes()
    candidates = (session / "candidates.csv").read_bytes()
    manifest.unlink()
    if damage == "directory":
        manifest.mkdir()
    args = write_tables(tmp_path / "t")  # the user starts over with the same command
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session)], ["y", "q"])
    assert rc == 2
    assert "session.json" in cap.err and ("not a file" in cap.err or "was deleted" in cap.err)
    assert (session / "journal.jsonl").read_bytes() == journal
    assert (session / "candidates.csv").read_bytes() == candidates


def test_journal_replaced_by_a_directory(tmp_path, monkeypatch, capsys):
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    (session / "journal.jsonl").unlink()
    (session / "journal.jsonl").mkdir()
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2 and "journal.jsonl is not a file" in cap.err


def test_candidates_edited_to_an_unknown_id_is_named(tmp_path, monkeypatch, capsys):  # (kept)
    session = _session_with_answers(tmp_path, monkeypatch, capsys)
    with (session / "candidates.csv").open("a") as fh:
        fh.write("999,10,\n")
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2 and "candidates.csv" in cap.err and "999" in cap.err


@pytest.mark.parametrize("typed", ["Y", "YES", "  yes  ", "No", "U"])
def test_answers_in_other_cases_are_understood(typed, tmp_path, monkeypatch, capsys):  # (kept)
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session)], [typed, "q"])
    assert rc == 0, cap.err
    expected = {"y": "yes", "n": "no", "u": "unsure"}[typed.strip()[0].lower()]
    assert list(answers_in_force(session).values()) == [expected]


def test_unknown_answers_are_asked_again_and_never_stored(tmp_path, monkeypatch, capsys):  # (kept)
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session)], ["1", "ja", "\x1b[A", "y", "q"])
    assert rc == 0, cap.err
    assert cap.out.count("Unknown answer") == 3 and "\x1b" not in cap.out
    assert list(answers_in_force(session).values()) == ["yes"]
