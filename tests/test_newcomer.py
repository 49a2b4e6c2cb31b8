"""A newcomer's script, written only from the README: risk sampling with modAL's own ActiveLearner
(query) and with skrisk's (query and teach), for a plain RandomForestClassifier, a FeatureMatcher,
an RNNMatcher on PairEncoder output and the package's RNN pipeline on a pair frame (issue #16)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from skrisk import ActiveLearner, RiskSampler
from skrisk.data import PairEncoder, SimilarityFeatures
from skrisk.datasets import load_febrl
from skrisk.matchers import FeatureMatcher, RNNMatcher
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matchers._rnn import make_rnn_pipeline

modal_models = pytest.importorskip("modAL.models", reason="modAL is an optional extra")

ATTRIBUTES = ["given_name", "surname", "suburb"]


@pytest.fixture(scope="module")
def task():
    ds = load_febrl(negative_ratio=3)
    X, y = SimilarityFeatures(attributes=ATTRIBUTES).fit_transform(ds), ds.y
    pool = ds.split_positions("train")
    seed = np.r_[pool[y[pool] == 1][:10], pool[y[pool] == 0][:10]]
    pool = np.setdiff1d(pool, seed)[:300]
    frame = ds.to_frame()
    encoder = PairEncoder(max_length=8, features=SimilarityFeatures(attributes=ATTRIBUTES)).fit(frame.iloc[seed])
    return {"X": X, "y": y, "seed": seed, "pool": pool, "frame": frame, "encoded": encoder.transform(frame)}


def _matchers(t):
    rnn = {"max_epochs": 2, "random_state": 0}
    return {
        "random forest": (RandomForestClassifier(n_estimators=20, random_state=0), t["X"]),
        "FeatureMatcher": (FeatureMatcher(random_state=0), t["X"]),
        "RNNMatcher": (RNNMatcher(**rnn), t["encoded"]),
        "RNN pipeline": (make_rnn_pipeline(max_length=8, features=SimilarityFeatures(attributes=ATTRIBUTES), **rnn),
                         t["frame"]),
    }


def _rows(data, positions):
    return data.iloc[positions] if hasattr(data, "iloc") else data[positions]


@pytest.mark.parametrize("name", ["random forest", "FeatureMatcher", "RNNMatcher", "RNN pipeline"])
def test_risk_sampling_in_modal_and_in_skrisk(task, name):
    from sklearn.base import clone

    matcher, data = _matchers(task)[name]
    y, seed, pool = task["y"], task["seed"], task["pool"]
    X_seed, X_pool = _rows(data, seed), _rows(data, pool)

    modal = modal_models.ActiveLearner(clone(matcher), RiskSampler(random_state=0),
                                       X_training=X_seed, y_training=y[seed])
    modal_positions = np.asarray(modal.query(X_pool, n_instances=5)[0])

    learner = ActiveLearner(clone(matcher), RiskSampler(random_state=0), X_training=X_seed, y_training=y[seed])
    positions, rows = learner.query(X_pool, n_instances=5)
    learner.teach(rows, y[pool[positions]])

    assert len(set(positions.tolist())) == 5 and positions.max() < len(pool)
    assert modal_positions.tolist() == positions.tolist()  # one strategy, one batch, either learner
    assert len(learner.y_training) == len(seed) + 5
    assert set(np.unique(learner.predict(_rows(data, pool[:50])))) <= {0, 1}
