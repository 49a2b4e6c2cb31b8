"""Selection helpers shared by the query strategies: validation, seeded top-k, distances."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from .._rows import first_non_finite, num_rows, pool_kind
from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import DataError, EmptyPoolError

if TYPE_CHECKING:  # torch is imported by the functions that compute with it: the checks need none
    import torch

__all__ = [
    "check_query",
    "check_pool_matches",
    "check_pool_finite",
    "checked_proba",
    "checked_finite",
    "proba_function",
    "top_k",
    "labelled_pool",
    "min_distances",
]

#: How far a matcher's probabilities may stray from [0, 1] and from summing to 1 (float32 softmax
#: outputs are off by ~1e-7; a matcher off by more returns something other than probabilities).
PROBA_TOL = 1e-4


def _kind(X: Any) -> str:
    """How a message names the pool's container (:func:`~skrisk._rows.pool_kind`)."""
    kind = pool_kind(X)
    if kind == "mapping":
        return "a mapping/SliceDict"
    if kind == "frame" and isinstance(X, pd.DataFrame):
        return "a DataFrame"
    return "an array"


def _shape(v: Any) -> tuple[int, ...]:
    shape = getattr(v, "shape", None)
    return tuple(int(d) for d in (shape if shape is not None else np.shape(v)))


def _width(v: Any) -> tuple[int, int | None]:
    """(ndim, columns) of an array-like; columns is None for 1-D data."""
    shape = _shape(v)
    return len(shape), (shape[1] if len(shape) > 1 else None)


def check_pool_matches(X: Any, X_lab: Any, strategy: str, what: str = "the pool") -> None:
    """Raise a clear ValueError when ``X`` is not encoded like the labelled pairs ``X_lab``.

    Compares the container kind, the DataFrame columns, the mapping keys and, per array, the
    number of dimensions and of columns (the second axis: features, or ``2 * A`` token sequences;
    the token length ``L`` may differ). Cheap: looks at shapes only. Nothing is checked when
    ``X_lab`` is None or a list.
    """
    if X_lab is None or isinstance(X_lab, (list, tuple)) or isinstance(X, (list, tuple)):
        return
    fix = "encode it exactly as the labelled pairs (same PairEncoder / SimilarityFeatures)."
    k, k_lab = _kind(X), _kind(X_lab)
    if k != k_lab:
        how = fix
        if k_lab == "a DataFrame":
            cols = [str(c) for c in X_lab.columns]
            how = (f"give it as a DataFrame with their columns: pandas.DataFrame({what}, columns={cols}) when its "
                   f"columns are those, in that order; records of pairs: PairDataset.to_frame(); or {fix}")
        elif k == "a DataFrame" and k_lab == "an array":
            how = (f"give it as an array: {what}.to_numpy() when its columns are the labelled pairs' features, "
                   f"in their order; pair records: the same SimilarityFeatures' transform; or {fix}")
        raise ValueError(
            f"{strategy}: {what} is {k} ({type(X).__name__}) but the learner's labelled pairs are "
            f"{k_lab} ({type(X_lab).__name__}): {how}"
        )
    if k == "a DataFrame":
        cols, cols_lab = [str(c) for c in X.columns], [str(c) for c in X_lab.columns]
        if cols != cols_lab:
            raise ValueError(
                f"{strategy}: {what} has columns {cols[:6]}{'...' if len(cols) > 6 else ''} "
                f"({len(cols)}), the labelled pairs {cols_lab[:6]}{'...' if len(cols_lab) > 6 else ''} "
                f"({len(cols_lab)}): {fix}"
            )
        return
    if k == "a mapping/SliceDict":
        keys, keys_lab = sorted(map(str, X.keys())), sorted(map(str, X_lab.keys()))
        if keys != keys_lab:
            raise ValueError(f"{strategy}: {what} has keys {keys}, the labelled pairs {keys_lab}: {fix}")
        pairs = [(f"{what}[{key!r}]", X[key], X_lab[key]) for key in X.keys()]
    else:
        pairs = [(what, X, X_lab)]
    for name, v, v_lab in pairs:
        (nd, cols), (nd_lab, cols_lab) = _width(v), _width(v_lab)
        if nd != nd_lab or cols != cols_lab:
            raise ValueError(
                f"{strategy}: {name} has shape {_shape(v)}, the labelled pairs {_shape(v_lab)} "
                f"(the number of dimensions and of columns must agree): {fix}"
            )


def _matcher_name(learner: Any) -> str:
    return type(getattr(learner, "estimator", learner)).__name__


