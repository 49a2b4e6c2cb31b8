"""The query-strategy contract, for every strategy, on ndarray, DataFrame and SliceDict pools."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from skorch.helper import SliceDict

from skrisk.active import ActiveLearner, unpack_query
from skrisk.data import SimilarityFeatures
from skrisk.exceptions import EmptyPoolError, MissingCapabilityError, NotFittedError
from skrisk.matchers import FeatureMatcher
from skrisk.risk import oof_proba
from skrisk.strategies import (
    RiskSampler,
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
    return RiskSampler(_wrap(F[task["valid"]], kind), y[task["valid"]], risk_params={"epochs": 30}, random_state=0)


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
        RiskSampler(weighting="bogus")(learner, F[task["pool"]], n_instances=3)
    wrong = RiskSampler(F[task["valid"]][:, :5], y[task["valid"]], risk_params={"epochs": 5})
    with pytest.raises(ValueError):
        wrong(learner, F[task["pool"]], n_instances=3)


def test_risk_sampler_picks_risky_pairs(task):
    """Risk sampling's batch is riskier than a random batch (the risk it reports is real)."""
    F, y = task["F"], task["y"]
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], risk_params={"epochs": 50}, random_state=0)
    learner = _learner(task, "ndarray", None, sampler)
    pos, risk = sampler(learner, F[task["pool"]], n_instances=10, random_state=0)
    np.testing.assert_allclose(risk, sampler.last_query_.risk[pos])
    assert sampler.last_query_.risk[pos].mean() > sampler.last_query_.risk.mean()
    assert sampler.last_query_.kmedoids is not None and len(sampler.last_query_.kmedoids.selected) == 10
    topk = RiskSampler(F[task["valid"]], y[task["valid"]], selection="topk", weighting="risk",
                       risk_params={"epochs": 50}, random_state=0)
    pos_top, risk_top = topk(learner, F[task["pool"]], n_instances=10, random_state=0)
    np.testing.assert_allclose(np.sort(risk_top)[::-1], np.sort(topk.last_query_.risk)[::-1][:10])


def test_risk_sampler_preselect(task):
    """preselect=m spreads the batch over the m*n riskiest pool pairs only (default m=2); m=1 is
    top-n by risk, and a candidate set as large as the pool is the paper's whole pool (None)."""
    F, y, pool = task["F"], task["y"], task["pool"]
    assert RiskSampler().preselect == 2 and RiskSampler().preselect_after == "batch"

    def query(**kw):
        s = RiskSampler(F[task["valid"]], y[task["valid"]], risk_params={"epochs": 30}, random_state=0, **kw)
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
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], feature_names=names,
                          risk_params={"epochs": 30}, random_state=0)
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
        RiskSampler(F[task["valid"]], y[task["valid"]], feature_names=names[:3])(learner, F[task["pool"]], n_instances=2)


