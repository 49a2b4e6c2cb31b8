"""representative_sample: the weight-stratified sample that stands in for a pool too large for the kernel."""

from __future__ import annotations

import numpy as np
import pytest
import torch

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.kmedoids._sample import representative_sample
from skrisk.kmedoids import weighted_fastpam


def _mixture(n, d=8, seed=0):
    rng = np.random.RandomState(seed)
    centres = rng.randn(20, d) * 4
    X = centres[rng.randint(20, size=n)] + rng.randn(n, d)
    w = rng.beta(0.5, 5, size=n) ** 2  # risk-like: most points light, a few heavy
    w[w < 1e-9] = 0.0
    return X, w


def _td(X, w, medoids):
    d = torch.cdist(torch.as_tensor(X), torch.as_tensor(X[medoids])).min(dim=1).values.numpy()
    return float((w * d).sum())


def test_sample_size_order_and_exact_total_weight():
    _, w = _mixture(3000)
    s = representative_sample(w, 300, random_state=0)
    assert len(s.positions) == 300 and len(np.unique(s.positions)) == 300
    assert np.all(np.diff(s.positions) > 0)
    assert np.all(w[s.positions] > 0)  # weight-0 points add nothing: never drawn
    # the certain points keep their weight, the others carry 1/c each: the total is the pool's
    np.testing.assert_allclose(s.weights.sum(), w.sum(), rtol=1e-9)
    certain = s.inclusion == 1.0
    assert certain.sum() == s.n_certain > 0
    np.testing.assert_array_equal(s.weights[certain], w[s.positions][certain])
    # the certain points are the heaviest of the pool
    assert w[s.positions][certain].min() >= np.sort(w)[::-1][s.n_certain - 1]
    np.testing.assert_allclose(s.weights, w[s.positions] / s.inclusion)


def test_sample_is_seeded():
    _, w = _mixture(2000)
    a = representative_sample(w, 200, random_state=3)
    b = representative_sample(w, 200, random_state=3)
    c = representative_sample(w, 200, random_state=4)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert not np.array_equal(a.positions, c.positions)


def test_total_deviation_estimate_is_unbiased():
    """For a fixed medoid set, the re-weighted sample's total deviation averages to the pool's."""
    X, w = _mixture(2000)
    medoids = np.arange(0, 2000, 100)
    d = torch.cdist(torch.as_tensor(X), torch.as_tensor(X[medoids])).min(dim=1).values.numpy()
    truth = float((w * d).sum())
    est = [float((s.weights * d[s.positions]).sum())
           for s in (representative_sample(w, 100, random_state=k) for k in range(200))]
    assert abs(np.mean(est) / truth - 1) < 0.01


def test_kmedoids_on_the_sample_is_close_to_the_whole_pool():
    """Solved on a fifth of the points, the batch's total deviation on all of them is within 5 %."""
    X, w = _mixture(2000)
    L = np.arange(20)
    w[L] = 0.0
    whole = weighted_fastpam(X, 20, sample_weight=w, fixed=L, device="cpu")
    s = representative_sample(w[20:], 400, random_state=0)
    pos = 20 + s.positions
    res = weighted_fastpam(np.concatenate([X[L], X[pos]]), 20, sample_weight=np.r_[np.zeros(20), s.weights],
                           fixed=np.arange(20), device="cpu")
    chosen = pos[res.selected - 20]
    ratio = _td(X, w, np.r_[L, chosen]) / _td(X, w, np.r_[L, whole.selected])
    assert 0.99 < ratio < 1.05


def test_few_positive_weights_are_returned_whole():
    w = np.array([0.0, 2.0, 0.0, 1.0, 0.0])
    s = representative_sample(w, 3, random_state=0)
    assert s.positions.tolist() == [1, 3] and s.weights.tolist() == [2.0, 1.0] and s.n_certain == 2


def test_all_zero_weights_sample_uniformly():
    s = representative_sample(np.zeros(50), 10, random_state=0)
    assert len(s.positions) == 10 and np.allclose(s.weights, 5.0)


@pytest.mark.parametrize(
    ("weights", "size", "exc", "match"),
    [
        (np.ones(5), 0, ValueError, "The 'size' parameter of representative_sample must be an int in the range \\[1, inf\\)"),
        (np.ones(5), True, TypeError, "The 'size' parameter of representative_sample must be an int"),
        (np.ones(5), 2.5, TypeError, "The 'size' parameter of representative_sample must be an int"),
        (np.array([1.0, -1.0, 2.0]), 2, ValueError, "non-negative"),
        (np.array([1.0, np.nan, 2.0]), 2, ValueError, "finite"),
        (np.array([1.0, np.inf, 2.0]), 2, ValueError, "finite"),
        (np.ones((3, 2)), 2, ValueError, "1-D"),
    ],
)
def test_bad_input(weights, size, exc, match):
    with pytest.raises(exc, match=match):
        representative_sample(weights, size)
