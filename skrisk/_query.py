"""The return value of a query strategy: ``(positions, scores)`` checked against the pool."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

def _split_result(result: Any) -> tuple[Any, Any]:
    """``(positions, scores)`` from a strategy's return value (a pair, or positions alone)."""
    if isinstance(result, tuple) and len(result) == 2:
        return result
    return result, None


def _check_positions(pos: Any, scores: Any, n_pool: int | None, duplicates: str) -> tuple[np.ndarray, Any]:
    """Validate positions (0-d or 1-d integers inside the pool) and their scores."""
    pos = np.asarray(pos)
    if pos.size == 0 and pos.dtype.kind == "f":  # an empty list of positions
        pos = pos.astype(np.intp)
    if pos.ndim > 1:
        raise ValueError(
            f"The strategy returned positions of shape {pos.shape}: return a 1-D array of integer "
            "positions into the pool (and their scores)."
        )
    if pos.dtype.kind not in "iu":
        raise TypeError(f"The strategy returned positions of dtype {pos.dtype}: they must be integers.")
    flat = pos.reshape(-1)
    if scores is not None:
        scores = np.asarray(scores)
        if scores.ndim > 0 and len(scores) != len(flat):
            raise ValueError(
                "The strategy returned a pair whose positions and scores differ in length: return "
                "(positions, scores) with one score per position."
            )
    if n_pool is not None and len(flat) and (flat.min() < 0 or flat.max() >= n_pool):
        raise ValueError(f"The strategy returned positions outside the pool of {n_pool} pairs.")
    uniq, counts = np.unique(flat, return_counts=True)
    if (counts > 1).any():
        twice = uniq[counts > 1].tolist()
        if duplicates == "raise":
            raise ValueError(f"The strategy returned a position more than once ({twice}).")
        warnings.warn(
            f"The strategy returned positions {twice} more than once: their rows are returned as "
            "often as the strategy named them, and teaching them all adds those pairs as often.",
            UserWarning,
            stacklevel=3,
        )
    return pos.astype(np.intp), scores


def unpack_query(result: Any, n_pool: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Split a strategy's return value into ``(positions, scores)``.

    Parameters
    ----------
    result : tuple or array-like
        A ``(positions, scores)`` pair (modAL 0.4.2.1, skrisk) or positions alone (modAL 0.4.1).
    n_pool : int, optional
        The pool's size: positions outside ``[0, n_pool)`` are an error.

    Returns
    -------
    positions : ndarray of shape (n_instances,)
        Distinct integer positions (a single position becomes a 1-element array).
    scores : ndarray or None
        One score per position, or None when the strategy returned positions alone.

    Raises
    ------
    TypeError
        Positions that are not integers.
    ValueError
        A position twice, a position outside the pool, or a pair whose parts differ in length
        (rather than a silent misreading).
    """
    pos, scores = _check_positions(*_split_result(result), n_pool, duplicates="raise")
    return np.atleast_1d(pos), None if scores is None else np.asarray(scores)
