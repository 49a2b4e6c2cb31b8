"""Errors that used to reach the user of the ``skrisk`` command raw: damaged manifests, files where
folders belong, a full disk, unknown encodings; ``--encoding`` and ``--debug``."""

from __future__ import annotations

import errno
import json

import pytest

from skrisk.cli import main
from skrisk.exceptions import DataError

from ._session_util import answers_in_force, label, write_tables


def _session(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session)], ["y", "q"])
    assert rc == 0, cap.err
    return session


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.pop("inputs"), 'it has no "inputs"'),
        (lambda m: m["inputs"].pop("right"), 'no valid "right" entry'),
        (lambda m: m["inputs"]["left"].pop("sha256"), 'no valid "left" entry'),
        (lambda m: m.pop("params"), '"params" lacks one of the integers'),
        (lambda m: m["params"].update(seed="0"), '"params" lacks one of the integers'),
        (lambda m: m["params"].update(seed=-1), "seed must be an integer from 0"),
        (lambda m: m.update(format="other"), "is not a skrisk session manifest"),
    ],
)
def test_damaged_manifest_is_named_with_the_fix(edit, message, tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)
    path = session / "session.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2
    assert cap.err.startswith("skrisk: error: ") and "session.json" in cap.err and message in cap.err
    assert "Traceback" not in cap.err
    assert len(answers_in_force(session)) == 1


@pytest.mark.parametrize("text", ["[1, 2]", "", "{\"format\": \"skrisk-labelling-session\"", "\xff\xfe"])
def test_manifest_that_is_not_an_object(text, tmp_path, monkeypatch, capsys):
    session = _session(tmp_path, monkeypatch, capsys)
    (session / "session.json").write_bytes(text.encode("latin-1"))
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2 and "session.json" in cap.err and "is not a skrisk session manifest" in cap.err


def test_session_naming_a_file(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(afile)], ["y"])
    assert rc == 2 and "is a file, not a folder" in cap.err and "--session" in cap.err
    assert afile.read_text() == "keep me"


@pytest.mark.parametrize("command", [["demo", "--quick"], ["run", "--dataset", "beer"]])
def test_out_naming_a_file(command, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    assert main([*command, "--out", str(afile), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "is a file, not a folder" in err
    assert afile.read_text() == "keep me"


def test_os_errors_name_the_file_and_the_fix():
    from skrisk.cli import _os_error_message

    msg = _os_error_message(OSError(errno.ENOSPC, "No space left on device", "/data/out/results.jsonl"))
    assert msg.startswith("/data/out/results.jsonl: No space left on device")
    assert "disk is full" in msg and "free some space" in msg and "[Errno" not in msg
    msg = _os_error_message(OSError(errno.EROFS, "Read-only file system", "/mnt/x"))
    assert "read-only" in msg and "writable folder" in msg


def test_encoding_option_reads_a_latin1_table_and_is_stored(tmp_path, monkeypatch, capsys):
    t = tmp_path / "t"
    t.mkdir()
    (t / "A.csv").write_bytes("id,name,city\n1,café,zürich\n2,bär,köln\n".encode("latin-1"))
    (t / "B.csv").write_bytes("id,name,city\n10,café,zürich\n20,bier,köln\n".encode("latin-1"))
    argv = ["--left", str(t / "A.csv"), "--right", str(t / "B.csv"), "--session", str(tmp_path / "s")]
    rc, cap = label(monkeypatch, capsys, argv, ["y", "q"])
    assert rc == 2 and "is not valid utf-8 text" in cap.err and "--encoding" in cap.err
    assert not (tmp_path / "s").exists()
    rc, cap = label(monkeypatch, capsys, [*argv, "--encoding", "latin-1"], ["y", "q"])
    assert rc == 0, cap.err
    assert "café" in cap.out and "zürich" in cap.out
    assert json.loads((tmp_path / "s" / "session.json").read_text())["encoding"] == "latin-1"
    rc, cap = label(monkeypatch, capsys, ["--session", str(tmp_path / "s")], ["n", "q"])  # resume: stored
    assert rc == 0, cap.err
    assert "köln" in cap.out
    labels = (tmp_path / "s" / "labels.csv").read_text(encoding="utf-8")
    assert "café" in labels


def test_unknown_encoding_is_refused_before_anything_is_written(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(tmp_path / "s"), "--encoding", "klingon"], ["y"])
    assert rc == 2 and "Unknown text encoding 'klingon'" in cap.err and "--encoding" in cap.err
    assert not (tmp_path / "s").exists()


def test_debug_shows_the_traceback(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    argv = [*args, "--session", str(tmp_path / "s"), "--seed", "-1"]
    rc, cap = label(monkeypatch, capsys, argv, [])
    assert rc == 2 and "seed must be" in cap.err
    with pytest.raises(DataError, match="seed must be"):
        main(["--debug", "label", *argv])
    with pytest.raises(DataError, match="seed must be"):
        main(["label", *argv, "--debug"])


def test_error_messages_show_table_text_escaped(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t", pairs="left_id,right_id\n1,10\n\x1b]0;owned\x07,20\n")
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(tmp_path / "s")], [])
    assert rc == 2 and "\x1b" not in cap.err and "\x07" not in cap.err
    assert "\\x1b]0;owned\\x07" in cap.err


def test_latin1_tables_with_non_ascii_ids_start_and_resume(tmp_path, monkeypatch, capsys):
    # the session's own candidates.csv is UTF-8 whatever the tables' encoding: ids such as "zü1"
    # must join the Latin-1 tables on start and on resume
    t = tmp_path / "t"
    t.mkdir()
    (t / "A.csv").write_bytes("id,name\nzü1,café\nzü2,bär\n".encode("latin-1"))
    (t / "B.csv").write_bytes("id,name\nkö1,café\nkö2,bier\n".encode("latin-1"))
    argv = ["--left", str(t / "A.csv"), "--right", str(t / "B.csv"), "--session", str(tmp_path / "s"),
            "--encoding", "latin-1"]
    rc, cap = label(monkeypatch, capsys, argv, ["y", "q"])
    assert rc == 0, cap.err
    rc, cap = label(monkeypatch, capsys, ["--session", str(tmp_path / "s")], ["n", "q"])
    assert rc == 0, cap.err
    labels = (tmp_path / "s" / "labels.csv").read_text(encoding="utf-8")
    assert "zü" in labels and "kö" in labels
