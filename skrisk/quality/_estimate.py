"""Audit samples drawn by importance sampling, and the estimates and threshold they give.

The matcher's precision, recall and F1 on a whole candidate set are ratios of three totals over
the pairs, TP = sum d y, FP = sum d (1 - y) and FN = sum (1 - d) y (``d`` the matcher's decision,
``y`` the truth). :func:`audit_sample` draws ``n`` pairs *with replacement*, pair ``i`` with a
known probability ``q_i``; the Hansen-Hurwitz weight ``w_i = 1 / (N q_i)`` makes
``sum_j w_j f(j) / n`` an unbiased estimate of the mean of any ``f`` over the ``N`` pairs, so the
weighted totals, and therefore the ratio estimates of precision, recall and F1, are consistent
whatever the sampling design. :func:`audit_sample` aims the draws the way OASIS does (the
instrumental distribution that minimises the F1 estimate's asymptotic variance), with the
probability that a pair is a match taken from LearnRisk's risk (``"risk"``) or from the matcher's
score (``"score"``); a uniform floor ``epsilon / N`` in every ``q_i`` bounds every weight by
``1 / epsilon``.

Each of the three measures is a weighted proportion: precision the share of true matches among
the predicted ones (weights ``w d``), recall the share of predicted among the true matches
(weights ``w y``), and F1 = 2 TP / (2 TP + FP + FN) the share of "both" among units weighted
``w (d + y)``. Its interval is a Wilson score interval at the effective sample size given by the
linearised (delta-method) variance of the with-replacement ratio estimator. When every audited
pair of the domain agrees (an estimate of 0 or 1), that variance is 0; the effective size is then
the domain's weight counted in units of the mean weight of the draws where the unseen outcome
could occur (at most Kish's effective size), so a rare, heavily weighted kind of error that the
audit missed still widens the interval.

A small audit is skewed: the pairs that pull an estimate down (a missed match among the
predicted non-matches, drawn rarely and weighted heavily) are usually absent, so the plain
interval sits too high (its 90 % F1 interval covers the truth less often than 90 % of the time
on a few dozen answers). Each end is therefore also computed with one imagined draw more
that shows the outcome pulling that end outwards (a non-match for the low end, a match for the
high end), weighted at :data:`PSEUDO_DRAW` times the mean weight of the audited pairs of its kind,
and the interval is the hull of both; the effect fades as the audit grows. The share 0.3 brings
the coverage of a small audit close to its nominal level without widening a large audit's interval
noticeably (see the benchmarks in the documentation).

Given the matcher's probability of every candidate (``proba_all``), :func:`estimate_quality` is
model-assisted: the number of predicted matches is then known, and TP and FN are each the
calibrated model's total over its domain plus the audit's Hansen-Hurwitz estimate of the residuals
there (a difference estimator, the idea of prediction-powered inference [3]_). The residual term
keeps it consistent whatever the model; the model narrows the intervals where it predicts the
answers. Where the audit never
showed the model wrong in a domain (no false match drawn among the predicted matches), the
residuals cannot say how wrong it may be, and the interval is kept at least as wide as the plain
one. :func:`recalibrate` gives
that calibrated model; aiming later draws with it instead of LearnRisk's risk, as OASIS updates
its match probabilities from the labels it draws, spends them where the missed matches are.

Two decisions audited on the same draws (two thresholds of one matcher, or the matchers of two
rounds) are compared by :func:`compare_f1`: the paired difference of their F1 ratio estimates,
with a delta-method interval and one imagined draw where they differ. :func:`choose_threshold`
moves the F1 threshold away from 0.5 only when that interval's low end is above 0 (on large
candidate sets with few matches, the threshold with the best estimate is mostly luck, and moving to
it can lower the true F1), and the session's stopping advice needs its high end,
over the last rounds, to be small (:func:`~skrisk.quality.confirm_stop`).

References
----------
.. [1] Marchant, N. G. and Rubinstein, B. I. P. "In search of an entity resolution OASIS: optimal
   asymmetric sampling for evaluation", PVLDB 10(11), 2017.
.. [2] Hansen, M. H. and Hurwitz, W. N. "On the theory of sampling from finite populations",
   Ann. Math. Statist. 14(4), 1943.
.. [3] Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. and Zrnic, T.
   "Prediction-powered inference", Science 382(6671), 2023; Angelopoulos, A. N., Duchi, J. C.
   and Zrnic, T. "PPI++: efficient prediction-powered inference", arXiv:2311.01453, 2023.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Union

import numpy as np
import numpy.typing as npt
from scipy.special import expit
from scipy.stats import norm
from sklearn.utils import check_random_state

from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import DataError
from ..matchers._base import MATCH_THRESHOLD

__all__ = [
    "AuditSample",
    "QualityEstimate",
    "ThresholdChoice",
    "audit_design",
    "audit_sample",
    "estimate_quality",
    "more_answers",
    "recalibrate",
]

METHODS = ("risk", "score", "uniform")
RULES = ("no-harm", "one-se")

#: Weight of the imagined extra draw at each end of an interval, as a share of the mean weight of
#: the audited pairs of its kind (see the module notes).
PSEUDO_DRAW = 0.3
#: The same for the model-assisted estimate (see :func:`estimate_quality`).
ASSISTED_PSEUDO_DRAW = 0.1
#: The fewest audited true matches for a model-assisted estimate (with fewer, the plain one).
ASSISTED_MIN_MATCHES = 10
Target = Union[str, Mapping[str, float]]


@dataclass(frozen=True)
class AuditSample:
    """Pairs drawn for an audit, with the probability each draw had.

    Attributes
    ----------
    positions : ndarray of intp, shape (n,)
        The drawn positions into the candidate set, in draw order; a pair may be drawn more than
        once (ask it once and use its answer for every draw).
    probabilities : ndarray of float64, shape (n,)
        ``q_i``: the probability that one draw picks that pair.
    weights : ndarray of float64, shape (n,)
        Importance weights ``1 / (N q_i)`` (1 for a uniform sample, at most ``1 / floor``).
    method : str
        ``"risk"``, ``"score"`` or ``"uniform"``.
    floor : float
        The share of every draw's probability spread uniformly.
    n_population : int
        ``N``, the size of the candidate set.
    """

    positions: IntArray
    probabilities: FloatArray
    weights: FloatArray
    method: str
    floor: float
    n_population: int

    def __len__(self) -> int:
        return int(len(self.positions))


@dataclass(frozen=True)
class QualityEstimate:
    """Estimated precision, recall and F1 of a matcher's decisions, with intervals.

    A measure that the audit cannot estimate (e.g. precision when no audited pair is predicted a
    match) is ``nan`` with the interval ``(0.0, 1.0)``.

    Attributes
    ----------
    precision, recall, f1 : float
        Ratio estimates.
    precision_interval, recall_interval, f1_interval : tuple of float
        ``(low, high)`` at ``confidence``.
    n_audit : int
        Audit draws used.
    n_matches : int
        Audit draws that are true matches.
    threshold : float
        The decision ``p > threshold``.
    confidence : float
    assisted : bool
        Whether the estimate is model-assisted (:func:`estimate_quality` with ``proba_all``
        and at least ``ASSISTED_MIN_MATCHES`` audited matches).
    """

    precision: float
    recall: float
    f1: float
    precision_interval: tuple[float, float]
    recall_interval: tuple[float, float]
    f1_interval: tuple[float, float]
    n_audit: int
    n_matches: int
    threshold: float
    confidence: float
    assisted: bool = False

    def interval(self, measure: str) -> tuple[float, float]:
        """The interval of ``"precision"``, ``"recall"`` or ``"f1"``."""
        if measure not in ("precision", "recall", "f1"):
            raise ValueError(f"measure must be 'precision', 'recall' or 'f1', got {measure!r}.")
        return getattr(self, f"{measure}_interval")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``nan`` becomes ``None``)."""

        def num(v: float) -> float | None:
            return None if not np.isfinite(v) else round(float(v), 4)

        out: dict[str, Any] = {"n_audit": self.n_audit, "n_matches": self.n_matches,
                               "threshold": round(float(self.threshold), 4), "confidence": self.confidence,
                               "assisted": self.assisted}
        for m in ("precision", "recall", "f1"):
            out[m] = num(getattr(self, m))
            out[f"{m}_interval"] = [num(v) for v in self.interval(m)]
        return out

    def text(self) -> str:
        """One line, e.g. ``precision 0.91 (0.84-0.95), recall ... (90 % intervals, 60 audit answers)``."""

        def one(m: str) -> str:
            v = getattr(self, m)
            lo, hi = self.interval(m)
            return f"{m} ?" if not np.isfinite(v) else f"{m} {v:.2f} ({lo:.2f}-{hi:.2f})"

        return (f"{one('precision')}, {one('recall')}, {one('f1').replace('f1', 'F1')} "
                f"({self.confidence:.0%} intervals, {self.n_audit} audit answers"
                f"{', model-assisted' if self.assisted else ''})")


