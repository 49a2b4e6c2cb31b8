"""KMedoidsSelector(max_pool=...): the whole-pool k-medoids stage on a weight-stratified sample
of a pool larger than the cap (issue #19), and unchanged behaviour at or below it."""

from __future__ import annotations

import numpy as np
import pytest

from skrisk import LearnRisk
from skrisk.active import ActiveLearner
from skrisk.data import SimilarityFeatures
from skrisk.matchers import FeatureMatcher
from skrisk.strategies import KMedoidsSelector, RiskSampler


@pytest.fixture(scope="module")
def task(beer):
    F = SimilarityFeatures().fit_transform(beer.to_frame()).astype(np.float64)
    y = beer.labels
    train, valid = beer.split_positions("train"), beer.split_positions("valid")
    rng = np.random.RandomState(0)
    lab = np.concatenate([rng.choice(train[y[train] == 1], 3, replace=False),
                          rng.choice(train[y[train] == 0], 5, replace=False)])
    return {"F": F, "y": y, "lab": lab, "pool": np.setdiff1d(train, lab), "valid": valid}


def _query(task, n_instances=8, seed=0, **kw):
    F, y = task["F"], task["y"]
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=20),
                          selector=KMedoidsSelector(**kw))
    learner = ActiveLearner(FeatureMatcher(random_state=0), sampler, X_training=F[task["lab"]],
                            y_training=y[task["lab"]])
    pos, _ = sampler(learner, F[task["pool"]], n_instances=n_instances, random_state=seed)
    return sampler.last_query_, pos


def test_default_cap_and_pools_at_or_below_it_are_unchanged(task):
    """The first query (|L| = 8 <= the batch) solves over the whole pool, exactly as without a cap,
    for the default cap and for a cap equal to the pool's size: committed results stay valid."""
    assert KMedoidsSelector().max_pool == 20_000
    n_pool = len(task["pool"])
    q_none, pos_none = _query(task, max_pool=None)
    for cap in (20_000, n_pool):
        q, pos = _query(task, max_pool=cap)
        np.testing.assert_array_equal(pos, pos_none)
        np.testing.assert_array_equal(q.kmedoids.labels, q_none.kmedoids.labels)
        assert q.kmedoids.total_deviation == q_none.kmedoids.total_deviation
        assert "sample" not in q.timings
    assert len(q_none.kmedoids.labels) == n_pool + len(task["lab"])


def test_pool_above_the_cap_is_solved_on_a_seeded_sample(task):
    n_pool, n_lab = len(task["pool"]), len(task["lab"])
    cap = 60
    assert n_pool > 2 * cap
    q, pos = _query(task, max_pool=cap)
    assert "sample" in q.timings
    assert len(q.kmedoids.labels) == n_lab + cap  # the kernel saw the labelled set and the sample
    assert len(np.unique(pos)) == 8 and pos.min() >= 0 and pos.max() < n_pool
    assert (q.weights[pos] > 0).all()  # drawn with probability proportional to weight
    assert len(q.risk) == n_pool and len(q.weights) == n_pool  # diagnostics still cover the pool
    # every random choice follows random_state
    np.testing.assert_array_equal(_query(task, max_pool=cap)[1], pos)
    others = {tuple(np.sort(_query(task, seed=s, max_pool=cap)[1])) for s in (1, 2, 3)}
    assert others != {tuple(np.sort(pos))}


def test_cap_never_below_twice_the_batch(task):
    q, pos = _query(task, max_pool=1)
    assert len(q.kmedoids.labels) == len(task["lab"]) + 16 and len(np.unique(pos)) == 8


def test_preselected_queries_ignore_the_cap(task):
    """Once preselection starts, the candidates are the 2n riskiest pairs: the cap does not apply."""
    a, pos_a = _query(task, preselect_after=0, max_pool=20)
    b, pos_b = _query(task, preselect_after=0, max_pool=None)
    np.testing.assert_array_equal(pos_a, pos_b)
    assert "sample" not in a.timings


@pytest.mark.parametrize(
    ("bad", "exc", "match"),
    [(0, ValueError, "max_pool"), (-5, ValueError, "max_pool"),
     (True, TypeError, "max_pool"), (2.5, TypeError, "max_pool"),
     ("big", TypeError, "max_pool")],
)
def test_bad_cap_is_named(task, bad, exc, match):
    with pytest.raises(exc, match=match):
        _query(task, max_pool=bad)
