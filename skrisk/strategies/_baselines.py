"""The paper's baseline query strategies under one contract.

Every strategy is ``f(learner, X_pool, n_instances=1, *, random_state=None, **kw)`` and returns
``(positions, scores)``: integer positions into ``X_pool`` (distinct, ``n_instances`` of them) and
the score each was chosen by. ``learner`` is a modAL learner (or skrisk's
:class:`~skrisk.active.ActiveLearner`) whose ``estimator`` is a fitted matcher; the labelled set is
``learner.X_training``. Pool rows are addressed by position only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from .._device import resolve_device
from .._rows import num_rows, take_rows
from .._typing import FloatArray, IntArray, RandomStateLike
from ..matchers._base import require
from ._selection import (
    check_query,
    checked_finite,
    kcenter_greedy,
    kmeanspp_seeding,
    labelled_pool,
    min_distances,
    proba_function,
    top_k,
)

__all__ = [
    "random_sampling",
    "entropy_sampling",
    "bald_sampling",
    "coreset_sampling",
    "egl_sampling",
    "badge_sampling",
    "entropy",
]

_EPS = 1e-12


def entropy(proba: FloatArray, axis: int = -1) -> FloatArray:
    """Shannon entropy (nats) of probability vectors along ``axis``."""
    p = np.clip(np.asarray(proba, dtype=np.float64), _EPS, 1.0)
    return -(p * np.log(p)).sum(axis=axis)


def random_sampling(
    learner: Any, X_pool: Any, n_instances: int = 1, *, random_state: RandomStateLike = None, **kw: Any
) -> tuple[IntArray, FloatArray]:
    """Uniformly random positions (needs nothing from the matcher).

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.strategies import random_sampling
    >>> pos, _ = random_sampling(None, np.zeros((10, 2)), n_instances=3, random_state=0)
    >>> len(set(pos.tolist()))
    3
    """
    n_pool = check_query(X_pool, n_instances, "random_sampling", learner)
    rng = check_random_state(random_state)
    pos = rng.choice(n_pool, size=n_instances, replace=False).astype(np.intp)
    return pos, np.zeros(n_instances)


def entropy_sampling(
    learner: Any, X_pool: Any, n_instances: int = 1, *, random_state: RandomStateLike = None, **kw: Any
) -> tuple[IntArray, FloatArray]:
    """Maximum entropy of the matcher's class probabilities."""
    check_query(X_pool, n_instances, "entropy_sampling", learner)
    proba = proba_function(learner, "entropy_sampling")(X_pool)
    return top_k(entropy(proba), n_instances, random_state)


def bald_sampling(
    learner: Any,
    X_pool: Any,
    n_instances: int = 1,
    *,
    random_state: RandomStateLike = None,
    n_iter: int = 20,
    **kw: Any,
) -> tuple[IntArray, FloatArray]:
    """BALD (Houlsby et al. 2011; Gal et al. 2017) with MC dropout: H[mean p] - mean H[p]."""
    check_query(X_pool, n_instances, "bald_sampling", learner)
    if n_iter < 2:
        raise ValueError(f"bald_sampling: n_iter must be at least 2 MC passes, got {n_iter}.")
    mc = proba_function(learner, "bald_sampling", "mc_dropout")(X_pool, n_iter=n_iter, random_state=random_state)
    if mc.ndim != 3:
        raise ValueError(
            f"bald_sampling: {type(getattr(learner, 'estimator', learner)).__name__}.predict_proba_mc "
            f"returned shape {mc.shape}, expected (n_iter, n_pool, 2); fix or replace the matcher."
        )
    score = entropy(mc.mean(0)) - entropy(mc).mean(0)
    return top_k(score, n_instances, random_state)


def _representations(learner: Any, X_pool: Any, strategy: str, transform: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Representations of the pool and of the labelled set (empty if none)."""
    represent = transform if transform is not None else require(learner, "representation", strategy)
    method = "represent" if transform is None else "transform"
    pool = checked_finite(represent(X_pool), learner, strategy, method, n_rows=num_rows(X_pool)).astype(np.float32)
    X_lab = labelled_pool(learner)
    if X_lab is None or num_rows(X_lab) == 0:
        lab = np.zeros((0, pool.shape[1]), dtype=np.float32)
    else:
        lab = checked_finite(represent(X_lab), learner, strategy, method, what="the labelled pairs",
                             n_rows=num_rows(X_lab)).astype(np.float32)
    return pool, lab


def coreset_sampling(
    learner: Any,
    X_pool: Any,
    n_instances: int = 1,
    *,
    random_state: RandomStateLike = None,
    transform: Any = None,
    device: str | None = "auto",
    **kw: Any,
) -> tuple[IntArray, FloatArray]:
    """Core-set (Sener & Savarese 2018): k-center greedy on the representations, labelled set fixed.

    Each step takes the pool pair farthest from every centre so far (the labelled pairs and the
    pairs chosen before it). Ties go to a seeded random order. O(n_instances * n * d) time.
    """
    check_query(X_pool, n_instances, "coreset_sampling", learner)
    pool, lab = _representations(learner, X_pool, "coreset_sampling", transform)
    dev = resolve_device(device)
    return kcenter_greedy(pool, min_distances(pool, lab, device=dev), n_instances, check_random_state(random_state),
                          dev)


def egl_sampling(
    learner: Any,
    X_pool: Any,
    n_instances: int = 1,
    *,
    random_state: RandomStateLike = None,
    subsample: int | None = None,
    **kw: Any,
) -> tuple[IntArray, FloatArray]:
    """Expected gradient length (Settles et al. 2008; Huang et al. 2016) of the last layer.

    ``subsample``: score only a seeded random subset of that many pool pairs (the paper does
    this for speed); positions still index the whole pool.
    """
    n_pool = check_query(X_pool, n_instances, "egl_sampling", learner)
    egl = require(learner, "expected_gradient_length", "egl_sampling")
    rng = check_random_state(random_state)
    if subsample is not None and subsample < n_pool:
        if subsample < n_instances:
            raise ValueError(
                f"egl_sampling: subsample={subsample} is smaller than n_instances={n_instances}."
            )
        cand = np.sort(rng.choice(n_pool, size=subsample, replace=False)).astype(np.intp)
        scores = checked_finite(egl(take_rows(X_pool, cand)), learner, "egl_sampling",
                                "expected_gradient_length", n_rows=len(cand))
        pos, sc = top_k(scores, n_instances, rng)
        return cand[pos], sc
    scores = checked_finite(egl(X_pool), learner, "egl_sampling", "expected_gradient_length", n_rows=n_pool)
    return top_k(scores, n_instances, rng)


def badge_sampling(
    learner: Any,
    X_pool: Any,
    n_instances: int = 1,
    *,
    random_state: RandomStateLike = None,
    device: str | None = "auto",
    **kw: Any,
) -> tuple[IntArray, FloatArray]:
    """BADGE (Ash et al. 2020): k-means++ seeding on last-layer gradient embeddings.

    The first pair is the one with the largest gradient norm; each next one is drawn with
    probability proportional to its squared distance to the nearest chosen pair (seeded).
    """
    n_pool = check_query(X_pool, n_instances, "badge_sampling", learner)
    G = checked_finite(require(learner, "gradient_embedding", "badge_sampling")(X_pool), learner,
                       "badge_sampling", "gradient_embedding", n_rows=n_pool).astype(np.float32)
    return kmeanspp_seeding(G, n_instances, check_random_state(random_state), resolve_device(device))