@dataclass(frozen=True)
class ThresholdChoice:
    """A match threshold chosen for a target, with its estimated quality.

    Attributes
    ----------
    threshold : float
        Predict a match iff ``p > threshold``.
    estimate : QualityEstimate
        The audit's estimate at that threshold (optimistic for the measure the choice
        maximised: the same audit chose it and scores it).
    target : str or dict
        What was asked (``"f1"``, ``{"precision": x}`` or ``{"recall": y}``).
    met : bool
        Whether the estimate reaches the target (always true for ``"f1"``).
    candidates : ndarray of float64
        The thresholds that were compared.
    """

    threshold: float
    estimate: QualityEstimate
    target: Target
    met: bool
    candidates: FloatArray = field(repr=False)

    @property
    def precision(self) -> float:
        return self.estimate.precision

    @property
    def recall(self) -> float:
        return self.estimate.recall

    @property
    def f1(self) -> float:
        return self.estimate.f1


# ---------------------------------------------------------------------------------------- checks
def _vector(x: npt.ArrayLike, name: str, *, low: float | None = None, high: float | None = None) -> FloatArray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be an array of numbers ({exc}).") from None
    if a.ndim != 1:
        raise DataError(f"{name} must be one-dimensional, got shape {a.shape}.")
    bad = ~np.isfinite(a)
    if low is not None:
        bad |= a < low
    if high is not None:
        bad |= a > high
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        rng = f" in [{low}, {high}]" if high is not None else (f" >= {low}" if low is not None else "")
        raise DataError(f"{name}[{i}] = {float(a[i])!r} is not a finite number{rng}: every value must be.")
    return a