def test_risk_sampler_cold_start_and_diversity(task):
    """cold_start="diverse": the first query (labelled set <= the batch) is the unit-weight k-medoids
    of the whole pool; diversity=d: the risk part as usual, the rest spread over the remaining pool."""
    F, y, pool = task["F"], task["y"], task["pool"]
    assert RiskSampler().cold_start == "risk" and RiskSampler().diversity == 0.0

    def query(n=6, **kw):
        s = RiskSampler(F[task["valid"]], y[task["valid"]], risk_params={"epochs": 30}, random_state=0, **kw)
        pos, _ = s(_learner(task, "ndarray", None, s), F[pool], n_instances=n, random_state=0)
        return s, pos

    # 38 labelled pairs: a batch of 40 is a first query, a batch of 6 is not
    s, cold = query(n=40, cold_start="diverse")
    assert (s.last_query_.weights == 1).all() and len(np.unique(cold)) == 40
    matcher = _learner(task, "ndarray", None, s).estimator  # the representation the query used
    reps = [np.asarray(matcher.represent(F[rows]), dtype=np.float32) for rows in (pool, task["lab"])]
    again = s.select(s.last_query_.risk, *reps, 40, weighting="unit", preselect=None)
    np.testing.assert_array_equal(np.sort(cold), np.sort(again.positions))
    _, hot = query(n=40)
    assert set(hot) != set(cold)
    _, later = query(cold_start="diverse")
    _, default = query()
    np.testing.assert_array_equal(np.sort(later), np.sort(default))
    # half of a batch of 6 by risk (the 3 of a risk-only batch of 3, with "batch" still meaning 6)
    s, mixed = query(diversity=0.5)
    _, risk3 = query(n=3, preselect_after=6)
    np.testing.assert_array_equal(np.sort(mixed[:3]), np.sort(risk3))
    assert len(np.unique(mixed)) == 6 and not set(mixed[3:]) & set(risk3)
    with pytest.raises(ValueError, match="diversity"):
        query(diversity=1.0)
    with pytest.raises(TypeError, match="unknown selection parameter"):
        s.select(s.last_query_.risk, None, None, 2, weighting_typo="unit")


def test_risk_sampler_without_a_risk_model_spreads_the_batch_when_asked(task):
    """no_risk_model="diverse": when the matcher predicts every ranking pair correctly (LearnRisk has
    no risk model), the batch is the unit-weight k-medoids of the whole pool; "uncertainty" (the
    default) chooses by min(p, 1 - p); with a risk model both give the same batch."""
    F, y, pool, valid = task["F"], task["y"], task["pool"], task["valid"]
    assert RiskSampler().no_risk_model == "uncertainty"
    matcher = _learner(task, "ndarray", None, None).estimator
    right = valid[matcher.predict(F[valid]) == y[valid]]  # the ranking pairs it predicts correctly
    assert len(right) < len(valid) and set(y[right]) == {0, 1}

    def query(rows, **kw):
        s = RiskSampler(F[rows], y[rows], risk_params={"epochs": 30}, random_state=0, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # LearnRisk's "nothing to learn from" on the right pairs
            pos, _ = s(_learner(task, "ndarray", None, s), F[pool], n_instances=6, random_state=0)
        return s, pos

    s, spread = query(right, no_risk_model="diverse")
    assert s.last_query_.risk_model is None and (s.last_query_.weights == 1).all()
    reps = [np.asarray(matcher.represent(F[rows]), dtype=np.float32) for rows in (pool, task["lab"])]
    again = s.select(s.last_query_.risk, *reps, 6, weighting="unit", preselect=None)
    np.testing.assert_array_equal(np.sort(spread), np.sort(again.positions))
    s, uncertain = query(right)
    assert s.last_query_.risk_model is None and not (s.last_query_.weights == 1).all()
    assert set(uncertain) != set(spread)
    s, with_model = query(valid, no_risk_model="diverse")
    assert s.last_query_.risk_model is not None
    np.testing.assert_array_equal(np.sort(with_model), np.sort(query(valid)[1]))
    with pytest.raises(ValueError, match="no_risk_model"):
        query(valid, no_risk_model="random")


def _selection_query(task, clf, selection, n=8, **kw):
    """A RiskSampler with ``selection`` over the whole pool (no preselection), its learner, and the
    positions of its batch of ``n``."""
    F, y = task["F"], task["y"]
    s = RiskSampler(F[task["valid"]], y[task["valid"]], risk_params={"epochs": 30}, random_state=0,
                    selection=selection, preselect=None, **kw)
    learner = _learner(task, "ndarray", clf, s)
    return s, learner, s(learner, F[task["pool"]], n_instances=n, random_state=0)[0]


def _unit_weights_give(task, clf, selection, baseline, timing):
    """Check that ``selection`` with unit weights picks the batch of ``baseline`` (without the
    kernel, timed as ``timing``); returns the query function and that batch."""
    query = partial(_selection_query, task, clf, selection)
    s, learner, unit = query(weighting="unit")
    ref, _ = baseline(learner, task["F"][task["pool"]], n_instances=8, random_state=0)
    np.testing.assert_array_equal(np.sort(unit), np.sort(ref))
    assert s.last_query_.kmedoids is None and timing in s.last_query_.timings
    return query, unit


def test_risk_sampler_badge_selection(task):
    """selection="badge": k-means++ on BADGE's gradient embeddings with point weights; unit weights
    are BADGE itself (the same batch as badge_sampling), risk weights draw only pairs at risk."""
    # the matcher's gradient_embedding needs a softmax layer
    query, unit = _unit_weights_give(task, LogisticRegression(max_iter=1000), "badge", badge_sampling, "kmeanspp")
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
        s.select(risk, np.zeros((len(risk), 2), np.float32), None, 2)
    bad = np.full(len(risk), 0.5)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="first at row 3"):
        s.select(risk, np.zeros((len(risk), 2), np.float32), None, 2, proba=bad)


