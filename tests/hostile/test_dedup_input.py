"""Hostile input to ``skrisk label --table`` and the blocking options: each is refused with the file,
row or option and the fix, before any session is written."""

from __future__ import annotations

import json

import pytest

from ._session_util import label

TABLE = (
    "id,name,city\n"
    "1,blue cafe,paris\n2,blue caffe,paris\n3,red bar,rome\n4,red pub,rome\n5,old mill,oslo\n6,olde mill,oslo\n"
)


def _table(tmp_path, text: str = TABLE):
    path = tmp_path / "people.csv"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(rc, cap, session, *fragments):
    assert rc == 2, cap.out + cap.err
    assert cap.err.startswith("skrisk: error: ") and "Traceback" not in cap.err
    for f in fragments:
        assert f in cap.err, cap.err
    assert not session.exists(), "nothing may be written for refused input"


def test_table_with_duplicate_ids_names_file_lines_and_fix(tmp_path, monkeypatch, capsys):
    t = _table(tmp_path, TABLE + "3,red bar again,rome\n")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, ["--table", str(t), "--session", str(session)], ["q"])
    _refused(rc, cap, session, "people.csv", "id '3' appears more than once (lines [4, 8]",
             "give every record its own id")


@pytest.mark.parametrize("extra", [["--left", "A.csv"], ["--right", "B.csv"], ["--left", "A.csv", "--right", "B.csv"]])
def test_table_with_left_or_right_is_a_usage_error(extra, tmp_path, monkeypatch, capsys):
    t = _table(tmp_path)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, ["--table", str(t), *extra, "--session", str(session)], ["q"])
    _refused(rc, cap, session, "--table cannot be combined with --", "--left A.csv --right B.csv to link two")


@pytest.mark.parametrize(
    "flags, fragments",
    [
        (["--blocking", "standard"], ["--blocking standard needs --block-on COL"]),
        (["--blocking", "standard", "--block-on", "city", "--block-top-k", "3"],
         ["--block-top-k apply to --blocking tokens only"]),
        (["--blocking", "sorted_neighbourhood", "--block-on", "name,city"], ["sorts on one column"]),
        (["--block-on", "name,,city"], ["names an empty column"]),
        (["--block-on", "postcode"], ["column(s) ['postcode'] are not in the table", "['name', 'city']"]),
    ],
)
def test_bad_blocking_options(flags, fragments, tmp_path, monkeypatch, capsys):
    t = _table(tmp_path)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, ["--table", str(t), *flags, "--session", str(session)], ["q"])
    _refused(rc, cap, session, *fragments)


def test_blocking_threshold_out_of_range_is_refused_by_the_parser(tmp_path, monkeypatch, capsys):
    t = _table(tmp_path)
    with pytest.raises(SystemExit) as exc:
        label(monkeypatch, capsys, ["--table", str(t), "--block-threshold", "1.5", "--session", str(tmp_path / "s")],
              [])
    assert exc.value.code == 2 and "--block-threshold" in capsys.readouterr().err


def test_pairs_with_blocking_options_is_a_usage_error(tmp_path, monkeypatch, capsys):
    t = _table(tmp_path)
    p = tmp_path / "pairs.csv"
    p.write_text("left_id,right_id\n1,2\n")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, ["--table", str(t), "--pairs", str(p), "--block-top-k", "3",
                                          "--session", str(session)], ["q"])
    _refused(rc, cap, session, "--block-top-k make candidate pairs by blocking, but --pairs gives them")


@pytest.mark.parametrize(
    "pairs, fragments",
    [
        ("left_id,right_id\n1,2\n3,4\n2,1\n", ["pair ('1', '2') at row 0 appears more than once (lines [2, 4]"]),
        ("left_id,right_id,label\n1,2,1\n2,1,0\n", ["labelled both '0' and '1' (conflicting labels)"]),
        ("left_id,right_id\n1,2\n5,5\n", ["row 1 (line 3) pairs record '5' with itself", "Remove those rows"]),
        ("left_id,right_id\n1,9\n", ["right_id '9' at row 0 (line 2) is not an id of", "people.csv"]),
    ],
)
def test_pair_file_of_one_table(pairs, fragments, tmp_path, monkeypatch, capsys):
    t = _table(tmp_path)
    p = tmp_path / "pairs.csv"
    p.write_text(pairs)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, ["--table", str(t), "--pairs", str(p), "--session", str(session)], ["q"])
    _refused(rc, cap, session, "pairs.csv", *fragments)


def test_dedup_session_resumed_with_two_tables_is_refused(tmp_path, monkeypatch, capsys):
    t = _table(tmp_path)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, ["--table", str(t), "--session", str(session)], ["y", "q"])
    assert rc == 0, cap.err
    rc, cap = label(monkeypatch, capsys, ["--left", str(t), "--right", str(t), "--session", str(session)], ["q"])
    assert rc == 2 and "deduplicates one table" in cap.err and "resume it with --table" in cap.err
    # a damaged task in the manifest is named
    manifest = json.loads((session / "session.json").read_text())
    manifest["task"] = "merge"
    (session / "session.json").write_text(json.dumps(manifest))
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 2 and "session.json is damaged" in cap.err and "'merge'" in cap.err


def test_one_record_table_is_refused(tmp_path, monkeypatch, capsys):
    t = _table(tmp_path, "id,name\n1,blue cafe\n")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, ["--table", str(t), "--session", str(session)], ["q"])
    _refused(rc, cap, session, "people.csv holds a single record")
