"""Tests of the weighted fastPAM kernel and the WeightedKMedoids estimator."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from skrisk.kmedoids import KMedoidsResult, WeightedKMedoids, weighted_fastpam

CPU = "cpu"


# ---- oracle -------------------------------------------------------------------------------------
def _td(X: np.ndarray, w: np.ndarray, medoids) -> float:
    """Weighted total deviation in float64, straight from the definition."""
    D = np.sqrt(((X[:, None, :] - X[None, list(medoids), :]) ** 2).sum(-1))
    return float((w * D.min(axis=1)).sum())


def _instance(seed: int, n: int = 13, d: int = 2, n_fixed: int = 2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.exponential(size=n)
    fixed = sorted(rng.choice(n, size=n_fixed, replace=False).tolist())
    return X, w, fixed


def _assert_swap_optimal(X, w, fixed, res: KMedoidsResult, rtol: float = 1e-6) -> None:
    sel = list(res.selected)
    free = [i for i in range(len(X)) if i not in fixed and i not in sel]
    cur = _td(X, w, list(fixed) + sel)
    for slot, j in itertools.product(range(len(sel)), free):
        trial = sel.copy()
        trial[slot] = j
        assert _td(X, w, list(fixed) + trial) >= cur * (1 - rtol) - 1e-9, (slot, j)


# ---- correctness on tiny instances --------------------------------------------------------------
@pytest.mark.parametrize("schedule", ["eager", "best"])
@pytest.mark.parametrize("init", ["heaviest", "build"])
def test_swap_optimal_by_brute_force(schedule, init):
    for seed in range(8):
        X, w, fixed = _instance(seed)
        res = weighted_fastpam(
            X, 3, sample_weight=w, fixed=fixed, init=init, schedule=schedule, block_size=4,
            device=CPU,
        )
        assert res.converged
        _assert_swap_optimal(X, w, fixed, res)
        assert res.total_deviation == pytest.approx(_td(X, w, res.medoids), rel=1e-6)


@pytest.mark.parametrize("schedule", ["eager", "best"])
def test_exact_optimum_in_most_seeds(schedule):
    hits = 0
    seeds = range(12)
    for seed in seeds:
        X, w, fixed = _instance(seed, n=12)
        free = [i for i in range(12) if i not in fixed]
        best = min(_td(X, w, fixed + list(q)) for q in itertools.combinations(free, 3))
        res = weighted_fastpam(
            X, 3, sample_weight=w, fixed=fixed, schedule=schedule, block_size=5, device=CPU
        )
        assert res.total_deviation >= best * (1 - 1e-9)
        hits += res.total_deviation <= best * (1 + 1e-6)
    assert hits >= 10


def test_result_fields_are_consistent():
    X, w, fixed = _instance(3, n=30, d=3, n_fixed=4)
    res = weighted_fastpam(X, 5, sample_weight=w, fixed=fixed, block_size=8, device=CPU)
    assert res.selected.shape == (5,) and np.all(np.diff(res.selected) > 0)
    assert not set(res.selected) & set(fixed)
    np.testing.assert_array_equal(res.medoids, np.r_[fixed, res.selected])
    assert res.labels.shape == (30,) and res.labels.dtype == np.intp
    D = np.sqrt(((X[:, None] - X[res.medoids][None]) ** 2).sum(-1))
    np.testing.assert_allclose(D[np.arange(30), res.labels], D.min(1), atol=1e-12)
    np.testing.assert_array_equal(res.labels[res.medoids], np.arange(9))
    assert res.assignment is res.labels
    assert isinstance(res.total_deviation, float) and res.n_swaps >= 0 and res.n_iter >= 1


def test_block_size_does_not_change_the_optimum_quality():
    X, w, fixed = _instance(5, n=40, d=3, n_fixed=3)
    tds = [
        weighted_fastpam(X, 4, sample_weight=w, fixed=fixed, block_size=bs, device=CPU)
        for bs in (1, 7, 64)
    ]
    for res in tds:
        _assert_swap_optimal(X, w, fixed, res)


# ---- weights, fixed medoids, duplicates, ties ---------------------------------------------------
def test_heavy_point_is_covered_first():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(30, 2)), [[12.0, 12.0]]]
    w = np.ones(31)
    assert 30 not in weighted_fastpam(X, 1, sample_weight=w, device=CPU).selected
    w[30] = 1000.0
    for init in ("heaviest", "build"):
        res = weighted_fastpam(X, 1, sample_weight=w, init=init, device=CPU)
        assert res.selected.tolist() == [30]


def test_weights_move_the_medoid_inside_a_cluster():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]])
    assert weighted_fastpam(X, 1, device=CPU).selected.tolist() == [2]
    w = np.array([1.0, 1.0, 1.0, 1.0, 10.0])
    assert weighted_fastpam(X, 1, sample_weight=w, device=CPU).selected.tolist() == [4]


@pytest.mark.parametrize("schedule", ["eager", "best"])
def test_fixed_medoids_never_move(schedule):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    w = rng.exponential(size=60)
    # fixed medoids in a useless corner, carrying the largest weights
    X[:3] += 50.0
    w[:3] = 100.0
    fixed = [2, 0, 1]
    res = weighted_fastpam(
        X, 4, sample_weight=w, fixed=fixed, schedule=schedule, block_size=8, device=CPU
    )
    assert res.medoids[:3].tolist() == fixed
    assert not set(res.selected) & set(fixed)
    np.testing.assert_array_equal(res.labels[fixed], [0, 1, 2])
    _assert_swap_optimal(X, w, fixed, res)


def test_fixed_points_cost_nothing_and_attract_their_neighbours():
    X = np.array([[0.0], [0.1], [10.0], [10.1], [20.0]])
    res = weighted_fastpam(X, 1, fixed=[0, 2], device=CPU)
    assert res.selected.tolist() == [4]
    assert res.total_deviation == pytest.approx(0.2)
    assert res.labels.tolist() == [0, 0, 1, 1, 2]


def test_duplicates_are_covered_exactly():
    rng = np.random.default_rng(2)
    sites = rng.normal(scale=5.0, size=(6, 3))
    X = np.repeat(sites, 7, axis=0)[rng.permutation(42)]
    fixed = [int(np.flatnonzero((X == sites[0]).all(1))[0])]
    for init in ("heaviest", "build"):
        res = weighted_fastpam(X, 5, fixed=fixed, init=init, block_size=8, device=CPU)
        assert res.total_deviation == pytest.approx(0.0, abs=1e-6)
        assert len({tuple(r) for r in X[res.medoids]}) == 6


def test_all_points_identical():
    X = np.ones((10, 4))
    res = weighted_fastpam(X, 3, fixed=[5], device=CPU)
    assert res.selected.tolist() == [0, 1, 2]  # ties: lowest index, nothing improves
    assert res.total_deviation == 0.0 and res.n_swaps == 0
    assert set(res.labels.tolist()) <= {0, 1, 2, 3}


def test_ties_in_weights_lowest_index_and_random_state():
    X = np.arange(20, dtype=float)[:, None]
    res = weighted_fastpam(X, 3, max_iter=0, device=CPU)
    assert res.selected.tolist() == [0, 1, 2]  # heaviest init, ties by lowest index
    r1 = weighted_fastpam(X, 3, max_iter=0, random_state=0, device=CPU)
    r2 = weighted_fastpam(X, 3, max_iter=0, random_state=0, device=CPU)
    np.testing.assert_array_equal(r1.selected, r2.selected)
    w = np.ones(20)
    w[[7, 13]] = 2.0
    res = weighted_fastpam(X, 2, sample_weight=w, max_iter=0, random_state=3, device=CPU)
    assert res.selected.tolist() == [7, 13]


@pytest.mark.parametrize("schedule", ["eager", "best"])
def test_deterministic_under_random_state(schedule):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 5)).astype(np.float32)
    kw = dict(schedule=schedule, block_size=16, random_state=7, device=CPU)
    a = weighted_fastpam(X, 6, fixed=[1, 2], **kw)
    b = weighted_fastpam(X, 6, fixed=[1, 2], **kw)
    np.testing.assert_array_equal(a.selected, b.selected)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.total_deviation == b.total_deviation and a.n_swaps == b.n_swaps


def test_schedules_agree_closely():
    rng = np.random.default_rng(5)
    centers = rng.normal(scale=4, size=(8, 4))
    X = centers[rng.integers(0, 8, 300)] + rng.normal(size=(300, 4))
    w = rng.exponential(size=300)
    tds = {
        s: weighted_fastpam(X, 8, sample_weight=w, fixed=[0, 1], schedule=s, block_size=32,
                            device=CPU).total_deviation
        for s in ("eager", "best")
    }
    assert tds["eager"] == pytest.approx(tds["best"], rel=0.02)


def test_unit_weights_match_kmedoids_fasterpam():
    kmedoids = pytest.importorskip("kmedoids")
    rng = np.random.default_rng(6)
    centers = rng.normal(scale=3, size=(12, 8))
    X = centers[rng.integers(0, 12, 600)] + rng.normal(size=(600, 8))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    ref = min(kmedoids.fasterpam(D, 12, random_state=s).loss for s in range(3))
    for init in ("heaviest", "build"):
        res = weighted_fastpam(X, 12, init=init, random_state=0, device=CPU)
        assert res.total_deviation <= 1.01 * ref
        assert res.total_deviation == pytest.approx(_td(X, np.ones(600), res.medoids))


def test_accepts_tensors_and_integer_data():
    X = np.array([[0, 0], [0, 1], [5, 5], [5, 6], [9, 9]])
    a = weighted_fastpam(X, 2, device=CPU)
    b = weighted_fastpam(torch.as_tensor(X, dtype=torch.float64), 2,
                         sample_weight=torch.ones(5), fixed=torch.tensor([], dtype=torch.long),
                         device=CPU)
    np.testing.assert_array_equal(a.selected, b.selected)
    c = weighted_fastpam(X.astype(np.float32), 2, fixed=np.array([4]), device=CPU)
    assert 4 in c.medoids and 4 not in c.selected


def test_max_iter_warns_and_zero_keeps_init():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(80, 2))
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        res = weighted_fastpam(X, 5, schedule="best", max_iter=1, device=CPU)
    assert not res.converged and res.n_swaps == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res0 = weighted_fastpam(X, 5, max_iter=0, device=CPU)
    assert res0.selected.tolist() == [0, 1, 2, 3, 4] and res0.n_swaps == 0


def test_matmul_precision_is_restored():
    prev = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        weighted_fastpam(np.eye(5), 2, device=CPU)
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(prev)


# ---- bad input ----------------------------------------------------------------------------------
_X = np.arange(20, dtype=float).reshape(10, 2)


@pytest.mark.parametrize(
    "X, args, kwargs, exc, match",
    [
        (_X, (11,), {}, ValueError, "n_select=11 exceeds"),
        (_X, (9,), {"fixed": [0, 1]}, ValueError, "exceeds the 8 points"),
        (_X, (0,), {}, ValueError, "The 'n_select' parameter of weighted_fastpam must be an int in the range \\[1, inf\\)"),
        (_X, (2.0,), {}, TypeError, "The 'n_select' parameter of weighted_fastpam must be an int"),
        (_X, (True,), {}, TypeError, "The 'n_select' parameter of weighted_fastpam must be an int"),
        (_X, (2,), {"fixed": [0, 10]}, ValueError, "out of range"),
        (_X, (2,), {"fixed": [-1]}, ValueError, "out of range"),
        (_X, (2,), {"fixed": [3, 3]}, ValueError, "repeated"),
        (_X, (2,), {"fixed": [1.0, 2.0]}, TypeError, "integer row indices"),
        (_X, (2,), {"fixed": np.zeros(10, bool)}, TypeError, "flatnonzero"),
        (_X, (2,), {"fixed": [[0, 1]]}, ValueError, "1-D"),
        (_X, (2,), {"sample_weight": -np.ones(10)}, ValueError, "negative"),
        (_X, (2,), {"sample_weight": np.r_[np.nan, np.ones(9)]}, ValueError, "NaN"),
        (_X, (2,), {"sample_weight": np.r_[np.inf, np.ones(9)]}, ValueError, "infinity"),
        (_X, (2,), {"sample_weight": np.zeros(10)}, ValueError, "zero on every point"),
        (_X, (2,), {"sample_weight": np.r_[1.0, np.zeros(9)], "fixed": [0]}, ValueError,
         "zero on every point"),
        (_X, (2,), {"sample_weight": np.ones(9)}, ValueError, "one weight per row"),
        (_X, (2,), {"sample_weight": ["a"] * 10}, TypeError, "numeric"),
        (np.r_[_X, [[np.nan, 0]]], (2,), {}, ValueError, "NaN"),
        (np.r_[_X, [[np.inf, 0]]], (2,), {}, ValueError, "infinity"),
        (np.empty((0, 2)), (1,), {}, ValueError, "empty"),
        (np.empty((5, 0)), (1,), {}, ValueError, "0 features"),
        (np.arange(5.0), (1,), {}, ValueError, "2-D"),
        (np.array([["a", "b"]]), (1,), {}, TypeError, "not numeric"),
        (_X + 1j, (1,), {}, TypeError, "complex"),
        (_X, (2,), {"init": "random"}, ValueError, "The 'init' parameter of weighted_fastpam must be a str among"),
        (_X, (2,), {"schedule": "lazy"}, ValueError, "The 'schedule' parameter of weighted_fastpam must be a str among"),
        (_X, (2,), {"max_iter": -1}, ValueError, "The 'max_iter' parameter of weighted_fastpam must be an int in the range \\[0, inf\\)"),
        (_X, (2,), {"block_size": 0}, ValueError, "The 'block_size' parameter of weighted_fastpam must be an int in the range \\[1, inf\\)"),
        (_X, (2,), {"block_size": 8.0}, TypeError, "The 'block_size' parameter of weighted_fastpam must be an int"),
        (_X, (2,), {"device": "tpu:x"}, ValueError, "not a torch device"),
    ],
)
def test_bad_input_is_rejected(X, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        weighted_fastpam(X, *args, **kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_cuda_requested_without_cuda():
    with pytest.raises(ValueError, match="not available"):
        weighted_fastpam(_X, 2, device="cuda")


# ---- estimator ----------------------------------------------------------------------------------
@parametrize_with_checks(
    [WeightedKMedoids(n_select=3, device=CPU)],
    expected_failed_checks=lambda est: {
        "check_sample_weight_equivalence_on_dense_data": (
            "Weights are not repetitions: a zero-weight point stays a candidate medoid, and "
            "init='heaviest' ranks points by weight, so a weighted fit and a fit on repeated rows "
            "can stop at different swap-optimal medoids. scikit-learn lists this check as an expected "
            "failure of its own KMeans, MiniBatchKMeans and BisectingKMeans for the same reason "
            "('sample_weight is not equivalent to removing/repeating samples', "
            "sklearn/utils/_test_common/instance_generator.py)."
        ),
    },
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_estimator_attributes_predict_transform():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(50, 3))
    w = rng.exponential(size=50)
    km = WeightedKMedoids(n_select=4, fixed=[3, 7], block_size=8, device=CPU)
    assert km.fit(X, sample_weight=w) is km
    ref = weighted_fastpam(X, 4, sample_weight=w, fixed=[3, 7], block_size=8, device=CPU)
    np.testing.assert_array_equal(km.medoid_indices_, ref.medoids)
    np.testing.assert_array_equal(km.selected_indices_, ref.selected)
    np.testing.assert_array_equal(km.cluster_centers_, X[ref.medoids])
    assert km.total_deviation_ == ref.total_deviation and km.n_features_in_ == 3
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    T = km.transform(X[:5])
    assert T.shape == (5, 6)
    np.testing.assert_allclose(T.min(1), np.sqrt(((X[:5, None] - km.cluster_centers_) ** 2)
                                                 .sum(-1)).min(1))
    np.testing.assert_array_equal(km.fit_predict(X, sample_weight=w), km.labels_)
    with pytest.raises(ValueError, match="out of range"):
        WeightedKMedoids(n_select=2, fixed=[60], device=CPU).fit(X)


# ---- CUDA ---------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cuda_matches_cpu():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(500, 16)).astype(np.float32)
    w = rng.exponential(size=500)
    for schedule in ("eager", "best"):
        kw = dict(sample_weight=w, fixed=[0, 5, 9], schedule=schedule, block_size=32)
        cpu = weighted_fastpam(X, 10, device="cpu", **kw)
        gpu = weighted_fastpam(torch.as_tensor(X, device="cuda"), 10, device="auto", **kw)
        assert gpu.device.startswith("cuda")
        assert gpu.total_deviation == pytest.approx(cpu.total_deviation, rel=1e-4)


@pytest.mark.parametrize("schedule", ["eager", "best"])
def test_distance_cache_gives_the_same_solution(schedule):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 5)).astype(np.float32)
    w = rng.uniform(0.1, 2.0, size=600)
    fixed = [3, 40, 99]
    kw = dict(sample_weight=w, fixed=fixed, schedule=schedule, block_size=16, device="cpu")
    none = weighted_fastpam(X, 12, cache_mb=0, **kw)
    part = weighted_fastpam(X, 12, cache_mb=0.2, **kw)  # some blocks kept, the rest recomputed
    full = weighted_fastpam(X, 12, **kw)
    for res in (part, full):
        np.testing.assert_array_equal(res.selected, none.selected)
        assert res.total_deviation == none.total_deviation
        assert res.n_swaps == none.n_swaps


@pytest.mark.parametrize("bad", [-1, float("nan"), "1GB", True])
def test_bad_cache_size(bad):
    X = np.zeros((10, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="cache_mb"):
        weighted_fastpam(X, 2, cache_mb=bad)