def _audit_arrays(y_audit: Any, proba_audit: Any, weights: Any) -> tuple[FloatArray, FloatArray, FloatArray]:
    y = _vector(y_audit, "y_audit")
    if not np.isin(y, (0.0, 1.0)).all():
        i = int(np.flatnonzero(~np.isin(y, (0.0, 1.0)))[0])
        raise DataError(f"y_audit[{i}] = {float(y[i])!r}: labels must be 1 (match) or 0 (non-match); leave unsure pairs out.")
    p = _vector(proba_audit, "proba_audit", low=0, high=1)
    w = _vector(weights, "weights", low=0)
    if not len(y) == len(p) == len(w):
        raise DataError(
            f"y_audit, proba_audit and weights must have one value per audit draw, got lengths "
            f"{len(y)}, {len(p)} and {len(w)}."
        )
    if len(w) and (w <= 0).any():
        i = int(np.flatnonzero(w <= 0)[0])
        raise DataError(f"weights[{i}] = {float(w[i])!r}: importance weights must be positive.")
    if len(w) and (_unit(w) <= 0).any():
        i = int(np.flatnonzero(_unit(w) <= 0)[0])
        raise DataError(
            f"weights[{i}] = {float(w[i])!r} is more than 1e308 times smaller than the largest weight "
            f"({float(w.max())!r}): no sampling design gives such weights. Pass the weights of the audit "
            "draws (AuditSample.weights)."
        )
    return y, p, w


def _unit(w: FloatArray) -> FloatArray:
    """The weights divided by the largest: the plain (ratio) estimates do not depend on their
    scale, and in units of the largest weight no sum or square of them overflows or underflows."""
    return w / w.max() if len(w) else w


def _check_design_weights(w: FloatArray, N: int, name: str) -> None:
    """Refuse weights that cannot be the Hansen-Hurwitz weights ``1 / (N q_i)`` of a design over
    ``N`` candidates (the model-assisted estimates use their scale, not only their ratios)."""
    low = np.flatnonzero(w * N < 1 - 1e-9)
    high = np.flatnonzero(w * N > 1e150)
    if len(low) or len(high):
        i = int(low[0]) if len(low) else int(high[0])
        why = (f"is below 1 / N = {1 / N:.6g}, which no draw probability q <= 1 gives" if len(low) else
               "means a draw probability 1 / (N w) below 1e-150, which no design gives")
        raise DataError(
            f"weights[{i}] = {float(w[i])!r} {why}: with {name} (N = {N} candidates) the weights must be the "
            "Hansen-Hurwitz weights 1 / (N q) of the audit draws (AuditSample.weights), not a multiple of "
            f"them. Pass those, or leave out {name} for the plain estimate (which any multiple gives alike)."
        )


def _check_confidence(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}.")
    return float(confidence)


# ---------------------------------------------------------------------------------------- sampling
def _f1_instrumental(d: npt.NDArray[np.bool_], pi: FloatArray) -> FloatArray:
    """Square root of each pair's expected squared influence on the F1 ratio estimate."""
    denom = float(d.sum() + pi.sum())
    f = 2 * float(pi[d].sum()) / denom if denom > 0 else 0.5
    f = min(max(f, 0.05), 0.95)  # a guess of F1; keeps both kinds of pair in the sample
    return np.where(d, np.sqrt(pi * (2 - 2 * f) ** 2 + (1 - pi) * f**2), f * np.sqrt(pi))


