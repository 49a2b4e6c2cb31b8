"""LearnRiskEstimator: fitting, input routes, CV, explanations, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

from skrisk.risk import RiskExplanation
from skrisk.risk.research import mispredicted
from skrisk.risk.research import LearnRiskEstimator

FAST = dict(epochs=15, random_state=0)


def _split(X, y, n_train):
    return X[n_train:], y[n_train:], X[:n_train], y[:n_train]


def test_fit_returns_self_and_fitted_attributes(make_synthetic):
    X, y = make_synthetic(400)
    Xv, yv, Xt, yt = _split(X, y, 250)
    est = LearnRiskEstimator(**FAST)
    assert est.fit(Xv, yv, X_train=Xt, y_train=yt) is est
    assert est.n_train_pairs_ == 250 and est.n_ranked_pairs_ == 150
    assert est.n_mispredicted_ == mispredicted(Xv[:, -1], yv).sum()
    assert est.n_features_in_ == 4 and est.proba_index_ == 3
    J = len(est.rules_)
    assert J > 0
    for attr in ("rule_weights_", "rule_rsd_", "rule_expectations_", "rule_coverage_"):
        assert getattr(est, attr).shape == (J,)
    assert est.bin_rsd_.shape == est.bin_expectations_.shape == (50,)
    assert (est.rule_coverage_ >= 5).all() and (est.rule_weights_ >= 0).all()
    assert len(est.loss_curve_) == 15
    dist = est.predict_distribution(Xv)
    assert dist.risk.shape == dist.mean.shape == dist.std.shape == (150,)
    assert ((dist.risk >= 0) & (dist.risk <= 1)).all() and (dist.std > 0).all()
    np.testing.assert_array_equal(est.decision_function(Xv), est.predict_risk(Xv))


def test_default_training_lowers_loss_and_beats_chance(make_synthetic):
    X, y = make_synthetic(600, seed=1)
    Xv, yv, Xt, yt = _split(X, y, 300)
    est = LearnRiskEstimator(epochs=60, random_state=0).fit(Xv, yv, X_train=Xt, y_train=yt)
    assert est.loss_curve_[-1] < est.loss_curve_[0]
    assert est.score(Xv, yv) > 0.6


def test_deterministic_under_random_state(make_synthetic):
    X, y = make_synthetic(300)
    a = LearnRiskEstimator(**FAST).fit(X, y).predict_risk(X)  # fallback split included
    b = LearnRiskEstimator(**FAST).fit(X, y).predict_risk(X)
    np.testing.assert_array_equal(a, b)
    c = LearnRiskEstimator(epochs=15, random_state=1).fit(X, y).predict_risk(X)
    assert not np.array_equal(a, c)


def test_train_pairs_param_equals_fit_params(make_synthetic):
    X, y = make_synthetic(400)
    Xv, yv, Xt, yt = _split(X, y, 250)
    a = LearnRiskEstimator(**FAST).fit(Xv, yv, X_train=Xt, y_train=yt)
    b = LearnRiskEstimator(train_pairs=(Xt, yt), **FAST).fit(Xv, yv)
    np.testing.assert_array_equal(a.predict_risk(Xv), b.predict_risk(Xv))
    with pytest.raises(ValueError, match="given twice"):
        LearnRiskEstimator(train_pairs=(Xt, yt), **FAST).fit(Xv, yv, X_train=Xt, y_train=yt)
    with pytest.raises(TypeError, match="tuple"):
        LearnRiskEstimator(train_pairs=Xt, **FAST).fit(Xv, yv)


def test_fallback_split_is_stratified_and_documented(make_synthetic):
    X, y = make_synthetic(300)
    est = LearnRiskEstimator(**FAST).fit(X, y)
    assert est.n_train_pairs_ + est.n_ranked_pairs_ == 300
    assert abs(est.n_train_pairs_ - 150) <= 4
    est = LearnRiskEstimator(fallback_train_size=0.3, **FAST).fit(X, y)
    assert abs(est.n_train_pairs_ - 90) <= 4


def test_proba_column_by_name_and_position(make_synthetic):
    X, y = make_synthetic(300)
    cols = ["title_jaccard", "proba", "authors_jaccard", "year_diff"]
    Xp = X[:, [0, 3, 1, 2]]
    df = pd.DataFrame(Xp, columns=cols)
    a = LearnRiskEstimator(proba_column="proba", **FAST).fit(df, y)
    b = LearnRiskEstimator(proba_column=1, **FAST).fit(Xp, y)
    np.testing.assert_allclose(a.predict_risk(df), b.predict_risk(Xp))
    assert list(a.feature_names_) == ["title_jaccard", "authors_jaccard", "year_diff"]
    assert all("proba" not in str(r) for r in a.rules_)
    with pytest.raises(ValueError, match="DataFrame"):
        LearnRiskEstimator(proba_column="proba", **FAST).fit(Xp, y)
    with pytest.raises(ValueError, match="not a column"):
        LearnRiskEstimator(proba_column="p", **FAST).fit(df, y)
    with pytest.raises(ValueError, match="out of range"):
        LearnRiskEstimator(proba_column=7, **FAST).fit(Xp, y)


def test_symmetric_rsd_scale(make_synthetic):
    X, y = make_synthetic(400)
    Xv, yv, Xt, yt = _split(X, y, 250)
    a = LearnRiskEstimator(rsd_scale="mean", **FAST).fit(Xv, yv, X_train=Xt, y_train=yt)
    b = LearnRiskEstimator(rsd_scale="symmetric", **FAST).fit(Xv, yv, X_train=Xt, y_train=yt)
    # same rules and expectations, different spreads
    assert [str(r) for r in a.rules_] == [str(r) for r in b.rules_]
    m = b.rule_expectations_
    np.testing.assert_allclose(b.rsd_base_[: len(m)], np.maximum(np.minimum(m, 1 - m), 0.1))
    assert not np.allclose(a.predict_distribution(Xv).std, b.predict_distribution(Xv).std)


def test_constant_rsd_init_starts_from_the_matchers_uncertainty(make_synthetic):
    X, y = make_synthetic(400)
    Xv, yv, Xt, yt = _split(X, y, 250)
    est = LearnRiskEstimator(rsd_init=0.5, rsd_scale="symmetric", epochs=0, random_state=0)
    est.fit(Xv, yv, X_train=Xt, y_train=yt)
    np.testing.assert_allclose(est.bin_rsd_, 0.5)
    np.testing.assert_allclose(est.rule_rsd_, 0.5)


def test_early_stopping_keeps_the_best_held_out_ranking(make_synthetic):
    X, y = make_synthetic(600, seed=3)
    Xv, yv, Xt, yt = _split(X, y, 350)
    est = LearnRiskEstimator(early_stopping=True, validation_fraction=0.3, epochs=40,
                             random_state=0).fit(Xv, yv, X_train=Xt, y_train=yt)
    scores = est.validation_scores_
    assert len(scores) == 1 + 4  # before training, then every 10 epochs
    assert est.best_validation_score_ == max(scores)
    assert 0.0 <= est.best_validation_score_ <= 1.0
    # patience stops early: one evaluation without improvement ends training
    short = LearnRiskEstimator(early_stopping=True, n_iter_no_change=1, epochs=1000,
                               random_state=0).fit(Xv, yv, X_train=Xt, y_train=yt)
    assert len(short.loss_curve_) < 1000
    # too few mispredicted pairs to hold any out: a warning, and plain training
    z = mispredicted(Xv[:, -1], yv)
    keep = np.flatnonzero(~z).tolist() + np.flatnonzero(z)[:1].tolist()
    with pytest.warns(UserWarning, match="early_stopping needs"):
        plain = LearnRiskEstimator(early_stopping=True, epochs=5, random_state=0).fit(
            Xv[keep], yv[keep], X_train=Xt, y_train=yt)
    assert plain.best_validation_score_ is None


def test_no_rules_at_all_still_ranks(make_synthetic):
    # thresholds so strict that no leaf qualifies: the model rests on the matcher output alone
    X, y = make_synthetic(300)
    est = LearnRiskEstimator(match_gini=1e-12, unmatch_gini=1e-12, min_coverage=10_000, **FAST).fit(X, y)
    assert est.rules_ == [] and est.rule_weights_.shape == (0,)
    risk = est.predict_risk(X)
    assert np.isfinite(risk).all()
    assert "No rule fires" in str(est.explain(X, 0))


def test_rules_covering_no_validation_pair_keep_their_prior(make_synthetic):
    """Documented behaviour: such a rule gets no ranking gradient, only the L1/L2 shrinkage."""
    X, y = make_synthetic(400)
    Xv, yv, Xt, yt = _split(X, y, 250)
    Xt = np.vstack([Xt, np.column_stack([np.full((20, 3), 5.0), np.zeros(20)])])  # far outside
    yt = np.r_[yt, np.zeros(20, int)]
    est = LearnRiskEstimator(**FAST).fit(Xv, yv, X_train=Xt, y_train=yt)
    far = [j for j, r in enumerate(est.rules_) if not r.apply(Xv[:, :3]).any()]
    assert far, [str(r) for r in est.rules_]
    assert np.isfinite(est.predict_risk(Xv)).all()


def test_explain_text_and_structure(make_synthetic):
    X, y = make_synthetic(400)
    Xv, yv, Xt, yt = _split(X, y, 250)
    names = ["title_jaccard", "authors_jaccard", "year_diff", "proba"]
    dfv, dft = pd.DataFrame(Xv, columns=names), pd.DataFrame(Xt, columns=names)
    est = LearnRiskEstimator(proba_column="proba", **FAST).fit(dfv, yv, X_train=dft, y_train=yt)
    A = np.column_stack([r.apply(Xv[:, :3]) for r in est.rules_])
    i = int(np.argmax(A.sum(axis=1)))
    exp = est.explain(dfv, i)
    assert isinstance(exp, RiskExplanation)
    dist = est.predict_distribution(dfv.iloc[[i]])
    assert exp.risk == pytest.approx(dist.risk[0]) and exp.mean == pytest.approx(dist.mean[0])
    assert exp.std == pytest.approx(dist.std[0])
    assert len(exp.rules) == A[i].sum()
    d = exp.to_dict()
    assert set(d) >= {"probability", "predicted_label", "bin", "rules", "mean", "std", "risk", "theta"}
    assert d["bin"]["index"] == min(int(Xv[i, 3] * 50), 49)
    text = str(exp)
    assert "p(match)" in text and "VaR" in text and "->" in text and "weight" in text
    assert str(est.rules_[0]).split(" ")[0] in {"title_jaccard", "authors_jaccard", "year_diff"}
    # a single row works too
    assert est.explain(dfv.iloc[[i]]).risk == pytest.approx(exp.risk)
    plain = LearnRiskEstimator(**FAST).fit(Xv, yv, X_train=Xt, y_train=yt)
    assert plain.explain(Xv[i]).risk == pytest.approx(plain.explain(Xv, i).risk)
    with pytest.raises(IndexError):
        plain.explain(Xv, 10_000)


# ----------------------------------------------------------------------------- bad input
@pytest.fixture
def fitted(make_synthetic):
    X, y = make_synthetic(300)
    return LearnRiskEstimator(**FAST).fit(X, y), X, y


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda X: X.__setitem__((0, -1), 1.2), "probabilities in \\[0, 1\\]"),
        (lambda X: X.__setitem__((3, -1), -0.1), "probabilities in \\[0, 1\\]"),
        (lambda X: X.__setitem__((3, -1), np.nan), "NaN"),
        (lambda X: X.__setitem__((5, 0), np.nan), "sentinel"),
        (lambda X: X.__setitem__((5, 1), np.inf), "infinity"),
    ],
)
def test_bad_probabilities_and_features_raise_in_fit_and_predict(make_synthetic, fitted, mutate, match):
    X, y = make_synthetic(300)
    bad = X.copy()
    mutate(bad)
    with pytest.raises(ValueError, match=match):
        LearnRiskEstimator(**FAST).fit(bad, y)
    with pytest.raises(ValueError, match=match):
        LearnRiskEstimator(**FAST).fit(X, y, X_train=bad, y_train=y)
    with pytest.raises(ValueError, match=match):
        fitted[0].predict_risk(bad)


def test_nothing_to_rank_raises(make_synthetic):
    X, y = make_synthetic(300)
    y_perfect = (X[:, -1] >= 0.5).astype(int)  # the matcher is always right
    with pytest.raises(ValueError, match="Nothing to rank.*correctly predicted"):
        LearnRiskEstimator(**FAST).fit(X, y_perfect, X_train=X, y_train=y)
    with pytest.raises(ValueError, match="Nothing to rank.*mispredicted"):
        LearnRiskEstimator(**FAST).fit(X, 1 - y_perfect, X_train=X, y_train=y)


def test_nothing_to_rank_on_real_data(fodors_risk):
    Xv, yv = fodors_risk["valid"]
    Xt, yt = fodors_risk["train"]
    assert not mispredicted(Xv["proba"], yv).any()
    with pytest.raises(ValueError, match="Nothing to rank"):
        LearnRiskEstimator(proba_column="proba", **FAST).fit(Xv, yv, X_train=Xt, y_train=yt)


def test_single_class_labels(make_synthetic):
    X, y = make_synthetic(300)
    # validation labels of one class are fine as long as the matcher errs on some of them
    neg = y == 0
    assert mispredicted(X[neg, -1], y[neg]).any()
    est = LearnRiskEstimator(**FAST).fit(X[neg], y[neg], X_train=X, y_train=y)
    assert est.n_mispredicted_ > 0
    # training labels of one class cannot give rules or expectations
    with pytest.raises(ValueError, match="only label 0"):
        LearnRiskEstimator(**FAST).fit(X, y, X_train=X[neg], y_train=y[neg])


@pytest.mark.parametrize(
    "params, err, match",
    [
        (dict(theta=0.3), ValueError, "theta"),
        (dict(theta=1.0), ValueError, "theta"),
        (dict(n_bins=0), ValueError, "n_bins"),
        (dict(epochs=2.5), TypeError, "epochs"),
        (dict(optimizer="lbfgs"), ValueError, "optimizer"),
        (dict(rsd_scale="std"), ValueError, "rsd_scale"),
        (dict(rsd_init=0.95), ValueError, "rsd_init"),
        (dict(rsd_init="uniform"), ValueError, "rsd_init"),
        (dict(early_stopping="yes"), TypeError, "early_stopping"),
        (dict(early_stopping=True, validation_fraction=1.0), ValueError, "validation_fraction"),
        (dict(early_stopping=True, n_iter_no_change=0), ValueError, "n_iter_no_change"),
        (dict(max_depth=0), ValueError, "max_depth"),
        (dict(proba_column=1.5), TypeError, "proba_column"),
        (dict(device="cuda:99" if not __import__("torch").cuda.is_available() else "nonsense"),
         ValueError, "device"),
    ],
)
def test_bad_hyperparameters_raise_before_work(make_synthetic, params, err, match):
    X, y = make_synthetic(100)
    with pytest.raises(err, match=match):
        LearnRiskEstimator(**params).fit(X, y)


def test_bad_labels_and_shapes(make_synthetic):
    X, y = make_synthetic(300)
    with pytest.raises(ValueError, match="1 \\(match\\) and 0"):
        LearnRiskEstimator(**FAST).fit(X, y + 1)
    with pytest.raises(ValueError, match="together"):
        LearnRiskEstimator(**FAST).fit(X, y, X_train=X)
    with pytest.raises(ValueError, match="columns"):
        LearnRiskEstimator(**FAST).fit(X, y, X_train=X[:, 1:], y_train=y)
    with pytest.raises(ValueError, match="labels for"):
        LearnRiskEstimator(**FAST).fit(X, y, X_train=X, y_train=y[:-1])
    cols = [f"c{j}" for j in range(4)]
    with pytest.raises(ValueError, match="columns differ"):
        LearnRiskEstimator(**FAST).fit(pd.DataFrame(X, columns=cols), y,
                                       X_train=pd.DataFrame(X, columns=cols[::-1]), y_train=y)


def test_score_needs_both_kinds(fitted):
    est, X, y = fitted
    perfect = (X[:, -1] >= 0.5).astype(int)
    with pytest.raises(ValueError, match="mispredicted and correctly predicted"):
        est.score(X, perfect)


@pytest.mark.cuda
def test_cuda_matches_cpu(make_synthetic):
    X, y = make_synthetic(300)
    a = LearnRiskEstimator(**FAST).fit(X, y)
    b = LearnRiskEstimator(device="cuda", **FAST).fit(X, y)
    np.testing.assert_allclose(a.predict_risk(X), b.predict_risk(X), rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------- CV on real data
def _cv_pool(beer_risk):
    """Beer's valid + test pairs as the ranking pool (20 mispredictions), train as statistics."""
    (Xv, yv), (Xs, ys) = beer_risk["valid"], beer_risk["test"]
    X = pd.concat([Xv, Xs], ignore_index=True)
    y = np.r_[yv, ys]
    return X, y, beer_risk["train"]


