"""Every CSV skrisk writes reads back to exactly what was meant (issue #29, "Data silently wrong").

A carriage return inside a cell, a formula hidden behind leading whitespace or control characters,
ids that start a formula in ``candidates.csv``, quotes, NUL-free control characters, BOMs, lone
surrogates, right-to-left overrides and very long cells: each is written by the one CSV writer
(:func:`skrisk.utils.write_csv_export`) and read back by :func:`skrisk.utils.read_csv_export`
to the exact value. Every test failed on the code before issue #29 unless marked "(kept)".
"""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from skrisk.utils import read_csv_export
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk._fileio import write_csv_export

from ._session_util import label, write_tables

#: cells a careful attacker puts into a table that skrisk later exports
HOSTILE = [
    "shop\r0", "a\r\nb", "x\ny", "\r=1+1", "\r@SUM(A1)", "\t@SUM(A1)", " +1+1", "  =cmd|' /C calc'!A0",
    "\n-2+3", "\x0b=1", "\x1b=1", "\u00a0=1", "\u200b=1", "\ufeff=1", "\u3000@x", "\u202e=1", "'quoted",
    "''twice", '"=1"', "-5", "+1.5e3", "plain", "caf\u00e9 \u6771\u4eac", "x" * 100_000,
    "=" * 3, "", "\u2028=1",
]
_FORMULA = ("=", "+", "-", "@")


def _first_visible(cell: str) -> str:
    """What a spreadsheet sees first: the cell without leading whitespace and control/format characters."""
    import unicodedata

    i = 0
    while i < len(cell) and (cell[i].isspace() or unicodedata.category(cell[i]) in ("Cc", "Cf", "Zs", "Zl", "Zp")):
        i += 1
    return cell[i:]


def test_every_hostile_cell_reads_back_exactly(tmp_path):
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(len(HOSTILE))], "value": HOSTILE, "n": range(len(HOSTILE))})
    path = tmp_path / "out.csv"
    write_csv_export(path, frame)
    back = read_csv_export(path)
    assert len(back) == len(HOSTILE)
    assert back["value"].tolist() == HOSTILE
    assert back["n"].tolist() == [str(i) for i in range(len(HOSTILE))]


def test_a_carriage_return_never_ends_a_row(tmp_path):
    frame = pd.DataFrame({"left_id": ["shop\r0", "b"], "answer": ["yes", "no"]})
    path = tmp_path / "labels.csv"
    write_csv_export(path, frame)
    # pandas, the csv module (newline="" as documented) and a text-mode reader all see two rows
    assert len(pd.read_csv(path, dtype=str, keep_default_na=False)) == 2
    with path.open(newline="") as fh:
        assert len(list(csv.reader(fh))) == 3
    assert pd.read_csv(path, dtype=str, keep_default_na=False)["left_id"].tolist() == ["shop\r0", "b"]


@pytest.mark.parametrize("cell", [c for c in HOSTILE if _first_visible(c).startswith(_FORMULA)
                                  and c not in ("-5", "+1.5e3")])
def test_no_cell_starts_a_formula_after_leading_whitespace_or_control_characters(tmp_path, cell):
    path = tmp_path / "m.csv"
    write_csv_export(path, pd.DataFrame({"v": [cell]}))
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)["v"].iloc[0]
    assert raw.startswith("'"), repr(raw)
    # a CR or LF in the cell is inside quotes: no CSV reader starts a row (and a formula) after it
    with path.open(newline="") as fh:
        assert [r[0] for r in csv.reader(fh)] == ["v", raw]
    with path.open() as fh:  # text mode, universal newlines
        assert len(list(csv.reader(fh))) == 2


def test_column_names_are_neutralised_and_recovered(tmp_path):
    path = tmp_path / "x.csv"
    write_csv_export(path, pd.DataFrame({"=name": ["a"], "\r@b": ["b"]}))
    assert list(pd.read_csv(path, dtype=str).columns) == ["'=name", "'\r@b"]
    assert list(read_csv_export(path).columns) == ["=name", "\r@b"]


