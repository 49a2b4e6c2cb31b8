"""FeatureMatcher: any sklearn classifier on similarity features, behind the matcher interface."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.utils.estimator_checks import parametrize_with_checks
from skorch.helper import SliceDict

from skrisk.data import SimilarityFeatures
from skrisk.exceptions import MissingCapabilityError, NotFittedError
from skrisk.matchers import FeatureMatcher
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matchers._base import require


@pytest.fixture(scope="module")
def fodors_features(fodors):
    """Similarity features of all Fodors-Zagats pairs (fitted once, label-free), labels, splits."""
    F = SimilarityFeatures().fit(fodors.to_frame()).transform(fodors.to_frame())
    return F, fodors.labels, fodors.split_positions("train"), fodors.split_positions("test")


def test_pair_frame_is_declared_by_features_never_guessed_from_column_names(fodors_split):
    (ftr, ytr), _ = fodors_split["train"], fodors_split["test"]
    with pytest.raises(ValueError, match=r"non-numeric columns .*FeatureMatcher\(features=SimilarityFeatures"):
        FeatureMatcher(random_state=0).fit(ftr, ytr)  # a pair frame without features=: the fix is named
    # numeric columns named like a pair frame's are still a feature matrix without features=
    F = pd.DataFrame(np.random.RandomState(0).rand(len(ytr), 2), columns=["left_price", "right_price"])
    m = FeatureMatcher(random_state=0).fit(F, ytr)
    assert m.input_kind_ == "matrix" and m.features_ is None and m.n_features_in_ == 2


def test_learns_from_pair_frame(fodors_split):
    (ftr, ytr), (fte, yte) = fodors_split["train"], fodors_split["test"]
    m = FeatureMatcher(features=SimilarityFeatures(), random_state=0).fit(ftr, ytr)
    assert m.input_kind_ == "frame" and m.features_ is not None
    assert f1_score(yte, m.predict(fte)) > 0.8
    P = m.predict_proba(fte)
    assert P.shape == (len(fte), 2)
    np.testing.assert_allclose(P.sum(1), 1.0)


def test_matrix_rows_by_position_and_row_order(fodors_features):
    F, y, tr, te = fodors_features
    m = FeatureMatcher(random_state=0).fit(F[tr], y[tr])
    assert m.input_kind_ == "matrix"
    perm = np.random.RandomState(0).permutation(te)
    for fn in (m.predict_proba, m.represent):
        np.testing.assert_allclose(fn(F[perm]), fn(F)[perm])
    mc = m.predict_proba_mc(F[te], n_iter=7, random_state=0)
    assert mc.shape == (7, len(te), 2)
    np.testing.assert_array_equal(mc, m.predict_proba_mc(F[te], n_iter=7, random_state=0))
    mc_perm = m.predict_proba_mc(F[perm], n_iter=7, random_state=0)
    np.testing.assert_allclose(mc_perm, m.predict_proba_mc(F, n_iter=7, random_state=0)[:, perm])
    # the committee mean is the forest's probability
    full = m.predict_proba_mc(F[te], n_iter=100, random_state=0)  # all 100 trees, no replacement
    np.testing.assert_allclose(full.mean(0), m.predict_proba(F[te]), atol=1e-12)


def test_represent_is_standardised(fodors_features):
    F, y, tr, _ = fodors_features
    m = FeatureMatcher(random_state=0).fit(F[tr], y[tr])
    Z = m.represent(F[tr])
    np.testing.assert_allclose(Z.mean(0), 0, atol=1e-8)


def test_mapping_input(fodors_features):
    F, y, tr, te = fodors_features
    X = SliceDict(tokens=np.zeros((len(F), 2, 3), dtype=np.int64), features=F.astype(np.float32))
    m = FeatureMatcher(random_state=0).fit(X[tr], y[tr])
    assert m.input_kind_ == "mapping"
    assert m.predict_proba(X[te]).shape == (len(te), 2)
    with pytest.raises(ValueError, match="same kind"):
        m.predict_proba(F[te])


def test_logistic_regression_gradients(fodors_features):
    F, y, tr, te = fodors_features
    m = FeatureMatcher(LogisticRegression(max_iter=1000)).fit(F[tr], y[tr])
    Z, P = m.represent(F[te]), m.predict_proba(F[te])
    G = m.gradient_embedding(F[te])
    assert G.shape == (len(te), 2 * F.shape[1])
    yhat = P.argmax(1)
    np.testing.assert_allclose(G[:, : F.shape[1]], (P[:, [0]] - (yhat == 0)[:, None]) * Z)
    egl = m.expected_gradient_length(F[te])
    np.testing.assert_allclose(egl, 2 * np.sqrt(2) * P[:, 0] * P[:, 1] * np.linalg.norm(Z, axis=1))
    with pytest.raises(MissingCapabilityError, match="MC-dropout"):
        require(m, "mc_dropout", "BALD")


def test_missing_capabilities_are_reported(fodors_features):
    F, y, tr, _ = fodors_features
    rf = FeatureMatcher(random_state=0).fit(F[tr], y[tr])
    assert not hasattr(rf, "gradient_embedding")
    with pytest.raises(MissingCapabilityError, match="BADGE"):
        require(rf, "gradient_embedding", "BADGE")
    gb = FeatureMatcher(GradientBoostingClassifier(n_estimators=10, random_state=0)).fit(F[tr], y[tr])
    assert not hasattr(gb, "predict_proba_mc")
    assert callable(require(gb, "representation", "core-set"))


def test_bad_inputs(fodors_features):
    F, y, tr, _ = fodors_features
    with pytest.raises(ValueError, match="one class only"):
        FeatureMatcher().fit(F[tr], np.zeros(len(tr), int))
    with pytest.raises(ValueError, match="Only binary"):
        FeatureMatcher().fit(F[tr], np.arange(len(tr)) % 3)
    with pytest.raises(TypeError, match="predict_proba"):
        FeatureMatcher(classifier=object()).fit(F[tr], y[tr])
    with pytest.raises(NotFittedError):
        FeatureMatcher().predict_proba(F[tr])
    m = FeatureMatcher(random_state=0).fit(F[tr], y[tr])
    with pytest.raises(ValueError, match="features"):
        m.predict_proba(F[tr][:, :5])


@parametrize_with_checks(
    [FeatureMatcher(RandomForestClassifier(n_estimators=10), random_state=0), FeatureMatcher(LogisticRegression())],
)
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_predict_proba_mc_n_iter_is_checked(fodors_features):
    F, y, train, _ = fodors_features
    matcher = FeatureMatcher(random_state=0).fit(F[train], y[train])
    assert matcher.predict_proba_mc(F[:5], n_iter=3).shape == (3, 5, 2)
    for bad, error in ((0, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="n_iter"):
            matcher.predict_proba_mc(F[:5], n_iter=bad)