def checked_proba(
    proba: Any, learner: Any, strategy: str, *, n_rows: int | None = None, what: str = "the pool",
    method: str = "predict_proba", tol: float = PROBA_TOL,
) -> FloatArray:
    """The matcher's class probabilities as float64, or a clear error naming the matcher and row.

    The one check every strategy applies to probabilities it gets from a matcher
    (``predict_proba``, ``predict_proba_mc``, ``predict_proba_and_represent``, ...): the last axis
    holds the two classes ``[non-match, match]``; every value is finite and in ``[0, 1]`` and
    every row sums to 1, both within ``tol``; the second-to-last axis has ``n_rows`` rows.

    Parameters
    ----------
    proba : array-like of shape (n_rows, 2) or (n_draws, n_rows, 2)
        What the matcher returned.
    learner : object
        The learner (or matcher) asked, named in the message.
    strategy : str
        The strategy asking, named in the message.
    n_rows : int, optional
        Rows expected (the number of pairs the matcher was asked about).
    what : str, default="the pool"
        Which pairs the matcher was asked about, for the message.
    method : str, default="predict_proba"
        The matcher method that returned ``proba``, for the message.
    tol : float, default=PROBA_TOL
        Tolerance of the range and of the row sums.

    Returns
    -------
    ndarray
        ``proba`` as a float64 array, values clipped to ``[0, 1]``.

    Raises
    ------
    DataError
        Wrong shape, NaN or infinity, values outside ``[0, 1]`` or rows that do not sum to 1.
    """
    name = _matcher_name(learner)
    fix = (f"{name}.{method} must return probabilities of [non-match, match] for every pair: finite, "
           "in [0, 1], each row summing to 1 (e.g. a softmax output, or a classifier calibrated "
           "with sklearn.calibration.CalibratedClassifierCV); fix or replace the matcher.")
    try:
        P = np.asarray(proba, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{strategy}: {name}.{method} on {what} returned something that is not a "
                        f"numeric array ({exc}). {fix}") from exc
    if P.ndim < 2 or P.shape[-1] != 2 or (n_rows is not None and P.shape[-2] != n_rows):
        want = f"({n_rows if n_rows is not None else 'n'}, 2)"
        raise DataError(f"{strategy}: {name}.{method} on {what} returned shape {P.shape}, expected "
                        f"{want} (one row per pair, columns non-match and match). {fix}")
    flat = P.reshape(-1, 2)
    bad = ~np.isfinite(flat).all(axis=1)
    bad |= ((flat < -tol) | (flat > 1.0 + tol)).any(axis=1)
    with np.errstate(invalid="ignore"):
        bad |= ~(np.abs(flat.sum(axis=1) - 1.0) <= tol)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        draw, row = divmod(k, P.shape[-2])
        where = f"row {row}" if P.ndim == 2 else f"row {row} of draw {draw}"
        raise DataError(
            f"{strategy}: {name}.{method} on {what} returned invalid probabilities for "
            f"{int(bad.sum())} pair(s), first at {where}: {flat[k].tolist()} (values must lie in "
            f"[0, 1] and sum to 1, within {tol:g}). {fix}"
        )
    return np.clip(P, 0.0, 1.0)


def proba_function(learner: Any, strategy: str, capability: str = "proba") -> Any:
    """``require(learner, capability)`` wrapped so that every call's output is :func:`checked_proba`'d.

    ``capability`` is ``"proba"`` (``predict_proba(X)``) or ``"mc_dropout"``
    (``predict_proba_mc(X, n_iter, random_state)``). The wrapped call takes the same arguments
    plus keyword ``what`` (which pairs, for the message).
    """
    from ..matchers._base import CAPABILITIES, require

    fn = require(learner, capability, strategy)
    method = CAPABILITIES[capability][0]

    def checked(X: Any, *args: Any, what: str = "the pool", **kwargs: Any) -> FloatArray:
        return checked_proba(fn(X, *args, **kwargs), learner, strategy, n_rows=num_rows(X),
                             what=what, method=method)

    return checked


