"""The query-strategy contract, for every strategy, on ndarray, DataFrame and SliceDict pools."""

from __future__ import annotations

import inspect
import warnings
from functools import partial

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from skorch.helper import SliceDict

from skrisk import LearnRisk
from skrisk.active import ActiveLearner
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk._query import unpack_query
from skrisk.data import SimilarityFeatures
from skrisk.exceptions import EmptyPoolError, MissingCapabilityError, NotFittedError
from skrisk.matchers import FeatureMatcher
from skrisk.risk import oof_proba
from skrisk.strategies import (
    BadgeSelector,
    KMedoidsSelector,
    RiskSampler,
    TopKSelector,
    badge_sampling,
    bald_sampling,
    coreset_sampling,
    egl_sampling,
    entropy_sampling,
    random_sampling,
    risk_sampling,
)


@pytest.fixture(scope="module")
def task(beer):
    F = SimilarityFeatures().fit_transform(beer.to_frame()).astype(np.float64)
    y = beer.labels
    train, valid = beer.split_positions("train"), beer.split_positions("valid")
    rng = np.random.RandomState(0)
    lab = np.concatenate(
        [rng.choice(train[y[train] == 1], 8, replace=False), rng.choice(train[y[train] == 0], 30, replace=False)]
    )
    pool = np.setdiff1d(train, lab)
    return {"F": F, "y": y, "lab": lab, "pool": pool, "valid": valid}


def _wrap(F, kind):
    if kind == "ndarray":
        return F
    if kind == "dataframe":
        return pd.DataFrame(F, columns=[f"f{i}" for i in range(F.shape[1])])
    return SliceDict(features=F)


def _sampler(task, kind):
    F, y = task["F"], task["y"]
    return RiskSampler(_wrap(F[task["valid"]], kind), y[task["valid"]], risk=LearnRisk(epochs=30), random_state=0)


# (strategy factory, classifier the FeatureMatcher needs for it)
CASES = {
    "random": (lambda t, k: random_sampling, None),
    "entropy": (lambda t, k: entropy_sampling, None),
    "bald": (lambda t, k: bald_sampling, None),
    "coreset": (lambda t, k: coreset_sampling, None),
    "egl": (lambda t, k: egl_sampling, LogisticRegression(max_iter=1000)),
    "badge": (lambda t, k: badge_sampling, LogisticRegression(max_iter=1000)),
    "risk": (_sampler, None),
}


def _learner(task, kind, clf, strategy):
    F, y, lab = task["F"], task["y"], task["lab"]
    matcher = FeatureMatcher(clf, random_state=0)
    return ActiveLearner(matcher, strategy, X_training=_wrap(F[lab], kind), y_training=y[lab])


@pytest.mark.parametrize("kind", ["ndarray", "dataframe", "slicedict"])
@pytest.mark.parametrize("name", list(CASES))
def test_contract(task, name, kind):
    make, clf = CASES[name]
    strategy = make(task, kind)
    learner = _learner(task, kind, clf, strategy)
    X_pool = _wrap(task["F"][task["pool"]], kind)
    n_pool = len(task["pool"])
    pos, scores = strategy(learner, X_pool, n_instances=7, random_state=3)
    assert isinstance(pos, np.ndarray) and pos.dtype.kind == "i"
    assert len(pos) == 7 and len(np.unique(pos)) == 7
    assert pos.min() >= 0 and pos.max() < n_pool
    assert len(scores) == 7
    # the pool holds no labelled pair, so every position is unlabelled
    assert not np.isin(task["pool"][pos], task["lab"]).any()
    again, _ = strategy(learner, X_pool, n_instances=7, random_state=3)
    np.testing.assert_array_equal(pos, again)
    # the learner's query calls the strategy once and hands back rows by position
    qpos, rows = learner.query(X_pool, n_instances=7, random_state=3)
    np.testing.assert_array_equal(qpos, pos)
    if kind == "dataframe":
        np.testing.assert_array_equal(rows.to_numpy(), task["F"][task["pool"][pos]])


@pytest.mark.parametrize("name", list(CASES))
def test_bad_n_instances(task, name):
    make, clf = CASES[name]
    strategy = make(task, "ndarray")
    learner = _learner(task, "ndarray", clf, strategy)
    X_pool = task["F"][task["pool"]]
    with pytest.raises(EmptyPoolError, match="larger than the pool"):
        strategy(learner, X_pool, n_instances=len(X_pool) + 1)
    with pytest.raises(ValueError, match="at least 1"):
        strategy(learner, X_pool, n_instances=0)
    with pytest.raises(EmptyPoolError, match="empty"):
        strategy(learner, X_pool[:0], n_instances=1)
    with pytest.raises(TypeError, match="must be an int"):
        strategy(learner, X_pool, n_instances=2.5)