def test_grid_search_on_beer_keeps_training_pairs_whole(beer_risk):
    X, y, (Xt, yt) = _cv_pool(beer_risk)
    z = mispredicted(X["proba"], y)
    assert 10 <= z.sum() < len(z) - 10
    cv = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, z))
    grid = {"max_depth": [1, 2], "match_gini": [0.01, 0.2]}

    def n_train_used(est, X_, y_):  # a "scorer" reporting what each fold saw
        return est.n_train_pairs_

    base = LearnRiskEstimator(proba_column="proba", epochs=20, random_state=0)
    gs = GridSearchCV(base, grid, cv=cv, scoring={"auc": None, "ntrain": n_train_used}, refit="auc")
    gs.fit(X, y, X_train=Xt, y_train=yt)
    assert len(gs.cv_results_["params"]) == 4
    assert (gs.cv_results_["mean_test_ntrain"] == len(Xt)).all()
    assert np.isfinite(gs.cv_results_["mean_test_auc"]).all()
    assert 0.5 < gs.best_score_ <= 1.0
    assert gs.best_estimator_.n_train_pairs_ == len(Xt)
    # the constructor route gives the same search results
    gs2 = GridSearchCV(clone(base).set_params(train_pairs=(Xt, yt)), grid, cv=cv).fit(X, y)
    np.testing.assert_allclose(gs2.cv_results_["mean_test_score"], gs.cv_results_["mean_test_auc"])


