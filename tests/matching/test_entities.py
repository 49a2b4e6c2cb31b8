"""Entities from matches: components, one-to-one linkage, suspicious clusters, pairwise/cluster metrics."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# internal on purpose: the assignment size limit, made small
import skrisk.matching._entities as entities_mod
from skrisk.exceptions import DataError
from skrisk.matching import Entities, cluster_entities
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matching._entities import cluster_scores, pairwise_scores


def _m(rows):
    return pd.DataFrame(rows, columns=["left_id", "right_id", "probability"])


def _groups(ent: Entities) -> list[list[str]]:
    return ent.clusters.groupby("entity_id")["record_id"].apply(list).tolist()


# ------------------------------------------------------------------ dedup
def test_dedup_components_with_singletons():
    m = _m([("b", "a", 0.9), ("c", "d", 0.7), ("d", "e", 0.6), ("a", "f", 0.2), ("g", "h", 0.5)])
    ent = cluster_entities(m, records=list("abcdefghz"))
    # p = 0.5 is not a match (strictly above the threshold, as match_labels)
    assert _groups(ent) == [["a", "b"], ["c", "d", "e"], ["f"], ["g"], ["h"], ["z"]]
    assert set(ent.clusters["side"]) == {"table"} and ent.task == "dedup" and ent.n_entities == 6
    assert ent.suspicious.empty
    frame = ent.to_frame()
    assert frame.columns.tolist() == ["entity_id", "side", "record_id", "entity_size", "suspicious"]
    assert frame.loc[frame["record_id"] == "d", "entity_size"].item() == 3
    assert sorted(map(tuple, ent.pairs().to_numpy())) == [("a", "b"), ("c", "d"), ("c", "e"), ("d", "e")]
    assert "entities=6" in repr(ent)


def test_dedup_bad_matches_are_refused():
    with pytest.raises(DataError, match=r"rows 0 and 1 score the same pair \('a', 'b'\) \(in either order"):
        cluster_entities(_m([("a", "b", 0.9), ("b", "a", 0.8)]))
    with pytest.raises(DataError, match="row 1 pairs record 'c' with itself"):
        cluster_entities(_m([("a", "b", 0.9), ("c", "c", 0.8)]))
    with pytest.raises(DataError, match=r"probability 'high' at row 0 is not a number in \[0, 1\]"):
        cluster_entities(_m([("a", "b", "high")]))
    with pytest.raises(DataError, match=r"lacks the column\(s\) \['probability'\]"):
        cluster_entities(pd.DataFrame({"left_id": ["a"], "right_id": ["b"]}))
    with pytest.raises(ValueError, match="one_to_one=True needs task='link'"):
        cluster_entities(_m([("a", "b", 0.9)]), one_to_one=True)
    with pytest.raises(ValueError, match="max_size"):
        cluster_entities(_m([("a", "b", 0.9)]), max_size=1)


def test_suspicious_size_non_match_inside_and_chains():
    # a path a-b-c-d-e (diameter 4) with the ends scored as a non-match, and a star of 6 records
    chain = [("a", "b", 0.9), ("b", "c", 0.9), ("c", "d", 0.9), ("d", "e", 0.9), ("a", "e", 0.05)]
    star = [("s0", f"s{i}", 0.99) for i in range(1, 6)]
    ent = cluster_entities(_m(chain + star), max_size=5)
    sus = ent.suspicious
    by = {(int(r.entity_id), r.reason.split(":")[0]) for r in sus.itertuples()}
    e_chain = int(ent.clusters.loc[ent.clusters["record_id"] == "a", "entity_id"].item())
    e_star = int(ent.clusters.loc[ent.clusters["record_id"] == "s0", "entity_id"].item())
    assert by == {(e_chain, "non-match inside"), (e_chain, "chain"), (e_star, "size")}
    assert "between a and e, whose probability is 0.050" in " ".join(sus["reason"])
    assert sus.loc[sus["entity_id"] == e_star, "size"].item() == 6
    # a star has diameter 2: no chain; a complete graph neither
    assert not any(r.startswith("chain") for r in cluster_entities(_m(star)).suspicious["reason"])


def test_chain_ends_unscored_or_scored_by_score_fn():
    path = _m([("a", "b", 0.9), ("b", "c", 0.9), ("c", "d", 0.9)])
    sus = cluster_entities(path).suspicious
    assert len(sus) == 1 and sus["reason"].item().startswith("chain: 3 links between a and d, a pair never scored")
    calls = []

    def score(pairs):
        calls.append(pairs.copy())
        return np.where(pairs["left_id"] == "a", 0.1, 0.9)

    sus = cluster_entities(path, score_fn=score).suspicious
    assert calls[0].values.tolist() == [["a", "d"]]
    assert "probability is 0.100 <= 0.5 (scored by score_fn)" in sus["reason"].item()
    assert cluster_entities(path, score_fn=lambda p: np.full(len(p), 0.8)).suspicious.empty


# ------------------------------------------------------------------ linkage
def test_link_keeps_sides_apart():
    m = _m([("1", "1", 0.9), ("2", "1", 0.8), ("3", "2", 0.3)])
    ent = cluster_entities(m, task="link", records=(["1", "2", "3"], ["1", "2"]))
    c = ent.clusters
    assert len(c) == 5 and set(c["side"]) == {"left", "right"}
    e = c.groupby("entity_id").apply(lambda g: sorted(zip(g["side"], g["record_id"])), include_groups=False).tolist()
    assert e == [[("left", "1"), ("left", "2"), ("right", "1")], [("left", "3")], [("right", "2")]]
    assert sorted(map(tuple, ent.pairs().to_numpy())) == [("1", "1"), ("2", "1")]


def test_one_to_one_is_the_maximum_weight_assignment():
    # greedy keeps l1-r1 (0.9) and leaves l2 alone; the assignment keeps l1-r2 and l2-r1 (1.65)
    m = _m([("l1", "r1", 0.9), ("l1", "r2", 0.85), ("l2", "r1", 0.8)])
    ent = cluster_entities(m, task="link", one_to_one=True)
    assert sorted(map(tuple, ent.pairs().to_numpy())) == [("l1", "r2"), ("l2", "r1")]
    assert ent.suspicious.empty
    plain = cluster_entities(m, task="link")
    assert plain.n_entities == 1


def test_one_to_one_large_components_fall_back_to_greedy(monkeypatch):
    monkeypatch.setattr(entities_mod, "_MAX_ASSIGNMENT_CELLS", 1)
    m = _m([("l1", "r1", 0.9), ("l1", "r2", 0.85), ("l2", "r1", 0.8)])
    ent = cluster_entities(m, task="link", one_to_one=True)
    assert sorted(map(tuple, ent.pairs().to_numpy())) == [("l1", "r1")]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.floats(0.51, 1.0)), min_size=1, max_size=10,
                unique_by=lambda t: t[:2]))
def test_one_to_one_matches_brute_force(edges):
    m = _m([(f"l{a}", f"r{b}", p) for a, b, p in edges])
    got = cluster_entities(m, task="link", one_to_one=True).pairs()
    keys = list(zip(got["left_id"], got["right_id"]))
    assert len({k[0] for k in keys}) == len(keys) == len({k[1] for k in keys})
    weight = {(f"l{a}", f"r{b}"): p for a, b, p in edges}
    best = 0.0
    items = list(weight.items())
    for r in range(1, len(items) + 1):
        for combo in itertools.combinations(items, r):
            ls, rs = [k[0] for k, _ in combo], [k[1] for k, _ in combo]
            if len(set(ls)) == r and len(set(rs)) == r:
                best = max(best, sum(p for _, p in combo))
    assert sum(weight[k] for k in keys) == pytest.approx(best)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.floats(0.0, 1.0)), max_size=14,
                unique_by=lambda t: (min(t[:2]), max(t[:2]))))
def test_dedup_components_match_union_find(edges):
    edges = [(a, b, p) for a, b, p in edges if a != b]
    m = _m([(f"n{a}", f"n{b}", p) for a, b, p in edges])
    parent = list(range(8))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b, p in edges:
        if p > 0.5:
            parent[find(a)] = find(b)
    ent = cluster_entities(m, records=[f"n{i}" for i in range(8)])
    got = {frozenset(g) for g in _groups(ent)}
    want: dict[int, set] = {}
    for i in range(8):
        want.setdefault(find(i), set()).add(f"n{i}")
    assert got == {frozenset(v) for v in want.values()}


# ------------------------------------------------------------------ metrics
def test_pairwise_scores_by_hand():
    s = pairwise_scores(pd.DataFrame({"left_id": ["a", "c"], "right_id": ["b", "b"]}), [("b", "a"), ("d", "e")])
    assert (s["precision"], s["recall"], s["n_correct"]) == (0.5, 0.5, 1)
    link = pairwise_scores([("1", "2")], [("2", "1")], task="link")
    assert link["n_correct"] == 0 and link["f1"] == 0.0
    assert np.isnan(pairwise_scores([], [("a", "b")])["precision"])
    ent = cluster_entities(_m([("a", "b", 0.9), ("b", "c", 0.9)]))
    s = pairwise_scores(ent, [("a", "b"), ("a", "c"), ("b", "c"), ("d", "e")])
    assert (s["n_pred"], s["n_correct"], s["recall"]) == (3, 3, 0.75)


def test_cluster_scores_by_hand():
    pred = {"a": 1, "b": 1, "c": 1, "d": 2}
    true = {"a": "x", "b": "x", "c": "y", "d": "z"}
    s = cluster_scores(pred, true)
    # predicted {a,b,c}, {d}; true {a,b}, {c}, {d}: one exact entity ({d})
    assert (s["n_pred"], s["n_true"], s["n_exact"]) == (2, 3, 1)
    assert s["precision"] == 0.5 and s["recall"] == pytest.approx(1 / 3)
    # B-cubed precision: a, b: 2/3 each, c: 1/3, d: 1 -> 8/12; recall: all 1
    assert s["bcubed_precision"] == pytest.approx((2 / 3 + 2 / 3 + 1 / 3 + 1) / 4) and s["bcubed_recall"] == 1.0
    # records missing from one side are singletons there; Entities and frames are accepted
    ent = cluster_entities(_m([("a", "b", 0.9)]))
    s = cluster_scores(ent, pd.DataFrame({"record_id": ["a", "b", "c"], "entity_id": [0, 0, 1]}))
    assert s["precision"] == 1.0 and s["recall"] == 1.0 and s["n_records"] == 3
    with pytest.raises(DataError, match="in more than one entity"):
        cluster_scores(pd.DataFrame({"record_id": ["a", "a"], "entity_id": [0, 1]}), true)


def test_entities_on_febrl_truth():
    """Clustering the true links of FEBRL3 gives back exactly the true entities."""
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.data._febrl import febrl_entity
    from skrisk.datasets import load_febrl

    ds = load_febrl(dataset="febrl3", split=(1.0, 0.0, 0.0))
    pos = ds.pairs[ds.pairs["label"] == 1]
    m = pos.assign(probability=1.0)[["left_id", "right_id", "probability"]]
    ids = ds.left.index.tolist()
    ent = cluster_entities(m, records=ids)
    true = {i: febrl_entity(i) for i in ids}
    s = cluster_scores(ent, true)
    # blocking lost a few links (pair completeness < 1): almost, not all, entities come back exactly
    assert s["bcubed_precision"] == 1.0 and s["recall"] > 0.98 and s["precision"] > 0.98


def test_non_match_inside_needs_a_confident_non_match():
    # a-b-c joined by matches; (a, c) scored 0.4: a doubt, not a confident non-match
    m = _m([("a", "b", 0.9), ("b", "c", 0.9), ("a", "c", 0.4)])
    assert cluster_entities(m).suspicious.empty
    sus = cluster_entities(m, non_match_below=0.45).suspicious
    assert sus["reason"].item().startswith("non-match inside: (a, c) has probability 0.400 <= 0.45")
    with pytest.raises(ValueError, match="non_match_below must be a number from 0 to threshold"):
        cluster_entities(m, non_match_below=0.7)


def test_a_threshold_below_the_default_non_match_cut_still_clusters():
    # a saved model whose chosen threshold is 0.15 (a recall target) must not crash match():
    # by default the confident-non-match cut follows the threshold down
    m = _m([("a", "b", 0.9), ("b", "c", 0.3), ("a", "c", 0.1)])
    ent = cluster_entities(m, threshold=0.15)
    assert ent.clusters.groupby("entity_id")["record_id"].apply(sorted).tolist() == [["a", "b", "c"]]
    assert ent.suspicious["reason"].str.startswith("non-match inside: (a, c) has probability 0.100 <= 0.1").all()
    with pytest.raises(ValueError, match="non_match_below must be a number from 0 to threshold"):
        cluster_entities(m, threshold=0.15, non_match_below=0.2)


def test_chains_of_many_random_entities_agree_with_shortest_paths():
    """The entities' hop distances are computed for all entities of one size at once (issue #26:
    one graph per entity took 16 s at 1M records); the chain reasons must be those of
    scipy's shortest_path run on each entity, its diameter and its first pair of ends."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components, shortest_path

    rng = np.random.default_rng(0)
    rows = []
    for c in range(300):  # random trees plus a few extra edges, 2 to 14 records each
        n = int(rng.integers(2, 15))
        names = [f"x{c}_{k}" for k in range(n)]
        for k in range(1, n + int(rng.integers(0, 3))):
            j, i = sorted(rng.choice(min(k + 1, n), 2, replace=False)) if k >= n else (int(rng.integers(0, k)), k)
            rows.append((names[j], names[i]))
    rows = list(dict.fromkeys(rows))  # one row per pair
    m = _m([(a, b, 0.9) for a, b in rows])
    got = cluster_entities(m, max_size=12, score_fn=lambda p: np.zeros(len(p))).suspicious
    chains = {int(e): r for e, r in zip(got["entity_id"], got["reason"]) if r.startswith("chain")}
    ent = cluster_entities(m, max_size=12).clusters
    want = {}
    for e, grp in ent.groupby("entity_id"):
        if not 4 <= len(grp) <= 12:
            continue
        recs = grp["record_id"].tolist()
        pos = {r: i for i, r in enumerate(recs)}
        edges = [(pos[a], pos[b]) for a, b in rows if a in pos]
        g = sp.coo_matrix((np.ones(len(edges)), tuple(zip(*edges))), shape=(len(recs),) * 2).tocsr()
        assert connected_components(g, directed=False)[0] == 1
        dist = shortest_path(g, directed=False, unweighted=True)
        diam = int(dist.max())
        if diam >= 3:
            want[int(e)] = diam
    assert want and set(chains) == set(want)
    for e, diam in want.items():
        assert chains[e].startswith(f"chain: {diam} links between "), chains[e]