def audit_design(
    proba: npt.ArrayLike,
    *,
    risk: npt.ArrayLike | None = None,
    method: str = "risk",
    floor: float = 0.1,
) -> FloatArray:
    """The probability ``q_i`` that one audit draw picks pair ``i``, for every pair.

    The design :func:`audit_sample` draws from (see there); kept apart so that the draws of
    several rounds can be weighted by the mixture of all rounds' designs (the balance heuristic,
    ``w_i = 1 / (N sum_r n_r q_r(i) / sum_r n_r)``).

    Parameters
    ----------
    proba, risk, method, floor
        As in :func:`audit_sample`.

    Returns
    -------
    ndarray of float64, shape (N,)
        Sums to 1; every value at least ``floor / N``.

    Examples
    --------
    >>> q = audit_design([0.9, 0.6, 0.4, 0.1], method="score", floor=0.2)
    >>> round(float(q.sum()), 6), bool(q.min() >= 0.2 / 4)
    (1.0, True)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}.")
    if isinstance(floor, bool) or not isinstance(floor, (int, float, np.floating)) or not 0 < floor <= 1:
        raise ValueError(f"floor must be a number in (0, 1], got {floor!r}: it bounds the weights by 1 / floor.")
    p = _vector(proba, "proba", low=0, high=1)
    N = len(p)
    if N == 0:
        raise DataError("proba is empty: there is no candidate pair to audit.")
    s = np.ones(N)
    if method == "risk":
        if risk is None:
            raise ValueError('method="risk" needs the risk of every pair: pass risk=..., or method="score".')
        s = _vector(risk, "risk", low=0, high=1)
        if len(s) != N:
            raise DataError(f"risk has {len(s)} values but proba has {N}: give one per candidate pair.")
    if method != "uniform":
        d = p > MATCH_THRESHOLD
        pi = p if method == "score" else np.clip(np.where(d, 1.0 - s, s), 0.0, 1.0)
        s = _f1_instrumental(d, pi)
    else:
        s = np.ones(N)
    total = s.sum()
    if method == "uniform" or total <= 0:
        q = np.full(N, 1.0 / N)
    else:
        q = (1.0 - floor) * s / total + floor / N
        q /= q.sum()  # exact normalisation against rounding
    return q


def audit_sample(
    proba: npt.ArrayLike,
    *,
    risk: npt.ArrayLike | None = None,
    n: int,
    method: str = "risk",
    floor: float = 0.1,
    random_state: RandomStateLike = None,
) -> AuditSample:
    """Draw ``n`` audit pairs with replacement by importance sampling.

    Pair ``i`` is drawn with probability ``q_i = (1 - floor) s_i / sum(s) + floor / N``. For
    ``"risk"`` and ``"score"``, ``s`` is the OASIS-style instrumental distribution that minimises
    the asymptotic variance of the F1 estimate (Marchant and Rubinstein, 2017): with ``pi_i`` the
    probability that pair ``i`` is a match, ``d_i`` the matcher's decision (``p > 0.5``) and
    ``F`` the F1 expected under ``pi``,

    * ``s_i = sqrt(pi_i (2 - 2F)^2 + (1 - pi_i) F^2)`` for a predicted match,
    * ``s_i = F sqrt(pi_i)`` for a predicted non-match.

    ``"risk"`` takes ``pi`` from the risk that the matcher's label is wrong (``pi = 1 - risk``
    for a predicted match, ``risk`` for a predicted non-match); ``"score"`` takes the matcher's
    own probability ``pi = p``. So both spend the audit where an answer moves the estimate:
    predicted matches (precision), and predicted non-matches likely to be matches (recall);
    a sample in proportion to the uncertainty alone would rarely audit a confident match.
    ``"uniform"`` has ``q_i = 1 / N``. When every ``s_i`` is 0 the sample is uniform.

    Parameters
    ----------
    proba : array-like of shape (N,)
        Match probabilities of every candidate pair.
    risk : array-like of shape (N,), optional
        Risk of every pair, in [0, 1]: the chance that the matcher's decision is wrong (e.g. LearnRisk's
        ``predict_risk``); required by ``method="risk"``.
    n : int
        Number of draws.
    method : {"risk", "score", "uniform"}, default="risk"
    floor : float, default=0.1
        Share of every draw spread uniformly over the pairs, in (0, 1]; every weight is at most
        ``1 / floor``.
    random_state : int, RandomState instance or None

    Returns
    -------
    AuditSample

    Examples
    --------
    >>> import numpy as np
    >>> s = audit_sample(np.linspace(0, 1, 100), n=5, method="score", random_state=0)
    >>> len(s), bool(s.weights.max() <= 10)
    (5, True)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    q = audit_design(proba, risk=risk, method=method, floor=floor)
    N = len(q)
    rng = check_random_state(random_state)
    pos = rng.choice(N, size=int(n), replace=True, p=q).astype(np.intp)
    qi = q[pos]
    return AuditSample(positions=pos, probabilities=qi, weights=1.0 / (N * qi), method=method,
                       floor=float(floor), n_population=N)


# ---------------------------------------------------------------------------------------- estimates
def _wilson(p: float, n_eff: float, z: float) -> tuple[float, float]:
    if not np.isfinite(p) or n_eff <= 0:
        return (0.0, 1.0)
    z2n = z * z / n_eff
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * np.sqrt(max(p * (1 - p), 0.0) / n_eff + z2n / (4 * n_eff))
    return (float(max(0.0, centre - half)), float(min(1.0, centre + half)))


def _plain(v: FloatArray, s: FloatArray, z: float, w_odd: float) -> tuple[float, tuple[float, float]]:
    """Ratio estimate ``sum v s / sum v`` over all draws (``v = 0`` outside the domain) and its Wilson interval.

    ``w_odd`` is the weight a draw of the outcome not seen would have: when every draw in the
    domain agrees (estimate 0 or 1), the interval counts the domain's weight in units of it.
    """
    total = v.sum()
    if total <= 0:
        return float("nan"), (0.0, 1.0)
    est = float((v * s).sum() / total)
    n = len(v)
    var = float((v * v * (s - est) ** 2).sum()) / total**2
    if n > 1:
        var *= n / (n - 1)
    if var > 0 and 0 < est < 1:
        n_eff = est * (1 - est) / var
    else:
        n_eff = min(total**2 / float((v * v).sum()), total / w_odd)
    return est, _wilson(est, n_eff, z)


def _proportion(
    v: FloatArray, s: FloatArray, z: float, w_odd: float, w_low: float, w_high: float
) -> tuple[float, tuple[float, float]]:
    """:func:`_plain`, each end widened by one imagined draw: ``s = 0`` of weight ``w_low``, ``s = 1`` of ``w_high``."""
    est, (lo, hi) = _plain(v, s, z, w_odd)
    if not np.isfinite(est):
        return est, (lo, hi)
    lo_x = _plain(np.append(v, w_low), np.append(s, 0.0), z, w_odd)[1][0]
    hi_x = _plain(np.append(v, w_high), np.append(s, 1.0), z, w_odd)[1][1]
    return est, (min(lo, lo_x, est), max(hi, hi_x, est))


