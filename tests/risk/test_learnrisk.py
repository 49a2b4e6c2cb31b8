"""LearnRisk (the meta-estimator), oof_proba, and the one match threshold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from skorch.helper import SliceDict

import skrisk
from skrisk import LearnRisk
from skrisk.matchers import MATCH_THRESHOLD
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matchers._base import match_labels
from skrisk.exceptions import NotFittedError
from skrisk.matchers import FeatureMatcher
from skrisk.risk import _model, oof_proba, risk_roc_auc
from skrisk.risk.research import LearnRiskEstimator, mispredicted
# internal on purpose: the one default of both estimators
from skrisk.risk._defaults import DEFAULT_EPOCHS


def _pairs(n, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.clip(0.35 + 0.3 * y[:, None] + 0.25 * rng.standard_normal((n, 3)), 0, 1)
    return X, y


FAST = dict(epochs=10, random_state=0)


def test_fit_predict_and_explain_with_validation_pairs():
    X, y = _pairs(300)
    Xv, yv = _pairs(200, seed=1)
    model = LearnRisk(LogisticRegression(), feature_names=["a", "b", "c"], **FAST).fit(X, y, X_valid=Xv, y_valid=yv)
    assert model.risk_model_.n_ranked_pairs_ == 200 and model.risk_model_.n_train_pairs_ == 300
    assert set(model.fit_timings_) >= {"oof_proba", "matcher_fit", "valid_proba", "rules", "ranking", "total"}
    risk = model.predict_risk(Xv)
    assert risk.shape == (200,) and ((0 <= risk) & (risk <= 1)).all()
    np.testing.assert_array_equal(model.predict(Xv), model.estimator_.predict(Xv))
    assert 0.5 < risk_roc_auc(model, Xv, yv) <= 1.0
    text = str(model.explain(Xv, 3))
    assert text.startswith("Matcher says") and "x0" not in text
    # the probabilities given once: the same explanation, the matcher not called per pair
    p = model.predict_proba(Xv)[:, 1]
    assert model.explain(Xv, 3, proba=p).to_dict() == model.explain(Xv, 3).to_dict()
    assert model.explain(Xv, 3, proba=np.full(200, 0.99)).probability == pytest.approx(0.99)
    with pytest.raises(ValueError, match="proba has 5 values for 200 pairs"):
        model.explain(Xv, 3, proba=p[:5])
    assert all(str(r).split()[0] in {"a", "b", "c"} for r in model.rules_)


def test_oof_probabilities_have_one_home():
    X, y = _pairs(120)
    folds = StratifiedKFold(5, shuffle=True, random_state=3)
    manual = np.empty((len(y), 2))
    for tr, te in folds.split(X, y):
        manual[te] = LogisticRegression().fit(X[tr], y[tr]).predict_proba(X[te])
    np.testing.assert_allclose(oof_proba(LogisticRegression(), X, y, cv=5, random_state=3), manual)
    np.testing.assert_allclose(oof_proba(LogisticRegression(), X, y, cv=folds), manual)
    # rows are taken by position from any pool container
    got = oof_proba(FeatureMatcher(LogisticRegression()), SliceDict(features=X), y, cv=5, random_state=3)
    np.testing.assert_allclose(got, oof_proba(FeatureMatcher(LogisticRegression()), X, y, cv=folds))
    # LearnRisk's rules see exactly these probabilities
    model = LearnRisk(LogisticRegression(), cv=folds, **FAST).fit(X, y)
    np.testing.assert_array_equal(model.risk_model_.bin_counts_, np.bincount(
        np.minimum((manual[:, 1] * 50).astype(int), 49), minlength=50))
    with pytest.warns(UserWarning, match="too few for 2 stratified folds"):
        P = oof_proba(LogisticRegression(), X[:12], np.r_[1, np.zeros(11, int)], cv=5)
    assert P.shape == (12, 2)


def test_prefit_uses_the_fitted_matcher():
    X, y = _pairs(200)
    matcher = LogisticRegression().fit(X, y)
    model = LearnRisk(matcher, cv="prefit", **FAST).fit(X, y)
    assert model.estimator_ is matcher and "matcher_fit" not in model.fit_timings_
    with pytest.raises(NotFittedError, match="prefit"):
        LearnRisk(LogisticRegression(), cv="prefit").fit(X, y)


def test_grid_search_is_a_one_liner():
    X, y = _pairs(240)
    search = GridSearchCV(LearnRisk(LogisticRegression(), **FAST), {"theta": [0.8, 0.95], "max_depth": [1, 2]},
                          scoring=risk_roc_auc, cv=3).fit(X, y)
    assert set(search.best_params_) == {"theta", "max_depth"}
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_estimator_.theta == search.best_params_["theta"]


def test_nothing_to_rank_falls_back_to_uncertainty():
    rng = np.random.default_rng(0)
    perfect = rng.integers(0, 2, 200)
    X = 0.1 + 0.8 * perfect[:, None] + 0.05 * rng.standard_normal((200, 3))  # far apart classes
    with pytest.warns(UserWarning, match="predicts correctly all"):
        model = LearnRisk(LogisticRegression(), **FAST).fit(X, perfect)
    assert model.risk_model_ is None and model.rules_ == []
    p = model.predict_proba(X)[:, 1]
    np.testing.assert_allclose(model.predict_risk(X), np.minimum(p, 1 - p))
    with pytest.raises(ValueError, match="no risk model"):
        model.explain(X, 0)


@pytest.mark.parametrize(
    "kwargs, fit_kw, error, match",
    [
        ({}, {"y": None}, ValueError, "y to be passed"),
        ({}, {"y": np.zeros(300, int)}, ValueError, "one class"),
        ({}, {"X_valid": np.zeros((3, 3))}, ValueError, "both X_valid and y_valid"),
        ({"cv": 1}, {}, ValueError, r"The .cv. parameter of LearnRisk must be a str among \{.auto., .prefit.\}, an int in the range \[2, inf\)"),
        ({"cv": "yes"}, {}, ValueError, "Got .yes. instead"),
        ({"feature_names": ["a"]}, {}, ValueError, "feature_names has 1 names"),
        ({"estimator": BaseEstimator()}, {}, TypeError, "predict_proba"),
        ({"max_depth": 0}, {}, ValueError, "max_depth"),
        ({"epochs": True}, {}, TypeError, "epochs"),
        ({"features": lambda X: X[:5]}, {}, ValueError, "one row per pair"),
    ],
)
def test_bad_input_is_named(kwargs, fit_kw, error, match):
    X, y = _pairs(300)
    fit_kw = {"y": y, **fit_kw}
    with pytest.raises(error, match=match):
        LearnRisk(**{"estimator": LogisticRegression(), **FAST, **kwargs}).fit(X, **fit_kw)


class _Half(ClassifierMixin, BaseEstimator):
    """A matcher that says exactly 0.5 for every pair whose first feature is above 0.5."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        p = np.where(np.asarray(X)[:, 0] > 0.5, 0.5, 0.1)
        return np.column_stack([1 - p, p])


