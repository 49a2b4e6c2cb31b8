"""Hostile numbers: extreme magnitudes, NaN/inf, bad probabilities, degenerate sizes (issue #15)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from skorch.helper import SliceDict

from skrisk import LearnRisk
from skrisk.active import ActiveLearner
from skrisk.data import SimilarityFeatures
from skrisk.exceptions import DataError, EmptyPoolError
from skrisk.kmedoids import WeightedKMedoids, weighted_fastpam
from skrisk.matchers import FeatureMatcher
from skrisk.risk.research import LearnRiskEstimator
from _paper_strategies import STRATEGIES
from skrisk.strategies import RiskSampler
# internal on purpose: the probability check itself
from skrisk.strategies._selection import checked_proba

CPU = "cpu"


def _td(X: np.ndarray, w: np.ndarray, medoids) -> float:
    D = np.sqrt(((X[:, None, :] - X[None, list(medoids), :]) ** 2).sum(-1))
    return float((w * D.min(axis=1)).sum())


def _points(seed: int = 0, n: int = 40, d: int = 3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.exponential(size=n)


# ---- k-medoids near float32's limits ---------------------------------------------------------
@pytest.mark.parametrize("scale", [1e20, 1e30, 1e-30, 1e-20, 1e300, 1e-300])
@pytest.mark.parametrize("schedule", ["eager", "best"])
def test_fastpam_result_does_not_depend_on_the_scale(scale, schedule):
    """Before: at 1e20 / 1e-30 the kernel returned its start with converged=True and 0 swaps."""
    X, w = _points()
    ref = weighted_fastpam(X, 4, sample_weight=w, schedule=schedule, device=CPU)
    assert ref.n_swaps > 0  # the start is not optimal: a search that does nothing is visible
    res = weighted_fastpam(X * scale, 4, sample_weight=w, schedule=schedule, device=CPU)
    assert res.converged
    np.testing.assert_array_equal(res.selected, ref.selected)
    np.testing.assert_array_equal(res.labels, ref.labels)
    assert res.n_swaps == ref.n_swaps
    assert res.total_deviation == pytest.approx(ref.total_deviation * scale, rel=1e-9)


@pytest.mark.parametrize("scale", [1.0, 1e20, 1e-30])
def test_fastpam_matches_brute_force_at_extreme_scales(scale):
    X, w = _points(3, n=11, d=2)
    fixed = [0]
    free = range(1, 11)
    best = min(_td(X, w, fixed + list(q)) for q in itertools.combinations(free, 2))
    res = weighted_fastpam(X * scale, 2, sample_weight=w, fixed=fixed, init="build", device=CPU)
    assert res.converged
    assert res.total_deviation / scale == pytest.approx(best, rel=1e-6)


def test_fastpam_small_spread_far_from_the_origin():
    """Points 1e12 from the origin with a spread of 1: centring keeps the search exact."""
    X, w = _points(1, n=30)
    ref = weighted_fastpam(X, 3, sample_weight=w, device=CPU)
    res = weighted_fastpam(X + 1e12, 3, sample_weight=w, device=CPU)
    np.testing.assert_array_equal(res.selected, ref.selected)


def test_fastpam_float32_int_and_float64_inputs_agree():
    rng = np.random.default_rng(2)
    Xi = rng.integers(-50, 50, size=(30, 4))
    base = weighted_fastpam(Xi.astype(np.float64), 3, device=CPU)
    for X in (Xi, Xi.astype(np.float32), Xi.astype(np.int8), Xi.astype(np.float32) * np.float32(1e30)):
        res = weighted_fastpam(X, 3, device=CPU)
        np.testing.assert_array_equal(res.selected, base.selected)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fastpam_rejects_non_finite_coordinates_naming_the_row(bad):
    X, _ = _points()
    X[7, 2] = bad
    with pytest.raises(ValueError, match=r"row 7, column 2.*impute or drop"):
        weighted_fastpam(X, 2, device=CPU)


def test_fastpam_overflowing_float64_input_is_rejected_not_searched():
    X, _ = _points()
    with np.errstate(over="ignore"):
        huge = X * 1.5e308  # some coordinates overflow to inf in float64 itself
    with pytest.raises(ValueError, match="NaN or infinity"):
        weighted_fastpam(huge, 2, device=CPU)


def test_fastpam_weights_beyond_float32_range_are_rejected():
    """One weight 1e30 times the rest: the others would read as 0 and nothing would be searched."""
    X, w = _points()
    w = w.copy()
    w[5] = 1e30
    with pytest.raises(ValueError, match=r"smallest positive value .* at row \d+.*np\.where"):
        weighted_fastpam(X, 4, sample_weight=w, device=CPU)
    # a huge weight on a fixed medoid does not count (its distance is 0): accepted, same answer
    w2 = np.r_[1e30, w[1:] * 0 + 1]
    ref = weighted_fastpam(X, 4, sample_weight=np.r_[1.0, w2[1:]], fixed=[0], device=CPU)
    res = weighted_fastpam(X, 4, sample_weight=w2, fixed=[0], device=CPU)
    np.testing.assert_array_equal(res.selected, ref.selected)
    # uniformly tiny or huge weights are only a scale
    for s in (1e-40, 1e40):
        res = weighted_fastpam(X, 4, sample_weight=np.ones(len(X)) * s, device=CPU)
        np.testing.assert_array_equal(res.selected, weighted_fastpam(X, 4, device=CPU).selected)


def test_fastpam_degenerate_pools():
    # all rows identical: every choice costs 0, the run ends at once
    res = weighted_fastpam(np.ones((6, 3)), 2, device=CPU)
    assert res.converged and res.total_deviation == 0.0 and len(set(res.selected)) == 2
    # a pool of one row
    res = weighted_fastpam(np.array([[1e25, -3.0]]), 1, device=CPU)
    assert res.selected.tolist() == [0] and res.total_deviation == 0.0
    # n_select out of range / not an int
    X, _ = _points(n=5)
    for n_select, err in ((6, ValueError), (0, ValueError), (-1, ValueError), (2.0, TypeError), (True, TypeError)):
        with pytest.raises(err, match="n_select"):
            weighted_fastpam(X, n_select, device=CPU)


@pytest.mark.parametrize(
    "w, msg",
    [
        (np.zeros(8), "zero on every point"),
        (-np.ones(8), "negative"),
        (np.r_[np.ones(7), np.nan], "NaN or infinity"),
        (np.ones(7), "shape"),
    ],
)
def test_weighted_kmedoids_bad_weights(w, msg):
    X, _ = _points(n=8)
    with pytest.raises(ValueError, match=msg):
        WeightedKMedoids(n_select=2, device=CPU).fit(X, sample_weight=w)


def test_weighted_kmedoids_extreme_scale_matches_scale_one():
    X, w = _points()
    ref = WeightedKMedoids(n_select=4, device=CPU).fit(X, sample_weight=w)
    km = WeightedKMedoids(n_select=4, device=CPU).fit(X * 1e-30, sample_weight=w)
    np.testing.assert_array_equal(km.selected_indices_, ref.selected_indices_)
    np.testing.assert_array_equal(km.predict(X * 1e-30), ref.predict(X))


# ---- matcher probabilities and outputs seen by every strategy --------------------------------
class HostileMatcher(ClassifierMixin, BaseEstimator):
    """A real matcher (two fitted FeatureMatchers inside) whose outputs are corrupted at row 3.

    ``kind``: ``"range"`` (probabilities -0.5 / 1.5), ``"sum"`` (0.7 / 0.7), ``"nan"`` (NaN in every
    output: probabilities, MC draws, representations, gradient embeddings, EGL), ``"shape"``
    (probabilities with one column), ``"clean"`` (nothing corrupted).
    """

    def __init__(self, kind="clean"):
        self.kind = kind

    def fit(self, X, y):
        self.forest_ = FeatureMatcher(random_state=0).fit(X, y)
        self.linear_ = FeatureMatcher(LogisticRegression(max_iter=1000)).fit(X, y)
        self.classes_ = np.array([0, 1])
        return self

    def _bad_proba(self, P):
        P = np.array(P, dtype=np.float64)
        if self.kind == "clean":
            return P
        row = P[..., 3, :] if P.ndim == 3 else P[3]
        row[...] = {"range": [-0.5, 1.5], "sum": [0.7, 0.7], "nan": [np.nan, np.nan]}.get(self.kind, row)
        return P[..., :1] if self.kind == "shape" else P

    def _bad(self, A):
        A = np.array(A, dtype=np.float64)
        if self.kind == "clean":
            return A
        if self.kind == "nan":
            A[3] = np.nan
        return A

    def predict_proba(self, X):
        return self._bad_proba(self.forest_.predict_proba(X))

    def predict(self, X):
        return (self.forest_.predict_proba(X)[:, 1] > 0.5).astype(int)

    def predict_proba_mc(self, X, n_iter=20, random_state=None):
        return self._bad_proba(self.forest_.predict_proba_mc(X, n_iter=n_iter, random_state=random_state))

    def represent(self, X):
        return self._bad(self.forest_.represent(X))

    def gradient_embedding(self, X):
        return self._bad(self.linear_.gradient_embedding(X))

    def expected_gradient_length(self, X):
        return self._bad(self.linear_.expected_gradient_length(X))


@pytest.fixture(scope="module")
def task(beer):
    F = SimilarityFeatures().fit_transform(beer.to_frame()).astype(np.float64)
    y = np.asarray(beer.labels)
    train, valid = beer.split_positions("train"), beer.split_positions("valid")
    rng = np.random.RandomState(1)
    lab = np.concatenate([rng.choice(train[y[train] == 1], 8, replace=False),
                          rng.choice(train[y[train] == 0], 30, replace=False)])
    return {"F": F, "y": y, "lab": lab, "pool": np.setdiff1d(train, lab)[:60], "valid": valid}


def _query(name, task, kind):
    F, y, lab = task["F"], task["y"], task["lab"]
    strategy = STRATEGIES[name]
    if name == "risk":
        strategy = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=5), random_state=0)
    learner = ActiveLearner(HostileMatcher(kind), strategy, X_training=F[lab], y_training=y[lab])
    return strategy(learner, F[task["pool"]], n_instances=3, random_state=0)


#: strategies that read the matcher's class probabilities (the others read none)
READS_PROBA = {"entropy", "bald", "risk"}


@pytest.mark.parametrize("kind", ["range", "sum", "nan", "shape"])
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_rejects_invalid_matcher_output(task, name, kind):
    """Before: entropy and BALD returned a batch for probabilities of 1.5 or rows summing to 1.4;
    risk caught only values outside [0, 1]; NaN representations gave core-set a batch."""
    refused = name in READS_PROBA or (kind == "nan" and name != "random")
    if not refused:  # random, core-set, EGL and BADGE read no probabilities: a valid batch
        pos, _ = _query(name, task, kind)
        assert len(set(pos.tolist())) == 3
        return
    with pytest.raises(DataError) as info:
        _query(name, task, kind)
    msg = str(info.value)
    assert "HostileMatcher" in msg and name in msg
    assert "shape" in msg if kind == "shape" else "row 3" in msg
    assert "fix or replace the matcher" in msg or "Check those pairs" in msg


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_accepts_a_clean_matcher(task, name):
    pos, _ = _query(name, task, "clean")
    assert len(set(pos.tolist())) == 3


def test_probability_tolerance():
    """float32 softmax rounding passes; a real departure does not; values are clipped to [0, 1]."""
    P = np.array([[0.3, 0.7], [1.0 + 5e-8, -5e-8], [0.5, 0.5]], dtype=np.float32)
    out = checked_proba(P, LogisticRegression(), "entropy_sampling", n_rows=3)
    assert out.dtype == np.float64 and out.min() >= 0.0 and out.max() <= 1.0
    with pytest.raises(DataError, match=r"LogisticRegression.predict_proba.*row 1"):
        checked_proba([[0.3, 0.7], [0.5, 0.501]], LogisticRegression(), "entropy_sampling")
    with pytest.raises(DataError, match=r"draw 1"):
        checked_proba(np.stack([P, P + 0.1]), LogisticRegression(), "bald_sampling")
    with pytest.raises(DataError, match="expected \\(4, 2\\)"):
        checked_proba(P, LogisticRegression(), "entropy_sampling", n_rows=4)


@pytest.mark.parametrize("container", ["ndarray", "dataframe", "slicedict", "sparse"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_rejects_non_finite_pool_features(task, name, bad, container):
    """Before: sklearn's bare "Input X contains NaN." (no row, no fix); random sampling chose
    the broken pair, whose NaN features then failed the next fit."""
    F, y, lab = task["F"], task["y"], task["lab"]
    X = F[task["pool"]].copy()
    X[5, 2] = bad
    X_lab = F[lab]
    if container == "dataframe":
        cols = [f"f{i}" for i in range(F.shape[1])]
        X, X_lab = pd.DataFrame(X, columns=cols), pd.DataFrame(X_lab, columns=cols)
    elif container == "slicedict":
        X, X_lab = SliceDict(features=X), SliceDict(features=X_lab)
    elif container == "sparse":
        X = sp.csr_matrix(X)
        X_lab = None  # sparse labelled sets are not compared; the pool check still applies
    strategy = STRATEGIES[name]
    learner = ActiveLearner(HostileMatcher(), strategy, X_training=F[lab] if X_lab is None else X_lab,
                            y_training=y[lab]) if container != "sparse" else None
    with pytest.raises(DataError, match=rf"{name}_sampling: the pool holds NaN or infinity in 1 pair\(s\), "
                                        r"first at row 5.*Impute"):
        strategy(learner, X, n_instances=2, random_state=0)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_bad_n_instances_and_tiny_pools(task, name):
    F, y, lab = task["F"], task["y"], task["lab"]
    strategy = STRATEGIES[name]
    if name == "risk":
        strategy = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=5), random_state=0)
    learner = ActiveLearner(HostileMatcher(), strategy, X_training=F[lab], y_training=y[lab])
    X = F[task["pool"]]
    for n, err, msg in ((2.0, TypeError, "must be an int"), (True, TypeError, "must be an int"),
                        ("3", TypeError, "must be an int"), (0, ValueError, "at least 1"),
                        (-1, ValueError, "at least 1"), (len(X) + 1, EmptyPoolError, "larger than the pool")):
        with pytest.raises(err, match=msg):
            strategy(learner, X, n_instances=n, random_state=0)
    pos, _ = strategy(learner, X[:1], n_instances=1, random_state=0)  # a pool of one pair
    assert pos.tolist() == [0]
    pos32, _ = strategy(learner, X.astype(np.float32), n_instances=3, random_state=0)  # float32 pool
    assert len(set(pos32.tolist())) == 3


# ---- LearnRiskEstimator on too few or degenerate validation pairs ----------------------------
def _risk_X(n, seed=0):
    rng = np.random.RandomState(seed)
    return np.hstack([rng.rand(n, 3), rng.rand(n, 1)])


@pytest.mark.parametrize("n, y", [(0, []), (1, [1]), (2, [0, 1]), (3, [0, 1, 1])])
def test_learnrisk_too_few_pairs_says_how_many_of_which_kind(n, y):
    """Before: 2 rows gave "zero-size array to reduction operation minimum"."""
    with pytest.raises(ValueError, match=r"got .*in X and no X_train.*at least 5 pairs.*X_train / y_train"):
        LearnRiskEstimator(epochs=1).fit(_risk_X(n), np.asarray(y, dtype=int))


def test_learnrisk_too_few_pairs_with_training_pairs():
    Xt, yt = _risk_X(20), np.arange(20) % 2
    with pytest.raises(ValueError, match=r"got 1 sample\(s\) in X.*mispredicts and one it predicts correctly"):
        LearnRiskEstimator(epochs=1).fit(_risk_X(1), [1], X_train=Xt, y_train=yt)


def test_learnrisk_one_class_and_nan_features():
    with pytest.raises(ValueError, match=r"X holds no non-matches \(label 0\).*10 match\(es\), 0 non-match"):
        LearnRiskEstimator(epochs=1).fit(_risk_X(10), np.ones(10, dtype=int))
    X = _risk_X(20)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="first at row 3, column 'x1'.*sentinel"):
        LearnRiskEstimator(epochs=1).fit(X, np.arange(20) % 2)
