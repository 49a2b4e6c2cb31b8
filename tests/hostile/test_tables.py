"""Hostile table inputs (issue #15): every malformed CSV is read correctly or refused with an
error naming the file, the line and the fix. The table of all probes is in the issue's notes
(security-tables); each row names its test here.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skrisk.cli import main
from skrisk.data import PairDataset, read_table
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._loaders import read_pairs
from skrisk.datasets import load_csv_tables, load_deepmatcher
from skrisk.exceptions import DataError
from skrisk.labelling import LabellingSession

RIGHT = "id,name,city\n10,acme,paris\n20,globex,rome\n"
DM = {
    "tableA.csv": "id,name\n0,acme\n1,globex\n",
    "tableB.csv": "id,name\n0,acme corp\n1,umbrella\n",
    "train.csv": "ltable_id,rtable_id,label\n0,0,1\n1,1,0\n",
    "valid.csv": "ltable_id,rtable_id,label\n0,1,0\n",
    "test.csv": "ltable_id,rtable_id,label\n1,0,0\n",
}


def _write(folder: Path, name: str, data: str | bytes) -> Path:
    p = folder / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return p


def _dm(tmp_path: Path, **changes: str | bytes) -> Path:
    folder = tmp_path / "dm"
    folder.mkdir(exist_ok=True)
    for name, text in {**DM, **changes}.items():
        _write(folder, name, text)
    return folder


# ------------------------------------------------------------------ 1. field counts
@pytest.mark.parametrize(
    "text, line, fix",
    [
        ("id,name,city\n1,acme,paris\n2,globex,rome,\n", 3, "Remove the trailing comma"),
        ("id,name,city\n1,acme,paris,\n2,globex,rome\n", 2, "Remove the trailing comma"),
        ("id,name,city\n1,acme, inc,paris\n", 2, "double quotes"),
        ("id,name,city\n1,acme\n2,globex,rome\n", 2, "missing fields"),
        ("id,name,city,\n1,acme,paris,x\n", 2, None),  # a value under an unnamed column
    ],
    ids=["extra-empty-field", "trailing-comma-not-on-every-line", "unquoted-comma", "too-few", "unnamed-col"],
)
def test_wrong_number_of_fields_is_an_error_naming_the_line(tmp_path, text, line, fix):
    path = _write(tmp_path, "t.csv", text)
    with pytest.raises(DataError) as err:
        read_table(path)
    msg = str(err.value)
    assert str(path) in msg
    if fix is None:
        assert "column 4 of the header has no name" in msg
    else:
        assert f"line {line}:" in msg and fix in msg


def test_trailing_comma_in_every_table_reader(tmp_path):
    """The same shifted row is refused by load_csv_tables and by load_deepmatcher (table and split)."""
    bad = _write(tmp_path, "a.csv", "id,name,city\n1,acme,paris,\n2,globex,rome\n")
    right = _write(tmp_path, "b.csv", RIGHT)
    with pytest.raises(DataError, match=r"a\.csv, line 2: 4 field\(s\).*trailing comma"):
        load_csv_tables(bad, right, pairs_csv=_write(tmp_path, "p.csv", "left_id,right_id\n1,10\n"))
    with pytest.raises(DataError, match=r"tableA\.csv, line 3: 3 field\(s\)"):
        load_deepmatcher(_dm(tmp_path, **{"tableA.csv": "id,name\n0,acme\n1,globex,\n"}))
    with pytest.raises(DataError, match=r"valid\.csv, line 2: 4 field\(s\)"):
        load_deepmatcher(_dm(tmp_path, **{"valid.csv": "ltable_id,rtable_id,label\n0,1,0,\n1,1,0\n"}))
    with pytest.raises(DataError, match=r"p\.csv, line 3: 2 field\(s\)"):
        load_csv_tables(
            right, right, pairs_csv=_write(tmp_path, "p.csv", "left_id,right_id,label\n10,10,1\n20,20\n")
        )


@pytest.mark.parametrize(
    "text",
    [
        "id,name,city\n1,acme,paris,\n2,globex,,\n",  # every data line ends with a comma
        "id,name,city,\n1,acme,paris,\n2,globex,,\n",  # and the header too
        "id,name,city,\n1,acme,paris\n2,globex,\n",  # only the header
    ],
    ids=["data-lines", "header-and-data-lines", "header-only"],
)
def test_consistent_trailing_comma_is_read_correctly(tmp_path, text):
    t = read_table(_write(tmp_path, "t.csv", text))
    assert list(t.columns) == ["name", "city"] and t.index.tolist() == ["1", "2"]
    assert t.loc["1"].tolist() == ["acme", "paris"] and t.loc["2", "name"] == "globex"
    assert pd.isna(t.loc["2", "city"])


def test_label_command_refuses_a_shifted_table(tmp_path, capsys):
    """`skrisk label` reads through load_csv_tables: the same error, and no session is created."""
    left = _write(tmp_path, "a.csv", "id,name,city\n1,acme,paris,\n2,globex,rome\n")
    right = _write(tmp_path, "b.csv", RIGHT)
    session = tmp_path / "session"
    rc = main(["label", "--left", str(left), "--right", str(right), "--session", str(session)])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{left}, line 2" in err and "trailing comma" in err
    assert not session.exists()


# ------------------------------------------------------------------ 2. ids and missing values
def test_missing_looking_ids_are_ids(tmp_path):
    t = read_table(_write(tmp_path, "t.csv", "id,name\nNA,a\nnull,b\nNaN,c\nNone,d\n007,e\n"))
    assert t.index.tolist() == ["NA", "null", "NaN", "None", "007"]


def test_pair_id_na_does_not_join_record_null(tmp_path):
    left = _write(tmp_path, "a.csv", "id,name,city\nnull,acme,paris\n")
    right = _write(tmp_path, "b.csv", RIGHT)
    with pytest.raises(DataError, match=r"left_id 'NA' at row 0 \(line 2\) is not an id of"):
        load_csv_tables(left, right, pairs_csv=_write(tmp_path, "p.csv", "left_id,right_id\nNA,10\n"))
    left = _write(tmp_path, "a.csv", "id,name,city\nnull,acme,paris\nNA,initech,oslo\n")
    ds = load_csv_tables(left, right, pairs_csv=_write(tmp_path, "p.csv", "left_id,right_id\nNA,10\n"))
    assert ds.records("left")["name"].tolist() == ["initech"]
    pairs = read_pairs(_write(tmp_path, "q.csv", "ltable_id,rtable_id\nNA,007\n"))
    assert pairs.iloc[0].tolist() == ["NA", "007"]


@pytest.mark.parametrize("where", ["table", "pairs"])
def test_empty_id_is_an_error_naming_the_line(tmp_path, where):
    right = _write(tmp_path, "b.csv", RIGHT)
    if where == "table":
        left = _write(tmp_path, "a.csv", "id,name,city\n1,acme,paris\n,globex,rome\n")
        pairs = _write(tmp_path, "p.csv", "left_id,right_id\n1,10\n")
        bad = left
    else:
        left = _write(tmp_path, "a.csv", "id,name,city\n1,acme,paris\n")
        pairs = bad = _write(tmp_path, "p.csv", "left_id,right_id\n1,10\n1,\n")
    with pytest.raises(DataError, match=rf"{bad.name}, line 3: the '\w+' cell is empty"):
        load_csv_tables(left, right, pairs_csv=pairs)


def test_only_the_empty_cell_is_missing(tmp_path):
    t = read_table(_write(tmp_path, "t.csv", "id,name\n1,NA\n2,None\n3,NULL\n4,n/a\n5,NaN\n6,\n7,1996.0\n"))
    assert t["name"].iloc[:5].tolist() == ["NA", "None", "NULL", "n/a", "NaN"]
    assert pd.isna(t["name"].iloc[5]) and t["name"].iloc[6] == "1996.0"
    ds = PairDataset.from_frames(t, t, [("2", "5", 0), ("6", "1", 0)])
    assert ds.texts("left")["name"].tolist() == ["none", ""]  # text "None" is data; the empty cell is not
    assert ds.texts("right")["name"].tolist() == ["nan", "na"]


def test_missing_ids_in_frames_are_refused():
    left = pd.DataFrame({"n": ["a", "b"]}, index=["1", np.nan])
    with pytest.raises(DataError, match="missing record id"):
        PairDataset.from_frames(left, left.iloc[:1], [("1", "1", 1)])
    with pytest.raises(DataError, match="right_id is missing"):
        PairDataset.from_frames(left.iloc[:1], left.iloc[:1], [("1", None, 1)])


# ------------------------------------------------------------------ 3. duplicate pairs and leaks
@pytest.mark.parametrize(
    "changes, match",
    [
        ({"train.csv": "ltable_id,rtable_id,label\n0,0,1\n1,1,0\n0,0,0\n"},
         r"train\.csv: pair \('0', '0'\) .*labelled both '0' and '1' .*lines \[2, 4\]"),
        ({"train.csv": "ltable_id,rtable_id,label\n0,0,1\n0,0,1\n"},
         r"train\.csv: pair \('0', '0'\) .*appears more than once .*lines \[2, 3\]"),
        ({"test.csv": "ltable_id,rtable_id,label\n0,0,0\n"},
         r"Pair \('0', '0'\) is in more than one split, with conflicting labels: train \(.*train\.csv, "
         r"line 2, label 1\), test \(.*test\.csv, line 2, label 0\)"),
        ({"test.csv": "ltable_id,rtable_id,label\n0,0,1\n"},
         r"Pair \('0', '0'\) is in more than one split, with the same label: train .* test .*leaks"),
    ],
    ids=["conflict-in-split", "exact-duplicate-in-split", "conflict-across-splits", "same-label-two-splits"],
)
def test_duplicate_pairs_and_leaks_are_refused(tmp_path, changes, match):
    with pytest.raises(DataError, match=match):
        load_deepmatcher(_dm(tmp_path, **changes))


def test_conflicting_labels_in_a_pair_file(tmp_path):
    right = _write(tmp_path, "b.csv", RIGHT)
    pairs = _write(tmp_path, "p.csv", "left_id,right_id,label\n10,10,1\n20,20,0\n10,10,0\n")
    with pytest.raises(DataError, match=r"labelled both '0' and '1' \(conflicting labels\) \(lines \[2, 4\]"):
        load_csv_tables(right, right, pairs_csv=pairs)


# ------------------------------------------------------------------ encodings
def test_wrong_encoding_names_offset_line_and_parameter(tmp_path):
    path = _write(tmp_path, "t.csv", "id,name\n1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"byte 0xe9 at byte offset 13 \(line 2\).*encoding='latin-1'"):
        read_table(path)
    assert read_table(path, encoding="latin-1").loc["1", "name"] == "café"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig"])
def test_utf8_byte_order_mark(tmp_path, encoding):
    path = _write(tmp_path, "t.csv", "\ufeffid,name\n1,café\n")
    t = read_table(path, encoding=encoding)
    assert t.index.tolist() == ["1"] and t.loc["1", "name"] == "café"


def test_utf16_file(tmp_path):
    path = _write(tmp_path, "t.csv", "id,name\n1,café\n".encode("utf-16"))
    with pytest.raises(DataError, match=r"byte offset 0 \(line 1\).*encoding='utf-16'"):
        read_table(path)
    assert read_table(path, encoding="utf-16").loc["1", "name"] == "café"
    no_bom = _write(tmp_path, "u.csv", "id,name\n1,a\n".encode("utf-16-le"))
    with pytest.raises(DataError, match="NUL character on line 1.*encoding='utf-16'"):
        read_table(no_bom)


def test_tables_and_pairs_in_different_encodings(tmp_path):
    """Latin-1 tables with a UTF-8 candidate file (what a labelling session writes)."""
    left = _write(tmp_path, "a.csv", "id,name\ncafé,acme\n".encode("latin-1"))
    right = _write(tmp_path, "b.csv", "id,name\nñ1,acme corp\n".encode("latin-1"))
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\ncafé,ñ1\n")
    with pytest.raises(DataError, match=r"a\.csv is not valid utf-8 text"):
        load_csv_tables(left, right, pairs_csv=pairs)
    # the UTF-8 pair file read as Latin-1 is named before any id goes wrong (issue #29)
    with pytest.raises(DataError, match=r"p\.csv is valid UTF-8, but it was read as latin-1.*'cafÃ©'"):
        load_csv_tables(left, right, pairs_csv=pairs, encoding="latin-1")
    ds = load_csv_tables(left, right, pairs_csv=pairs, encoding="latin-1", pairs_encoding="utf-8")
    assert ds.pairs[["left_id", "right_id"]].iloc[0].tolist() == ["café", "ñ1"]


def test_unknown_encoding_name(tmp_path):
    with pytest.raises(ValueError, match="encoding='utf9' is not a known text encoding"):
        read_table(_write(tmp_path, "t.csv", "id,name\n1,a\n"), encoding="utf9")


# ------------------------------------------------------------------ other hostile inputs
def test_nul_byte(tmp_path):
    with pytest.raises(DataError, match=r"t\.csv holds a NUL character on line 3"):
        read_table(_write(tmp_path, "t.csv", b"id,name\n1,a\n2,ac\x00me\n"))


def test_one_megabyte_cell(tmp_path):
    big = "x" * 1_000_000
    t = read_table(_write(tmp_path, "t.csv", f'id,name\n1,"{big}"\n2,{big}b\n'))
    assert t["name"].str.len().tolist() == [1_000_000, 1_000_001]


def test_quoted_line_breaks_keep_the_line_numbers_right(tmp_path):
    t = read_table(_write(tmp_path, "t.csv", 'id,name\n1,"acme\ninc, ltd"\n2,"a ""b"""\n'))
    assert t["name"].tolist() == ["acme\ninc, ltd", 'a "b"']
    with pytest.raises(DataError, match=r"t\.csv, line 4: 2 field"):
        read_table(_write(tmp_path, "t.csv", 'id,name,city\n1,"acme\ninc",paris\n2,globex\n'))