def test_threshold_tie_is_a_non_match_everywhere():
    assert MATCH_THRESHOLD == 0.5 and not hasattr(skrisk, "MATCH_THRESHOLD")
    assert match_labels([0.5, np.nextafter(0.5, 1)]).tolist() == [0, 1]
    assert match_labels(np.array([[0.5, 0.5]])).tolist() == [0]
    assert mispredicted([0.5], [1]).tolist() == [True] and mispredicted([0.5], [0]).tolist() == [False]
    # a matcher that outputs exactly 0.5: FeatureMatcher around a prior that is 50/50
    F = np.random.RandomState(0).rand(10, 2)
    fm = FeatureMatcher(DummyClassifier(strategy="prior")).fit(F, np.r_[np.zeros(5, int), np.ones(5, int)])
    assert (fm.predict_proba(F)[:, 1] == 0.5).all() and (fm.predict(F) == 0).all()
    # the risk model reads a tie as a predicted non-match (its VaR is the upper quantile)
    x = _model.RiskInputs(torch.zeros((2, 0), dtype=torch.float64), torch.tensor([0.5, 0.49], dtype=torch.float64),
                          torch.tensor([25, 24]))
    params = _model.init_params(np.zeros(0), np.full(50, 0.5), 1, torch.Generator().manual_seed(0),
                                torch.device("cpu"), rsd_init=0.5)
    risk, mu, _ = _model.forward(params, x, 0.9)
    assert float(risk[0]) > float(mu[0])  # non-match branch: VaR above the mean
    # LearnRisk and its explanation: the tie is a non-match
    X, y = _pairs(300)
    model = LearnRisk(_Half().fit(X, y), cv="prefit", **FAST).fit(X, y)
    tie = np.flatnonzero(X[:, 0] > 0.5)
    assert (model.predict(X[tie]) == 0).all()
    core_input = np.column_stack([X, model.predict_proba(X)[:, 1]])
    assert model.risk_model_.explain(core_input, int(tie[0])).predicted_label == 0
    assert model.explain(X, int(tie[0])).predicted_label == 0