def _estimate(y: FloatArray, d: FloatArray, w: FloatArray, threshold: float, confidence: float) -> QualityEstimate:
    z = float(norm.ppf(0.5 + confidence / 2))
    w = _unit(w)

    def mean_w(mask: npt.NDArray[np.bool_]) -> float:  # the weight of a draw where the odd outcome may be
        return float(w[mask].mean()) if mask.any() else float(w.max(initial=1.0))

    w_pred, w_rest = mean_w(d == 1), mean_w(d == 0)
    x_pred, x_rest = PSEUDO_DRAW * w_pred, PSEUDO_DRAW * w_rest
    # imagined draws: precision a false or true match among the predicted ones; recall a missed or
    # found match; F1 a missed match or false match (the heavier) or a true match (weight 2 w)
    prec, prec_i = _proportion(w * d, y, z, w_pred, x_pred, x_pred)
    rec, rec_i = _proportion(w * y, d, z, w_rest, x_rest, x_pred)
    f1, f1_i = _proportion(w * (d + y), d * y, z, mean_w(np.ones(len(w), dtype=bool)), max(x_pred, x_rest),
                           2 * x_pred)
    return QualityEstimate(
        precision=prec, recall=rec, f1=f1, precision_interval=prec_i, recall_interval=rec_i,
        f1_interval=f1_i, n_audit=int(len(y)), n_matches=int(y.sum()), threshold=float(threshold),
        confidence=confidence,
    )


def _calibration(y: FloatArray, p: FloatArray, w: FloatArray, prior: float = 1.0) -> tuple[float, float]:
    """Platt scaling ``m = sigmoid(a + b logit p)`` fitted to the weighted audit draws.

    A ridge of strength ``prior`` (in draws) pulls ``(a, b)`` towards ``(0, 1)``, the matcher's own
    probabilities, so that an audit of one class keeps a finite, gentle calibration.
    """
    x = np.log(np.clip(p, 1e-4, 1 - 1e-4) / (1 - np.clip(p, 1e-4, 1 - 1e-4)))
    v = _unit(w)
    v = v * (len(v) / v.sum()) if len(v) else v
    a, b = 0.0, 1.0
    for _ in range(50):
        m = expit(a + b * x)
        r = v * (m - y)
        g = np.array([r.sum() + prior * a, (r * x).sum() + prior * (b - 1)])
        h = v * m * (1 - m)
        H = np.array([[h.sum() + prior, (h * x).sum()], [(h * x).sum(), (h * x * x).sum() + prior]])
        step = np.linalg.solve(H, g)
        a, b = a - float(step[0]), b - float(step[1])
        if abs(step).max() < 1e-8:
            break
    return a, b


def _calibrate(p: FloatArray, ab: tuple[float, float]) -> FloatArray:
    x = np.log(np.clip(p, 1e-4, 1 - 1e-4) / (1 - np.clip(p, 1e-4, 1 - 1e-4)))
    return expit(ab[0] + ab[1] * x)


def _assisted(
    y: FloatArray, d: FloatArray, m: FloatArray, w: FloatArray, N: int, D: float, M: tuple[float, float],
    lam: tuple[float, float], z: float,
) -> dict[str, tuple[float, float, float]]:
    """The difference estimates of TP and FN, and precision, recall and F1 with their variances.

    ``M`` is the calibrated model's total over the candidates predicted a match and over the
    rest, ``lam`` the share of it used in each (see :func:`estimate_quality`).
    """
    n = len(y)
    zt = N * w * d * (y - lam[0] * m)  # each draw's Hansen-Hurwitz term of TP's residual
    zf = N * w * (1 - d) * (y - lam[1] * m)
    tp = min(max(lam[0] * M[0] + float(zt.mean()), 0.0), D)
    fn = max(lam[1] * M[1] + float(zf.mean()), 0.0)
    out = {}
    y_tot = tp + fn
    s = D + tp + fn
    grads = {
        "precision": ((1 / D, 0.0) if D > 0 else None, tp / D if D > 0 else float("nan")),
        "recall": ((fn / y_tot**2, -tp / y_tot**2) if y_tot > 0 else None, tp / y_tot if y_tot > 0 else float("nan")),
        "f1": ((2 * (D + fn) / s**2, -2 * tp / s**2) if s > 0 else None, 2 * tp / s if s > 0 else float("nan")),
    }
    for k, (g, est) in grads.items():
        if g is None:
            out[k] = (float("nan"), float("inf"), n)
            continue
        psi = g[0] * zt + g[1] * zf
        var = float(psi.var(ddof=1)) / n if n > 1 else float("inf")
        out[k] = (float(est), var, n)
    return out


