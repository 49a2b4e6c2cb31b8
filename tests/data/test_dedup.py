"""Deduplication of one table: PairDataset.from_table, block(left, None), FEBRL dedup, stacked tables."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skrisk import LearnRisk
from skrisk.data import PairDataset, SimilarityFeatures, block
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._febrl import febrl_entity
from skrisk.datasets import load_csv_tables, load_febrl
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._pairs import stack_tables
from skrisk.exceptions import DataError


@pytest.fixture()
def people():
    return pd.DataFrame(
        {
            "name": ["ann lee", "anne lee", "bob ray", "robert ray", "cy young", "ann leigh"],
            "city": ["paris", "paris", "rome", "rome", None, "paris"],
        },
        index=["p5", "p2", "p3", "p1", "p4", "p6"],
    )


def _keys(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(frame["left_id"], frame["right_id"]))


# ------------------------------------------------------------------ PairDataset
def test_from_table_is_a_dedup_task_with_canonical_pairs(people):
    ds = PairDataset.from_table(people, [("p5", "p2", 1), ("p1", "p3", 1), ("p2", "p4", 0)], name="people")
    assert ds.task == "dedup" and ds.left is ds.right
    assert _keys(ds.pairs) == [("p2", "p5"), ("p1", "p3"), ("p2", "p4")]
    assert ds.labels.tolist() == [1, 1, 0]
    # the records follow the canonical order; a subset stays a dedup task over the same table
    assert ds.records("left")["name"].tolist() == ["anne lee", "robert ray", "anne lee"]
    sub = ds.subset([2, 0])
    assert sub.task == "dedup" and sub.left is sub.right is ds.left
    assert "task='dedup'" in repr(ds)


def test_from_frames_stays_linkage_even_with_one_frame(people):
    ds = PairDataset.from_frames(people, people, [("p5", "p5", 1)])
    assert ds.task == "link" and ds.left is not ds.right


def test_from_table_refuses_self_pairs_and_mirrored_duplicates(people):
    with pytest.raises(DataError, match=r"row 1 pairs record 'p3' with itself.*Remove"):
        PairDataset.from_table(people, [("p5", "p2"), ("p3", "p3")])
    with pytest.raises(DataError, match=r"rows 0 and 2 are the same pair \('p2', 'p5'\).*Keep each pair once"):
        PairDataset.from_table(people, [("p5", "p2", 1), ("p1", "p3", 1), ("p2", "p5", 0)])
    with pytest.raises(DataError, match="'p9' at row 0 is not an id of the table"):
        PairDataset.from_table(people, [("p9", "p2")])
    dup_ids = people.rename(index={"p2": "p5"})
    with pytest.raises(DataError, match="duplicate record ids"):
        PairDataset.from_table(dup_ids, [("p5", "p3")])


def test_from_table_without_pairs_blocks_the_table(people):
    ds = PairDataset.from_table(people, blocking=("standard", "city"))
    assert ds.task == "dedup" and set(ds.split_names) == {"pool"}
    assert set(_keys(ds.pairs)) == {("p2", "p5"), ("p2", "p6"), ("p5", "p6"), ("p1", "p3")}


# ------------------------------------------------------------------ blocking one table
def _brute_standard(table: pd.DataFrame, col: str) -> set[tuple[str, str]]:
    key = table[col].map(lambda v: "" if v is None or pd.isna(v) else str(v).strip().lower())
    out = set()
    for a, b in itertools.combinations(table.index, 2):
        if key[a] and key[a] == key[b]:
            out.add((min(a, b), max(a, b)))
    return out


@pytest.mark.parametrize("method", ["standard", "sorted_neighbourhood", "tokens"])
def test_block_one_table_gives_each_unordered_pair_once(people, method):
    rule = (method, "name") if method == "tokens" else (method, "city")
    res = block(people, None, rule)
    keys = _keys(res.pairs)
    assert res.task == "dedup" and res.n_left == res.n_right == len(people)
    assert all(a < b for a, b in keys), "canonical order: the smaller id first"
    assert len(set(keys)) == len(keys), "no duplicate (or mirrored) pair"
    assert res.reduction_ratio == pytest.approx(1 - len(keys) / (6 * 5 / 2))
    if method == "standard":
        assert set(keys) == _brute_standard(people, "city")
    assert block(people, people, rule).pairs.equals(res.pairs)  # right=left is the same request


def test_tokens_one_table_takes_top_k_other_records(people):
    res = block(people, None, ("tokens", "name", {"top_k": 1}))
    # every record's single nearest *other* record, as unordered pairs: p5 "ann lee" -> p6 "ann leigh",
    # p2 "anne lee" -> p5, p6 -> p5, p3 "bob ray" <-> p1 "robert ray"; p4 "cy young" shares no word
    assert _keys(res.pairs) == [("p5", "p6"), ("p2", "p5"), ("p1", "p3")]
    # with top_k >= n - 1 every pair of records sharing a word is a candidate, none with itself
    full = block(people, None, ("tokens", "name", {"top_k": 50}))
    assert ("p2", "p5") in set(_keys(full.pairs)) and ("p1", "p3") in set(_keys(full.pairs))
    assert all(a < b for a, b in _keys(full.pairs))


def test_block_one_table_true_links_in_either_order(people):
    res = block(people, None, ("standard", "city"), true_links=[("p5", "p2"), ("p3", "p1"), ("p4", "p6")])
    assert res.n_true_links == 3 and res.pair_completeness == pytest.approx(2 / 3)
    lab = dict(zip(_keys(res.pairs), res.pairs["label"]))
    assert lab[("p2", "p5")] == 1 and lab[("p1", "p3")] == 1 and lab[("p5", "p6")] == 0
    assert res.report().endswith("pair completeness 0.6667 (2 of 3 known matches kept).")
    assert "within one table: 4 candidate pairs" in res.report()
    assert "cannot be known without labels" in block(people, None, ("standard", "city")).report()
    with pytest.raises(DataError, match="pairs record 'p3' with itself"):
        block(people, None, ("standard", "city"), true_links=[("p3", "p3")])
    with pytest.raises(DataError, match="single record"):
        block(people.iloc[:1], None)


# ------------------------------------------------------------------ similarity symmetry
_word = st.text(alphabet="abcde 1.", max_size=12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_word, _word, st.one_of(st.none(), _word), _word), min_size=2, max_size=8))
def test_similarity_features_are_symmetric(rows):
    """Features of (a, b) equal those of (b, a): a dedup pair has no side."""
    frame = pd.DataFrame(rows, columns=["left_name", "right_name", "left_city", "right_city"])
    frame = frame[["left_name", "left_city", "right_name", "right_city"]]
    swapped = frame.rename(columns=lambda c: c.replace("left_", "tmp_").replace("right_", "left_")
                           .replace("tmp_", "right_"))[frame.columns]
    sf = SimilarityFeatures().fit(pd.concat([frame, swapped], ignore_index=True))
    np.testing.assert_array_equal(sf.transform(frame), sf.transform(swapped))


def test_similarity_symmetric_on_real_dedup_pairs():
    ds = load_febrl(dataset="febrl1")
    sub = ds.subset(np.arange(0, len(ds), 7))
    frame = sub.to_frame()
    half = len(sub.attributes)
    swapped = pd.DataFrame(np.hstack([frame.iloc[:, half:].to_numpy(), frame.iloc[:, :half].to_numpy()]),
                           columns=frame.columns)
    sf = SimilarityFeatures().fit(frame)
    X, X_swapped = sf.transform(frame), sf.transform(swapped)
    np.testing.assert_array_equal(X, X_swapped)
    # so the FeatureMatcher's probability of (a, b) is that of (b, a)
    from skrisk.matchers import FeatureMatcher

    matcher = FeatureMatcher(random_state=0).fit(X, sub.y)
    np.testing.assert_array_equal(matcher.predict_proba(X), matcher.predict_proba(X_swapped))


# ------------------------------------------------------------------ the two test tasks
def test_febrl_dedup_datasets():
    ds, res = load_febrl(dataset="febrl1", return_blocking=True)
    assert ds.task == "dedup" and len(ds.left) == 1000 and res.n_true_links == 500
    assert res.pair_completeness > 0.99 and (ds.pairs["left_id"] < ds.pairs["right_id"]).all()
    pos = ds.pairs[ds.pairs["label"] == 1]
    assert (pos["left_id"].map(febrl_entity) == pos["right_id"].map(febrl_entity)).all()
    assert set(ds.split_names) == {"train", "valid", "test"}
    with pytest.raises(ValueError, match="Unknown FEBRL dataset 'febrl9'"):
        load_febrl(dataset="febrl9")
    with pytest.raises(ValueError, match="not a FEBRL record id"):
        febrl_entity("p1")


def test_stack_tables_of_a_deepmatcher_dataset(fodors):
    st_ds = stack_tables(fodors)
    assert st_ds.task == "dedup" and len(st_ds.left) == len(fodors.left) + len(fodors.right)
    assert st_ds.left.index.str.match(r"^[ab]:").all() and st_ds.left.index.is_unique
    assert len(st_ds) == len(fodors) and st_ds.labels.sum() == fodors.labels.sum()
    assert st_ds.split_sizes == fodors.split_sizes
    blocked, res = stack_tables(fodors, blocking=("tokens", ["name", "addr"], {"top_k": 5}), return_blocking=True)
    assert res.task == "dedup" and res.n_true_links == int((fodors.labels == 1).sum())
    assert res.pair_completeness > 0.95 and int(blocked.labels.sum()) == round(res.pair_completeness * res.n_true_links)
    with pytest.raises(TypeError, match="linkage PairDataset"):
        stack_tables(st_ds)


# ------------------------------------------------------------------ downstream: risk sampling unchanged
def test_risk_sampling_on_a_dedup_dataset():
    from skrisk.active import ActiveLearner
    from skrisk.matchers import FeatureMatcher
    from skrisk.strategies import KMedoidsSelector, RiskSampler

    ds = load_febrl(dataset="febrl1", negative_ratio=2)
    train, pool = ds.split("train"), ds.split("test")
    sf = SimilarityFeatures(metrics=["jaccard"], attributes=["given_name", "suburb"])  # weak: mistakes to learn
    X = sf.fit_transform(train)
    Xp = sf.transform(pool)
    rng = np.random.RandomState(0)
    lab = np.concatenate([rng.choice(np.flatnonzero(train.y == c), 15, replace=False) for c in (0, 1)])
    matcher = FeatureMatcher(random_state=0)
    sampler = RiskSampler(risk=LearnRisk(epochs=20), selector=KMedoidsSelector(device="cpu"), random_state=0)
    learner = ActiveLearner(matcher, sampler, X_training=X[lab], y_training=train.y[lab])
    picked, risk = sampler(learner, Xp, n_instances=5, random_state=0)
    assert sampler.last_query_.risk_model is not None, "LearnRisk trained on dedup pairs"
    assert len(picked) == 5 and len(set(picked.tolist())) == 5 and np.all((risk >= 0) & (risk <= 1))
    assert (pool.pairs["left_id"].iloc[picked] < pool.pairs["right_id"].iloc[picked]).all()


# ------------------------------------------------------------------ one CSV table
def test_load_csv_tables_one_table(tmp_path):
    t = tmp_path / "people.csv"
    t.write_text("id,name,city\n1,ann lee,paris\n2,anne lee,paris\n3,bob ray,rome\n4,bob rey,rome\n")
    ds, res = load_csv_tables(t, None, blocking=("standard", "city"), return_blocking=True, split=None)
    assert ds.task == "dedup" and ds.name == "people" and res.task == "dedup"
    assert set(_keys(ds.pairs)) == {("1", "2"), ("3", "4")}
    p = tmp_path / "pairs.csv"
    p.write_text("left_id,right_id,label\n2,1,1\n3,4,\n")
    ds = load_csv_tables(t, None, pairs_csv=p, split=None)
    assert _keys(ds.pairs) == [("1", "2"), ("3", "4")]
    p.write_text("left_id,right_id,label\n2,1,1\n1,2,0\n")
    with pytest.raises(DataError, match=r"pairs.csv: pair \('1', '2'\) at row 0 is labelled both .*lines \[2, 3\]"):
        load_csv_tables(t, None, pairs_csv=p, split=None)
    p.write_text("left_id,right_id\n2,1\n3,3\n")
    with pytest.raises(DataError, match=r"pairs.csv: row 1 \(line 3\) pairs record '3' with itself"):
        load_csv_tables(t, None, pairs_csv=p, split=None)