def test_core_stays_for_research_with_the_same_default_epochs():
    assert LearnRiskEstimator().epochs == LearnRisk().epochs == DEFAULT_EPOCHS
    assert "LearnRisk" in skrisk.__all__ and "LearnRiskEstimator" not in skrisk.__all__


def test_mapping_pool_uses_its_features_key():
    X, y = _pairs(200)
    pool = SliceDict(features=X, tokens=np.zeros((200, 4), dtype=np.int64))
    model = LearnRisk(FeatureMatcher(LogisticRegression()), **FAST).fit(pool, y)
    assert model.predict_risk(pool).shape == (200,)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    assert LearnRisk(LogisticRegression(), **FAST).fit(df, y).feature_names_in_.tolist() == ["a", "b", "c"]


@pytest.mark.parametrize("package", ["skrisk.risk", "skrisk.matchers"])
def test_public_docstrings_send_readers_to_public_names_only(package):
    """Issue #29: LearnRisk's docstring sent readers to the private ``skrisk.risk._estimator``."""
    import importlib
    import re

    mod = importlib.import_module(package)
    private = re.compile(r"skrisk(?:\.[a-z_]+)*\._[a-z]\w*")
    found = {name: sorted(set(private.findall(getattr(mod, name).__doc__ or "")))
             for name in mod.__all__ if callable(getattr(mod, name))}
    assert not {k: v for k, v in found.items() if v}


def test_fit_around_a_fitted_matcher_and_known_probabilities():
    """Issue #28: what risk sampling and the pool scorer need, public (no ``_fit`` / ``_distribution``)."""
    X, y = _pairs(300)
    matcher = LogisticRegression().fit(X, y)
    with pytest.raises(NotFittedError, match="fit_around needs a fitted matcher"):
        LearnRisk(LogisticRegression(), **FAST).fit_around(X, y)
    model = LearnRisk(matcher, cv=3, **FAST).fit_around(X, y)
    assert model.estimator_ is matcher  # used as it is, not refitted
    ref = LearnRisk(matcher, cv=3, **FAST).fit(X, y)  # the same rules and weights as fit's
    np.testing.assert_allclose(model.predict_risk(X), ref.predict_risk(X))
    p = matcher.predict_proba(X)[:, 1]
    np.testing.assert_array_equal(model.predict_risk(X, proba=p), model.predict_risk(X))
    with pytest.raises(ValueError, match="proba has 299 probabilities for 300 pairs"):
        model.predict_distribution(X, proba=p[:-1])


def test_matcher_uncertainty_is_the_one_fallback():
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.risk._uncertainty import matcher_uncertainty

    X, y = _pairs(300)
    model = LearnRisk(LogisticRegression(), **FAST).fit(X, y)
    model.risk_model_ = None  # as when the matcher made no mistake on the ranking pairs
    p = model.predict_proba(X)[:, 1]
    np.testing.assert_array_equal(model.predict_risk(X), matcher_uncertainty(p))
