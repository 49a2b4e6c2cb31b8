"""Selection helpers shared by the query strategies: validation, seeded top-k, distances."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.utils import check_random_state

from .._device import resolve_device
from .._rows import num_rows
from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import EmptyPoolError

__all__ = ["check_query", "check_pool_matches", "top_k", "labelled_pool", "min_distances"]


def _kind(X: Any) -> str:
    if isinstance(X, pd.DataFrame):
        return "a DataFrame"
    if isinstance(X, Mapping):
        return "a mapping/SliceDict"
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
        raise ValueError(
            f"{strategy}: {what} is {k} ({type(X).__name__}) but the learner's labelled pairs are "
            f"{k_lab} ({type(X_lab).__name__}): {fix}"
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


def labelled_pool(learner: Any) -> Any | None:
    """The learner's labelled set (``X_training``), or None when it has none."""
    return getattr(learner, "X_training", None)


def min_distances(
    A: np.ndarray | torch.Tensor,
    B: np.ndarray | torch.Tensor,
    *,
    block_size: int = 4096,
    device: str | torch.device | None = "cpu",
    dtype: torch.dtype = torch.float32,
) -> np.ndarray:
    """Euclidean distance from every row of ``A`` to its nearest row of ``B``, blockwise.

    Memory is O(block_size * len(B)); distances come from matrix products in ``dtype`` and are
    clamped at zero before the square root, after centring on ``B``'s mean (in float32 a zero
    distance can still come out as a few 1e-3 for vectors of norm ~10: use float64 where small
    distances matter).
    """
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
