"""Tests of load_csv_tables: every input path and every bad input named in issue #2."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skrisk.datasets import load_csv_tables
from skrisk.exceptions import DataError

LEFT = "id,name,city\n1,acme corp,paris\n2,globex inc,rome\n3,initech,oslo\n4,hooli,\n"
RIGHT = "id,city,name\n10,paris,acme corporation\n20,rome,globex\n30,oslo,initech llc\n40,lima,umbrella\n"


def _write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return p


@pytest.fixture()
def tables(tmp_path):
    return _write(tmp_path, "a.csv", LEFT), _write(tmp_path, "b.csv", RIGHT)


def test_pairs_with_labels(tmp_path, tables):
    pairs = _write(tmp_path, "p.csv", "ltable_id,rtable_id,label\n1,10,1\n2,20,1\n3,30,1\n1,20,0\n2,10,0\n3,40,\n4,40,0\n")
    ds = load_csv_tables(*tables, pairs_csv=pairs, split=None)
    assert ds.attributes == ["name", "city"]  # right table reordered to the left's schema
    assert ds.split_sizes == {"train": 6, "pool": 1}
    pool = ds.split("pool").pairs
    assert (pool["left_id"].tolist(), pool["right_id"].tolist(), pool["label"].tolist()) == (["3"], ["40"], [-1])
    assert ds.to_frame()["right_name"].iloc[0] == "acme corporation"


def test_pairs_with_split_column_kept(tmp_path, tables):
    pairs = _write(tmp_path, "p.csv", "left_id,right_id,label,split\n1,10,1,train\n2,20,1,test\n2,10,0,valid\n")
    ds = load_csv_tables(*tables, pairs_csv=pairs)
    assert ds.split_sizes == {"train": 1, "valid": 1, "test": 1}


def test_pairs_and_matches(tmp_path, tables):
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\n1,10\n2,20\n1,20\n2,10\n4,40\n")
    matches = _write(tmp_path, "m.csv", "left_id,right_id\n1,10\n2,20\n3,30\n")
    ds = load_csv_tables(*tables, pairs_csv=pairs, matches_csv=matches, split=None)
    got = dict(zip(zip(ds.pairs["left_id"], ds.pairs["right_id"]), ds.labels))
    assert got == {("1", "10"): 1, ("2", "20"): 1, ("1", "20"): 0, ("2", "10"): 0, ("4", "40"): 0}


def test_unlabelled_pairs_are_pool(tmp_path, tables):
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\n1,10\n2,20\n")
    ds = load_csv_tables(*tables, pairs_csv=pairs)
    assert ds.split_sizes == {"pool": 2} and not ds.has_labels


def test_blocking_with_and_without_matches(tmp_path, tables):
    matches = _write(tmp_path, "m.csv", "ltable_id,rtable_id,label\n1,10,1\n2,20,1\n3,30,1\n4,40,0\n")
    ds, res = load_csv_tables(
        *tables, matches_csv=matches, blocking=("standard", "city"), split=None, return_blocking=True
    )
    assert res.pair_completeness == 1.0 and len(ds) == 3  # hooli has no city: no candidate
    assert ds.labels.tolist() == [1, 1, 1]
    ds = load_csv_tables(*tables, blocking=[("tokens", "name", {"top_k": 1})])
    assert ds.split_names == ["pool"] and (ds.labels == -1).all() and len(ds) >= 3


def test_stratified_split_is_seeded(tmp_path):
    n = 60
    left = "id,name\n" + "".join(f"{i},item {i}\n" for i in range(n))
    right = "id,name\n" + "".join(f"r{i},item {i}\n" for i in range(n))
    lab = "".join(f"{i},r{i},{int(i % 5 == 0)}\n" for i in range(n))
    files = [_write(tmp_path, f, t) for f, t in (("a.csv", left), ("b.csv", right), ("p.csv", "left_id,right_id,label\n" + lab))]
    a = load_csv_tables(files[0], files[1], pairs_csv=files[2], random_state=3)
    b = load_csv_tables(files[0], files[1], pairs_csv=files[2], random_state=3)
    c = load_csv_tables(files[0], files[1], pairs_csv=files[2], random_state=4)
    assert a.pairs.equals(b.pairs) and not a.pairs.equals(c.pairs)
    assert a.split_names == ["train", "valid", "test"]
    assert a.describe()["positives"].tolist() == [7, 3, 2]  # 12 positives split 60/20/20
    assert a.split_sizes == {"train": 36, "valid": 12, "test": 12}


# ------------------------------------------------------------------------ bad input
def test_missing_files(tmp_path, tables):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        load_csv_tables(tmp_path / "nope.csv", tables[1])
    with pytest.raises(FileNotFoundError, match="pairs.csv"):
        load_csv_tables(*tables, pairs_csv=tmp_path / "pairs.csv")


def test_missing_id_column(tmp_path, tables):
    with pytest.raises(DataError, match="'key'"):
        load_csv_tables(*tables, id_column="key")


def test_missing_pair_columns(tmp_path, tables):
    pairs = _write(tmp_path, "p.csv", "a,b\n1,10\n")
    with pytest.raises(DataError, match="left_id.*right_id"):
        load_csv_tables(*tables, pairs_csv=pairs)


def test_ids_absent_from_tables(tmp_path, tables):
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\n1,10\n2,99\n")
    with pytest.raises(DataError, match=r"'99' at row 1 .*b\.csv"):
        load_csv_tables(*tables, pairs_csv=pairs)
    matches = _write(tmp_path, "m.csv", "left_id,right_id\n77,10\n")
    with pytest.raises(DataError, match=r"'77' at row 0"):
        load_csv_tables(*tables, matches_csv=matches)


def test_duplicate_ids_and_pairs(tmp_path, tables):
    dup = _write(tmp_path, "dup.csv", LEFT + "2,globex again,rome\n")
    with pytest.raises(DataError, match="'2' appears more than once"):
        load_csv_tables(dup, tables[1])
    pairs = _write(tmp_path, "p.csv", "left_id,right_id\n1,10\n1,10\n")
    with pytest.raises(DataError, match="more than once"):
        load_csv_tables(*tables, pairs_csv=pairs)


def test_unaligned_attributes(tmp_path, tables):
    other = _write(tmp_path, "c.csv", "id,title,city\n1,x,paris\n")
    with pytest.raises(DataError, match=r"only in the left table \['name'\], only in the right table \['title'\]"):
        load_csv_tables(tables[0], other)
    only_id = _write(tmp_path, "i.csv", "id\n1\n")
    with pytest.raises(DataError, match="no attribute"):
        load_csv_tables(only_id, only_id)


@pytest.mark.parametrize("bad", ["2", "yes", "-1", "0.5"])
def test_labels_outside_0_1(tmp_path, tables, bad):
    pairs = _write(tmp_path, "p.csv", f"left_id,right_id,label\n1,10,1\n2,20,{bad}\n")
    with pytest.raises(DataError, match=f"label '{bad}' at row 1"):
        load_csv_tables(*tables, pairs_csv=pairs)


def test_empty_tables_and_files(tmp_path, tables):
    header_only = _write(tmp_path, "h.csv", "id,name,city\n")
    with pytest.raises(DataError, match="no records"):
        load_csv_tables(header_only, tables[1])
    empty = _write(tmp_path, "e.csv", "")
    with pytest.raises(DataError, match="empty"):
        load_csv_tables(tables[0], empty)
    no_pairs = _write(tmp_path, "p.csv", "left_id,right_id\n")
    with pytest.raises(DataError, match="holds no rows"):
        load_csv_tables(*tables, pairs_csv=no_pairs)


def test_unreadable_encoding(tmp_path, tables):
    latin = _write(tmp_path, "l.csv", "id,name,city\n1,café ñandú,paris\n", encoding="latin-1")
    with pytest.raises(DataError, match="encoding='latin-1'"):
        load_csv_tables(latin, tables[1])
    right = _write(tmp_path, "r.csv", "id,name,city\n9,cafe,paris\n", encoding="latin-1")
    ds = load_csv_tables(latin, right, blocking=("standard", "city"), encoding="latin-1")
    assert ds.to_frame()["left_name"].iloc[0] == "café ñandú"


def test_empty_candidate_set(tmp_path, tables):
    with pytest.raises(DataError, match="no candidate pair"):
        load_csv_tables(*tables, blocking=("standard", "name"))


def test_conflicting_labels_and_bad_parameters(tmp_path, tables):
    pairs = _write(tmp_path, "p.csv", "left_id,right_id,label\n1,10,1\n")
    matches = _write(tmp_path, "m.csv", "left_id,right_id\n1,10\n")
    with pytest.raises(DataError, match="one way"):
        load_csv_tables(*tables, pairs_csv=pairs, matches_csv=matches)
    with pytest.raises(ValueError, match="fractions"):
        load_csv_tables(*tables, pairs_csv=pairs, split=(0.7, 0.2))
    with pytest.raises(TypeError, match="return_blocking"):
        load_csv_tables(*tables, pairs_csv=pairs, return_blocking="yes")


def test_text_cells_are_mapped_once_per_distinct_value_as_cell_by_cell():
    """spreadsheet_safe_frame (every CSV skrisk writes) maps each distinct text once: the same
    cells as a cell-by-cell map, missing values kept, and columns that mix types cell by cell."""
    import numpy as np
    import pandas as pd

    # internal on purpose: the cell neutraliser itself
    from skrisk._safetext import map_text, spreadsheet_safe, spreadsheet_safe_frame

    frame = pd.DataFrame({"t": ["=1+1", None, "=1+1", "'q", "ok", np.nan],
                          "mixed": [1, 1.0, True, "=x", None, "-5"]})
    got = spreadsheet_safe_frame(frame)
    for c in frame.columns:
        want = frame[c].map(spreadsheet_safe, na_action="ignore")
        assert got[c].tolist()[:4] == want.tolist()[:4] and got[c].isna().tolist() == want.isna().tolist()
    assert [type(v) for v in got["mixed"][:3]] == [int, float, bool]
    calls = []
    map_text(pd.Series(["a", "b", "a", "a"]), lambda v: calls.append(v) or v)
    assert calls == ["a", "b"]


_CELL_CHARS = ["=", "+", "-", "@", "'", "_", " ", "\t", "\r", "\n", "\x00", "\x1b", "\u202e", "\ufeff", "\u00a0",
               "\uff1d", "a", "Z", "0", "9", "\u00e9", "\u0661", "\u2167", ".", "e", ","]


@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.sampled_from(_CELL_CHARS), max_size=6)), max_size=40))
@settings(max_examples=300, deadline=None)
def test_the_frame_neutraliser_equals_the_cell_rule_on_any_texts(cells):
    """spreadsheet_safe_frame finds the texts to quote in one pass over the joined column: on any
    texts (empty ones, NUL inside, full-width signs, Unicode digits, invisible first characters) it
    gives exactly the cell-by-cell rule."""
    import pandas as pd

    # internal on purpose: the cell neutraliser itself
    from skrisk._safetext import spreadsheet_safe, spreadsheet_safe_frame

    frame = pd.DataFrame({"t": pd.Series(cells, dtype=object)})
    got = spreadsheet_safe_frame(frame)["t"].tolist()
    assert got == [v if v is None else spreadsheet_safe(v) for v in cells]