def test_risk_sampler_kcenter_selection(task):
    """selection="kcenter": core-set's greedy k-center with the labelled pairs as centres, each step
    the largest risk * distance; unit weights are core-set itself (the same batch as
    coreset_sampling), risk weights pass over pairs of no risk while any pair at risk is left."""
    query, unit = _unit_weights_give(task, None, "kcenter", coreset_sampling, "kcenter")
    s, _, risky = query(weighting="risk")
    risk = s.last_query_.risk
    assert len(np.unique(risky)) == 8 and set(risky) != set(unit)
    zero = np.flatnonzero(risk == 0)
    if len(zero) and (risk > 0).sum() >= 8:
        assert not set(risky) & set(zero)
    np.testing.assert_array_equal(query(weighting="risk")[2], risky)
    # "lipschitz" (the default weighting) is read as "risk": its distance term is the k-center's own
    np.testing.assert_array_equal(query()[2], risky)


def test_kcenter_selection_by_hand():
    """Three pairs on a line and a labelled pair at 0: unit weights take the farthest pair first,
    risk weights the largest risk * distance; a preselection keeps the k-center among the riskiest."""
    from skrisk.strategies import select_batch

    rep = np.array([[1.0], [4.0], [10.0]], dtype=np.float32)
    lab = np.array([[0.0]], dtype=np.float32)
    risk = np.array([0.9, 0.5, 0.1])  # risk * distance: 0.9, 2.0, 1.0
    pick = lambda **kw: select_batch(risk, rep, lab, 1, selection="kcenter", device="cpu",  # noqa: E731
                                     random_state=0, **kw).positions.tolist()
    assert pick(weighting="unit", preselect=None) == [2]
    assert pick(weighting="risk", preselect=None) == [1]
    assert pick(weighting="unit", preselect=2, preselect_after=0) == [1]
    # after the pair at 4 is taken, the pair at 10 is 6 from it (0.6) and the pair at 1 is 1 from
    # the labelled pair (0.9): the second pick is the pair at 1; the batch comes riskiest first
    out = select_batch(risk, rep, lab, 2, selection="kcenter", weighting="risk", preselect=None,
                       device="cpu", random_state=0)
    assert out.positions.tolist() == [0, 1]
    # no labelled pair: the heaviest first
    assert select_batch(risk, rep, None, 1, selection="kcenter", weighting="risk", preselect=None,
                        device="cpu", random_state=0).positions.tolist() == [0]


