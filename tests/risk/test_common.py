"""scikit-learn's estimator checks for LearnRisk (no expected failures) and its private research core.

``LearnRisk`` is the public meta-estimator around a matcher and passes every check. The research
core ``skrisk.risk.research.LearnRiskEstimator`` (kept out of the estimator API) takes the
matcher's probability as a column of ``X``, a domain the generic checks do not know (their random
data put values like 99.8 or -1.3 in that column, which the core refuses by design). It is run
through every check on a test-only subclass that maps the checks' data into the domain (a
sigmoid on the probability column, ``y != min(y)`` as the label) and otherwise runs the real
code: that run must pass every check.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn.linear_model import LogisticRegression

from skrisk.matchers import FeatureMatcher
from skrisk.risk import LearnRisk
from skrisk.risk.research import LearnRiskEstimator

class _InDomain(LearnRiskEstimator):
    """Test harness: maps arbitrary check data into LearnRisk's domain, then runs the real code."""

    @staticmethod
    def _squash(X):
        if isinstance(X, pd.DataFrame):
            X = X.copy()
            X.iloc[:, -1] = 1.0 / (1.0 + np.exp(-X.iloc[:, -1].astype(float)))
            return X
        if np.iscomplexobj(X):
            return X  # let the real validation raise its error
        try:
            arr = np.array(X, dtype=np.float64)
        except (TypeError, ValueError):
            return X  # let the real validation raise its error
        if arr.ndim == 2 and arr.shape[1] > 0:
            arr[:, -1] = 1.0 / (1.0 + np.exp(-np.clip(arr[:, -1], -700, 700)))
        return arr

    @staticmethod
    def _labels(y):
        y = np.asarray(y)
        if y.ndim == 1 and y.size and y.dtype.kind in "biuf":
            return (y != y.min()).astype(np.int64)
        return y

    def fit(self, X, y, X_train=None, y_train=None):
        return super().fit(self._squash(X), self._labels(y))

    def predict_distribution(self, X):
        return super().predict_distribution(self._squash(X))

    def score(self, X, y, sample_weight=None):
        return super().score(self._squash(X), self._labels(y), sample_weight)


@parametrize_with_checks(
    [
        LearnRisk(FeatureMatcher(random_state=0), cv=3, epochs=3, random_state=0),
        LearnRisk(LogisticRegression(), cv=3, epochs=3, min_coverage=1, random_state=0),
        _InDomain(epochs=3, min_coverage=1, random_state=0),
    ],
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_research_core_is_private():
    import skrisk
    import skrisk.risk

    assert "LearnRiskEstimator" not in skrisk.risk.__all__ and not hasattr(skrisk.risk, "LearnRiskEstimator")
    assert not hasattr(skrisk, "LearnRiskEstimator")
