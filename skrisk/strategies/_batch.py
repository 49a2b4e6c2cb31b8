"""Risk sampling's batch selectors: the selection step of the paper (eq. 6 weights and the
weighted k-medoids problem of eq. 7) and its two alternatives, as small objects.

A selector chooses a batch from arrays: the pool's risks, its representations and the labelled
pairs' representations. Scoring (the matcher's probabilities, LearnRisk's risk) stays with the
callers, as in modAL's ``uncertainty.py`` (scores) and ``selection.py`` (selectors):
:class:`~skrisk.RiskSampler` and the streamed and Dask queries of :mod:`skrisk.pools` score,
then hand the arrays to the same selector.

The selector contract: ``select(risk, rep_pool, rep_lab, n_instances, *, proba=None,
random_state=None) -> BatchSelection`` and a ``needs_representation`` attribute (whether
``rep_pool`` and ``rep_lab`` are read).
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from .._device import resolve_device
from .._params import Interval, Options, validate_params
from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import DataError
from ..kmedoids import KMedoidsResult, weighted_fastpam
from ..kmedoids._sample import representative_sample
from ._selection import kmeanspp_seeding, lipschitz_weights, min_distances, top_k

__all__ = ["BadgeSelector", "BatchSelection", "KMedoidsSelector", "TopKSelector"]

#: Added to the distance of eq. 6.
_EPS = 1e-8


@dataclass(frozen=True)
class BatchSelection:
    """What a selector chose.

    Attributes
    ----------
    positions : ndarray of intp, shape (n_instances,)
        The chosen rows of the pool arrays, riskiest first.
    weights : ndarray of float64, shape (n_pool,)
        The weight of every pool row (see the selector's ``weighting``).
    kmedoids : KMedoidsResult or None
        The kernel's result (:class:`KMedoidsSelector` only). Its indices count the labelled
        rows first, then the candidates.
    timings : dict of str to float
        Wall seconds of ``"weights"`` and of the selection: ``"sample"`` (only when the
        candidates were more than ``max_pool``) and ``"kmedoids"``, ``"kmeanspp"`` (BADGE).
    """

    positions: IntArray
    weights: FloatArray
    kmedoids: KMedoidsResult | None
    timings: dict[str, float] = field(default_factory=dict)


_DEVICE = [None, str, torch.device]
_FLOOR = [Options(str, {"auto"}), Interval(numbers.Real, 0, None)]


def _check_widths(rep_pool: np.ndarray | None, rep_lab: np.ndarray | None, who: str) -> None:
    if rep_pool is None or np.ndim(rep_pool) != 2:
        raise ValueError(f"{who} needs the pool's representations (a 2-D array), got "
                         f"{'None' if rep_pool is None else np.shape(rep_pool)}.")
    if rep_lab is not None and len(rep_lab) and np.shape(rep_lab)[1] != np.shape(rep_pool)[1]:
        raise DataError(
            f"The representations of the labelled pairs ({np.shape(rep_lab)[1]} wide) and of the pool "
            f"({np.shape(rep_pool)[1]}) differ: score both with the same matcher."
        )


def _weights(selector: Any, risk: FloatArray, rep_pool: Any, rep_lab: Any, timings: dict) -> FloatArray:
    """The weight of every pool row by ``selector.weighting``: eq. 6's Lipschitz estimate
    ``R_i / min_j ||x_i - x_j||`` over the labelled rows (the risk alone while none is labelled),
    the risk, or 1."""
    start = time.perf_counter()
    n_lab = 0 if rep_lab is None else len(rep_lab)
    if selector.weighting == "unit":
        weights = np.ones_like(risk)
    elif selector.weighting == "risk" or n_lab == 0:
        weights = risk.copy()
    else:
        _check_widths(rep_pool, rep_lab, type(selector).__name__)
        d_lab = min_distances(rep_pool, rep_lab, device=resolve_device(selector.device), dtype=torch.float64)
        weights = lipschitz_weights(risk, d_lab, eps=_EPS, distance_floor=selector.distance_floor)
    timings["weights"] = time.perf_counter() - start
    return weights


def _riskiest_first(positions: np.ndarray, risk: FloatArray) -> np.ndarray:
    return positions[np.argsort(-risk[positions], kind="stable")]


class _Selector(BaseEstimator):
    """The selector contract's checks, shared by skrisk's selectors."""

    #: Whether :meth:`select` reads the representations.
    needs_representation = True

    def select(self, risk: FloatArray, rep_pool: np.ndarray | None, rep_lab: np.ndarray | None,
               n_instances: int, *, proba: FloatArray | None = None,
               random_state: RandomStateLike = None) -> BatchSelection:
        """The batch of ``n_instances`` pool rows (see the class for its order).

        Parameters
        ----------
        risk : ndarray of shape (n_pool,)
            The risk of every pool row (LearnRisk's VaR, or the uncertainty ``min(p, 1 - p)``).
        rep_pool : ndarray of shape (n_pool, h) or None
            The pool's representations (the input of the matcher's output layer, its
            ``represent``); None only where the selector reads none.
        rep_lab : ndarray of shape (n_labelled, h) or None
            The labelled rows' representations (0 rows or None: nothing is labelled).
        n_instances : int
            Batch size (at most ``n_pool``).
        proba : ndarray of shape (n_pool,), optional
            The matcher's match probability of every pool row (read by :class:`BadgeSelector`).
        random_state : int, RandomState instance or None, default=None
            Seeds the tie-breaks and the selection's random choices.

        Returns
        -------
        BatchSelection
        """
        validate_params(self)
        risk = np.asarray(risk, dtype=np.float64)
        if risk.ndim != 1:
            raise ValueError(f"{type(self).__name__}.select: risk must be 1-D, got shape {risk.shape}.")
        if isinstance(n_instances, bool) or not isinstance(n_instances, numbers.Integral) \
                or not 1 <= n_instances <= len(risk):
            raise ValueError(f"{type(self).__name__}.select: n_instances must be an int in [1, {len(risk)}] "
                             f"(the pool's rows), got {n_instances!r}.")
        return self._select(risk, rep_pool, rep_lab, n_instances, proba, random_state, {})

    def candidates(self, n_instances: int) -> int | None:
        """How many of the riskiest pool rows the selection works over (None: the whole pool).

        Parameters
        ----------
        n_instances : int
            Batch size.

        Returns
        -------
        int or None
        """
        return None


class KMedoidsSelector(_Selector):
    """The paper's selection: weighted k-medoids with the labelled pairs as fixed medoids.

    1. weights every pool row (``weighting``): eq. 6's Lipschitz estimate
       ``L_i = R_i / min_{j in L} ||x_i - x_j||``, guarded against zero distance (see
       ``distance_floor``);
    2. keeps the ``ceil(preselect * n)`` riskiest rows as candidates once the labelled set holds
       more than ``preselect_after`` rows;
    3. replaces more than ``max_pool`` candidates by a weight-proportional representative sample;
    4. solves the weighted k-medoids problem (eq. 7) over the labelled rows (fixed medoids,
       weight 0) and the candidates with weighted fastPAM
       (:func:`~skrisk.kmedoids.weighted_fastpam`).

    Parameters
    ----------
    weighting : {"lipschitz", "risk", "unit"}, default="lipschitz"
        Point weights: eq. 6, the risk alone (no distance term), or 1 (pure coverage).
    preselect : float or None, default=2
        Solve the problem over only the ``ceil(preselect * n)`` pool rows of highest risk, so the
        batch is spread over the riskiest pairs instead of the whole pool. None: the whole pool,
        as in the paper. Must be >= 1 (1 is top-n by risk).
    preselect_after : int or "batch", default="batch"
        Preselect only when the labelled set holds more than this many rows; until then the
        whole pool is used. ``"batch"``: more than ``n``, the batch size, so that the first query
        from a seed set of one batch spreads over the whole pool. 0: always.
    max_pool : int or None, default=20000
        The most candidates the problem is solved over. More candidates are replaced by a sample
        of ``max(max_pool, 2 * n)`` of them drawn with probability proportional to their weight,
        the heaviest with certainty, each re-weighted by ``w_i / pi_i`` so that the sample's
        total deviation estimates the whole set's (CLARA's idea with Horvitz-Thompson weights,
        ``representative_sample``). The kernel's swap phase grows with the
        square of its input, so the cap bounds a query's time on large pools. None: no cap.
    distance_floor : float or "auto", default="auto"
        A pool row's distance to the labelled set is raised to at least this value, so no
        weight exceeds ``R_i / distance_floor``. ``"auto"``: 1 % of the median distance of the
        pool to the labelled set. A pool row whose representation coincides with a labelled
        row's (distance 0, up to float64 rounding) gets weight 0: in eq. 7 that labelled row
        already covers it at cost 0.
    device : str, torch.device or None, default="auto"
        Device of the distances and the kernel; ``"auto"`` a GPU when there is one.

    See Also
    --------
    BadgeSelector : risk-weighted BADGE.
    TopKSelector : the ``n`` largest weights.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.strategies import KMedoidsSelector
    >>> rep = np.array([[0.0], [1.0], [2.0], [10.0], [11.0]], dtype=np.float32)
    >>> risk = np.array([0.1, 0.5, 0.4, 0.3, 0.2])
    >>> selector = KMedoidsSelector(preselect=None, device="cpu")
    >>> selector.select(risk, rep, rep[:1], 2, random_state=0).positions.tolist()
    [1, 3]
    """

    _parameter_constraints: dict = {
        "weighting": [Options(str, {"lipschitz", "risk", "unit"})],
        "preselect": [None, Interval(numbers.Real, 1, None)],
        "preselect_after": [Options(str, {"batch"}), Interval(numbers.Integral, 0, None)],
        "max_pool": [None, Interval(numbers.Integral, 1, None)],
        "distance_floor": _FLOOR,
        "device": _DEVICE,
    }

    def __init__(self, *, weighting: str = "lipschitz", preselect: float | None = 2,
                 preselect_after: int | str = "batch", max_pool: int | None = 20_000,
                 distance_floor: float | str = "auto", device: Any = "auto") -> None:
        self.weighting = weighting
        self.preselect = preselect
        self.preselect_after = preselect_after
        self.max_pool = max_pool
        self.distance_floor = distance_floor
        self.device = device

    def candidates(self, n_instances: int) -> int | None:
        """``max(n, ceil(preselect * n))`` for a batch of ``n``; None with ``preselect=None``."""
        if self.preselect is None:
            return None
        return max(int(n_instances), int(math.ceil(float(self.preselect) * int(n_instances))))

    def _select(self, risk: FloatArray, rep_pool: Any, rep_lab: Any, n_instances: int, proba: Any,
                random_state: RandomStateLike, timings: dict[str, float]) -> BatchSelection:
        weights = _weights(self, risk, rep_pool, rep_lab, timings)
        _check_widths(rep_pool, rep_lab, "KMedoidsSelector")
        n_lab = 0 if rep_lab is None else len(rep_lab)
        cand = np.arange(len(weights))
        after = n_instances if self.preselect_after == "batch" else int(self.preselect_after)
        m = self.candidates(n_instances)
        if m is not None and n_lab > after:
            cand = np.sort(top_k(risk, min(len(weights), m), random_state)[0])
        w_cand = weights[cand]
        cap = None if self.max_pool is None else max(int(self.max_pool), 2 * n_instances)
        if cap is not None and len(cand) > cap:
            start = time.perf_counter()
            sample = representative_sample(w_cand, cap, random_state=random_state)
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
        res = weighted_fastpam(X_all, n_instances, sample_weight=w_all, fixed=np.arange(n_lab) if n_lab else None,
                               device=self.device, random_state=random_state)
        timings["kmedoids"] = time.perf_counter() - start
        pos = cand[np.asarray(res.selected, dtype=np.intp) - n_lab]
        return BatchSelection(_riskiest_first(pos, risk), weights, res, timings)


class BadgeSelector(_Selector):
    """Risk-weighted BADGE: k-means++ seeding on the gradient embeddings, weighted by the risk.

    BADGE's k-means++ seeding (Ash et al. 2020) on the whole pool's gradient embeddings (the
    matcher's representation scaled by its signed uncertainty, ``badge_embedding``), each
    draw's probability multiplied by the pair's weight: the first row the largest
    ``w_i * ||g_i||^2``, each next one drawn with probability proportional to ``w_i * d_i^2``
    (``d_i`` the distance to the rows chosen so far, which takes the place of eq. 6's distance
    term). The labelled rows play no part and nothing is preselected, as in BADGE.

    Parameters
    ----------
    weighting : {"risk", "unit"}, default="risk"
        The draw weights: the risk, or 1 (BADGE itself).
    device : str, torch.device or None, default="auto"
        Device of the seeding; ``"auto"`` a GPU when there is one.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.strategies import BadgeSelector
    >>> rep = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [3.0, 0.5]], dtype=np.float32)
    >>> risk, proba = np.array([0.1, 0.4, 0.3, 0.2]), np.array([0.2, 0.6, 0.5, 0.9])
    >>> BadgeSelector(device="cpu").select(risk, rep, None, 2, proba=proba, random_state=0).positions.shape
    (2,)
    """

    _parameter_constraints: dict = {
        "weighting": [Options(str, {"risk", "unit"})],
        "device": _DEVICE,
    }

    def __init__(self, *, weighting: str = "risk", device: Any = "auto") -> None:
        self.weighting = weighting
        self.device = device

    def _select(self, risk: FloatArray, rep_pool: Any, rep_lab: Any, n_instances: int, proba: Any,
                random_state: RandomStateLike, timings: dict[str, float]) -> BatchSelection:
        start = time.perf_counter()
        weights = np.ones_like(risk) if self.weighting == "unit" else risk.copy()
        timings["weights"] = time.perf_counter() - start
        _check_widths(rep_pool, rep_lab, "BadgeSelector")
        if proba is None or np.shape(proba) != np.shape(risk):
            raise ValueError(
                "BadgeSelector.select needs proba, the match probability of every pool row "
                f"({len(risk)} values), for the BADGE embeddings; got "
                f"{'none' if proba is None else np.shape(proba)}."
            )
        p1 = np.asarray(proba, dtype=np.float64)
        bad = ~(np.isfinite(p1) & (p1 >= 0) & (p1 <= 1))
        if bad.any():
            raise ValueError(
                f"BadgeSelector.select: proba holds {int(bad.sum())} value(s) outside [0, 1] or not finite, "
                f"first at row {int(np.argmax(bad))} ({p1[bad][0]!r}): give the matcher's match probabilities."
            )
        start = time.perf_counter()
        G = badge_embedding(p1, np.asarray(rep_pool))
        pos, _ = kmeanspp_seeding(G, n_instances, check_random_state(random_state), resolve_device(self.device),
                                  weights)
        timings["kmeanspp"] = time.perf_counter() - start
        return BatchSelection(_riskiest_first(pos, risk), weights, None, timings)


class TopKSelector(_Selector):
    """The ``n`` pool rows of largest weight: the risk ranking alone, no spreading.

    Parameters
    ----------
    weighting : {"risk", "lipschitz", "unit"}, default="risk"
        The ranked weights: the risk, eq. 6's Lipschitz estimate (which reads the
        representations, see :class:`KMedoidsSelector`), or 1 (ties broken at random).
    distance_floor : float or "auto", default="auto"
        The guard of eq. 6 with ``weighting="lipschitz"`` (see :class:`KMedoidsSelector`).
    device : str, torch.device or None, default="auto"
        Device of the distances of ``weighting="lipschitz"``.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.strategies import TopKSelector
    >>> TopKSelector().select(np.array([0.1, 0.5, 0.4, 0.3]), None, None, 2, random_state=0).positions.tolist()
    [1, 2]
    """

    _parameter_constraints: dict = {
        "weighting": [Options(str, {"lipschitz", "risk", "unit"})],
        "distance_floor": _FLOOR,
        "device": _DEVICE,
    }

    def __init__(self, *, weighting: str = "risk", distance_floor: float | str = "auto", device: Any = "auto") -> None:
        self.weighting = weighting
        self.distance_floor = distance_floor
        self.device = device

    @property
    def needs_representation(self) -> bool:  # type: ignore[override]
        """Whether the weights read the representations (``weighting="lipschitz"``)."""
        return self.weighting == "lipschitz"

    def candidates(self, n_instances: int) -> int | None:
        """``n_instances`` with ``weighting="risk"`` (the batch is the riskiest rows); None otherwise
        (the weights read the whole pool)."""
        return int(n_instances) if self.weighting == "risk" else None

    def _select(self, risk: FloatArray, rep_pool: Any, rep_lab: Any, n_instances: int, proba: Any,
                random_state: RandomStateLike, timings: dict[str, float]) -> BatchSelection:
        weights = _weights(self, risk, rep_pool, rep_lab, timings)
        pos, _ = top_k(weights, n_instances, random_state)
        return BatchSelection(pos, weights, None, timings)


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


#: The selector of each name a matcher's ``risk_selection`` attribute may give.
SELECTORS: dict[str, type] = {"kmedoids": KMedoidsSelector, "badge": BadgeSelector, "topk": TopKSelector}
