"""The Python API under hostile input (issue #29, "The Python API and the benchmarks").

Every refusal happens before any state changes and names the row, the column or the fix; after
it, a valid call works as if the bad one had never been made.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from skrisk import LearnRisk, RiskSampler
from skrisk.active import ActiveLearner
from skrisk.exceptions import DataError, EmptyPoolError
from skrisk.risk import risk_roc_auc
from skrisk.strategies import entropy_sampling, random_sampling


@pytest.fixture
def task():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(120, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=120) > 0.5).astype(int)
    return X, y


def _learner(X, y, **kw):
    return ActiveLearner(LogisticRegression(), entropy_sampling, X_training=X[:20], y_training=y[:20], **kw)


def _state(learner):
    return learner.X_training.copy(), learner.y_training.copy(), learner.estimator.coef_.copy()


def _unchanged(learner, before):
    after = _state(learner)
    return all(np.array_equal(a, b) for a, b in zip(before, after))


# ---------------------------------------------------------------------------- teach / fit
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_teach_with_a_non_finite_row_is_refused_before_any_state_change(task, bad):
    """Before: ``Input X contains NaN`` naming no row, the row kept in X_training, and every later
    valid teach() failed."""
    X, y = task
    learner = _learner(X, y)
    before = _state(learner)
    rows = X[20:25].copy()
    rows[3, 2] = bad
    with pytest.raises(DataError, match=r"first at row 3, column 2; nothing was stored"):
        learner.teach(rows, y[20:25])
    assert _unchanged(learner, before)
    learner.teach(X[20:25], y[20:25])  # a valid teach still works
    assert len(learner.y_training) == 25


def test_nan_reaches_an_estimator_that_declares_it_takes_nan(task):
    X, y = task
    learner = ActiveLearner(RandomForestClassifier(n_estimators=5, random_state=0), entropy_sampling,
                            X_training=X[:20], y_training=y[:20])
    rows = X[20:25].copy()
    rows[1, 0] = np.nan
    learner.teach(rows, y[20:25])  # allow_nan: the forest handles it
    assert np.isnan(learner.X_training).sum() == 1


def test_nan_in_the_initial_labelled_set_is_refused_naming_the_row(task):
    X, y = task
    X0 = X[:20].copy()
    X0[7, 1] = np.nan
    with pytest.raises(DataError, match=r"ActiveLearner.fit: .* first at row 7, column 1"):
        ActiveLearner(LogisticRegression(), entropy_sampling, X_training=X0, y_training=y[:20])


@pytest.mark.parametrize(
    "rows, labels, match",
    [
        (lambda X: X[20:25], lambda y: y[20:24], r"X has 5 rows but y has 4 labels"),
        (lambda X: X[20:25], lambda y: y[20:27], r"X has 5 rows but y has 7 labels"),
        (lambda X: X[20:25, :3], lambda y: y[20:25], r"rows of shape \(3,\), the labelled pairs rows of shape \(4,\)"),
        (lambda X: X[20:25], lambda y: None, r"requires y to be passed"),
        (lambda X: None, lambda y: y[20:25], r"the pairs X are None"),
        (lambda X: X[20:25], lambda y: 1, r"a single value"),
        (lambda X: X[20:25], lambda y: np.array([0, 1, np.nan, 0, 1]), r"label at position 2"),
        (lambda X: X[20:25], lambda y: [0, 1, None, 0, 1], r"label at position 2"),
        (lambda X: pd.DataFrame(X[20:25]), lambda y: y[20:25], r"container|DataFrame"),
    ],
)
def test_teach_with_wrong_shapes_or_types_is_refused_without_state_change(task, rows, labels, match):
    X, y = task
    learner = _learner(X, y)
    before = _state(learner)
    with pytest.raises((DataError, ValueError), match=match):
        learner.teach(rows(X), labels(y))
    assert _unchanged(learner, before)
    learner.teach(X[20:25], y[20:25])
    assert len(learner.y_training) == 25


def test_teach_with_no_rows_keeps_the_learner_usable(task):
    X, y = task
    learner = _learner(X, y)
    learner.teach(X[:0], y[:0])
    assert len(learner.y_training) == 20
    pos, _ = learner.query(X[20:], n_instances=3)
    assert len(pos) == 3


def test_teach_with_text_features_is_refused_before_state_change(task):
    X, y = task
    learner = _learner(X, y)
    before = _state(learner)
    rows = X[20:25].astype(object)
    rows[0, 0] = "abc"
    with pytest.raises(ValueError):
        learner.teach(rows, y[20:25])
    # the row is stored (the estimator's refit failed, no answer is lost) and the error says so;
    # the learner can be repaired from what it holds
    assert len(learner.y_training) == 25 or _unchanged(learner, before)


def test_force_all_finite_must_be_a_known_value(task):
    X, y = task
    with pytest.raises(ValueError, match="The 'force_all_finite' parameter of ActiveLearner must be an instance of 'bool' or a str among {'auto'}"):
        _learner(X, y, force_all_finite="yes")


# ---------------------------------------------------------------------------- query
def test_query_strategy_given_as_the_class_names_the_fix(task):
    """Before: ``unexpected keyword argument 'n_instances'``, twice."""
    X, y = task
    learner = ActiveLearner(LogisticRegression(), RiskSampler, X_training=X[:20], y_training=y[:20])
    with pytest.raises(TypeError, match=r"query_strategy is the class RiskSampler, not a strategy: .*RiskSampler\(\)"):
        learner.query(X[20:], n_instances=5)


def test_query_on_an_empty_pool_or_too_large_a_batch(task):
    X, y = task
    learner = _learner(X, y)
    with pytest.raises(EmptyPoolError, match="the pool is empty"):
        learner.query(X[:0], n_instances=1)
    with pytest.raises(EmptyPoolError, match="larger than the pool"):
        learner.query(X[20:23], n_instances=5)
    for n in (0, -2):
        with pytest.raises(ValueError, match="at least 1"):
            learner.query(X[20:], n_instances=n)
    with pytest.raises(TypeError, match="n_instances must be an int"):
        learner.query(X[20:], n_instances=2.5)
    with pytest.raises(ValueError, match="NaN or infinity"):
        learner.query(np.full((5, 4), np.nan), n_instances=1)


def test_query_on_a_pool_of_another_width_names_it(task):
    X, y = task
    learner = _learner(X, y)
    with pytest.raises(ValueError, match="column|feature|width"):
        learner.query(X[20:, :3], n_instances=2)


def test_string_labels_are_refused_by_risk_sampling_with_the_fix(task):
    """Before: ``invalid literal for int()`` from deep inside risk sampling."""
    X, y = task
    labels = np.where(y == 1, "match", "non-match")
    learner = ActiveLearner(LogisticRegression(), RiskSampler(random_state=0), X_training=X[:40],
                            y_training=labels[:40])
    with pytest.raises(DataError, match=r"learner.y_training must hold 0 \(non-match\) and 1 \(match\) only, "
                                        r"but position 0 holds '.*match'.*astype\(int\)"):
        learner.query(X[40:], n_instances=5)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_validation_features_name_row_and_column(task, bad):
    """Before: scikit-learn's message with no row or column."""
    X, y = task
    Xv = X[60:].copy()
    Xv[5, 3] = bad
    learner = ActiveLearner(LogisticRegression(), RiskSampler(X_valid=Xv, y_valid=y[60:], random_state=0),
                            X_training=X[:40], y_training=y[:40])
    with pytest.raises(DataError, match=r"X_valid holds NaN or infinity in 1 pair\(s\), first at row 5 \(column 3\)"):
        learner.query(X[40:60], n_instances=3)


