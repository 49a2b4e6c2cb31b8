"""Fixtures for the LearnRisk tests: similarity features + a matcher's probabilities on real data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def _risk_data(ds):
    from skrisk.data import SimilarityFeatures

    sim = SimilarityFeatures().fit(ds.split("train").to_frame())
    names = list(sim.get_feature_names_out())
    out = {}
    for s in ("train", "valid", "test"):
        part = ds.split(s)
        out[s] = (pd.DataFrame(sim.transform(part.to_frame()).astype(np.float64), columns=names), part.y)
    matcher = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(*out["train"])
    for s, (F, y) in out.items():
        out[s] = (F.assign(proba=matcher.predict_proba(F)[:, 1]), y)
    return out


@pytest.fixture(scope="session")
def beer_risk(beer):
    """Beer: matcher trained on train; dict split -> (X with a 'proba' column, y)."""
    return _risk_data(beer)


@pytest.fixture(scope="session")
def fodors_risk(data_home):
    """Fodors-Zagats with its leaked ``class`` attribute kept on purpose: the matcher reads the
    answer and makes no mistake on valid/test (nothing to rank)."""
    from skrisk.datasets import load_deepmatcher

    return _risk_data(load_deepmatcher("fodors_zagats", data_home, drop_leaked=False))


def _make_synthetic(n=300, seed=0, n_features=3):
    """Pairs whose first feature separates classes and a noisy matcher probability (last column)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    F = np.clip(0.3 + 0.4 * y[:, None] + 0.2 * rng.standard_normal((n, n_features)), 0, 1)
    F[:, -1] = rng.integers(0, 2, n)  # a binary "diff"-like flag
    p = np.clip(F[:, 0] + 0.3 * rng.standard_normal(n), 0, 1)
    return np.column_stack([F, p]), y


@pytest.fixture
def make_synthetic():
    """Factory ``(n=300, seed=0, n_features=3) -> (X, y)``: features plus a probability column (last)."""
    return _make_synthetic