def test_missing_capability_is_named(task):
    learner = _learner(task, "ndarray", LogisticRegression(max_iter=1000), bald_sampling)
    with pytest.raises(MissingCapabilityError, match="MC-dropout"):
        bald_sampling(learner, task["F"][task["pool"]], n_instances=3)
    rf = _learner(task, "ndarray", None, badge_sampling)
    with pytest.raises(MissingCapabilityError, match="gradient"):
        badge_sampling(rf, task["F"][task["pool"]], n_instances=3)


def test_unfitted_learner(task):
    learner = ActiveLearner(FeatureMatcher(), entropy_sampling)
    with pytest.raises(NotFittedError):
        learner.query(task["F"][task["pool"]], n_instances=3)
    with pytest.raises(NotFittedError):
        entropy_sampling(learner, task["F"][task["pool"]], n_instances=3)


def test_risk_sampler_bad_validation(task):
    F, y = task["F"], task["y"]
    one_class = task["valid"][y[task["valid"]] == 0]
    sampler = RiskSampler(F[one_class], y[one_class])
    learner = _learner(task, "ndarray", None, sampler)
    with pytest.raises(ValueError, match="single class"):
        sampler(learner, F[task["pool"]], n_instances=3)
    with pytest.raises(ValueError, match="weighting"):
        RiskSampler(selector=KMedoidsSelector(weighting="bogus"))(learner, F[task["pool"]], n_instances=3)
    with pytest.raises(ValueError, match="theta"):
        RiskSampler(risk=LearnRisk(theta=2.0))(learner, F[task["pool"]], n_instances=3)
    with pytest.raises(ValueError, match="Leave the risk's estimator None"):
        RiskSampler(risk=LearnRisk(FeatureMatcher()))(learner, F[task["pool"]], n_instances=3)
    wrong = RiskSampler(F[task["valid"]][:, :5], y[task["valid"]], risk=LearnRisk(epochs=5))
    with pytest.raises(ValueError):
        wrong(learner, F[task["pool"]], n_instances=3)


def test_risk_sampler_picks_risky_pairs(task):
    """Risk sampling's batch is riskier than a random batch (the risk it reports is real)."""
    F, y = task["F"], task["y"]
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=50), random_state=0)
    learner = _learner(task, "ndarray", None, sampler)
    pos, risk = sampler(learner, F[task["pool"]], n_instances=10, random_state=0)
    np.testing.assert_allclose(risk, sampler.last_query_.risk[pos])
    assert sampler.last_query_.risk[pos].mean() > sampler.last_query_.risk.mean()
    assert sampler.last_query_.kmedoids is not None and len(sampler.last_query_.kmedoids.selected) == 10
    topk = RiskSampler(F[task["valid"]], y[task["valid"]], selector=TopKSelector(),
                       risk=LearnRisk(epochs=50), random_state=0)
    pos_top, risk_top = topk(learner, F[task["pool"]], n_instances=10, random_state=0)
    np.testing.assert_allclose(np.sort(risk_top)[::-1], np.sort(topk.last_query_.risk)[::-1][:10])


def test_risk_sampler_preselect(task):
    """preselect=m spreads the batch over the m*n riskiest pool pairs only (default m=2); m=1 is
    top-n by risk, and a candidate set as large as the pool is the paper's whole pool (None)."""
    F, y, pool = task["F"], task["y"], task["pool"]
    assert KMedoidsSelector().preselect == 2 and KMedoidsSelector().preselect_after == "batch"

    def query(**kw):
        s = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=30), random_state=0,
                        selector=KMedoidsSelector(**kw))
        pos, _ = s(_learner(task, "ndarray", None, s), F[pool], n_instances=6, random_state=0)
        return s, np.sort(pos)

    s1, top = query(preselect=1)
    np.testing.assert_array_equal(np.sort(np.argsort(-s1.last_query_.risk, kind="stable")[:6]), top)
    s3, pre3 = query(preselect=3)
    allowed = np.sort(s3.last_query_.risk)[::-1][17]  # the 18th highest risk: the candidates' floor
    assert (s3.last_query_.risk[pre3] >= allowed).all() and len(np.unique(pre3)) == 6
    _, whole = query(preselect=None)
    _, huge = query(preselect=len(pool))
    np.testing.assert_array_equal(whole, huge)
    # preselect_after: the whole pool until the labelled set (38 pairs here) is larger
    _, warm = query(preselect_after=38)
    np.testing.assert_array_equal(whole, warm)
    _, later = query(preselect=3, preselect_after=37)
    np.testing.assert_array_equal(pre3, later)


