"""Tests of load_febrl: the blocking target, labels from the true links, splits, determinism."""

from __future__ import annotations

import numpy as np
import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._febrl import FEBRL_BLOCKING
from skrisk.datasets import load_febrl


@pytest.fixture(scope="module")
def febrl():
    return load_febrl(return_blocking=True)


def test_blocking_target(febrl):
    ds, res = febrl
    assert res.pair_completeness >= 0.95
    assert res.reduction_ratio >= 0.99
    assert res.n_true_links == 5000
    assert len(ds) == len(res.pairs)
    assert int((ds.labels == 1).sum()) == round(res.pair_completeness * 5000)


def test_labels_follow_the_true_links(febrl):
    ds, _ = febrl
    # FEBRL4 ids: rec-<n>-org on the left duplicates to rec-<n>-dup-0 on the right
    same = ds.pairs["left_id"].str.replace("-org", "") == ds.pairs["right_id"].str.replace("-dup-0", "")
    np.testing.assert_array_equal(ds.labels == 1, same.to_numpy())


def test_stratified_split(febrl):
    ds, _ = febrl
    assert ds.split_names == ["train", "valid", "test"]
    sizes = ds.split_sizes
    assert sizes["train"] == pytest.approx(0.6 * len(ds), abs=2)
    rates = ds.describe()["positive_rate"]
    assert rates.max() - rates.min() < 0.002
    assert ds.attributes[:2] == ["given_name", "surname"] and len(ds.attributes) == 10


def test_deterministic_and_seeded():
    a, b, c = load_febrl(0, negative_ratio=1), load_febrl(0, negative_ratio=1), load_febrl(1, negative_ratio=1)
    assert a.pairs.equals(b.pairs)
    assert not a.pairs.equals(c.pairs)


def test_negative_subsample():
    ds = load_febrl(negative_ratio=2)
    pos = int((ds.labels == 1).sum())
    assert int((ds.labels == 0).sum()) == 2 * pos


def test_custom_blocking_and_errors():
    ds, res = load_febrl(blocking=FEBRL_BLOCKING[:1], return_blocking=True)
    assert list(res.rule_sizes) == ["standard:postcode"] and len(ds) == len(res)
    with pytest.raises(ValueError, match="negative_ratio"):
        load_febrl(negative_ratio=-1)
    with pytest.raises(ValueError, match="fractions"):
        load_febrl(split=(0.5, 0.5, 0.5))