def _assisted_estimate(
    y: FloatArray, p: FloatArray, w: FloatArray, proba_all: FloatArray, threshold: float, confidence: float
) -> QualityEstimate:
    z = float(norm.ppf(0.5 + confidence / 2))
    N = len(proba_all)
    d = (p > threshold).astype(np.float64)
    d_all = proba_all > threshold
    D = float(d_all.sum())
    ab = _calibration(y, p, w)
    m, m_all = _calibrate(p, ab), _calibrate(proba_all, ab)
    M = (float(m_all[d_all].sum()), float(m_all[~d_all].sum()))
    lam = []
    for dom in (d, 1 - d):  # the share of the model's total that minimises the variance (PPI++)
        a, b = N * w * dom * y, N * w * dom * m
        vb = float(b.var())
        lam.append(float(np.clip(np.cov(a, b, bias=True)[0, 1] / vb, 0.0, 1.0)) if vb > 0 and len(y) > 1 else 0.0)
    lam_t = (lam[0], lam[1])
    base = _assisted(y, d, m, w, N, D, M, lam_t, z)

    def mean_w(mask: npt.NDArray[np.bool_]) -> float:
        return float(w[mask].mean()) if mask.any() else float(w.max(initial=1.0))

    def mean_m(mask: npt.NDArray[np.bool_]) -> float:
        return float(m[mask].mean()) if mask.any() else 0.0

    pred, rest = d == 1, d == 0
    x_pred, x_rest = ASSISTED_PSEUDO_DRAW * mean_w(pred), ASSISTED_PSEUDO_DRAW * mean_w(rest)
    # imagined draws (y, d, m, w): a true or false match among the predicted ones, a missed match
    extra = {"found": (1.0, 1.0, mean_m(pred), x_pred), "false": (0.0, 1.0, mean_m(pred), x_pred),
             "missed": (1.0, 0.0, mean_m(rest), x_rest)}
    pulls = {"precision": (("false",), ("found",)), "recall": (("missed",), ("found",)),
             "f1": (("missed", "false"), ("found",))}
    alt = {k: _assisted(np.append(y, e[0]), np.append(d, e[1]), np.append(m, e[2]), np.append(w, e[3]), N, D, M,
                        lam_t, z) for k, e in extra.items()}

    def interval(k: str, est: float, var: float) -> tuple[float, float]:
        if not np.isfinite(est) or not np.isfinite(var):
            return (0.0, 1.0)
        if var > 0 and 0 < est < 1:
            return _wilson(est, est * (1 - est) / var, z)
        return _wilson(est, float(len(y)), z)

    res = {}
    plain = _estimate(y, d, w, threshold, confidence)
    widen_f1 = False
    # no false match drawn among the predicted matches: every residual there agrees with the model,
    # so the delta method sees only the model's own confidence (a few confident draws give a narrow
    # precision interval that can miss the truth). No missed match drawn
    # needs nothing here: recall's model share is then 0 and it is at its bound, below.
    no_false = not bool(np.any(pred & (y == 0)))
    for k in ("precision", "recall", "f1"):
        est, var, _ = base[k]
        if not (np.isfinite(est) and np.isfinite(var) and var > 0 and 0 < est < 1):
            # at a bound (every audited pair of the domain agrees with the model, or TP hit D)
            # the delta method says nothing: the plain estimate and its interval stand
            res[k] = (getattr(plain, k), plain.interval(k))
            widen_f1 |= k != "f1"
            continue
        lo, hi = interval(k, est, var)
        for name in pulls[k][0]:
            lo = min(lo, interval(k, alt[name][k][0], alt[name][k][1])[0])
        for name in pulls[k][1]:
            hi = max(hi, interval(k, alt[name][k][0], alt[name][k][1])[1])
        if k == "precision" and no_false:  # the model's estimate stands, in an interval at least as wide as the plain one
            lo, hi = min(lo, plain.interval(k)[0]), max(hi, plain.interval(k)[1])
            widen_f1 = True
        res[k] = (est, (min(lo, est), max(hi, est)))
    out = QualityEstimate(
        precision=res["precision"][0], recall=res["recall"][0], f1=res["f1"][0],
        precision_interval=res["precision"][1], recall_interval=res["recall"][1], f1_interval=res["f1"][1],
        n_audit=int(len(y)), n_matches=int(y.sum()), threshold=float(threshold), confidence=confidence,
        assisted=True,
    )
    return _consistent_f1(out) if widen_f1 else out