def test_default_risk_sampling_without_validation(task):
    learner = _learner(task, "ndarray", None, risk_sampling)
    pos, _ = learner.query(task["F"][task["pool"]], n_instances=5, random_state=0)
    assert len(np.unique(pos)) == 5


def test_unpack_query_conventions():
    pos, scores = unpack_query((np.array([3, 1]), np.array([0.5, 0.2])), 5)
    assert pos.tolist() == [3, 1] and scores.tolist() == [0.5, 0.2]
    pos, scores = unpack_query(np.array([4, 0, 2]), 5)
    assert pos.tolist() == [4, 0, 2] and scores is None
    with pytest.raises(ValueError, match="more than once"):
        unpack_query(np.array([1, 1]), 5)
    with pytest.raises(ValueError, match="outside"):
        unpack_query(np.array([9]), 5)


def test_learner_teach_stacks_every_container(task):
    F, y, lab = task["F"], task["y"], task["lab"]
    for kind in ("ndarray", "dataframe", "slicedict"):
        learner = ActiveLearner(FeatureMatcher(random_state=0), entropy_sampling,
                                X_training=_wrap(F[lab], kind), y_training=y[lab])
        pos, rows = learner.query(_wrap(F[task["pool"]], kind), n_instances=4, random_state=0)
        learner.teach(rows, y[task["pool"][pos]])
        assert len(learner.y_training) == len(lab) + 4
        got = learner.X_training if kind == "ndarray" else (
            learner.X_training.to_numpy() if kind == "dataframe" else learner.X_training["features"])
        np.testing.assert_array_equal(got[-4:], F[task["pool"][pos]])


def test_risk_sampler_feature_names_and_oof(task, beer):
    """Rules read with feature names; out-of-fold probabilities give LearnRisk real mistakes."""
    F, y = task["F"], task["y"]
    names = SimilarityFeatures().fit(beer.to_frame()).get_feature_names_out()
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=30, feature_names=names),
                          random_state=0)
    learner = _learner(task, "ndarray", None, sampler)
    sampler(learner, F[task["pool"]], n_instances=5, random_state=0)
    rules = [str(r) for r in sampler.last_query_.risk_model.rules_]
    assert rules and all(not r.startswith("x") for r in rules)
    assert any(n in rules[0] for n in names)
    oof = oof_proba(learner.estimator, F[task["lab"]], y[task["lab"]], cv=5, random_state=0)
    fit = learner.predict_proba(F[task["lab"]])
    # in-sample probabilities of a forest are (nearly) always right; out-of-fold ones are not
    assert np.abs(oof[:, 1] - y[task["lab"]]).mean() > np.abs(fit[:, 1] - y[task["lab"]]).mean()
    with pytest.raises(ValueError, match="feature_names has"):
        RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(feature_names=names[:3]))(
            learner, F[task["pool"]], n_instances=2)


def _selection_query(task, clf, selector, n=8):
    """A RiskSampler with ``selector``, its learner, and the positions of its batch of ``n``."""
    F, y = task["F"], task["y"]
    s = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=30), random_state=0,
                    selector=selector)
    learner = _learner(task, "ndarray", clf, s)
    return s, learner, s(learner, F[task["pool"]], n_instances=n, random_state=0)[0]


def _unit_weights_give(task, clf, make_selector, baseline, timing):
    """Check that the selector with unit weights picks the batch of ``baseline`` (without the
    kernel, timed as ``timing``); returns the query function and that batch."""
    query = lambda **kw: _selection_query(task, clf, make_selector(**kw))  # noqa: E731
    s, learner, unit = query(weighting="unit")
    ref, _ = baseline(learner, task["F"][task["pool"]], n_instances=8, random_state=0)
    np.testing.assert_array_equal(np.sort(unit), np.sort(ref))
    assert s.last_query_.kmedoids is None and timing in s.last_query_.timings
    return query, unit