def checked_finite(values: Any, learner: Any, strategy: str, method: str, *, what: str = "the pool",
                   n_rows: int | None = None) -> np.ndarray:
    """A matcher's scores or embeddings as float64, or a clear error naming the matcher and row.

    For the outputs that are not probabilities (representations, gradient embeddings, expected
    gradient lengths): numeric, one row per pair, finite.
    """
    name = _matcher_name(learner)
    try:
        A = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{strategy}: {name}.{method} on {what} returned something that is not a "
                        f"numeric array ({exc}); fix or replace the matcher.") from exc
    if A.ndim == 0 or (n_rows is not None and A.shape[0] != n_rows):
        raise DataError(f"{strategy}: {name}.{method} on {what} returned shape {A.shape} for "
                        f"{n_rows} pairs (one row per pair expected); fix or replace the matcher.")
    finite = np.isfinite(A.reshape(A.shape[0], -1)).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise DataError(
            f"{strategy}: {name}.{method} on {what} returned NaN or infinity for "
            f"{int((~finite).sum())} pair(s), first at row {row}. Check those pairs' features "
            "(impute NaN/inf, e.g. with the -1 sentinel of skrisk.data.SimilarityFeatures) or the "
            "matcher (a diverged fit gives NaN weights)."
        )
    return A


def check_pool_finite(X_pool: Any, strategy: str) -> None:
    """Raise a clear :class:`~skrisk.exceptions.DataError` when float features hold NaN or inf.

    Looks at float arrays only (ndarray, sparse matrix, torch tensor, the float columns of a
    DataFrame, every float array of a mapping / SliceDict); token ids and text are left alone.
    """
    found = first_non_finite(X_pool)
    if found is not None:
        count, row, where = found
        raise DataError(
            f"{strategy}: the pool holds NaN or infinity in {count} pair(s), first at row {row}"
            f"{' (' + where + ')' if where else ''}. Impute them (e.g. with the -1 sentinel of "
            "skrisk.data.SimilarityFeatures) or drop those pairs from the pool, then query again."
        )
    found = _first_beyond_float32(X_pool)
    if found is not None:
        count, row, where, value = found
        raise DataError(
            f"{strategy}: the pool holds values beyond float32's range (|x| > {_F32_MAX:.4g}) in {count} "
            f"pair(s), first at row {row} ({where}: {value!r}). The matchers compute in float32 "
            "(scikit-learn's trees, torch), where such a value is infinite: rescale that feature, or "
            "clip it (e.g. numpy.clip(X, -1e30, 1e30)), then query again."
        )


_F32_MAX = float(np.finfo(np.float32).max)


def _first_beyond_float32(X: Any) -> tuple[int, int, str, float] | None:
    """``(count, first row, column, value)`` of the rows of a float64 ndarray or DataFrame holding
    finite values beyond float32's range, or None (other containers: their own checks)."""
    if isinstance(X, pd.DataFrame):
        cols = X.select_dtypes(include="floating")
        names, A = [repr(c) for c in cols.columns], cols.to_numpy(dtype=np.float64)
    elif isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2:
        names, A = [str(j) for j in range(X.shape[1])], X
    else:
        return None
    big = np.abs(A) > _F32_MAX
    rows = big.any(axis=1)
    if not rows.any():
        return None
    row = int(np.flatnonzero(rows)[0])
    col = int(np.flatnonzero(big[row])[0])
    return int(rows.sum()), row, f"column {names[col]}", float(A[row, col])


def check_query(X_pool: Any, n_instances: Any, strategy: str, learner: Any = None) -> int:
    """Validate a query before any work; return the pool size.

    With a ``learner`` that holds a labelled set (``X_training``), the pool must also be encoded
    like it (:func:`check_pool_matches`), so that a mismatched pool fails clearly even for
    strategies that do not ask the matcher anything (random sampling).
    """
    if isinstance(n_instances, bool) or not isinstance(n_instances, numbers.Integral):
        raise TypeError(
            f"{strategy}: n_instances must be an int, got {type(n_instances).__name__}. Pass "
            "n_instances=<number of pairs to label>."
        )
    n_pool = num_rows(X_pool)
    if n_pool == 0:
        raise EmptyPoolError(f"{strategy}: the pool is empty; there is nothing left to query.")
    if n_instances < 1:
        raise ValueError(f"{strategy}: n_instances must be at least 1, got {n_instances}.")
    if n_instances > n_pool:
        raise EmptyPoolError(
            f"{strategy}: n_instances={n_instances} is larger than the pool ({n_pool} pairs). "
            "Ask for at most as many pairs as the pool holds."
        )
    if learner is not None:
        check_pool_matches(X_pool, labelled_pool(learner), strategy)
    check_pool_finite(X_pool, strategy)
    return n_pool


