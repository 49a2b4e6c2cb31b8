"""Tests of block(): hand-checked small cases, the three methods on real data, PC/RR, errors."""

from __future__ import annotations

import pandas as pd
import pytest

from skrisk.data import BlockingResult, block
from skrisk.exceptions import DataError


@pytest.fixture()
def small():
    left = pd.DataFrame(
        {"name": ["acme corp", "globex inc", "initech", "hooli"], "city": ["paris", "rome", "oslo", None]},
        index=["a1", "a2", "a3", "a4"],
    )
    right = pd.DataFrame(
        {"name": ["acme corp", "globex", "umbrella corp"], "city": ["Paris ", "rome", None]},
        index=["b1", "b2", "b3"],
    )
    return left, right


def test_standard_block_normalises_and_skips_missing(small):
    left, right = small
    res = block(left, right, ("standard", "city"), true_links=[("a1", "b1"), ("a2", "b2"), ("a4", "b3")])
    # "Paris " == "paris" after normalisation; the missing cities of a4 and b3 are not a key
    assert list(map(tuple, res.pairs[["left_id", "right_id"]].to_numpy())) == [("a1", "b1"), ("a2", "b2")]
    assert res.pairs["label"].tolist() == [1, 1]
    assert res.pair_completeness == pytest.approx(2 / 3)
    assert res.reduction_ratio == pytest.approx(1 - 2 / 12)
    assert res.n_true_links == 3 and len(res) == 2


def test_tokens_top_k_both_directions(small):
    left, right = small
    res = block(left, right, ("tokens", "name", {"top_k": 1}))
    got = set(map(tuple, res.pairs.to_numpy()))
    # left->right best: a1-b1 (acme), a2-b2 (globex); right->left: b1-a1, b2-a2, b3 -> a1 ("corp")
    assert got == {("a1", "b1"), ("a2", "b2"), ("a1", "b3")}
    assert "label" not in res.pairs.columns and res.pair_completeness is None


def test_union_removes_duplicates(small):
    left, right = small
    a = block(left, right, ("standard", "city"))
    b = block(left, right, ("tokens", "name", {"top_k": 1}))
    both = block(left, right, [("standard", "city"), ("tokens", "name", {"top_k": 1})])
    want = set(map(tuple, a.pairs.to_numpy())) | set(map(tuple, b.pairs.to_numpy()))
    assert set(map(tuple, both.pairs.to_numpy())) == want
    assert len(both) == len(want)
    assert both.rule_sizes == {"standard:city": len(a), "tokens:name": len(b)}


def test_sorted_neighbourhood_matches_recordlinkage(fodors):
    import recordlinkage

    left, right = fodors.left, fodors.right
    res = block(left, right, ("sorted_neighbourhood", "phone", {"window": 3}))
    idx = recordlinkage.Index()
    idx.sortedneighbourhood("phone", window=3)
    lk = left.assign(phone=left["phone"].str.strip().str.lower())
    rk = right.assign(phone=right["phone"].str.strip().str.lower())
    want = set(map(tuple, idx.index(lk, rk).to_frame().astype(str).to_numpy()))
    assert set(map(tuple, res.pairs.to_numpy())) == want


def test_real_data_pair_completeness(fodors):
    """Blocking Fodors-Zagats on its name tokens keeps almost every known match."""
    matches = fodors.pairs[fodors.pairs["label"] == 1]
    res = block(fodors.left, fodors.right, ("tokens", ["name", "addr"], {"top_k": 3}), true_links=matches)
    assert res.pair_completeness >= 0.95
    assert res.reduction_ratio >= 0.98
    assert set(res.summary()) >= {"n_candidates", "pair_completeness", "reduction_ratio", "seconds"}


def test_token_blocker_chunking_gives_same_pairs(beer, monkeypatch):
    import skrisk.data._blocking as bmod

    full = block(beer.left, beer.right, ("tokens", "Beer_Name", {"top_k": 2}))
    monkeypatch.setattr(bmod, "_TOKEN_CHUNK_CELLS", 300_000)  # ~100 rows per chunk, 44 chunks
    chunked = block(beer.left, beer.right, ("tokens", "Beer_Name", {"top_k": 2}))
    pd.testing.assert_frame_equal(full.pairs, chunked.pairs)


def test_default_rule_uses_all_columns(small):
    left, right = small
    res = block(left, right)
    assert list(res.rule_sizes) == ["tokens:name+city"]
    assert isinstance(res, BlockingResult) and "candidates=" in repr(res)


@pytest.mark.parametrize(
    "rules, exc, match",
    [
        (("fuzzy", "name"), ValueError, "Unknown blocking method"),
        (("standard", "zip"), DataError, "not in both tables"),
        (("standard", []), ValueError, "names no column"),
        (("sorted_neighbourhood", "name", {"window": 4}), ValueError, "odd"),
        (("sorted_neighbourhood", ["name", "city"]), ValueError, "one column"),
        (("tokens", "name", {"top_k": 0}), ValueError, "top_k"),
        (("tokens", "name", {"k": 3}), ValueError, "unknown parameter"),
        ([], ValueError, "rules is empty"),
        (["standard"], TypeError, "A blocking rule is"),
    ],
)
def test_bad_rules(small, rules, exc, match):
    left, right = small
    with pytest.raises(exc, match=match):
        block(left, right, rules)


def test_bad_tables_and_links(small):
    left, right = small
    with pytest.raises(TypeError, match="DataFrame"):
        block(left.to_numpy(), right)
    with pytest.raises(DataError, match="empty"):
        block(left.iloc[:0], right)
    with pytest.raises(DataError, match="duplicate record id"):
        block(pd.concat([left, left.iloc[:1]]), right)
    with pytest.raises(DataError, match="'zz'"):
        block(left, right, ("standard", "city"), true_links=[("a1", "zz")])
    with pytest.raises(DataError, match="left_id/right_id"):
        block(left, right, ("standard", "city"), true_links=pd.DataFrame({"a": ["a1"], "b": ["b1"]}))
    links = pd.DataFrame({"ltable_id": ["a1"], "rtable_id": ["b1"]})
    assert block(left, right, ("standard", "city"), true_links=links).pair_completeness == 1.0


def test_no_token_at_all():
    left = pd.DataFrame({"x": ["--", "!!"]}, index=["1", "2"])
    right = pd.DataFrame({"x": ["??"]}, index=["3"])
    res = block(left, right, ("tokens", "x"))
    assert len(res) == 0 and res.reduction_ratio == 1.0