def test_fit_params_of_same_length_get_sliced_but_train_pairs_do_not(beer_risk):
    """The documented caveat: sklearn slices fit params with as many rows as X."""
    X, y, (Xt, yt) = _cv_pool(beer_risk)
    Xt, yt = Xt.iloc[: len(X)], yt[: len(X)]
    assert len(Xt) == len(X)
    z = mispredicted(X["proba"], y)
    cv = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, z))
    est = LearnRiskEstimator(proba_column="proba", epochs=5, random_state=0)
    seen = cross_val_score(est, X, y, cv=cv, params={"X_train": Xt, "y_train": yt},
                           scoring=lambda e, X_, y_: e.n_train_pairs_)
    assert (seen < len(Xt)).all()  # sliced to the folds
    seen = cross_val_score(clone(est).set_params(train_pairs=(Xt, yt)), X, y, cv=cv,
                           scoring=lambda e, X_, y_: e.n_train_pairs_)
    assert (seen == len(Xt)).all()


def test_metadata_routing_route(beer_risk):
    X, y, (Xt, yt) = _cv_pool(beer_risk)
    z = mispredicted(X["proba"], y)
    cv = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, z))
    with sklearn.config_context(enable_metadata_routing=True):
        est = LearnRiskEstimator(proba_column="proba", epochs=5, random_state=0)
        est.set_fit_request(X_train=True, y_train=True)
        seen = cross_val_score(est, X, y, cv=cv, params={"X_train": Xt, "y_train": yt},
                               scoring=lambda e, X_, y_: e.n_train_pairs_)
        assert (seen == len(Xt)).all()
        # routing slices same-length fit params as well (the documented caveat)
        seen = cross_val_score(est, X, y, cv=cv, params={"X_train": Xt.iloc[: len(X)], "y_train": yt[: len(X)]},
                               scoring=lambda e, X_, y_: e.n_train_pairs_)
        assert (seen < len(X)).all()
