"""File-system tricks on the folders skrisk writes (issue #29, "Sessions that stop working"): blocking
options that must survive any number of resumes, symbolic and hard links planted for any file skrisk
writes, stale temporary files of killed writers, a full disk during an export. Every test failed on
the code before issue #29 unless marked "(kept)".
"""

from __future__ import annotations

import errno
import json
import os

import pytest

from ._session_util import answers_in_force, label, write_tables

LEFT = ("id,name,city\n1,blue cafe,paris\n2,red bar,rome\n3,green inn,oslo\n4,yellow house,lima\n"
        "5,black cat,kyiv\n6,white lily,bern\n7,blue bar,paris\n8,red cafe,rome\n")
RIGHT = ("id,name,city\n10,blue cafe,paris\n20,red pub,rome\n30,green inn,oslo\n40,yellow house,lima\n"
         "50,grey dog,kyiv\n60,white lily,bern\n70,blue bar,paris\n80,red cafe,rome\n")


@pytest.mark.parametrize("flags", [
    ["--block-on", "name"],
    ["--block-on", "name,city", "--block-top-k", "3", "--block-threshold", "0.1"],
    ["--blocking", "standard", "--block-on", "city"],
    ["--blocking", "sorted_neighbourhood", "--block-on", "name"],
])
def test_every_blocking_option_survives_any_number_of_resumes(tmp_path, monkeypatch, capsys, flags):
    args = write_tables(tmp_path / "t", LEFT, RIGHT, pairs=None)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), *flags, "--initial", "2"], ["y", "q"])
    assert rc == 0, cap.err
    rules = json.loads((session / "session.json").read_text())["blocking"]
    for n in range(3):  # a changed option rewrites the manifest on every resume
        rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--batch", str(3 + n)], ["q"])
        assert rc == 0, cap.err
        assert json.loads((session / "session.json").read_text())["blocking"] == rules
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--export"], [])
    assert rc == 0, cap.err


# ------------------------------------------------------------------ links
def _started(tmp_path, monkeypatch, capsys, answers):
    """A session on the small tables, answered with ``answers``; its folder."""
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2"], answers)
    assert rc == 0, cap.err
    return session


@pytest.mark.parametrize("name", ["journal.jsonl", "session.json", "labels.csv", "predicted_matches.csv",
                                  "candidates.csv", ".skrisk.lock", ".skrisk.lock.json", "model.skrisk"])
def test_a_symlink_in_a_session_folder_is_refused_before_anything_is_written(tmp_path, monkeypatch, capsys, name):
    # (.skrisk.lock kept: filelock 4.3 refuses a link itself; skrisk checks it first for older ones)
    session = _started(tmp_path, monkeypatch, capsys, ["y", "q"])
    outside = tmp_path / "victim.txt"
    outside.write_text("precious\n")
    target = session / name
    if target.exists():
        target.unlink()
    target.symlink_to(outside)
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["y", "q"])
    assert rc == 2 and "symbolic link" in cap.err and name in cap.err, cap.err
    assert outside.read_text() == "precious\n"  # not appended to, not truncated, not replaced
    assert target.is_symlink()


def test_a_symlinked_journal_on_a_new_session_is_refused_before_truncation(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    session.mkdir()
    outside = tmp_path / "victim.jsonl"
    outside.write_text('{"not": "a journal"}\n')
    (session / "journal.jsonl").symlink_to(outside)
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session)], ["y", "q"])
    assert rc == 2 and "symbolic link" in cap.err
    assert outside.read_text() == '{"not": "a journal"}\n'


def test_a_hard_linked_journal_is_refused(tmp_path, monkeypatch, capsys):
    session = _started(tmp_path, monkeypatch, capsys, ["y", "q"])
    os.link(session / "journal.jsonl", tmp_path / "elsewhere.jsonl")
    before = (tmp_path / "elsewhere.jsonl").read_bytes()
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["n", "q"])
    assert rc == 2 and "hard links" in cap.err
    assert (tmp_path / "elsewhere.jsonl").read_bytes() == before


