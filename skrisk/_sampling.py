"""Stratified sampling without replacement: the one helper behind every class-preserving subset."""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["stratified_choice"]


def stratified_choice(
    y: np.ndarray, size: Callable[[int, int], int], rng: np.random.RandomState
) -> np.ndarray:
    """Sorted positions of ``y``: ``size(cls, n_cls)`` drawn without replacement from each class.

    The classes 0 and 1 are drawn in that order from ``rng``, so a seeded call always returns the
    same positions.

    Examples
    --------
    >>> y = np.array([0, 0, 0, 0, 1, 1])
    >>> stratified_choice(y, lambda cls, n: n // 2, np.random.RandomState(0)).tolist()
    [2, 3, 4]
    """
    y = np.asarray(y)
    keep = []
    for cls in (0, 1):
        idx = np.flatnonzero(y == cls)
        keep.append(rng.choice(idx, size=size(cls, len(idx)), replace=False))
    return np.sort(np.concatenate(keep))
