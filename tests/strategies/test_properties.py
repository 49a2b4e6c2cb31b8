"""Property tests on tiny inputs: seeded top-k, and the k-medoids kernel's invariants."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from skrisk.kmedoids import weighted_fastpam
from skrisk.strategies._selection import top_k  # internal on purpose: the tie-break rule

FAST = settings(max_examples=25, deadline=None)

# scores with many ties: small integers
scores_st = st.lists(st.integers(0, 4), min_size=1, max_size=12).map(lambda v: np.asarray(v, dtype=float))


@FAST
@given(scores=scores_st, data=st.data())
def test_top_k_takes_the_k_largest_with_seeded_ties(scores, data):
    k = data.draw(st.integers(1, len(scores)))
    seed = data.draw(st.integers(0, 2**16))
    pos, got = top_k(scores, k, seed)
    assert len(np.unique(pos)) == k and np.array_equal(got, scores[pos])
    assert np.all(np.diff(got) <= 0)  # highest first
    rest = np.setdiff1d(np.arange(len(scores)), pos)
    assert rest.size == 0 or scores[rest].max() <= got.min()
    np.testing.assert_array_equal(top_k(scores, k, seed)[0], pos)  # the seed fixes the tie order
    # among equal scores the order is the seeded permutation's
    rank = np.random.RandomState(seed).permutation(len(scores))
    for value in np.unique(got):
        tied = pos[got == value]
        assert np.all(np.diff(rank[tied]) > 0)


points_st = st.integers(3, 8).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.integers(-5, 5), min_size=2, max_size=2), min_size=n, max_size=n),
        st.lists(st.integers(1, 9), min_size=n, max_size=n),
    )
)


def _td(X, w, medoids):
    d = np.linalg.norm(X[:, None, :] - X[None, medoids, :], axis=2)
    return float((w * d.min(axis=1)).sum())


@FAST
@given(points=points_st, data=st.data())
def test_kmedoids_invariants(points, data):
    X = np.asarray(points[0], dtype=np.float64)
    n = len(X)
    w = np.asarray(points[1], dtype=np.float64) + np.arange(n) * 1e-3  # distinct: one heaviest start
    n_fixed = data.draw(st.integers(0, n - 2))
    k = data.draw(st.integers(1, n - n_fixed - 1))
    fixed = np.sort(data.draw(st.permutations(range(n)))[:n_fixed]).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter=0 stops on purpose
        start = weighted_fastpam(X, k, sample_weight=w, fixed=fixed, max_iter=0, device="cpu", random_state=0)
    res = weighted_fastpam(X, k, sample_weight=w, fixed=fixed, device="cpu", random_state=0)
    # fixed medoids are kept, first, and never selected again
    np.testing.assert_array_equal(res.medoids[:n_fixed], fixed)
    assert len(np.unique(res.medoids)) == n_fixed + k and not np.isin(res.selected, fixed).any()
    # the swaps never make the total deviation worse than the start
    assert res.total_deviation <= start.total_deviation + 1e-4 * max(1.0, start.total_deviation)
    assert abs(res.total_deviation - _td(X, w, res.medoids)) <= 1e-4 * max(1.0, res.total_deviation)
    # permutation invariance: with one free medoid the swap-optimal choice is the optimum, so any
    # order of the points gives the same total deviation
    if k == 1:
        perm = data.draw(st.permutations(range(n)))
        perm = np.asarray(perm, dtype=int)
        inv = np.argsort(perm)
        other = weighted_fastpam(X[perm], 1, sample_weight=w[perm], fixed=np.sort(inv[fixed]), device="cpu",
                                 random_state=0)
        best = min(_td(X, w, np.r_[fixed, j]) for j in np.setdiff1d(np.arange(n), fixed))
        assert abs(other.total_deviation - best) <= 1e-4 * max(1.0, best)
        assert abs(res.total_deviation - best) <= 1e-4 * max(1.0, best)
