"""Strategies keep no hidden state; risk sampling works with any classifier; core-set ties follow the seed."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

# internal on purpose: no sampler kept in the module
import skrisk.strategies._risk as risk_module
from skrisk import ActiveLearner, LearnRisk, RiskSampler
from skrisk.strategies import coreset_sampling, risk_sampling
from skrisk.data import SimilarityFeatures
from skrisk.matchers import FeatureMatcher
from skrisk.strategies import RiskQuery


@pytest.fixture(scope="module")
def task(beer):
    F = SimilarityFeatures().fit_transform(beer.to_frame()).astype(np.float64)
    y = beer.labels
    train, valid = beer.split_positions("train"), beer.split_positions("valid")
    rng = np.random.RandomState(0)
    lab = np.concatenate(
        [rng.choice(train[y[train] == 1], 8, replace=False), rng.choice(train[y[train] == 0], 30, replace=False)]
    )
    return {"F": F, "y": y, "lab": lab, "pool": np.setdiff1d(train, lab), "valid": valid}


def _learner(task, estimator, strategy):
    F, y, lab = task["F"], task["y"], task["lab"]
    return ActiveLearner(estimator, strategy, X_training=F[lab], y_training=y[lab])


def test_risk_sampling_is_a_function_that_keeps_nothing(task, two_torch_threads):
    assert callable(risk_sampling) and not isinstance(risk_sampling, RiskSampler)
    assert not any(isinstance(v, RiskSampler) for v in vars(risk_module).values())
    F, y = task["F"], task["y"]
    kw = dict(X_valid=F[task["valid"]], y_valid=y[task["valid"]], risk=LearnRisk(epochs=10))
    learner = _learner(task, FeatureMatcher(random_state=0), risk_sampling)
    expected = risk_sampling(learner, F[task["pool"]], n_instances=4, random_state=0, **kw)
    results: dict[int, tuple] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = risk_sampling(learner, F[task["pool"]], n_instances=4, random_state=0, **kw)
        except BaseException as exc:  # reported below
            errors.append(exc)

    torch_threads_before = torch.get_num_threads()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for pos, scores in results.values():
        np.testing.assert_array_equal(pos, expected[0])
        np.testing.assert_allclose(scores, expected[1])
    assert torch.get_num_threads() == torch_threads_before  # torch's process-wide setting too
    assert vars(risk_sampling) == {}  # no attribute was set on the function
    assert not any(isinstance(v, RiskSampler) for v in vars(risk_module).values())


def test_sampler_keeps_its_last_query_and_repr_hides_data(task):
    F, y = task["F"], task["y"]
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=10), random_state=0)
    text = repr(sampler)
    assert f"X_valid=<ndarray of shape {F[task['valid']].shape}>" in text
    assert "[" not in text.split("risk_params")[0]  # no array printed
    learner = _learner(task, FeatureMatcher(random_state=0), sampler)
    pos, scores = learner.query(F[task["pool"]], n_instances=5, random_state=0)
    q = sampler.last_query_
    assert isinstance(q, RiskQuery)
    np.testing.assert_array_equal(q.positions, pos)
    np.testing.assert_allclose(q.scores, q.risk[pos])
    assert q.risk.shape == q.weights.shape == (len(task["pool"]),)
    assert q.risk_model is not None and q.kmedoids is not None and q.timings["total"] > 0
    with pytest.raises(AttributeError):
        q.positions = pos  # frozen
    for gone in ("risk_model_", "last_risk_", "last_weights_", "last_result_", "last_timings_", "last_threads_"):
        assert not hasattr(sampler, gone)


@pytest.mark.parametrize(
    "make, note",
    [
        (lambda: RandomForestClassifier(n_estimators=30, random_state=0), "risk features"),
        (lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)), "pipeline's transform"),
        (lambda: FeatureMatcher(random_state=0), None),
        (lambda: make_pipeline(StandardScaler(), FeatureMatcher(random_state=0)), None),
    ],
    ids=["forest", "scaler-logreg", "feature-matcher", "scaler-feature-matcher"],
)
def test_risk_sampling_with_any_classifier(task, make, note):
    F, y = task["F"], task["y"]
    sampler = RiskSampler(F[task["valid"]], y[task["valid"]], risk=LearnRisk(epochs=10), random_state=0)
    learner = _learner(task, make(), sampler)
    for _ in range(2):  # the representation note comes once per sampler
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pos, rows = learner.query(F[task["pool"]], n_instances=5, random_state=0)
        notes = [str(w.message) for w in caught if "has no represent()" in str(w.message)]
        if note is not None and _ == 0:
            assert len(notes) == 1 and note in notes[0], notes
        else:
            assert notes == []
    assert len(np.unique(pos)) == 5 and rows.shape == (5, F.shape[1])
    learner.teach(rows, y[task["pool"][pos]])
    assert len(learner.y_training) == len(task["lab"]) + 5


def test_coreset_ties_follow_the_seed():
    """Four pool pairs at exactly the same distance from the labelled pair: the seed picks."""
    lab = np.zeros((1, 2), dtype=np.float32)
    pool = np.array([[1, 0], [0, 1], [-1, 0], [0, -1], [0.5, 0]], dtype=np.float32)

    class Learner:
        X_training = lab
        y_training = np.array([1])

    picks = set()
    for seed in range(12):
        pos, scores = coreset_sampling(Learner(), pool, 1, random_state=seed, transform=lambda X: X, device="cpu")
        expected = int(np.argmin(np.random.RandomState(seed).permutation(len(pool))[:4]))
        assert pos.tolist() == [expected] and scores[0] == 1.0
        picks.add(expected)
    assert len(picks) > 1  # not always the lowest index


def test_overlapping_thread_limits_restore_torchs_setting(two_torch_threads):
    # internal on purpose: the thread-limit context
    from skrisk._device import torch_threads

    before = torch.get_num_threads()
    a, b = torch_threads(1), torch_threads(1)
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)  # the first to begin ends first, as two overlapping threads may
    b.__exit__(None, None, None)
    assert torch.get_num_threads() == before
    with torch_threads(2), torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


class _CountingFeatures(SimilarityFeatures):
    """SimilarityFeatures that records how many rows each ``transform`` call got."""

    calls: list[int] = []

    def transform(self, X):
        type(self).calls.append(len(X))
        return super().transform(X)


def test_pipeline_encoder_runs_once_over_the_pool_per_query(beer):
    frame, y = beer.to_frame(), beer.labels
    train, valid = beer.split_positions("train"), beer.split_positions("valid")
    rng = np.random.RandomState(0)
    lab = np.concatenate(
        [rng.choice(train[y[train] == 1], 8, replace=False), rng.choice(train[y[train] == 0], 30, replace=False)]
    )
    pool = np.setdiff1d(train, lab)
    pipe = make_pipeline(_CountingFeatures(), FeatureMatcher(random_state=0))
    sampler = RiskSampler(frame.iloc[valid], y[valid], risk=LearnRisk(epochs=10), random_state=0)
    learner = ActiveLearner(pipe, sampler, X_training=frame.iloc[lab], y_training=y[lab])
    _CountingFeatures.calls.clear()
    pos, _ = learner.query(frame.iloc[pool], n_instances=5, random_state=0)
    # the probabilities, the representation and LearnRisk's features of the pool share one encoding
    assert _CountingFeatures.calls.count(len(pool)) == 1, _CountingFeatures.calls
    assert len(np.unique(pos)) == 5
    assert sampler.last_query_.risk_model is not None and len(sampler.last_query_.risk) == len(pool)