def estimate_quality(
    y_audit: npt.ArrayLike,
    proba_audit: npt.ArrayLike,
    weights: npt.ArrayLike,
    *,
    threshold: float = MATCH_THRESHOLD,
    confidence: float = 0.9,
    proba_all: npt.ArrayLike | None = None,
) -> QualityEstimate:
    """Estimate precision, recall and F1 of the decisions ``p > threshold`` from audit answers.

    Without ``proba_all``, each measure is the ratio estimate of its weighted audit draws (see
    the module notes). With ``proba_all``, the matcher's probability of every candidate, the
    estimate is *model-assisted* (a difference estimator; "prediction-powered inference"): the
    number of predicted matches ``D`` is then known exactly, and TP and FN are each the
    calibrated model's total over its domain (the candidates predicted a match, and the rest)
    plus the Hansen-Hurwitz estimate of the audit's residuals ``y - m`` there. ``m`` is the
    matcher's probability recalibrated on the weighted audit (Platt scaling, pulled towards the
    identity by one draw's worth of prior), and each domain uses the share ``lambda`` in
    ``[0, 1]`` of the model's total that minimises the estimate's variance (PPI++; 0 is the
    plain estimate of the domain), so the model narrows the interval where it predicts the
    audit's answers and is ignored where it does not. The residual correction keeps the
    estimate consistent whatever the model; the intervals are delta-method Wilson intervals
    widened by the same imagined draws as the plain ones. A measure at its bound (e.g. recall 1.0
    when the audit drew no missed match) keeps the plain interval; a measure whose audited pairs
    never showed the outcome that lowers it (precision when the audit drew no false match)
    keeps the model-assisted estimate with an interval at least as wide as the plain one, since
    every residual then agrees with the model; and F1's interval is then widened to what the
    precision and recall intervals allow (with recall at its low end, F1 is at most their
    harmonic mean with precision's high end; the same the other way round).

    Parameters
    ----------
    y_audit : array-like of shape (n,)
        The true label of every audit draw (1 = match, 0 = non-match); a pair drawn twice
        appears twice. Draws answered "unsure" must be left out.
    proba_audit : array-like of shape (n,)
        The matcher's match probability of every draw.
    weights : array-like of shape (n,)
        Importance weights (``AuditSample.weights``; without ``proba_all``, any positive
        multiple gives the same estimate, up to rounding): finite and positive, each at most 1e308
        times smaller than the largest.
    threshold : float, default=MATCH_THRESHOLD
    confidence : float, default=0.9
        Coverage of the intervals.
    proba_all : array-like of shape (N,), optional
        The matcher's probability of every candidate pair (the population the audit was drawn
        from); ``weights`` must then be the Hansen-Hurwitz weights ``1 / (N q_i)`` with this
        ``N`` (``AuditSample.weights``, or the mixture weights of several rounds), not a
        multiple of them.

    Returns
    -------
    QualityEstimate

    Examples
    --------
    >>> est = estimate_quality([1, 1, 0, 1, 0, 0], [0.9, 0.8, 0.7, 0.3, 0.2, 0.1], [1, 1, 1, 1, 1, 1])
    >>> round(est.precision, 3), round(est.recall, 3), round(est.f1, 3)
    (0.667, 0.667, 0.667)

    Model-assisted, from the matcher's probabilities of all 2000 candidates:

    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> proba = rng.uniform(size=2000)
    >>> truth = (rng.uniform(size=2000) < proba).astype(int)
    >>> s = audit_sample(proba, n=100, method="score", random_state=0)
    >>> plain = estimate_quality(truth[s.positions], proba[s.positions], s.weights)
    >>> assisted = estimate_quality(truth[s.positions], proba[s.positions], s.weights, proba_all=proba)
    >>> def width(e):
    ...     return e.f1_interval[1] - e.f1_interval[0]
    >>> bool(width(assisted) < width(plain))
    True
    """
    y, p, w = _audit_arrays(y_audit, proba_audit, weights)
    confidence = _check_confidence(confidence)
    threshold = float(_vector([threshold], "threshold", low=0, high=1)[0])
    if proba_all is not None:
        pa = _vector(proba_all, "proba_all", low=0, high=1)
        if len(pa) == 0:
            raise DataError("proba_all is empty: give the matcher's probability of every candidate pair.")
        _check_design_weights(w, len(pa), "proba_all")
        if y.sum() >= ASSISTED_MIN_MATCHES:
            return _assisted_estimate(y, p, w, pa, threshold, confidence)
    return _estimate(y, (p > threshold).astype(np.float64), w, threshold, confidence)


def _consistent_f1(e: QualityEstimate) -> QualityEstimate:
    """The F1 interval widened, where needed, to the F1 its precision and recall intervals allow.

    F1 is the harmonic mean of precision and recall, so with recall at the low end of its interval
    F1 is at most ``H(precision high, recall low)``, and with precision at its low end at most
    ``H(precision low, recall high)``; an F1 interval above the first (or below the second) claims
    more than the two intervals it is made of. The model-assisted estimate applies this where the
    audit drew no missed (or no false) match: recall is then at its bound and falls back to the
    plain interval (precision keeps its estimate in an interval at least as wide as the plain
    one), while F1's delta-method interval sees no variance in that domain, and so can be narrower
    than its parts allow and miss the truth.
    """
    (p_lo, p_hi), (r_lo, r_hi) = e.precision_interval, e.recall_interval
    if not np.isfinite(e.f1):
        return e

    def h(a: float, b: float) -> float:
        return 2 * a * b / (a + b) if a + b > 0 else 0.0

    lo, hi = e.f1_interval
    lo2, hi2 = min(lo, h(p_hi, r_lo), h(p_lo, r_hi)), max(hi, h(p_lo, r_hi), h(p_hi, r_lo))
    lo2, hi2 = min(lo2, e.f1), max(hi2, e.f1)
    if (lo2, hi2) == (lo, hi):
        return e
    return replace(e, f1_interval=(float(lo2), float(hi2)))


def recalibrate(
    y_audit: npt.ArrayLike, proba_audit: npt.ArrayLike, weights: npt.ArrayLike, proba: npt.ArrayLike
) -> FloatArray:
    """The matcher's probabilities recalibrated on the audit answers so far.

    Platt scaling ``m = sigmoid(a + b logit p)`` fitted to the weighted audit draws, pulled
    towards the identity (``a = 0, b = 1``) by one draw's worth of prior, so that an audit
    with no answer, or of one class only, keeps a finite, gentle calibration: the model that
    :func:`estimate_quality` uses with ``proba_all``. Aiming the next audit draws with it
    (:func:`audit_aim`, as the labelling session does once its estimate is model-assisted)
    spends them where the missed matches are likely, as OASIS updates its match probabilities
    from the labels it draws.

    Parameters
    ----------
    y_audit, proba_audit, weights
        As in :func:`estimate_quality`.
    proba : array-like of shape (N,)
        The probabilities to recalibrate (e.g. the matcher's on every candidate).

    Returns
    -------
    ndarray of float64, shape (N,)
        In (0, 1); increasing in ``proba`` (a constant when the audit shows the score is no guide).

    Examples
    --------
    >>> m = recalibrate([1, 1, 0, 0, 0, 0], [0.9, 0.6, 0.6, 0.3, 0.2, 0.1], [1.0] * 6, [0.05, 0.5, 0.95])
    >>> bool(m[0] < m[1] < m[2]), bool(0 < m.min() and m.max() < 1)
    (True, True)
    """
    y, p, w = _audit_arrays(y_audit, proba_audit, weights)
    pa = _vector(proba, "proba", low=0, high=1)
    return _calibrate(pa, _calibration(y, p, w))


