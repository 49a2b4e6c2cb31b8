"""Hostile numbers: extreme magnitudes, NaN/inf, bad probabilities, degenerate sizes (issue #15)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from skrisk.kmedoids import WeightedKMedoids, weighted_fastpam

CPU = "cpu"


def _td(X: np.ndarray, w: np.ndarray, medoids) -> float:
    D = np.sqrt(((X[:, None, :] - X[None, list(medoids), :]) ** 2).sum(-1))
    return float((w * D.min(axis=1)).sum())


def _points(seed: int = 0, n: int = 40, d: int = 3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.exponential(size=n)


# ---- k-medoids near float32's limits ---------------------------------------------------------
@pytest.mark.parametrize("scale", [1e20, 1e30, 1e-30, 1e-20, 1e300, 1e-300])
@pytest.mark.parametrize("schedule", ["eager", "best"])
def test_fastpam_result_does_not_depend_on_the_scale(scale, schedule):
    """Before: at 1e20 / 1e-30 the kernel returned its start with converged=True and 0 swaps."""
    X, w = _points()
    ref = weighted_fastpam(X, 4, sample_weight=w, schedule=schedule, device=CPU)
    assert ref.n_swaps > 0  # the start is not optimal: a search that does nothing is visible
    res = weighted_fastpam(X * scale, 4, sample_weight=w, schedule=schedule, device=CPU)
    assert res.converged
    np.testing.assert_array_equal(res.selected, ref.selected)
    np.testing.assert_array_equal(res.labels, ref.labels)
    assert res.n_swaps == ref.n_swaps
    assert res.total_deviation == pytest.approx(ref.total_deviation * scale, rel=1e-9)


@pytest.mark.parametrize("scale", [1.0, 1e20, 1e-30])
def test_fastpam_matches_brute_force_at_extreme_scales(scale):
    X, w = _points(3, n=11, d=2)
    fixed = [0]
    free = range(1, 11)
    best = min(_td(X, w, fixed + list(q)) for q in itertools.combinations(free, 2))
    res = weighted_fastpam(X * scale, 2, sample_weight=w, fixed=fixed, init="build", device=CPU)
    assert res.converged
    assert res.total_deviation / scale == pytest.approx(best, rel=1e-6)


def test_fastpam_small_spread_far_from_the_origin():
    """Points 1e12 from the origin with a spread of 1: centring keeps the search exact."""
    X, w = _points(1, n=30)
    ref = weighted_fastpam(X, 3, sample_weight=w, device=CPU)
    res = weighted_fastpam(X + 1e12, 3, sample_weight=w, device=CPU)
    np.testing.assert_array_equal(res.selected, ref.selected)


def test_fastpam_float32_int_and_float64_inputs_agree():
    rng = np.random.default_rng(2)
    Xi = rng.integers(-50, 50, size=(30, 4))
    base = weighted_fastpam(Xi.astype(np.float64), 3, device=CPU)
    for X in (Xi, Xi.astype(np.float32), Xi.astype(np.int8), Xi.astype(np.float32) * np.float32(1e30)):
        res = weighted_fastpam(X, 3, device=CPU)
        np.testing.assert_array_equal(res.selected, base.selected)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fastpam_rejects_non_finite_coordinates_naming_the_row(bad):
    X, _ = _points()
    X[7, 2] = bad
    with pytest.raises(ValueError, match=r"row 7, column 2.*impute or drop"):
        weighted_fastpam(X, 2, device=CPU)


def test_fastpam_overflowing_float64_input_is_rejected_not_searched():
    X, _ = _points()
    with np.errstate(over="ignore"):
        huge = X * 1.5e308  # some coordinates overflow to inf in float64 itself
    with pytest.raises(ValueError, match="NaN or infinity"):
        weighted_fastpam(huge, 2, device=CPU)


def test_fastpam_weights_beyond_float32_range_are_rejected():
    """One weight 1e30 times the rest: the others would read as 0 and nothing would be searched."""
    X, w = _points()
    w = w.copy()
    w[5] = 1e30
    with pytest.raises(ValueError, match=r"smallest positive value .* at row \d+.*np\.where"):
        weighted_fastpam(X, 4, sample_weight=w, device=CPU)
    # a huge weight on a fixed medoid does not count (its distance is 0): accepted, same answer
    w2 = np.r_[1e30, w[1:] * 0 + 1]
    ref = weighted_fastpam(X, 4, sample_weight=np.r_[1.0, w2[1:]], fixed=[0], device=CPU)
    res = weighted_fastpam(X, 4, sample_weight=w2, fixed=[0], device=CPU)
    np.testing.assert_array_equal(res.selected, ref.selected)
    # uniformly tiny or huge weights are only a scale
    for s in (1e-40, 1e40):
        res = weighted_fastpam(X, 4, sample_weight=np.ones(len(X)) * s, device=CPU)
        np.testing.assert_array_equal(res.selected, weighted_fastpam(X, 4, device=CPU).selected)


def test_fastpam_degenerate_pools():
    # all rows identical: every choice costs 0, the run ends at once
    res = weighted_fastpam(np.ones((6, 3)), 2, device=CPU)
    assert res.converged and res.total_deviation == 0.0 and len(set(res.selected)) == 2
    # a pool of one row
    res = weighted_fastpam(np.array([[1e25, -3.0]]), 1, device=CPU)
    assert res.selected.tolist() == [0] and res.total_deviation == 0.0
    # n_select out of range / not an int
    X, _ = _points(n=5)
    for n_select, err in ((6, ValueError), (0, ValueError), (-1, ValueError), (2.0, TypeError), (True, TypeError)):
        with pytest.raises(err, match="n_select"):
            weighted_fastpam(X, n_select, device=CPU)


@pytest.mark.parametrize(
    "w, msg",
    [
        (np.zeros(8), "zero on every point"),
        (-np.ones(8), "negative"),
        (np.r_[np.ones(7), np.nan], "NaN or infinity"),
        (np.ones(7), "shape"),
    ],
)
def test_weighted_kmedoids_bad_weights(w, msg):
    X, _ = _points(n=8)
    with pytest.raises(ValueError, match=msg):
        WeightedKMedoids(n_select=2, device=CPU).fit(X, sample_weight=w)


def test_weighted_kmedoids_extreme_scale_matches_scale_one():
    X, w = _points()
    ref = WeightedKMedoids(n_select=4, device=CPU).fit(X, sample_weight=w)
    km = WeightedKMedoids(n_select=4, device=CPU).fit(X * 1e-30, sample_weight=w)
    np.testing.assert_array_equal(km.selected_indices_, ref.selected_indices_)
    np.testing.assert_array_equal(km.predict(X * 1e-30), ref.predict(X))