@pytest.mark.parametrize(
    "text, match",
    [
        ('id,name\n1,"acme\n2,b\n', r"line 2: not a well-formed CSV file, the quoting is broken"),
        ('id,name,city\n1,"ac"me x,paris\n', r"line 2: not a well-formed CSV file, the quoting is broken"),
    ],
    ids=["unterminated", "quote-mid-value"],
)
def test_broken_quoting(tmp_path, text, match):
    with pytest.raises(DataError, match=match):
        read_table(_write(tmp_path, "t.csv", text))


@pytest.mark.parametrize(
    "header, match",
    [
        ("id,name,name", "column 'name' appears twice"),
        ("id,id,name", "column 'id' appears twice"),
        ("id,Name,name", "columns 'Name' and 'name' differ only in case"),
        ("id, name ,name", "column 'name' appears twice"),
        ("id,,name", "column 2 of the header has no name"),
    ],
)
def test_duplicate_or_unnamed_columns(tmp_path, header, match):
    with pytest.raises(DataError, match=match):
        read_table(_write(tmp_path, "t.csv", f"{header}\n1,a,b\n"))


def test_header_names_are_stripped(tmp_path):
    left = _write(tmp_path, "a.csv", "id , name ,city\n1,acme,paris\n")
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\n1,10\n")
    ds = load_csv_tables(left, _write(tmp_path, "b.csv", RIGHT), pairs_csv=pairs)
    assert ds.attributes == ["name", "city"]


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "is empty"),
        ("\n \n\n", "is empty"),
        ("id,name\n", "holds no records"),
        ("id,name\n,\n", "holds no records"),
    ],
    ids=["empty", "blank-lines", "header-only", "header-and-empty-row"],
)
def test_empty_files(tmp_path, text, match):
    with pytest.raises(DataError, match=match):
        read_table(_write(tmp_path, "t.csv", text))