def audit_aim(
    y_audit: npt.ArrayLike, proba_audit: npt.ArrayLike, weights: npt.ArrayLike, proba: npt.ArrayLike,
    risk: npt.ArrayLike, *, threshold: float = 0.5,
) -> tuple[FloatArray, str]:
    """What the next audit draws should aim at: ``risk``, or the recalibrated matcher once the
    estimate is model-assisted.

    With at least ``ASSISTED_MIN_MATCHES`` audited matches (when :func:`estimate_quality`
    with ``proba_all`` is model-assisted), the chance that each candidate's decision at
    ``threshold`` is wrong by the probability ``m`` that :func:`recalibrate` gives: ``1 - m`` for a
    predicted match, ``m`` for a predicted non-match. Before, ``risk`` unchanged. The labelling
    session draws its audit with ``audit_sample(proba, risk=aim, method="risk")``.

    Parameters
    ----------
    y_audit, proba_audit, weights
        As in :func:`estimate_quality`.
    proba : array-like of shape (N,)
        The matcher's probability of every candidate.
    risk : array-like of shape (N,)
        The aim until the estimate is model-assisted (e.g. LearnRisk's risk of every candidate).
    threshold : float, default=0.5
        The decision threshold.

    Returns
    -------
    aim : ndarray of float64, shape (N,)
    kind : {"risk", "recalibrated"}

    Examples
    --------
    >>> y, p = [1] * 10 + [0] * 10, [0.9] * 8 + [0.3] * 2 + [0.1] * 10
    >>> aim, kind = audit_aim(y, p, [1.0] * 20, [0.2, 0.9], risk=[0.5, 0.5])
    >>> kind, bool(aim[0] > 0.1 and aim[1] < 0.5)
    ('recalibrated', True)
    >>> audit_aim(y[8:], p[8:], [1.0] * 12, [0.2, 0.9], risk=[0.5, 0.5])[1]  # 2 audited matches
    'risk'
    """
    y, p, w = _audit_arrays(y_audit, proba_audit, weights)
    pa = _vector(proba, "proba", low=0, high=1)
    r = _vector(risk, "risk", low=0, high=1)
    threshold = float(_vector([threshold], "threshold", low=0, high=1)[0])
    if r.shape != pa.shape:
        raise ValueError(f"risk has {r.size} values and proba {pa.size}: give one of each per candidate.")
    if y.sum() < ASSISTED_MIN_MATCHES:
        return r, "risk"
    m = recalibrate(y, p, w, pa)
    return np.where(pa > threshold, 1.0 - m, m), "recalibrated"


def more_answers(n_audit: int, interval: tuple[float, float], aim: float = 0.1) -> int:
    """Audit answers to add so that an interval from ``n_audit`` answers narrows to about ``± aim``.

    The width of an interval falls as one over the square root of the answers, so ``n`` answers
    giving a half-width ``h`` need about ``n (h / aim) ** 2`` in all.

    Parameters
    ----------
    n_audit : int
        The audit answers so far (>= 0).
    interval : tuple of float
        ``(low, high)`` of the interval they give.
    aim : float, default=0.1
        The half-width wanted, in (0, 1].

    Returns
    -------
    int
        0 when the interval is already that narrow.

    Examples
    --------
    >>> more_answers(100, (0.4, 0.6)), more_answers(10, (0.0, 1.0)), more_answers(150, (0.5, 0.8))
    (0, 240, 188)
    """
    if isinstance(n_audit, bool) or not isinstance(n_audit, (int, np.integer)) or n_audit < 0:
        raise ValueError(f"n_audit must be an integer >= 0 (the audit answers so far), got {n_audit!r}.")
    if isinstance(aim, bool) or not isinstance(aim, (int, float, np.integer, np.floating)) or not 0 < aim <= 1:
        raise ValueError(f"aim must be a number in (0, 1] (the half-width wanted), got {aim!r}.")
    try:
        ends = tuple(interval)
    except TypeError:
        ends = ()
    if len(ends) != 2:
        raise ValueError(f"interval must be a pair (low, high) of numbers, got {interval!r}.")
    for i, v in enumerate(ends):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
            raise ValueError(f"interval[{i}] = {v!r} is not a finite number: give (low, high).")
    lo, hi = float(ends[0]), float(ends[1])
    if lo > hi:
        raise ValueError(f"interval = {interval!r} has its low end above its high end: give (low, high).")
    half = (hi - lo) / 2
    return 0 if half <= aim else int(np.ceil(n_audit * ((half / aim) ** 2 - 1) - 1e-9))