def test_session_exports_and_candidates_round_trip(tmp_path, monkeypatch, capsys):
    # a CR inside a quoted cell, formulas behind a CR / tab / space, an id that starts a formula
    left = ('id,name,city\n"=x1","shop\r0",paris\n2,"\r=HYPERLINK(""http://e"",""x"")",rome\n'
            '3,"\t@SUM(A1)",oslo\n4," +1+1",lima\n5,black cat,kyiv\n')
    right = ('id,name,city\nr1,"shop\r0",paris\nr2,"\r=HYPERLINK(""http://e"",""x"")",rome\n'
             'r3,"\t@SUM(A1)",oslo\nr4," +1+1",lima\nr5,grey dog,kyiv\n')
    pairs = "left_id,right_id,label\n=x1,r1,1\n2,r5,0\n2,r2,\n3,r3,\n4,r4,\n5,r5,\n=x1,r2,\n"
    args = write_tables(tmp_path / "t", left, right, pairs)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--audit", "0"],
                    ["y", "n", "y", "e", "q"])
    assert rc == 0, cap.err
    table = pd.read_csv(tmp_path / "t" / "A.csv", dtype=str, keep_default_na=False).set_index("id")
    labels = read_csv_export(session / "labels.csv")
    n_answers = 3 + 2  # three answers and the two pre-labelled pairs
    assert len(labels) == n_answers
    assert len(pd.read_csv(session / "labels.csv", dtype=str, keep_default_na=False)) == n_answers
    for _, row in labels.iterrows():  # every exported cell is the table's cell, exactly
        assert row["left_name"] == table.loc[row["left_id"], "name"]
    for name in ("labels.csv", "predicted_matches.csv", "candidates.csv"):
        for row in pd.read_csv(session / name, dtype=str, keep_default_na=False).itertuples(index=False):
            for c in row:
                assert not _first_visible(c).startswith(("=", "+", "@")), (name, c)
    cand = pd.read_csv(session / "candidates.csv", dtype=str, keep_default_na=False)
    assert "'=x1" in set(cand["left_id"])
    assert "=x1" in set(read_csv_export(session / "candidates.csv")["left_id"])
    # the session resumes on its neutralised candidates, and a second export is not refused
    rc, cap = label(monkeypatch, capsys, ["--session", str(session), "--export"], [])
    assert rc == 0, cap.err
    rc, cap = label(monkeypatch, capsys, ["--session", str(session)], ["q"])
    assert rc == 0 and "3 answer(s) so far" in cap.out, cap.err


def test_read_csv_export_names_the_file_it_cannot_read(tmp_path):
    from skrisk.exceptions import DataError

    bad = tmp_path / "bad.csv"
    bad.write_bytes(b'a,b\n"unterminated\n')
    with pytest.raises(DataError, match="bad.csv"):
        read_csv_export(bad)


def test_a_lone_surrogate_is_refused_naming_row_and_column(tmp_path):
    from skrisk.exceptions import DataError

    path = tmp_path / "x.csv"
    with pytest.raises(DataError, match=r"row 1.*'name'|'name'.*row 1"):
        write_csv_export(path, pd.DataFrame({"name": ["ok", "\ud800lone"]}))
    assert not path.exists()


def test_a_large_export_is_written_in_parts_and_reads_back_whole(tmp_path):
    """A table larger than one part (the text is made some rows at a time) reads back exactly,
    with one header; a bad cell in a later part names its row in the whole table and leaves the
    old file as it was."""
    from skrisk.exceptions import DataError

    n = 250_001
    ids = pd.Series([f"=r{i}" if i % 7 == 0 else f"r{i}" for i in range(n)])
    frame = pd.DataFrame({"left_id": ids, "right_id": ids.iloc[::-1].to_numpy(), "probability": ["0.5"] * n})
    path = tmp_path / "matches.csv"
    write_csv_export(path, frame)
    pd.testing.assert_frame_equal(read_csv_export(path), frame)
    assert path.read_bytes().count(b"left_id") == 1
    before = path.read_bytes()
    frame.loc[n - 2, "right_id"] = "nul\x00here"
    with pytest.raises(DataError, match=rf"row {n - 2}, column 'right_id'"):
        write_csv_export(path, frame)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["matches.csv"]