def test_selection_auto_reads_the_matchers_risk_selection(task):
    """selection="auto" (the default) is the matcher's risk_selection where it has one (a learner's
    estimator, a Pipeline's last step), else "kmedoids"; a value it cannot use is refused by name."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    class Badged(FeatureMatcher):
        risk_selection = "badge"

    class Odd(FeatureMatcher):
        risk_selection = "kmeans"

    sampler = RiskSampler()
    assert sampler.selection == "auto"
    assert sampler.resolve_selection(None) == "kmedoids"
    assert sampler.resolve_selection(FeatureMatcher()) == "kmedoids"
    assert sampler.resolve_selection(Badged()) == "badge"
    assert sampler.resolve_selection(make_pipeline(FunctionTransformer(), Badged())) == "badge"
    assert RiskSampler(selection="topk").resolve_selection(Badged()) == "topk"
    with pytest.raises(ValueError, match="Odd.risk_selection is 'kmeans'"):
        sampler.resolve_selection(Odd())
    # the query follows it: a Badged forest gets the k-means++ draw, not the kernel
    F, y, pool = task["F"], task["y"], task["pool"]
    s = RiskSampler(F[task["valid"]], y[task["valid"]], risk_params={"epochs": 30}, random_state=0)
    learner = ActiveLearner(Badged(random_state=0), s, X_training=F[task["lab"]], y_training=y[task["lab"]])
    s(learner, F[pool], n_instances=5, random_state=0)
    assert s.last_query_.kmedoids is None and "kmeanspp" in s.last_query_.timings
    again = s.select(s.last_query_.risk, np.asarray(Badged(random_state=0).fit(F[task["lab"]], y[task["lab"]])
                                                    .represent(F[pool]), dtype=np.float32),
                     None, 5, proba=learner.predict_proba(F[pool])[:, 1], matcher=learner, random_state=0)
    assert again.kmedoids is None


def test_diverse_options_follow_the_selection_or_are_refused(task):
    """cold_start / no_risk_model "diverse" is the resolved selection's own unit-weight batch over
    the whole pool (core-set for "kcenter", BADGE for "badge", as the unit k-medoids for
    "kmedoids"); where the selection has no such batch ("topk"), or diversity is asked of a
    selection other than k-medoids, the query refuses by name instead of ignoring the option."""
    F, pool = task["F"], task["pool"]
    # 38 labelled pairs: a batch of 40 is a first query
    for selection, clf, baseline in (("kcenter", None, coreset_sampling),
                                     ("badge", LogisticRegression(max_iter=1000), badge_sampling)):
        s, learner, cold = _selection_query(task, clf, selection, n=40, cold_start="diverse")
        assert (s.last_query_.weights == 1).all()
        ref, _ = baseline(learner, F[pool], n_instances=40, random_state=0)
        np.testing.assert_array_equal(np.sort(cold), np.sort(ref))
        _, _, hot = _selection_query(task, clf, selection, n=40)
        assert set(hot) != set(cold)
    for kw in ({"cold_start": "diverse"}, {"no_risk_model": "diverse"}):
        with pytest.raises(ValueError, match=r"selection='topk'.*kmedoids"):
            _selection_query(task, None, "topk", n=40, **kw)
    for selection in ("kcenter", "badge", "topk"):
        with pytest.raises(ValueError, match=rf"diversity=0\.5\).*'{selection}'"):
            _selection_query(task, LogisticRegression(max_iter=1000), selection, diversity=0.5)


def test_registered_variants_of_the_kmedoids_default_keep_kmedoids():
    """The variants measured as changes to the k-medoids default (the language model's records of
    risk_cold, risk_mix, risk_pre5w and risk_oof were made before LMMatcher's default became
    risk-weighted BADGE) name selection="kmedoids", so they rerun as recorded with every matcher."""
    from skrisk.experiments import STRATEGIES
    from skrisk.matchers import LMMatcher

    names = ["risk_cold", "risk_mix", "risk_oof", "risk_nrm", "risk_cap2k", "risk_pre3w", "risk_pre5w",
             "risk_pre2w_nodist", "risk_pre2", "risk_pre10"]
    for name in names:
        sampler = RiskSampler(**STRATEGIES[name].sampler_params)
        assert sampler.resolve_selection(LMMatcher()) == "kmedoids", name
    assert RiskSampler(**STRATEGIES["risk"].sampler_params).resolve_selection(LMMatcher()) == "badge"