def test_match_out_files_are_not_written_through_links(tmp_path):
    from skrisk.exceptions import SkriskError
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk._fileio import LinkError, write_csv_export

    import pandas as pd

    victim = tmp_path / "victim.csv"
    victim.write_text("keep\n")
    (tmp_path / "matches.csv").symlink_to(victim)
    with pytest.raises(LinkError, match="symbolic link") as info:
        write_csv_export(tmp_path / "matches.csv", pd.DataFrame({"a": [1]}))
    assert isinstance(info.value, SkriskError) and victim.read_text() == "keep\n"


def test_run_records_are_not_appended_through_a_link(tmp_path):
    # internal on purpose: the run-record writer itself
    from skrisk.experiments._loop import _append
    from skrisk._fileio import LinkError

    victim = tmp_path / "victim.jsonl"
    victim.write_text("")
    (tmp_path / "results.jsonl").symlink_to(victim)
    with pytest.raises(LinkError):
        _append(tmp_path / "results.jsonl", {"round": 0})
    assert victim.read_text() == ""


# ------------------------------------------------------------------ stale temporaries, full disks
def test_stale_temporary_files_of_killed_writers_are_removed(tmp_path, monkeypatch, capsys):
    session = _started(tmp_path, monkeypatch, capsys, ["y", "q"])
    dead = 2**22 + 12345  # above the default pid_max of 4194304: no process has it
    stale = [session / "..skrisk.lock.json.k2j4h5g6.tmp",  # left by kill -9 during the lock-file rename
             session / f".session.json.{dead}.ab12cd34.tmp"]
    live = session / f".labels.csv.{os.getpid()}.zz99yy88.tmp"  # a writer still at work
    for p in (*stale, live):
        p.write_text("partial")
    other = session / "notes.tmp"  # not skrisk's
    other.write_text("mine")
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 0, cap.err
    assert not any(p.exists() for p in stale)
    assert live.exists() and other.exists()


def test_a_full_disk_during_an_export_keeps_the_old_files(tmp_path, monkeypatch, capsys):  # (kept)
    session = _started(tmp_path, monkeypatch, capsys, ["y", "n", "q"])
    before = (session / "labels.csv").read_bytes()
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--export"], [])
    monkeypatch.undo()
    assert rc == 2 and "No space left" in cap.err
    assert (session / "labels.csv").read_bytes() == before
    assert not [p for p in session.iterdir() if p.name.endswith(".tmp")]
    assert len(answers_in_force(session)) == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("name", ["labels.csv", "session.json", "journal.jsonl"])
def test_a_fifo_in_place_of_a_session_file_does_not_hang(tmp_path, monkeypatch, capsys, name):
    # (journal.jsonl kept: it was refused as "not a file" already; the other two hung)
    session = _started(tmp_path, monkeypatch, capsys, ["y", "q"])
    (session / name).unlink()
    os.mkfifo(session / name)  # reading it would block forever
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--export"], [])
    assert rc == 2 and name in cap.err and "not a" in cap.err, cap.err


def test_plots_and_reports_are_not_written_through_links(tmp_path):
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.experiments._plot import plot_learning_curves
    from skrisk._fileio import LinkError

    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    (tmp_path / "curve.png").symlink_to(victim)
    records = [{"strategy": "risk", "n_labelled": n, "f1": 0.5, "seed": 0} for n in (10, 20)]
    with pytest.raises(LinkError):
        plot_learning_curves(records, tmp_path / "curve.png")
    assert victim.read_text() == "keep\n"
    plot_learning_curves(records, tmp_path / "ok.png")
    assert (tmp_path / "ok.png").read_bytes().startswith(b"\x89PNG")


def test_skrisk_match_out_folder_loses_the_temporaries_of_dead_writers_only(tmp_path):
    # internal on purpose: the stale-file sweep itself
    from skrisk._fileio import remove_stale_temporaries

    dead = tmp_path / f".matches.csv.{2**22 + 12345}.ab12cd34.tmp"
    legacy = tmp_path / ".matches.csv.ab12cd34.tmp"  # no pid: unknown writer, kept without a lock
    for p in (dead, legacy):
        p.write_text("partial")
    assert remove_stale_temporaries(tmp_path, legacy=False) == [dead]
    assert legacy.exists()
