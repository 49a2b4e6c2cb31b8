"""The typed blocking split into per-record keys (blocking on a cluster) gives the pairs of block()."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from skrisk.data import block
# internal on purpose: the per-partition steps of blocking on a cluster, checked without Dask
from skrisk.data._key_shuffle import (Groups, group_members, id_key_columns, id_key_hashes, identical_keys,
                                      key_pairs, pass_keys)
# internal on purpose: the default rules of a person table, which the cluster path must reproduce
from skrisk.data._typed_blocking import person_rules, table_types
from skrisk.datasets import make_person_table


def _hostile(n: int, seed: int) -> pd.DataFrame:
    """Persons with exact copies, a group of 130 copies, records without any value, and a
    number column of distinct values (an identifier key)."""
    t, _ = make_person_table(n, random_state=seed)
    copies = t.iloc[:150].set_axis([f"c{i}" for i in range(150)])
    many = pd.concat([t.iloc[[7]]] * 130).set_axis([f"m{i}" for i in range(130)])
    empty = pd.DataFrame({c: [None] * 3 for c in t.columns}, index=["e0", "e1", "e2"])
    out = pd.concat([t, copies, many, empty]).sample(frac=1, random_state=seed)
    out["member_no"] = [str(100000 + i) if i % 3 else None for i in range(len(out))]
    return out


def _shuffled_pairs(tables: list[pd.DataFrame], types: dict, n_parts: int, n_buckets: int, max_block: int):
    """The pairs made as the cluster makes them: partitions, keys, buckets by the first hash."""
    dedup = len(tables) == 1
    parts = [[(t.iloc[p], int(p[0]) if len(p) else 0) for p in np.array_split(np.arange(len(t)), n_parts)]
             for t in tables]
    cols = list(tables[0].columns)
    ik = [identical_keys(part, off, side) for side, ps in enumerate(parts) for part, off in ps]
    members = pd.concat([group_members([k[k.h1 % n_buckets == b] for k in ik]).assign(bucket=b)
                         for b in range(n_buckets)], ignore_index=True)
    groups = Groups.from_members(members, dedup=dedup)
    id_keys = []
    for side, ps in enumerate(parts):
        got = {c: [id_key_hashes(part, types, c, ~groups.not_heads(off + np.arange(len(part)), side))
                   for part, off in ps] for c in id_key_columns(types, cols)}
        id_keys.append({c: sum(g[0] for g in v) > 0 and len(np.unique(np.concatenate([g[1] for g in v])))
                        >= 0.25 * sum(g[0] for g in v) for c, v in got.items()})
    pk = [pass_keys(part, off, types, cols, ~groups.not_heads(off + np.arange(len(part)), side), id_keys[side], side)
          for side, ps in enumerate(parts) for part, off in ps]
    a_all, b_all = [], []
    for b in range(n_buckets):
        a, c = key_pairs([k[k.h1 % n_buckets == b] for k in pk], max_block, dedup)
        a, c = groups.spread(a, c)
        a_all.append(a)
        b_all.append(c)
    a, c = groups.identical_pairs()
    a_all.append(a)
    b_all.append(c)
    a, c = np.concatenate(a_all), np.concatenate(b_all)
    left = tables[0].index.astype(str).to_numpy()
    right = tables[-1].index.astype(str).to_numpy()
    ids = set(zip(left[a], right[c]))
    if dedup:
        ids = {(x, y) if x < y else (y, x) for x, y in ids}
    return ids


@pytest.mark.parametrize("n_parts,n_buckets", [(1, 1), (4, 3), (7, 16)])
def test_one_table_gives_the_pairs_of_block(n_parts, n_buckets):
    table = _hostile(4000, 0)
    types = table_types(table, None)
    assert types["member_no"]["type"] == "number" and id_key_columns(types, list(table.columns))
    rules = person_rules(types)
    expected = block(table, None, rules, identical=True)
    got = _shuffled_pairs([table], rules[0][2]["types"], n_parts, n_buckets, 20)
    assert got == set(zip(expected.pairs["left_id"], expected.pairs["right_id"]))
    assert expected.rule_sizes["identical records"] >= 129 + 150  # the 130 copies with their head, the pairs


@pytest.mark.parametrize("n_parts,n_buckets", [(1, 2), (5, 7)])
def test_two_tables_give_the_pairs_of_block(n_parts, n_buckets):
    table = _hostile(4000, 1)
    left, right = table.iloc[:2200], table.iloc[2200:]
    types = table_types(left, right)
    rules = person_rules(types)
    expected = block(left, right, rules, identical=True)
    got = _shuffled_pairs([left, right], rules[0][2]["types"], n_parts, n_buckets, 20)
    assert got == set(zip(expected.pairs["left_id"], expected.pairs["right_id"]))


def test_a_small_max_block_drops_the_same_keys():
    table = _hostile(3000, 2)
    types = table_types(table, None)
    rules = [("typed", None, {"types": types, "max_block": 2})]
    expected = block(table, None, rules, identical=True)
    got = _shuffled_pairs([table], types, 3, 5, 2)
    assert got == set(zip(expected.pairs["left_id"], expected.pairs["right_id"]))


def test_records_without_values_are_never_grouped():
    table = pd.DataFrame({"a": [None, None, "x", "x"], "b": [None, None, "y", "y"]}, index=list("pqrs"))
    keys = identical_keys(table, 0)
    assert sorted(keys["pos"]) == [2, 3]
    groups = Groups.from_members(group_members([keys]), dedup=True)
    a, b = groups.identical_pairs()
    assert list(zip(a, b)) == [(2, 3)]


def test_a_table_without_identical_records_has_no_group():
    table = pd.DataFrame({"a": ["x", "y", "z"], "b": ["1", "2", "3"]}, index=list("pqr"))
    members = pd.concat([group_members([identical_keys(table, 0)]).assign(bucket=b) for b in range(2)],
                        ignore_index=True)
    groups = Groups.from_members(members, dedup=True)
    assert [len(x) for x in groups.identical_pairs()] == [0, 0]
    assert not groups.not_heads(np.arange(3)).any()
    a, b = groups.spread(np.array([0]), np.array([2]))
    assert (a.tolist(), b.tolist()) == ([0], [2])