def test_string_validation_labels_name_the_position(task):
    X, y = task
    yv = y[60:].astype(object)
    yv[4] = "yes"
    learner = ActiveLearner(LogisticRegression(), RiskSampler(X_valid=X[60:], y_valid=yv, random_state=0),
                            X_training=X[:40], y_training=y[:40])
    with pytest.raises(DataError, match=r"y_valid must hold 0 \(non-match\) and 1 \(match\) only, but position 4 holds 'yes'"):
        learner.query(X[40:60], n_instances=3)


# ---------------------------------------------------------------------------- LearnRisk
def _perfect(n=80, seed=0):
    """Features a logistic regression separates without a single mistake."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 3))
    y = (X[:, 0] > 0.5).astype(int)
    X[:, 0] = np.where(y == 1, 0.9, 0.1) + 0.01 * rng.uniform(size=n)
    return X, y


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_learnrisk_refuses_non_finite_features_whether_or_not_the_matcher_errs(task, bad):
    """Before: accepted while the matcher made no mistakes, refused once it did."""
    for X, y in (task, _perfect()):
        X = X.copy()
        X[9, 1] = bad
        est = RandomForestClassifier(n_estimators=5, random_state=0)  # takes NaN itself
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            with pytest.raises(DataError, match=r"hold NaN or infinity \(1 values, first at row 9, column 1\).*sentinel -1"):
                LearnRisk(est, cv=3, epochs=5, random_state=0).fit(X, y)


def test_grid_search_with_scorable_folds_still_works(task):
    X, y = task
    search = GridSearchCV(LearnRisk(LogisticRegression(), cv=3, epochs=5, random_state=0), {"theta": [0.8, 0.9]},
                          scoring=risk_roc_auc, cv=3).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all() and search.best_params_["theta"] in (0.8, 0.9)