def test_id_column_missing_or_in_other_case(tmp_path):
    with pytest.raises(DataError, match=r"no 'id' column .*did you mean id_column='ID'"):
        read_table(_write(tmp_path, "t.csv", "ID,name\n1,a\n"))
    assert read_table(_write(tmp_path, "t.csv", "ID,name\n1,a\n"), id_column="ID").index.tolist() == ["1"]


def test_duplicated_ids_name_both_lines(tmp_path):
    with pytest.raises(DataError, match=r"id '7' appears more than once \(lines \[3, 5\]"):
        read_table(_write(tmp_path, "t.csv", "id,name\n1,a\n7,b\n2,c\n 7 ,d\n"))


def test_ids_with_surrounding_spaces_join(tmp_path):
    left = _write(tmp_path, "a.csv", "id,name,city\n 1 ,acme,paris\n")
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\n1, 10\n")
    ds = load_csv_tables(left, _write(tmp_path, "b.csv", RIGHT), pairs_csv=pairs)
    assert ds.pairs[["left_id", "right_id"]].iloc[0].tolist() == ["1", "10"]


def test_windows_line_endings_and_blank_lines(tmp_path):
    t = read_table(_write(tmp_path, "t.csv", "id,name\r\n1,a\r\n\r\n2,\"b\r\nc\"\r\n,\r\n"))
    assert t.index.tolist() == ["1", "2"] and t["name"].tolist() == ["a", "b\r\nc"]


