"""Bad input for every strategy (FeatureMatcher, fast), and the guards of RiskSampler."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from skorch.helper import SliceDict

from skrisk.active import ActiveLearner
from skrisk.data import SimilarityFeatures
from skrisk.exceptions import EmptyPoolError, NotFittedError
from skrisk.matchers import FeatureMatcher
from _paper_strategies import STRATEGIES
from skrisk.strategies import RiskSampler
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.risk._estimator import DEFAULT_EPOCHS
from skrisk.risk import LearnRisk
# internal on purpose: the pool/labelled shape check
from skrisk.strategies._selection import check_pool_matches, lipschitz_weights, min_distances


@pytest.fixture(scope="module")
def task(beer):
    F = SimilarityFeatures().fit_transform(beer.to_frame()).astype(np.float64)
    y = np.asarray(beer.labels)
    train, valid = beer.split_positions("train"), beer.split_positions("valid")
    rng = np.random.RandomState(1)
    lab = np.concatenate([rng.choice(train[y[train] == 1], 8, replace=False),
                          rng.choice(train[y[train] == 0], 30, replace=False)])
    return {"F": F, "y": y, "lab": lab, "pool": np.setdiff1d(train, lab), "valid": valid}


def _strategy(name, task):
    if name == "risk":
        return RiskSampler(task["F"][task["valid"]], task["y"][task["valid"]], risk=LearnRisk(epochs=10),
                           random_state=0)
    return STRATEGIES[name]


def _learner(name, task, X_lab=None):
    clf = LogisticRegression(max_iter=1000) if name in ("egl", "badge") else None
    X_lab = task["F"][task["lab"]] if X_lab is None else X_lab
    return ActiveLearner(FeatureMatcher(clf, random_state=0), _strategy(name, task), X_training=X_lab,
                         y_training=task["y"][task["lab"]])


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_pool_not_encoded_like_labelled_pairs(task, name):
    F, pool = task["F"], task["pool"]
    learner = _learner(name, task)
    bad = {
        "fewer columns": F[pool][:, :5],
        "token array": np.zeros((len(pool), 8, 6), dtype=np.int64),
        "SliceDict": SliceDict(features=F[pool]),
        "DataFrame": pd.DataFrame(F[pool]),
    }
    for what, X in bad.items():
        with pytest.raises(ValueError, match="labelled pairs") as info:
            learner.query(X, n_instances=3)
        assert "encode" in str(info.value), what
    # DataFrames: the columns must be the labelled pairs' columns
    cols = [f"f{i}" for i in range(F.shape[1])]
    learner_df = _learner(name, task, pd.DataFrame(F[task["lab"]], columns=cols))
    renamed = pd.DataFrame(F[pool], columns=[f"g{i}" for i in range(F.shape[1])])
    with pytest.raises(ValueError, match="columns"):
        learner_df.query(renamed, n_instances=3)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_bad_n_instances_through_the_learner(task, name):
    """Through skrisk's learner: clear errors, and the learner's state is untouched."""
    learner = _learner(name, task)
    X_pool = task["F"][task["pool"]]
    n_lab = len(learner.y_training)
    for n, err, msg in ((len(X_pool) + 1, EmptyPoolError, "larger than the pool"), (0, ValueError, "at least 1"),
                        (-2, ValueError, "at least 1"), (np.int64(2), None, None)):
        if err is None:
            pos, _ = learner.query(X_pool, n_instances=n, random_state=0)
            assert len(np.unique(pos)) == 2
        else:
            with pytest.raises(err, match=msg):
                learner.query(X_pool, n_instances=n)
    with pytest.raises(EmptyPoolError, match="empty"):
        learner.query(X_pool[:0], n_instances=1)
    assert len(learner.y_training) == n_lab
    # the whole pool at once is allowed, each pair exactly once
    small = X_pool[:12]
    pos, _ = learner.query(small, n_instances=12, random_state=0)
    assert sorted(pos.tolist()) == list(range(12))


@pytest.mark.parametrize("name", [n for n in STRATEGIES if n != "random"])
def test_unfitted_learner_every_strategy(task, name):
    strategy = _strategy(name, task)
    clf = LogisticRegression(max_iter=1000) if name in ("egl", "badge") else None
    learner = ActiveLearner(FeatureMatcher(clf), strategy)
    with pytest.raises(NotFittedError):
        strategy(learner, task["F"][task["pool"]], n_instances=3)


def test_risk_sampler_validation_checks(task):
    F, y, valid = task["F"], task["y"], task["valid"]
    learner = _learner("entropy", task)
    X_pool = F[task["pool"]]
    with pytest.raises(ValueError, match="X_valid"):
        RiskSampler(F[valid][:, :5], y[valid])(learner, X_pool, n_instances=3)
    with pytest.raises(ValueError, match="labels"):
        RiskSampler(F[valid], y[valid][:-1])(learner, X_pool, n_instances=3)
    with pytest.raises(ValueError, match="0 .non-match. and 1"):
        RiskSampler(F[valid], np.full(len(valid), 2))(learner, X_pool, n_instances=3)
    with pytest.raises(ValueError, match="no pairs"):
        RiskSampler(F[valid][:0], y[valid][:0])(learner, X_pool, n_instances=3)
    with pytest.raises(ValueError, match="both"):
        RiskSampler(F[valid])(learner, X_pool, n_instances=3)
    for bad in ({"distance_floor": -1}, {"distance_floor": "big"}, {"n_threads": 0}, {"n_threads": "many"},
                {"n_threads": "auto"}, {"valid_ratio": 0.0}, {"valid_ratio": 1.5}, {"labelled_proba": "x"},
                {"selection": "x"}, {"preselect": 0.5}, {"preselect": "3"}, {"preselect": True},
                {"preselect_after": -1}, {"preselect_after": "x"}):
        # a value out of range is a ValueError, a value of the wrong type a TypeError; both name it
        name = next(iter(bad))
        with pytest.raises((TypeError, ValueError), match=name):
            RiskSampler(F[valid], y[valid], **bad)(learner, X_pool, n_instances=3)


def test_risk_sampler_unlabelled_learner(task):
    """A learner whose matcher is fitted but holds no labelled set: LearnRisk has no statistics."""
    learner = _learner("entropy", task)
    sampler = RiskSampler(task["F"][task["valid"]], task["y"][task["valid"]])
    learner.X_training = learner.y_training = None
    with pytest.raises(NotFittedError, match="labelled set"):
        sampler(learner, task["F"][task["pool"]], n_instances=3)


def test_lipschitz_weights_guard_zero_distance():
    risk = np.array([0.5, 0.5, 0.5, 0.2])
    d = np.array([0.0, 1e-6, 1.0, 2.0])
    w = lipschitz_weights(risk, d)
    assert w[0] == 0.0  # a duplicate of a labelled pair: covered at cost 0
    median = np.median(d[d > 0])
    assert w[1] == pytest.approx(0.5 / (0.01 * median))  # raised to the floor, bounded
    assert w[2] == pytest.approx(0.5 / 1.0) and w[3] == pytest.approx(0.1)
    w_abs = lipschitz_weights(risk, d, distance_floor=0.5)
    assert w_abs[1] == pytest.approx(1.0) and w_abs[2] == pytest.approx(0.5)
    assert np.isfinite(w).all() and np.isfinite(w_abs).all()


def test_min_distances_float64_sees_zero():
    rng = np.random.RandomState(0)
    B = 100.0 + rng.normal(scale=10, size=(50, 33))  # far from the origin
    A = np.vstack([B[:5], 100.0 + rng.normal(size=(5, 33))])
    d64 = min_distances(A, B, dtype=torch.float64)
    assert np.all(d64[:5] <= 1e-7 * np.median(d64[5:]))
    np.testing.assert_allclose(min_distances(A, B)[5:], d64[5:], rtol=1e-3)


def test_risk_sampler_defaults_threads_and_timings(task, two_torch_threads):
    assert DEFAULT_EPOCHS == 200 and RiskSampler().n_threads is None  # torch's threads by default
    assert LearnRisk().epochs == DEFAULT_EPOCHS
    F, y = task["F"], task["y"]
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=10), n_threads=1,
                          random_state=0)
    learner = _learner("entropy", task)
    before = torch.get_num_threads()
    pos, _ = sampler(learner, F[task["pool"]], n_instances=5, random_state=0)
    q = sampler.last_query_
    assert torch.get_num_threads() == before and q.n_threads == 1
    assert q.risk_model.epochs == 10  # the risk given, over LearnRisk's defaults
    t = q.timings
    assert t["total"] >= t["kmedoids"] > 0 and t["total"] >= t["learnrisk_fit"] > 0
    # the thread setting never changes the batch
    again, _ = sampler.set_params(n_threads=None)(learner, F[task["pool"]], n_instances=5, random_state=0)
    np.testing.assert_array_equal(pos, again)


def test_check_pool_matches_accepts_other_token_length():
    lab = SliceDict(tokens=np.zeros((4, 8, 6), dtype=np.int64), features=np.zeros((4, 3)))
    pool = SliceDict(tokens=np.zeros((9, 8, 10), dtype=np.int64), features=np.zeros((9, 3)))
    check_pool_matches(pool, lab, "x")  # L may differ
    check_pool_matches(np.zeros((3, 2)), None, "x")  # nothing to compare with


class _OnePassMatcher(FeatureMatcher):
    """A FeatureMatcher that also offers the one-pass interface, counting its calls."""

    calls = 0

    def predict_proba_and_represent(self, X):
        type(self).calls += 1
        return self.predict_proba(X), self.represent(X)


def test_risk_sampler_uses_one_pass_when_offered(task):
    F, y = task["F"], task["y"]
    kw = dict(risk=LearnRisk(epochs=10), random_state=0, n_threads=1)
    plain = RiskSampler(F[task["valid"]], y[task["valid"]], **kw)
    one = RiskSampler(F[task["valid"]], y[task["valid"]], **kw)
    lab = task["lab"]
    a = ActiveLearner(FeatureMatcher(random_state=0), plain, X_training=F[lab], y_training=y[lab])
    b = ActiveLearner(_OnePassMatcher(random_state=0), one, X_training=F[lab], y_training=y[lab])
    _OnePassMatcher.calls = 0
    pos_a, _ = a.query(F[task["pool"]], n_instances=4, random_state=0)
    pos_b, _ = b.query(F[task["pool"]], n_instances=4, random_state=0)
    assert _OnePassMatcher.calls == 1
    np.testing.assert_array_equal(pos_a, pos_b)
    np.testing.assert_allclose(plain.last_query_.weights, one.last_query_.weights)
