"""Tests of block(): hand-checked small cases, the three methods on real data, PC/RR, errors."""

from __future__ import annotations

import os

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
    # internal on purpose: smaller chunk / dense-path limits
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


# ---------------------------------------------------------------- the linear token blocker (issue #26)
@pytest.mark.parametrize("name, floor", [("abt_buy", 0.985), ("dblp_scholar", 0.999)])
def test_default_blocking_keeps_pair_completeness(data_home, name, floor):
    """The default rule keeps (at least) the pair completeness of the all-pairs top-k it replaced."""
    from skrisk.datasets import load_deepmatcher

    ds = load_deepmatcher(name, data_home)
    res = block(ds.left, ds.right, true_links=ds.pairs[ds.pairs["label"] == 1])
    assert res.pair_completeness >= floor


def test_inverted_index_finds_the_exact_top_k_when_it_affords_every_token(fodors, monkeypatch):
    """With a budget that affords every token, the candidate path (inverted index, full-cosine
    ranking) gives the dense all-pairs top-k."""
    # internal on purpose: smaller chunk / dense-path limits
    import skrisk.data._blocking as bmod

    everything = ("tokens", ["name", "addr"], {"top_k": 1000, "budget": 10**9})  # every pair sharing a word
    top3 = ("tokens", ["name", "addr"], {"top_k": 3, "budget": 10**9, "rescore": 10**6})
    dense_all, dense3 = block(fodors.left, fodors.right, everything), block(fodors.left, fodors.right, top3)
    monkeypatch.setattr(bmod, "_DENSE_RATIO", 0)  # never dense
    sparse_all, sparse3 = block(fodors.left, fodors.right, everything), block(fodors.left, fodors.right, top3)
    pd.testing.assert_frame_equal(dense_all.pairs, sparse_all.pairs)
    # the top 3 agree up to ties (equal cosines at the third place, e.g. two identical records)
    a, b = set(map(tuple, dense3.pairs.to_numpy())), set(map(tuple, sparse3.pairs.to_numpy()))
    assert len(a) == len(b) and len(a ^ b) <= 0.02 * len(a)


def test_inverted_index_on_a_person_table(monkeypatch):
    """On a one-table person dedup, the candidate path keeps almost every true pair, and a small
    budget drops frequent tokens (fewer candidates examined) without losing the rare keys."""
    # internal on purpose: smaller chunk / dense-path limits
    import skrisk.data._blocking as bmod
    from skrisk.datasets import make_person_table

    table, links = make_person_table(4000, random_state=0)
    monkeypatch.setattr(bmod, "_DENSE_RATIO", 0)
    seen = []
    real = bmod._best_per_row
    monkeypatch.setattr(bmod, "_best_per_row", lambda r, *a: seen.append(len(r)) or real(r, *a))
    res = block(table, None, true_links=links)
    assert res.task == "dedup" and res.pair_completeness >= 0.97
    examined_default = seen[0]
    seen.clear()
    small = block(table, None, ("tokens", None, {"budget": 5}), true_links=links)
    assert seen[0] < examined_default / 2
    assert small.pair_completeness >= 0.8


def test_default_token_rule_keeps_pair_completeness_as_the_table_grows():
    """Pair completeness fell with the table (0.990 at 20,000 person records, 0.962 at 200,000,
    0.912 at 1M): true partners were lost before the full-cosine ranking (no shared index token,
    or tied on the index tokens' share). The defaults index 5 rarest tokens per record and rescore
    8 * top_k candidates: 0.994 at 30,000 records (0.985 with the former 3 and 4)."""
    from skrisk.datasets import make_person_table

    table, links = make_person_table(30_000, random_state=0)
    res = block(table, None, true_links=links)
    assert res.pair_completeness >= 0.99
    assert len(res.pairs) <= 10 * len(table)


@pytest.mark.parametrize("params, match", [({"budget": 0}, "budget"), ({"prefix": -1}, "prefix"),
                                           ({"rescore": 0}, "rescore")])
def test_bad_token_parameters(small, params, match):
    left, right = small
    with pytest.raises(ValueError, match=match):
        block(left, right, ("tokens", "name", params))


