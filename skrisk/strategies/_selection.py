"""Selection helpers shared by the query strategies: validation, seeded top-k, distances."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch
from sklearn.utils import check_random_state

from .._rows import num_rows
from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import EmptyPoolError

__all__ = ["check_query", "top_k", "labelled_pool", "min_distances", "resolve_device"]


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``"auto"`` (or None) -> CUDA when available, else CPU."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def check_query(X_pool: Any, n_instances: Any, strategy: str) -> int:
    """Validate a query before any work; return the pool size."""
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
) -> np.ndarray:
    """Euclidean distance from every row of ``A`` to its nearest row of ``B``, blockwise.

    Memory is O(block_size * len(B)); distances come from matrix products in float32 and are
    clamped at zero before the square root.
    """
    dev = resolve_device(device)
    A_t = torch.as_tensor(np.asarray(A, dtype=np.float32), device=dev)
    B_t = torch.as_tensor(np.asarray(B, dtype=np.float32), device=dev)
    if B_t.shape[0] == 0:
        return np.full(A_t.shape[0], np.inf)
    out = torch.empty(A_t.shape[0], dtype=torch.float32, device=dev)
    b2 = (B_t * B_t).sum(1)
    for start in range(0, A_t.shape[0], block_size):
        a = A_t[start : start + block_size]
        d2 = (a * a).sum(1, keepdim=True) + b2[None, :] - 2.0 * a @ B_t.T
        out[start : start + block_size] = d2.clamp_min_(0).min(1).values.sqrt_()
    return out.cpu().numpy()