def top_k(scores: FloatArray, k: int, random_state: RandomStateLike = None) -> tuple[IntArray, FloatArray]:
    """Positions of the ``k`` largest scores; ties are broken by a seeded random order.

    Returns ``(positions, scores[positions])``, highest first.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if np.isnan(scores).any():
        raise ValueError("Scores contain NaN: the matcher returned invalid probabilities.")
    rng = check_random_state(random_state)
    tie = rng.permutation(len(scores))
    # lexsort: last key is primary. Sort by -score, then by the random tie key.
    order = np.lexsort((tie, -scores))[:k]
    return order.astype(np.intp), scores[order]


def kmeanspp_seeding(
    G: np.ndarray, k: int, rng: np.random.RandomState, device: torch.device, weights: FloatArray | None = None,
) -> tuple[IntArray, FloatArray]:
    """``k`` rows of ``G`` by k-means++ seeding (BADGE's draw), with optional point weights.

    The first row has the largest norm (with ``weights``: the largest ``w_i * ||g_i||^2``); each
    next one is drawn with probability proportional to its squared distance to the nearest chosen
    row (times its weight). When nothing is left to draw from (every other row coincides with a
    chosen one, or weighs nothing), the next is a random unchosen row; with ``weights``, the
    heaviest unchosen one while any weighs more than nothing.

    Returns ``(positions, scores)`` in draw order: the first row's norm, then each draw's squared
    distance.
    """
    import torch

    Gt = torch.as_tensor(G, device=device)
    norms = torch.linalg.vector_norm(Gt, dim=1)
    wt = None if weights is None else torch.as_tensor(np.asarray(weights, dtype=np.float64), device=Gt.device)
    first = int(torch.argmax(norms if wt is None else wt * norms.double() ** 2))
    chosen = [first]
    scores = [float(norms[first])]
    d2 = ((Gt - Gt[first]) ** 2).sum(1).double()
    for _ in range(1, k):
        d2[chosen] = 0.0
        mass = d2 if wt is None else wt * d2
        total = float(mass.sum())
        if total > 0.0:
            p = (mass / total).cpu().numpy()
            j = int(rng.choice(len(G), p=p / p.sum()))
        else:
            rest = np.setdiff1d(np.arange(len(G)), chosen)
            w_rest = None if weights is None else np.asarray(weights)[rest]
            j = int(rest[np.argmax(w_rest)]) if w_rest is not None and w_rest.max() > 0 else int(rng.choice(rest))
        chosen.append(j)
        scores.append(float(d2[j]))
        d2 = torch.minimum(d2, ((Gt - Gt[j]) ** 2).sum(1).double())
    return np.asarray(chosen, dtype=np.intp), np.asarray(scores)


def kcenter_greedy(
    pool: np.ndarray, dist: np.ndarray, k: int, rng: np.random.RandomState, device: torch.device,
    weights: FloatArray | None = None,
) -> tuple[IntArray, FloatArray]:
    """``k`` rows of ``pool`` by greedy k-center (core-set's rule), with optional point weights.

    Each step takes the row with the largest distance to its nearest centre so far (``dist``
    holds each row's distance to the fixed centres, ``inf`` where there are none; the rows chosen
    become centres), with ``weights``: the largest ``w_i * d_i``. Ties go to the row first in a
    seeded permutation. With no fixed centre (every distance ``inf``) the first row is the
    heaviest (without weights, a random one). When every score left is 0 (every row coincides
    with a centre, or weighs nothing) the distance alone decides the next row.

    Returns ``(positions, scores)`` in draw order: each chosen row's distance (times its weight).
    """
    import torch

    d = torch.as_tensor(np.asarray(dist, dtype=np.float64), device=device)
    P = torch.as_tensor(np.asarray(pool, dtype=np.float32), device=device)
    n = len(d)
    w = None if weights is None else torch.as_tensor(np.asarray(weights, dtype=np.float64), device=device)
    # seeded tie-break: among the rows at the largest score, the one first in a seeded permutation
    # (a rank per row; adding tiny multiples of it to the scores would be lost to rounding)
    rank = torch.as_tensor(rng.permutation(n), dtype=torch.int64, device=device)
    taken = torch.zeros(n, dtype=torch.bool, device=device)
    chosen, scores = [], []
    for _ in range(k):
        if not chosen and bool(torch.isinf(d).all()):  # no centre yet: the heaviest row, or a random one
            j = int(rng.randint(n)) if w is None else int(torch.argmin(torch.where(w == w.max(), rank, n)))
            score = float("inf")
        else:
            s = d if w is None else w * d
            if w is not None and not bool((s[~taken] > 0).any()):
                s = d
            s = torch.where(taken, -torch.inf, s)
            j = int(torch.argmin(torch.where(s == s.max(), rank, n)))
            score = float(s[j])
        chosen.append(j)
        scores.append(score)
        taken[j] = True
        d = torch.minimum(d, torch.linalg.vector_norm(P - P[j], dim=1).double())
    return np.asarray(chosen, dtype=np.intp), np.asarray(scores)


def labelled_pool(learner: Any) -> Any | None:
    """The learner's labelled set (``X_training``), or None when it has none."""
    return getattr(learner, "X_training", None)


def min_distances(
    A: np.ndarray | torch.Tensor,
    B: np.ndarray | torch.Tensor,
    *,
    block_size: int = 4096,
    device: str | torch.device | None = "cpu",
    dtype: torch.dtype | None = None,
) -> np.ndarray:
    """Euclidean distance from every row of ``A`` to its nearest row of ``B``, blockwise.

    Memory is O(block_size * len(B)); distances come from matrix products in ``dtype`` (None:
    ``torch.float32``) and are
    clamped at zero before the square root, after centring on ``B``'s mean (in float32 a zero
    distance can still come out as a few 1e-3 for vectors of norm ~10: use float64 where small
    distances matter). The denominator of risk sampling's weights (:func:`lipschitz_weights`).

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.strategies._selection import min_distances
    >>> min_distances(np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([[0.0, 0.0]])).round(4).tolist()
    [0.0, 5.0]
    """
    import torch

    from .._device import resolve_device

    dtype = torch.float32 if dtype is None else dtype
    dev = resolve_device(device)
    if dev.type == "mps" and dtype == torch.float64:  # pragma: no cover - no float64 on MPS
        dtype = torch.float32
    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    A_t = torch.as_tensor(np.asarray(A, dtype=np_dtype), device=dev)
    B_t = torch.as_tensor(np.asarray(B, dtype=np_dtype), device=dev)
    if B_t.shape[0] == 0:
        return np.full(A_t.shape[0], np.inf)
    # centre both on B's mean: distances do not change, the rounding error of the matrix-product
    # identity then scales with the spread of the data instead of its distance from the origin
    mu = B_t.mean(0, keepdim=True)
    A_t, B_t = A_t - mu, B_t - mu
    out = torch.empty(A_t.shape[0], dtype=dtype, device=dev)
    b2 = (B_t * B_t).sum(1)
    for start in range(0, A_t.shape[0], block_size):
        a = A_t[start : start + block_size]
        d2 = (a * a).sum(1, keepdim=True) + b2[None, :] - 2.0 * a @ B_t.T
        out[start : start + block_size] = d2.clamp_min_(0).min(1).values.sqrt_()
    return out.cpu().numpy()


def lipschitz_weights(
    risk: np.ndarray, distances: np.ndarray, *, eps: float = 1e-8, distance_floor: float | str = "auto"
) -> np.ndarray:
    """Risk sampling's point weights (paper eq. 6), ``R_i / min_j ||x_i - x_j||``, guarded.

    Parameters
    ----------
    risk : ndarray of shape (n,)
        Risks of the pool pairs.
    distances : ndarray of shape (n,)
        Each pair's distance to its nearest labelled pair.
    eps : float, default=1e-8
        Added to the distance.
    distance_floor : float or "auto", default="auto"
        A distance is raised to at least this value; ``"auto"``: 1 % of the median positive
        distance. A pair at distance 0 (up to ``1e-7`` of that median) from a labelled pair gets
        weight 0: the labelled pair covers it already.

    Returns
    -------
    ndarray of float64, shape (n,)

    Notes
    -----
    The one implementation of the rule, used by :class:`~skrisk.RiskSampler`
    (``weighting="lipschitz"``) and by :func:`skrisk.pools.stream_query` / ``dask_query`` (where
    the median is taken over the preselected candidates, whose distances are the only ones kept).

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.strategies._selection import lipschitz_weights
    >>> lipschitz_weights(np.array([0.4, 0.2, 0.3]), np.array([2.0, 1.0, 0.0])).round(6).tolist()
    [0.2, 0.2, 0.0]
    """
    d = np.asarray(distances, dtype=np.float64)
    positive = d[d > 0]
    scale = float(np.median(positive)) if positive.size else 1.0
    floor = 0.01 * scale if distance_floor == "auto" else float(distance_floor)
    weights = np.asarray(risk, dtype=np.float64) / np.maximum(d + eps, floor)
    weights[d <= 1e-7 * scale] = 0.0
    return weights