def test_candidate_path_does_not_depend_on_the_chunking(monkeypatch):
    """Row chunks of any size give the same pairs (ties at the k-th place broken alike)."""
    # internal on purpose: smaller chunk / dense-path limits
    import skrisk.data._blocking as bmod
    from skrisk.datasets import make_person_table

    table, _ = make_person_table(2000, random_state=0)
    monkeypatch.setattr(bmod, "_DENSE_RATIO", 0)
    whole = block(table, None, ("tokens", None, {"top_k": 3}))
    monkeypatch.setattr(bmod, "_TOKEN_CHUNK_CELLS", 5_000)
    pd.testing.assert_frame_equal(whole.pairs, block(table, None, ("tokens", None, {"top_k": 3})).pairs)


def _four_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)


@pytest.mark.parametrize("task", ["dedup", "link"])
def test_threads_give_the_same_pairs(task, monkeypatch):
    """Row chunks on threads (n_jobs) give the very pairs of one thread, in the same order."""
    _four_cpus(monkeypatch)  # threads are capped at the CPUs: 2 and 3 threads even on a small machine
    from skrisk.datasets import make_person_table

    table, links = make_person_table(20_000, random_state=1)
    left, right = (table, None) if task == "dedup" else (table.iloc[::2], table.iloc[1::2])
    one = block(left, right, n_jobs=1)
    assert len(one.pairs) > 50_000
    for n_jobs in (2, 3, -1):
        pd.testing.assert_frame_equal(block(left, right, n_jobs=n_jobs).pairs, one.pairs)
    with pytest.raises(ValueError, match="n_jobs"):
        block(left, right, n_jobs=0)


@pytest.mark.parametrize("task", ["dedup", "link"])
def test_copies_of_a_record_get_every_pair_the_rules_give_it(task):
    """Identical records are blocked as one, and each pair of them a rule finds stands for every
    pair of their copies: the candidates hold all the pairs of blocking without the groups, and
    (one table) every two copies of a record."""
    import numpy as np

    from skrisk.datasets import make_person_table

    table, _ = make_person_table(400, random_state=0)
    table = table[["given_name", "surname", "postcode"]]
    rng = np.random.default_rng(0)
    copies = table.iloc[rng.choice(len(table), 60)]
    copies = pd.concat([copies, copies.iloc[:20]])  # groups of two and three copies
    copies.index = [f"copy{i}" for i in range(len(copies))]
    rules = [("standard", "postcode"), ("standard", ["given_name", "surname"])]
    if task == "dedup":
        left, right = pd.concat([table, copies]), None
    else:
        left, right = pd.concat([table.iloc[:200], copies.iloc[:30]]), pd.concat([table.iloc[150:], copies.iloc[30:]])

    def pairs(res):
        got = set(zip(res.pairs["left_id"], res.pairs["right_id"]))
        return got | {(b, a) for a, b in got} if right is None else got

    grouped = block(left, right, rules, identical=True)
    plain = pairs(block(left, right, rules))
    assert plain <= pairs(grouped)
    assert grouped.rule_sizes["identical records"] > 0
    if right is None:
        rows = left.apply(lambda r: "|".join(r.fillna("").str.strip().str.lower()), axis=1)
        twins = [(a, b) for key, ids in rows.groupby(rows).groups.items() if key.strip("|")
                 for a in ids for b in ids if a != b]
        assert twins and set(twins) <= pairs(grouped)


def test_the_index_entries_are_each_records_rare_and_rarest_tokens():
    """The tokens a record is indexed under (sorted in C by rank) are those of a plain sort of
    every (record, rank) entry: its rare tokens, and its ``prefix`` tokens of lowest rank."""
    import numpy as np
    import scipy.sparse as sp

    # internal on purpose: the inverted index of the tokens rule, against its definition
    from skrisk.data._blocking import _index_entries

    rng = np.random.default_rng(0)
    for seed in range(200):
        n, v = int(rng.integers(0, 30)), int(rng.integers(1, 25))
        present = sp.random(n, v, density=rng.uniform(0, 0.7), format="csr", random_state=seed)
        present.data[:] = 1
        rank, rare, prefix = rng.permutation(v), rng.random(v) < 0.3, int(rng.integers(0, 5))
        expected = np.zeros((n, v), dtype=bool)
        for i in range(n):
            toks = present.indices[present.indptr[i]:present.indptr[i + 1]]
            by_rank = toks[np.argsort(rank[toks])]
            expected[i, by_rank[:prefix]] = True
            expected[i, toks[rare[toks]]] = True
        got = _index_entries(present, rank, rare, prefix)
        assert got.shape == (n, v) and (got.toarray() > 0).tolist() == expected.tolist(), seed
