"""Risk sampling's batch selection over arrays: the one implementation of the paper's selection
step (eq. 6 weights and the weighted k-medoids problem of eq. 7), shared by
:class:`~skrisk.RiskSampler` and the streamed and Dask queries of :mod:`skrisk.pools`.

Scoring (the matcher's probabilities, LearnRisk's risk) stays with the callers, as in modAL's
``uncertainty.py`` (scores) and ``selection.py`` (selectors): this module only selects.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.utils import check_random_state

from .._device import resolve_device
from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import DataError
from ..kmedoids import KMedoidsResult, representative_sample, weighted_fastpam
from ._selection import kcenter_greedy, kmeanspp_seeding, lipschitz_weights, min_distances, top_k

__all__ = ["BatchSelection", "select_batch"]


@dataclass(frozen=True)
class BatchSelection:
    """What :func:`select_batch` chose.

    Attributes
    ----------
    positions : ndarray of intp, shape (n_instances,)
        The chosen rows of the pool arrays, riskiest first.
    weights : ndarray of float64, shape (n_pool,)
        The k-medoids weight of every pool row (see ``weighting``).
    kmedoids : KMedoidsResult or None
        The kernel's result (None with ``selection="topk"``). Its indices count the labelled
        rows first, then the candidates.
    timings : dict of str to float
        Wall seconds of ``"weights"``, ``"sample"`` (only when the candidates were more than
        ``max_kmedoids_pool``) and ``"kmedoids"``.
    """

    positions: IntArray
    weights: FloatArray
    kmedoids: KMedoidsResult | None
    timings: dict[str, float] = field(default_factory=dict)


def select_batch(
    risk: FloatArray,
    rep_pool: np.ndarray | None,
    rep_lab: np.ndarray | None,
    n_instances: int,
    *,
    weighting: str = "lipschitz",
    selection: str = "kmedoids",
    preselect: float | None = 2,
    preselect_after: int | str = "batch",
    max_kmedoids_pool: int | None = 20_000,
    eps: float = 1e-8,
    distance_floor: float | str = "auto",
    init: str = "heaviest",
    schedule: str = "eager",
    block_size: int = 64,
    device: str = "auto",
    proba: FloatArray | None = None,
    random_state: RandomStateLike = None,
) -> BatchSelection:
    """Risk sampling's batch from the pool's risks and representations (paper eq. 6-7).

    1. weights every pool row: the Lipschitz estimate ``R_i / min_j ||x_i - x_j||`` over the
       labelled rows ``j`` (:func:`lipschitz_weights`), the risk alone, or 1;
    2. with ``selection="topk"``, returns the ``n_instances`` largest weights; else
    3. keeps the ``ceil(preselect * n_instances)`` riskiest rows as candidates once the labelled
       set holds more than ``preselect_after`` rows (``"batch"``: ``n_instances``), replaces more
       than ``max_kmedoids_pool`` candidates by a weight-proportional representative sample
       (:func:`~skrisk.kmedoids.representative_sample`), and
    4. solves the weighted k-medoids problem over the labelled rows (fixed medoids, weight 0)
       and the candidates with :func:`~skrisk.kmedoids.weighted_fastpam`.

    With ``selection="kcenter"`` step 4 is instead core-set's greedy k-center over the candidates
    with the labelled rows as fixed centres, each step taking the largest ``w_i * d_i`` (``d_i``
    the distance to the nearest centre so far; ``"lipschitz"`` is read as ``"risk"``, as its
    distance term is the k-center's own, and ``"unit"`` is core-set itself).

    With ``selection="badge"`` steps 3-4 are instead BADGE's k-means++ seeding on the whole pool's
    gradient embeddings (:func:`badge_embedding`), each draw weighted by the row's risk (by 1 with
    ``weighting="unit"``, which is BADGE itself; ``"lipschitz"`` is read as ``"risk"``: the draw's
    ``d_i^2`` term, the distance to the rows chosen so far, takes the place of eq. 6's distance
    term): the first row the largest ``w_i * ||g_i||^2``, each next one drawn with probability
    proportional to ``w_i * d_i^2`` (Ash et al. 2020, with point weights; the labelled rows play
    no part and nothing is preselected, as in BADGE).

    Parameters
    ----------
    risk : ndarray of shape (n_pool,)
        The risk of every pool row (LearnRisk's VaR, or the uncertainty ``min(p, 1 - p)``).
    rep_pool : ndarray of shape (n_pool, h) or None
        The pool's representations; None only with ``selection="topk"`` and a ``weighting``
        other than ``"lipschitz"``. With ``selection="badge"``: the input of the matcher's
        output layer (its ``represent``).
    rep_lab : ndarray of shape (n_labelled, h) or None
        The labelled rows' representations (may have 0 rows: the weights are then the risks).
    n_instances : int
        Batch size (at most ``n_pool``).
    weighting, selection, preselect, preselect_after, max_kmedoids_pool, eps, distance_floor, \
init, schedule, block_size, device
        As :class:`~skrisk.RiskSampler`'s parameters of the same names (which it passes here).
    proba : ndarray of shape (n_pool,), optional
        The matcher's match probability of every pool row; needed by ``selection="badge"``.
    random_state : int, RandomState instance or None, default=None
        Seeds the tie-breaks of the preselection and the top-k, the representative sample and
        the kernel.

    Returns
    -------
    BatchSelection

    Raises
    ------
    DataError
        The representations of the pool and of the labelled rows differ in width.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.strategies import select_batch
    >>> rep = np.array([[0.0], [1.0], [2.0], [10.0], [11.0]], dtype=np.float32)
    >>> risk = np.array([0.1, 0.5, 0.4, 0.3, 0.2])
    >>> out = select_batch(risk, rep, np.array([[0.0]], dtype=np.float32), 2, preselect=None,
    ...                    device="cpu", random_state=0)
    >>> out.positions.tolist()
    [1, 3]
    """
    risk = np.asarray(risk, dtype=np.float64)
    timings: dict[str, float] = {}
    n_lab = 0 if rep_lab is None else len(rep_lab)
    start = time.perf_counter()
    if weighting == "unit":
        weights = np.ones_like(risk)
    elif weighting == "risk" or n_lab == 0 or selection in ("badge", "kcenter"):
        weights = risk.copy()
    else:
        _check_widths(rep_pool, rep_lab)
        d_lab = min_distances(rep_pool, rep_lab, device=resolve_device(device), dtype=torch.float64)
        weights = lipschitz_weights(risk, d_lab, eps=eps, distance_floor=distance_floor)
    timings["weights"] = time.perf_counter() - start

    if selection == "topk":
        pos, _ = top_k(weights, n_instances, random_state)
        return BatchSelection(pos, weights, None, timings)
    _check_widths(rep_pool, rep_lab)
    if selection == "badge":
        if proba is None or np.shape(proba) != np.shape(risk):
            raise ValueError(
                "select_batch(selection='badge') needs proba, the match probability of every pool "
                f"row ({len(risk)} values), for the BADGE embeddings; got "
                f"{'none' if proba is None else np.shape(proba)}."
            )
        p1 = np.asarray(proba, dtype=np.float64)
        bad = ~(np.isfinite(p1) & (p1 >= 0) & (p1 <= 1))
        if bad.any():
            raise ValueError(
                f"select_batch: proba holds {int(bad.sum())} value(s) outside [0, 1] or not finite, first "
                f"at row {int(np.argmax(bad))} ({p1[bad][0]!r}): give the matcher's match probabilities."
            )
        start = time.perf_counter()
        G = badge_embedding(p1, np.asarray(rep_pool))
        pos, _ = kmeanspp_seeding(G, n_instances, check_random_state(random_state), resolve_device(device),
                                  weights)
        timings["kmeanspp"] = time.perf_counter() - start
        order = np.argsort(-risk[pos], kind="stable")
        return BatchSelection(pos[order], weights, None, timings)
    cand = np.arange(len(weights))
    after = n_instances if preselect_after == "batch" else int(preselect_after)
    if preselect is not None and n_lab > after:
        m = min(len(weights), max(n_instances, int(np.ceil(float(preselect) * n_instances))))
        cand = np.sort(top_k(risk, m, random_state)[0])
    if selection == "kcenter":
        start = time.perf_counter()
        dev = resolve_device(device)
        rep_cand = np.asarray(rep_pool)[cand]
        d_lab = min_distances(rep_cand, np.asarray(rep_lab).reshape(n_lab, -1) if n_lab else rep_cand[:0],
                              device=dev, dtype=torch.float64)
        pos, _ = kcenter_greedy(rep_cand, d_lab, n_instances, check_random_state(random_state), dev,
                                weights[cand])
        timings["kcenter"] = time.perf_counter() - start
        pos = cand[pos]
        order = np.argsort(-risk[pos], kind="stable")
        return BatchSelection(pos[order], weights, None, timings)
    w_cand = weights[cand]
    if max_kmedoids_pool is not None and len(cand) > max(int(max_kmedoids_pool), 2 * n_instances):
        start = time.perf_counter()
        sample = representative_sample(w_cand, max(int(max_kmedoids_pool), 2 * n_instances),
                                       random_state=random_state)
        cand, w_cand = cand[sample.positions], sample.weights
        timings["sample"] = time.perf_counter() - start
    rep_cand = np.asarray(rep_pool)[cand]
    X_all = np.concatenate([np.asarray(rep_lab).reshape(n_lab, -1), rep_cand], axis=0) if n_lab else rep_cand
    w_all = np.concatenate([np.zeros(n_lab), w_cand])
    if not np.any(w_all > 0):  # nothing at risk: fall back to unit weights (pure coverage)
        w_all[n_lab:] = 1.0
    # weights below 1e-15 of the largest are 0 to the float32 kernel, which refuses such a
    # range rather than search blind: a pair with 1e-15 of the top weight counts as no risk
    w_all[w_all < w_all.max() * 1e-15] = 0.0
    start = time.perf_counter()
    res = weighted_fastpam(
        X_all, n_instances, sample_weight=w_all, fixed=np.arange(n_lab) if n_lab else None,
        init=init, schedule=schedule, block_size=block_size, device=device, random_state=random_state,
    )
    timings["kmedoids"] = time.perf_counter() - start
    pos = cand[np.asarray(res.selected, dtype=np.intp) - n_lab]
    order = np.argsort(-risk[pos], kind="stable")
    return BatchSelection(pos[order], weights, res, timings)


def badge_embedding(proba: FloatArray, rep: np.ndarray) -> np.ndarray:
    """BADGE's gradient embedding in its compact form: ``a_i * h_i``.

    For a 2-class softmax output layer on ``h``, the loss gradient at the predicted label
    ``(p - onehot(yhat)) outer h`` is ``a * [h, -h]`` with ``a = p_0 - [yhat = 0]``; the compact
    ``a * h`` keeps its geometry (every distance and norm divided by ``sqrt(2)``).

    Parameters
    ----------
    proba : ndarray of shape (n,)
        Match probabilities ``p_1``; ``yhat = 1`` where ``p_1 > 0.5``.
    rep : ndarray of shape (n, h)
        The input of the output layer.

    Returns
    -------
    ndarray of float32, shape (n, h)

    Examples
    --------
    >>> import numpy as np
    >>> badge_embedding(np.array([0.25, 0.75]), np.array([[2.0], [2.0]])).tolist()
    [[-0.5], [0.5]]
    """
    p1 = np.asarray(proba, dtype=np.float64)
    a = np.where(p1 > 0.5, 1.0 - p1, -p1)
    return (a[:, None] * np.asarray(rep, dtype=np.float64)).astype(np.float32)


def _check_widths(rep_pool: np.ndarray | None, rep_lab: np.ndarray | None) -> None:
    if rep_pool is None or np.ndim(rep_pool) != 2:
        raise ValueError(
            "select_batch needs the pool's representations (a 2-D array) for k-medoids selection "
            "or Lipschitz weights."
        )
    if rep_lab is not None and len(rep_lab) and np.shape(rep_lab)[1] != np.shape(rep_pool)[1]:
        raise DataError(
            f"The representations of the labelled pairs ({np.shape(rep_lab)[1]} wide) and of the pool "
            f"({np.shape(rep_pool)[1]}) differ: score both with the same matcher."
        )