def test_risk_sampler_badge_selection(task):
    """BadgeSelector: k-means++ on BADGE's gradient embeddings with point weights; unit weights
    are BADGE itself (the same batch as badge_sampling), risk weights draw only pairs at risk."""
    # the matcher's gradient_embedding needs a softmax layer
    query, unit = _unit_weights_give(task, LogisticRegression(max_iter=1000), BadgeSelector, badge_sampling,
                                     "kmeanspp")
    s, _, risky = query(weighting="risk")
    risk = s.last_query_.risk
    assert len(np.unique(risky)) == 8 and (risk[risky] > 0).all()
    assert set(risky) != set(unit)
    # zero-risk pairs are drawn only once no pair at risk is left uncovered
    zero = np.flatnonzero(risk == 0)
    if len(zero):
        assert not set(risky) & set(zero)
    # reproducible; another seed may draw another batch
    np.testing.assert_array_equal(query(weighting="risk")[2], risky)
    with pytest.raises(ValueError, match="needs proba"):
        s.selector.select(risk, np.zeros((len(risk), 2), np.float32), None, 2)
    bad = np.full(len(risk), 0.5)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="first at row 3"):
        s.selector.select(risk, np.zeros((len(risk), 2), np.float32), None, 2, proba=bad)


def test_selection_auto_reads_the_matchers_risk_selection(task):
    """selector="auto" (the default) is the selector the matcher's risk_selection names where it has
    one (a learner's estimator, a Pipeline's last step), else KMedoidsSelector(); a value it cannot
    use is refused by name."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    class Badged(FeatureMatcher):
        risk_selection = "badge"

    class Odd(FeatureMatcher):
        risk_selection = "kmeans"

    sampler = RiskSampler()
    assert sampler.selector == "auto"
    assert repr(sampler.resolve_selector(None)) == "KMedoidsSelector()"
    assert repr(sampler.resolve_selector(FeatureMatcher())) == "KMedoidsSelector()"
    assert repr(sampler.resolve_selector(Badged())) == "BadgeSelector()"
    assert repr(sampler.resolve_selector(make_pipeline(FunctionTransformer(), Badged()))) == "BadgeSelector()"
    top = TopKSelector()
    assert RiskSampler(selector=top).resolve_selector(Badged()) is top
    with pytest.raises(ValueError, match="Odd.risk_selection is 'kmeans'"):
        sampler.resolve_selector(Odd())
    # the query follows it: a Badged forest gets the k-means++ draw, not the kernel
    F, y, pool = task["F"], task["y"], task["pool"]
    s = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=30), random_state=0)
    learner = ActiveLearner(Badged(random_state=0), s, X_training=F[task["lab"]], y_training=y[task["lab"]])
    s(learner, F[pool], n_instances=5, random_state=0)
    assert s.last_query_.kmedoids is None and "kmeanspp" in s.last_query_.timings
    rep = np.asarray(Badged(random_state=0).fit(F[task["lab"]], y[task["lab"]]).represent(F[pool]), dtype=np.float32)
    again = s.resolve_selector(learner).select(s.last_query_.risk, rep, None, 5,
                                               proba=learner.predict_proba(F[pool])[:, 1], random_state=0)
    assert again.kmedoids is None


def test_registered_strategies_name_their_selector():
    """skrisk's registry holds the default, the paper's method and the paper's six baselines; only the
    default resolves its selector from the matcher."""
    from skrisk.experiments import STRATEGIES
    from skrisk.matchers import LMMatcher

    assert list(STRATEGIES) == ["risk", "risk_paper", "random", "entropy", "bald", "coreset", "egl", "badge"]
    assert isinstance(RiskSampler(selector=STRATEGIES["risk_paper"].selector).resolve_selector(LMMatcher()),
                      KMedoidsSelector)
    assert STRATEGIES["risk"].selector == "auto"
    assert isinstance(RiskSampler(selector=STRATEGIES["risk"].selector).resolve_selector(LMMatcher()), BadgeSelector)


def test_nested_parameters_of_the_risk_and_the_selector(task):
    """The risk's and the selector's parameters are the sampler's nested ones, as scikit-learn's
    composed estimators have them (set_params, grid search)."""
    from sklearn.base import clone

    s = RiskSampler(risk=LearnRisk(epochs=30), selector=KMedoidsSelector())
    params = s.get_params()
    assert params["risk__epochs"] == 30 and params["selector__preselect"] == 2
    s.set_params(risk__theta=0.8, selector__preselect=3)
    assert s.risk.theta == 0.8 and s.selector.preselect == 3
    assert clone(s).selector.preselect == 3 and clone(s).selector is not s.selector
    assert len(inspect.signature(RiskSampler).parameters) <= 8