def test_formula_cells_are_read_as_text(tmp_path):
    t = read_table(_write(tmp_path, "t.csv", 'id,name\n1,=1+1\n2,"=HYPERLINK(""http://x"")"\n3,@SUM(A1)\n'))
    assert t["name"].tolist() == ["=1+1", '=HYPERLINK("http://x")', "@SUM(A1)"]


def test_folder_passed_as_a_file(tmp_path):
    with pytest.raises(DataError, match="is a folder, not a CSV file"):
        read_table(tmp_path)
    right = _write(tmp_path, "b.csv", RIGHT)
    with pytest.raises(DataError, match="Pairs file .* is a folder"):
        load_csv_tables(right, right, pairs_csv=tmp_path)


@pytest.mark.parametrize("label", ["NA", "null", "yes"])
def test_label_words_are_not_unknown(tmp_path, label):
    right = _write(tmp_path, "b.csv", RIGHT)
    pairs = _write(tmp_path, "p.csv", f"left_id,right_id,label\n10,10,1\n20,20,{label}\n")
    with pytest.raises(DataError, match=rf"label '{label}' at row 1 \(line 3\) is not 0 or 1"):
        load_csv_tables(right, right, pairs_csv=pairs)


def test_labelling_session_keeps_ids_as_written(tmp_path):
    """The session writes its candidates and reads them back: ids such as 007 and NA survive."""
    left = _write(tmp_path, "a.csv", "id,name\n007,acme corp\nNA,globex\nnull,initech\n")
    right = _write(tmp_path, "b.csv", "id,name\n7,acme corporation\nNaN,globex inc\n")
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\n007,7\nNA,NaN\nnull,7\n")
    session = LabellingSession.open(tmp_path / "s", left=left, right=right, pairs=pairs, out=io.StringIO())
    try:
        got = list(zip(session.dataset.pairs["left_id"], session.dataset.pairs["right_id"]))
    finally:
        session.close()
    assert got == [("007", "7"), ("NA", "NaN"), ("null", "7")]


_NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=4, unique=True)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
_ID = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), names=_NAMES)
def test_any_table_written_by_a_csv_writer_reads_back_as_written(tmp_path, data, names):
    """Round trip: ids and values (commas, quotes, line breaks, 'NA', '007') come back unchanged.

    Written with the csv module, quoting what needs quotes (a writer that ends lines with "\\n"
    but leaves a lone carriage return unquoted, as pandas' ``to_csv`` does, writes a file no
    reader can tell from one with a line end there).
    """
    names = [n for n in names if n != "id"] or ["name"]
    ids = data.draw(st.lists(_ID.map(str.strip).filter(bool), min_size=1, max_size=6, unique=True))
    cols = {n: data.draw(st.lists(_TEXT, min_size=len(ids), max_size=len(ids))) for n in names}
    buf = io.StringIO()
    style = data.draw(st.sampled_from([("\r\n", csv.QUOTE_MINIMAL), ("\n", csv.QUOTE_ALL)]))
    writer = csv.writer(buf, lineterminator=style[0], quoting=style[1])
    writer.writerow(["id", *names])
    writer.writerows(zip(ids, *cols.values()))
    path = tmp_path / "round.csv"
    path.write_bytes(buf.getvalue().encode("utf-8"))
    t = read_table(path)
    assert t.index.tolist() == ids and list(t.columns) == names
    for n in names:
        assert [None if pd.isna(v) else v for v in t[n]] == [v if v != "" else None for v in cols[n]]


