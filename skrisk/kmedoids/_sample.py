"""A weight-stratified sample of a large pool for the k-medoids stage (CLARA's idea, with weights).

Weighted k-medoids over the whole pool costs ``O(n^2)`` per pass of the swap phase; over a sample
of ``s`` points it costs ``O(s^2)``. :func:`representative_sample` draws the sample so that, for any
fixed set of medoids, the sample's weighted total deviation is an unbiased (Horvitz-Thompson)
estimate of the pool's: probability proportional to weight, the heaviest points taken with
certainty, and every sampled point re-weighted by ``w_i / pi_i``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from skrisk._params import Interval, validate_call
from skrisk._typing import FloatArray, IntArray, RandomStateLike

__all__ = ["RepresentativeSample", "representative_sample"]


@dataclass(frozen=True)
class RepresentativeSample:
    """Result of :func:`representative_sample`.

    Attributes
    ----------
    positions : ndarray of intp, shape (size,)
        Positions of the sampled points in the input, ascending.
    weights : ndarray of float64, shape (size,)
        Their re-scaled weights ``w_i / pi_i``: a certain point keeps its weight, every other
        sampled point gets ``sum of the uncertain weights / their sample size``.
    inclusion : ndarray of float64, shape (size,)
        Their inclusion probabilities ``pi_i`` (1 for the certain points).
    n_certain : int
        How many of them were taken with certainty (their weight alone would have earned them
        an inclusion probability of at least 1).
    """

    positions: IntArray
    weights: FloatArray
    inclusion: FloatArray
    n_certain: int


@validate_call({"size": [Interval(numbers.Integral, 1, None)], "random_state": ["random_state"]})
def representative_sample(
    weights: FloatArray, size: int, *, random_state: RandomStateLike = None
) -> RepresentativeSample:
    """Draw ``size`` points with probability proportional to weight, to stand in for all of them.

    Inclusion probabilities are ``pi_i = min(1, c * w_i)`` with ``c`` such that they sum to
    ``size`` (the points with ``pi_i = 1`` are taken with certainty: the heaviest ones). The
    others are drawn by systematic sampling in order of decreasing weight, with one random start,
    which stratifies the sample by weight: every band of the weight ranking that holds a total
    inclusion of ``1`` gives exactly one point, so light points are represented in proportion to
    their total weight, not to their number. Points of weight 0 are never drawn (they add nothing
    to a weighted total deviation), unless every weight is 0: then every point counts as weight 1
    (a uniform sample of coverage).

    Re-weighted by ``w_i / pi_i``, the sample's weighted total deviation
    ``sum_{i in sample} (w_i / pi_i) d_i`` is an unbiased estimate of the pool's
    ``sum_i w_i d_i`` for any fixed medoid set (Horvitz-Thompson), which is what weighted
    k-medoids over the sample then minimises.

    Parameters
    ----------
    weights : array-like of shape (n,)
        Non-negative finite weights (the k-medoids weights of the pool).
    size : int
        Sample size, ``>= 1``. When at most ``size`` points have a positive weight, all of those
        are returned with their own weights (nothing to sample).
    random_state : int, RandomState instance or None, default=None
        Seeds the systematic sample's random start and the order among equal weights.

    Returns
    -------
    RepresentativeSample
        ``positions`` (ascending), re-scaled ``weights``, ``inclusion`` probabilities and
        ``n_certain``.

    Raises
    ------
    ValueError
        ``weights`` not 1-D, negative, NaN or infinite; ``size`` below 1.
    TypeError
        ``size`` not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.kmedoids._sample import representative_sample
    >>> w = np.array([100.0, 1, 1, 1, 1, 1, 1, 1, 1, 0])
    >>> s = representative_sample(w, 3, random_state=0)
    >>> s.n_certain, int(s.positions[0]), s.weights.tolist()
    (1, 0, [100.0, 4.0, 4.0])
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"weights must be 1-D, got shape {w.shape}.")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and non-negative.")
    if not (w > 0).any():
        w = np.ones_like(w)
    positive = np.flatnonzero(w > 0)
    if len(positive) <= size:
        return RepresentativeSample(positions=positive.astype(np.intp), weights=w[positive].copy(),
                                    inclusion=np.ones(len(positive)), n_certain=len(positive))
    rng = check_random_state(random_state)
    tie = rng.permutation(len(positive))
    order = positive[np.lexsort((tie, -w[positive]))]  # heaviest first, ties in a seeded order
    ws = w[order]
    tail = np.cumsum(ws[::-1])[::-1]  # tail[i] = sum of ws[i:]
    n_certain = 0
    while True:  # points whose c * w_i reaches 1 are certain; c grows as they leave, so repeat
        c = (size - n_certain) / tail[n_certain]
        more = int(np.count_nonzero(ws[n_certain:] * c >= 1.0))
        if more == 0:
            break
        n_certain += more
        if n_certain >= size:  # cannot happen with len(positive) > size, but stay in range
            n_certain = size
            break
    k = size - n_certain
    picked = [np.arange(n_certain)]
    pi_rest = np.empty(0)
    if k > 0:
        pi = ws[n_certain:] * c
        cum = np.cumsum(pi)
        cum *= k / cum[-1]  # exactly k in float arithmetic
        points = rng.uniform() + np.arange(k)
        idx = np.minimum(np.searchsorted(cum, points, side="right"), len(pi) - 1)
        picked.append(n_certain + idx)
        pi_rest = pi[idx]
    sel = np.concatenate(picked)
    incl = np.concatenate([np.ones(n_certain), pi_rest])
    pos = order[sel]
    srt = np.argsort(pos, kind="stable")
    pos, incl = pos[srt], incl[srt]
    return RepresentativeSample(positions=pos.astype(np.intp), weights=w[pos] / incl, inclusion=incl,
                                n_certain=n_certain)
