"""A new labelling session holds exactly the candidates its resumed self reads from ``candidates.csv``
(issue #26: the new session no longer reads back the file it has just written).

Ids that start a formula, quotes, control and format characters, a CR or LF inside an id, labelled
pairs among unlabelled ones, a one-table session, and a pair file with its own ``split`` column
(whose pairs a resumed session reads in another order: that case still reads the file back).
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from skrisk.labelling import LabellingSession

# ids of records: each is kept exactly (after the reader's strip of surrounding spaces)
IDS = ["=x1", "'quoted", "''twice", '"=1"', "-5", "+1.5e3", "\u200b=1", "\x01=2", "shop\r0", "a\r\nb", "x\ny",
       "@sum", "caf\u00e9", "\u202e=3", "plain", "p,comma"]
NAMES = ["blue cafe", "blue cafe", "red bar", "red bar", "green inn", "green inn", "old mill", "old mill",
         "black cat", "black cat", "white lily", "white lily", "grey dog", "grey dog", "red cafe", "blue bar"]


def _write(path, header, rows):
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        w.writerow(header)
        w.writerows(rows)
    return path


def _keys(session):
    pairs = session.dataset.pairs
    return (session.keys, pairs["label"].tolist(), pairs["split"].tolist())


def _new_then_resumed(folder, **kw):
    new = LabellingSession.open(folder, input_fn=lambda p: "q", out=io.StringIO(), **kw)
    try:
        first = _keys(new)
        features = new.features.copy()
    finally:
        new.close()
    resumed = LabellingSession.open(folder, input_fn=lambda p: "q", out=io.StringIO())
    try:
        np.testing.assert_array_equal(resumed.features, features)
        return first, _keys(resumed)
    finally:
        resumed.close()


def test_one_table_session_from_blocking(tmp_path):
    table = _write(tmp_path / "t.csv", ["id", "name"], zip(IDS, NAMES))
    first, resumed = _new_then_resumed(tmp_path / "s", table=table)
    assert len(first[0]) >= 8 and {k for p in first[0] for k in p} <= set(IDS)
    assert first == resumed


@pytest.mark.parametrize("with_split", [False, True])
def test_linkage_session_from_a_pair_file(tmp_path, with_split):
    left = _write(tmp_path / "a.csv", ["id", "name"], zip(IDS, NAMES))
    right = _write(tmp_path / "b.csv", ["id", "name"], zip([f"r{i}" for i in range(len(IDS))], NAMES))
    # labelled pairs in the middle of the file; with a split column, an unlabelled pair in "test"
    rows = [(a, f"r{j}", "") for j, a in enumerate(IDS)]
    rows[5] = (rows[5][0], rows[5][1], "1")
    rows[9] = (IDS[9], "r0", "0")
    header = ["left_id", "right_id", "label"]
    if with_split:
        header.append("split")
        rows = [(*r, "test" if i == 3 else "") for i, r in enumerate(rows)]
    pairs = _write(tmp_path / "p.csv", header, rows)
    first, resumed = _new_then_resumed(tmp_path / "s", left=left, right=right, pairs=pairs)
    assert first[1][:2] == [1, 0] and set(first[2]) == {"train", "pool"}
    assert first == resumed