_PLAIN_CELLS = st.lists(st.sampled_from(["a", "B", "0", " ", ",", "é", "\t", "'", "=", "NA", "\r\n", "\n", "\r"]),
                        max_size=5).map("".join)


@given(st.lists(st.lists(_PLAIN_CELLS, min_size=1, max_size=4), min_size=1, max_size=8),
       st.sampled_from(["\n", "\r\n"]), st.booleans())
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_fast_reader_reads_what_the_csv_module_reads(tmp_path, rows, end, final):
    """Files without quotes go through pandas' C parser: on any such text (blank lines, lines of
    commas only, ragged lines, trailing commas, CRLF or LF, spaces, tabs) the frame, the lines of
    the records and the errors are those of the csv module's reader."""
    # internal on purpose: the two readers compared
    from skrisk.data._loaders import _fit_header, _parse, _read_plain

    text = "id,x,y\n".replace("\n", end) + end.join(",".join(r) for r in rows) + (end if final else "")
    path = tmp_path / "t.csv"

    def slow():
        got, lines = _parse(path, text)
        while got and not any(f.strip() for f in got[0]):
            got, lines = got[1:], lines[1:]
        names, body, body_lines = _fit_header(path, got, lines)
        return pd.DataFrame(body or None, columns=names, dtype=object), np.asarray(body_lines, dtype=np.int64)

    try:
        want = slow()
    except DataError as exc:
        want = exc
    fast = _read_plain(path, text)
    if fast is None:
        return  # the csv module's path reads it
    assert not isinstance(want, DataError), f"the fast reader read a file the csv module refuses: {want}"
    assert fast[0].equals(want[0]) and fast[1].tolist() == want[1].tolist()


def test_the_fast_reader_takes_plain_files_and_leaves_the_rest(tmp_path):
    # internal on purpose: which files the C parser reads
    from skrisk.data._loaders import _read_plain

    path = tmp_path / "t.csv"
    frame, lines = _read_plain(path, "id,x\r\n007,NA\r\n\r\n,,\r\nb, y \r\n")
    assert frame.to_dict("list") == {"id": ["007", "b"], "x": ["NA", " y "]} and lines.tolist() == [2, 5]
    for text in ('id,x\n1,"a,b"\n', "id,x,\n1,a,\n", "id,x\n1,a,b\n", "\nid,x\n1,a\n", "id,x\r1,a\r", "id\n1\n"):
        assert _read_plain(path, text) is None, text
    with pytest.raises(DataError, match="differ only in case"):
        _read_plain(path, "id,x,X\n1,a,b\n")
