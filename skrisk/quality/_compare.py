"""Two decisions on the same audit draws: their F1 difference, and the threshold it chooses.

:func:`compare_f1` estimates ``F1(a) - F1(b)`` of two decisions (two thresholds of one matcher, or
the matchers of two rounds) from the same audit draws: the paired difference of their ratio
estimates, with a delta-method interval and one imagined draw where they differ; or, given both
decisions on every candidate, model-assisted (the pairs where they differ are then all known).
:func:`choose_threshold` moves the F1 threshold away from 0.5 only when that interval's low end is
above 0, and the session's stopping advice needs its high end, over the last rounds,
to be small (:func:`~skrisk.quality.confirm_stop`). The estimates themselves:
:mod:`skrisk.quality._estimate`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from .._typing import FloatArray
from ..exceptions import DataError
from ..matchers._base import MATCH_THRESHOLD
from ._estimate import (
    ASSISTED_MIN_MATCHES,
    ASSISTED_PSEUDO_DRAW,
    PSEUDO_DRAW,
    RULES,
    Target,
    ThresholdChoice,
    _audit_arrays,
    _calibrate,
    _calibration,
    _check_confidence,
    _check_design_weights,
    _estimate,
    _unit,
    _vector,
)

__all__ = ["choose_threshold", "compare_f1"]


def _f1_difference(
    y: FloatArray, da: FloatArray, db: FloatArray, w: FloatArray, z: float
) -> tuple[float, tuple[float, float]]:
    """``F1(da) - F1(db)`` on the same draws, and its interval (see :func:`compare_f1`)."""
    w = _unit(w)

    def core(y: FloatArray, da: FloatArray, db: FloatArray, w: FloatArray) -> tuple[float, float]:
        ba, bb = float((w * (da + y)).sum()), float((w * (db + y)).sum())
        if ba <= 0 or bb <= 0:
            return float("nan"), float("inf")
        fa, fb = float((w * 2 * da * y).sum()) / ba, float((w * 2 * db * y).sum()) / bb
        psi = w * ((2 * da * y - fa * (da + y)) / ba - (2 * db * y - fb * (db + y)) / bb)
        n = len(y)
        var = float((psi * psi).sum()) * (n / (n - 1) if n > 1 else 1.0)
        return fa - fb, var

    est, var = core(y, da, db, w)
    if not np.isfinite(est):
        return est, (-1.0, 1.0)
    # one imagined draw where the two decisions differ, with the outcome that pulls each end
    # outwards (weight PSEUDO_DRAW x the mean weight of such draws, or of all draws when the
    # audit saw none): a difference nobody was audited on is not taken as no difference
    diff = da != db
    either = (da + db) > 0  # where they may differ: a pair one of them predicts a match
    wx = PSEUDO_DRAW * float(w[diff].mean() if diff.any() else w[either].mean() if either.any() else w.mean())
    ends = []
    for sign in (-1, 1):  # -1: a draw favouring b (the low end), +1: one favouring a
        # a pair only a predicts: a non-match favours b, a match favours a
        yx = 1.0 if sign > 0 else 0.0
        e_x, v_x = core(np.append(y, yx), np.append(da, 1.0), np.append(db, 0.0), np.append(w, wx))
        if sign < 0:  # or a pair only b predicts, a match: take the one pulling further
            e_y, v_y = core(np.append(y, 1.0), np.append(da, 0.0), np.append(db, 1.0), np.append(w, wx))
            end = min(est - z * np.sqrt(var), e_x - z * np.sqrt(v_x), e_y - z * np.sqrt(v_y))
        else:
            e_y, v_y = core(np.append(y, 0.0), np.append(da, 0.0), np.append(db, 1.0), np.append(w, wx))
            end = max(est + z * np.sqrt(var), e_x + z * np.sqrt(v_x), e_y + z * np.sqrt(v_y))
        ends.append(float(np.clip(end, -1.0, 1.0)))
    return float(est), (ends[0], ends[1])


def compare_f1(
    y_audit: npt.ArrayLike,
    proba_a: npt.ArrayLike,
    proba_b: npt.ArrayLike,
    weights: npt.ArrayLike,
    *,
    threshold_a: float = MATCH_THRESHOLD,
    threshold_b: float = MATCH_THRESHOLD,
    confidence: float = 0.9,
    proba_all_a: npt.ArrayLike | None = None,
    proba_all_b: npt.ArrayLike | None = None,
) -> tuple[float, tuple[float, float]]:
    """Estimate ``F1(a) - F1(b)`` of two decisions from the same audit draws, with an interval.

    ``a`` predicts a match iff ``proba_a > threshold_a``, ``b`` iff ``proba_b > threshold_b``
    (two thresholds of one matcher, or two matchers). The two F1 ratio estimates share their
    draws, so the interval of the difference comes from the linearised (delta-method) variance
    of the paired difference, not from two separate intervals: draws where both decide alike
    hardly move it. Each end is also computed with one imagined draw more where the two
    decisions differ, with the answer that pulls that end outwards (weighted
    ``PSEUDO_DRAW`` times the mean weight of the audited draws where they differ, or, when
    there is none, of the draws that either predicts a match): an audit that saw no pair where
    they differ does not prove that they are equal.

    Given both decisions on *every* candidate (``proba_all_a`` and ``proba_all_b``), and at
    least ``ASSISTED_MIN_MATCHES`` audited matches, the comparison is model-assisted, as
    :func:`estimate_quality` is: the numbers of predicted matches ``D_a``, ``D_b`` and the pairs
    where the two decide differently are then known, and ``TP_a``, ``TP_b`` and the number of
    matches are each the total of ``a``'s probability (calibrated on the audit) over their
    candidates plus the Hansen-Hurwitz estimate of the audit's residuals ``y - m``. Pairs where
    the decisions agree cancel in the difference, so the model's guess matters only on the few
    pairs where they differ, all of them known, not only those the audit happened to draw. The
    imagined draw is then weighted ``ASSISTED_PSEUDO_DRAW``, with the model's mean there.

    Parameters
    ----------
    y_audit : array-like of shape (n,)
        True labels of the audit draws (1 match, 0 non-match).
    proba_a, proba_b : array-like of shape (n,)
        Match probabilities of the draws under ``a`` and ``b``.
    weights : array-like of shape (n,)
        Importance weights of the draws.
    threshold_a, threshold_b : float, default=MATCH_THRESHOLD
    confidence : float, default=0.9
        Two-sided coverage of the interval (so its low end is a one-sided bound at
        ``(1 + confidence) / 2``).
    proba_all_a, proba_all_b : array-like of shape (N,), optional
        The probabilities of every candidate pair under ``a`` and ``b`` (for ``b``, its
        decisions as 0 and 1 are enough), both or neither; ``weights`` must then be the
        Hansen-Hurwitz weights ``1 / (N q_i)`` with this ``N``.

    Returns
    -------
    difference : float
        ``nan`` when no audited draw is a match or predicted one (F1 undefined).
    interval : tuple of float
        ``(low, high)`` within ``[-1, 1]``.

    Examples
    --------
    >>> y = [1, 1, 1, 0, 0, 0]
    >>> d, (lo, hi) = compare_f1(y, [0.9, 0.8, 0.7, 0.2, 0.1, 0.1], [0.9, 0.2, 0.2, 0.2, 0.1, 0.1], [1] * 6)
    >>> round(d, 3), lo < d < hi
    (0.5, True)

    Model-assisted, from both decisions on all 2000 candidates (``b`` predicts no match among
    the 184 pairs of probability 0.5 to 0.6): the interval holds the true difference and is
    narrower than from the audit alone:

    >>> import numpy as np
    >>> from skrisk.quality import audit_sample
    >>> rng = np.random.RandomState(0)
    >>> pa = rng.uniform(size=2000)
    >>> truth = (rng.uniform(size=2000) < pa).astype(int)
    >>> pb = np.where((pa > 0.5) & (pa < 0.6), 0.0, pa)
    >>> s = audit_sample(pa, n=100, method="score", random_state=0)
    >>> args = (truth[s.positions], pa[s.positions], pb[s.positions], s.weights)
    >>> _, plain = compare_f1(*args)
    >>> _, assisted = compare_f1(*args, proba_all_a=pa, proba_all_b=pb)
    >>> def f1(p):
    ...     return 2 * ((p > 0.5) & (truth == 1)).sum() / ((p > 0.5).sum() + truth.sum())
    >>> bool(assisted[0] < f1(pa) - f1(pb) < assisted[1]), bool(assisted[1] - assisted[0] < plain[1] - plain[0])
    (True, True)
    """
    y, pa, w = _audit_arrays(y_audit, proba_a, weights)
    pb = _vector(proba_b, "proba_b", low=0, high=1)
    if len(pb) != len(y):
        raise DataError(f"proba_b has {len(pb)} values but y_audit has {len(y)}: give one per audit draw.")
    ta = float(_vector([threshold_a], "threshold_a", low=0, high=1)[0])
    tb = float(_vector([threshold_b], "threshold_b", low=0, high=1)[0])
    z = float(norm.ppf(0.5 + _check_confidence(confidence) / 2))
    if (proba_all_a is None) != (proba_all_b is None):
        raise DataError("compare_f1 needs both proba_all_a and proba_all_b (the two decisions on every candidate), "
                        "or neither.")
    if len(y) == 0:
        return float("nan"), (-1.0, 1.0)
    da, db = (pa > ta).astype(np.float64), (pb > tb).astype(np.float64)
    if proba_all_a is not None:
        all_a = _vector(proba_all_a, "proba_all_a", low=0, high=1)
        all_b = _vector(proba_all_b, "proba_all_b", low=0, high=1)
        if len(all_a) != len(all_b) or len(all_a) == 0:
            raise DataError(f"proba_all_a has {len(all_a)} values and proba_all_b {len(all_b)}: give both "
                            "decisions on every candidate pair, in the same order.")
        _check_design_weights(w, len(all_a), "proba_all_a")
        if y.sum() >= ASSISTED_MIN_MATCHES:
            ab = _calibration(y, pa, w)
            m_all = _calibrate(all_a, ab)
            return _assisted_difference(y, _calibrate(pa, ab), da, db, w, _totals(m_all, all_a > ta, all_b > tb), z)
    return _f1_difference(y, da, db, w, z)


def _region(m: FloatArray) -> tuple[float, float, float]:
    """Count, model total and model (Bernoulli) variance of a set of candidates."""
    return float(len(m)), float(m.sum()), float((m * (1 - m)).sum())


def _totals(m_all: FloatArray, dec_a: npt.NDArray[np.bool_], dec_b: npt.NDArray[np.bool_]) -> dict:
    """What :func:`_assisted_difference` needs of all candidates: the numbers of predicted matches,
    the model's totals over them and over all, and over the pairs only ``a`` or only ``b`` predicts."""
    return {"N": len(m_all), "D": (float(dec_a.sum()), float(dec_b.sum())),
            "M": (float(m_all[dec_a].sum()), float(m_all[dec_b].sum()), float(m_all.sum())),
            "only": (_region(m_all[dec_a & ~dec_b]), _region(m_all[dec_b & ~dec_a]))}


def _assisted_difference(
    y: FloatArray, m: FloatArray, da: FloatArray, db: FloatArray, w: FloatArray, agg: dict, z: float,
) -> tuple[float, tuple[float, float]]:
    """The model-assisted ``F1(a) - F1(b)`` and its interval (see :func:`compare_f1`), from the
    audit (``m`` the calibrated model at the draws) and the totals over all candidates (:func:`_totals`)."""
    N, (D_a, D_b), M = agg["N"], agg["D"], agg["M"]

    def core(y: FloatArray, da: FloatArray, db: FloatArray, r: FloatArray, w: FloatArray) -> tuple[float, float]:
        # TP_a, TP_b and the number of matches: the model's totals plus the residuals' estimates
        tp_a = max(M[0] + float((N * w * da * r).mean()), 0.0)
        tp_b = max(M[1] + float((N * w * db * r).mean()), 0.0)
        p = max(M[2] + float((N * w * r).mean()), 1e-12)
        f_a, f_b = 2 * tp_a / (D_a + p), 2 * tp_b / (D_b + p)
        g3 = -f_a / (D_a + p) + f_b / (D_b + p)
        psi = N * w * r * (2 * da / (D_a + p) - 2 * db / (D_b + p) + g3)
        return f_a - f_b, float(psi.var(ddof=1)) / len(y) if len(y) > 1 else float("inf")

    est, var_audit = core(y, da, db, y - m, w)
    # the audit rarely draws a pair where the decisions differ, so the residuals' variance there
    # is mostly unseen: add the model's own (Bernoulli) variance of the matches among those pairs
    p_hat = max(M[2] + float((N * w * (y - m)).mean()), 1e-12)
    (n_a, m_a, v_a), (n_b, m_b, v_b) = agg["only"]
    var = var_audit + v_a * (2 / (D_a + p_hat)) ** 2 + v_b * (2 / (D_b + p_hat)) ** 2
    diff = da != db
    either = (da + db) > 0
    wx = ASSISTED_PSEUDO_DRAW * float(w[diff].mean() if diff.any() else w[either].mean() if either.any() else w.mean())
    lo, hi = est - z * np.sqrt(var), est + z * np.sqrt(var)
    # one imagined draw among the (known) pairs where the decisions differ, if any: a match only a
    # predicts pulls the high end up, a non-match only a predicts (or a match only b predicts) down
    for count, total, n_dec in ((n_a, m_a, (1.0, 0.0)), (n_b, m_b, (0.0, 1.0))):
        if count == 0:
            continue
        for yx in (0.0, 1.0):
            e, v = core(np.append(y, yx), np.append(da, n_dec[0]), np.append(db, n_dec[1]),
                        np.append(y - m, yx - total / count), np.append(w, wx))
            v += var - var_audit
            if (yx == 1.0) == (n_dec[0] == 1.0):  # favours a: the high end
                hi = max(hi, e + z * np.sqrt(v))
            else:
                lo = min(lo, e - z * np.sqrt(v))
    est = float(np.clip(est, -1.0, 1.0))  # a difference of two F1 values
    return est, (float(np.clip(min(lo, est), -1.0, 1.0)), float(np.clip(max(hi, est), -1.0, 1.0)))


def _check_target(target: Any) -> tuple[str, float]:
    if isinstance(target, str) and target == "f1":
        return "f1", float("nan")
    if isinstance(target, Mapping) and len(target) == 1:
        ((key, value),) = target.items()
        if key in ("precision", "recall") and not isinstance(value, bool) and isinstance(
            value, (int, float, np.floating)
        ) and 0 < value <= 1:
            return str(key), float(value)
    raise ValueError(
        f'target must be "f1", {{"precision": x}} or {{"recall": y}} with x, y in (0, 1], got {target!r}.'
    )


def _assisted_gains(y: FloatArray, p: FloatArray, w: FloatArray, proba_all: Any, base: int, z: float) -> Any:
    """For the no-harm rule: a function giving the low end of the model-assisted F1 gain of a
    threshold ``t`` over :data:`~skrisk.matchers.MATCH_THRESHOLD` (one matcher, so the pairs where they
    differ are those between the two thresholds: sums over them from cumulative sums); None below
    ``ASSISTED_MIN_MATCHES`` audited matches."""
    pa = _vector(proba_all, "proba_all", low=0, high=1)
    if len(pa) == 0:
        raise DataError("proba_all is empty: give the matcher's probability of every candidate pair.")
    _check_design_weights(w, len(pa), "proba_all")
    if y.sum() < ASSISTED_MIN_MATCHES:
        return None
    ab = _calibration(y, p, w)
    m = _calibrate(p, ab)
    order = np.argsort(pa, kind="stable")
    sp, sm = pa[order], _calibrate(pa[order], ab)
    cm = np.concatenate([[0.0], np.cumsum(sm)])
    cv = np.concatenate([[0.0], np.cumsum(sm * (1 - sm))])
    N = len(pa)

    def at(t: float) -> int:  # candidates at or below t come first
        return int(np.searchsorted(sp, t, side="right"))

    def between(k1: int, k2: int) -> tuple[float, float, float]:
        return float(k2 - k1), float(cm[k2] - cm[k1]), float(cv[k2] - cv[k1])

    k0 = at(MATCH_THRESHOLD)

    def low(t: float, da: FloatArray, db: FloatArray) -> float:
        k = at(t)
        if k == k0:  # decides every candidate as 0.5 does
            return -np.inf
        agg = {"N": N, "D": (float(N - k), float(N - k0)), "M": (float(cm[-1] - cm[k]), float(cm[-1] - cm[k0]),
               float(cm[-1])), "only": (between(k, k0), (0.0, 0.0, 0.0)) if k < k0 else ((0.0, 0.0, 0.0), between(k0, k))}
        return _assisted_difference(y, m, da, db, w, agg, z)[1][0]

    return low


def choose_threshold(
    y_audit: npt.ArrayLike,
    proba_audit: npt.ArrayLike,
    weights: npt.ArrayLike,
    *,
    target: Target = "f1",
    confidence: float = 0.9,
    se_tolerance: float = 1.0,
    rule: str = "no-harm",
    proba_all: npt.ArrayLike | None = None,
) -> ThresholdChoice:
    """Choose the match threshold that meets a target on the audit's estimates.

    The candidates are 0, :data:`~skrisk.matchers.MATCH_THRESHOLD` and the midpoints between consecutive
    distinct audited probabilities. For ``"f1"`` the default ``rule="no-harm"`` keeps
    :data:`~skrisk.matchers.MATCH_THRESHOLD` unless the audit shows beyond its own uncertainty that another
    threshold is better: for each candidate it estimates the F1 gain over
    :data:`~skrisk.matchers.MATCH_THRESHOLD` on the same draws (:func:`compare_f1`), and takes the
    candidate whose interval's low end is highest, if that end is above 0 (at
    ``confidence=0.9``, a one-sided 95 % bound; on large candidate sets with few matches the
    highest estimate is usually luck, and moving to it can lower the true F1).
    Given the matcher's probability of every candidate (``proba_all``) and at least
    ``ASSISTED_MIN_MATCHES`` audited matches, that gain is model-assisted
    (:func:`compare_f1` with ``proba_all_a`` and ``proba_all_b``): the candidates between the two
    thresholds are then all known, not only the audited ones (from the audit alone, a lower
    threshold whose many extra non-matches the audit missed can look better than it is).
    ``rule="one-se"`` takes, among the candidates whose estimated F1 is within ``se_tolerance``
    standard errors of the highest, the one nearest :data:`~skrisk.matchers.MATCH_THRESHOLD` (the
    one-standard-error rule of Breiman et al., 1984); ``se_tolerance=0`` then takes the highest
    estimate. ``{"precision": x}`` the lowest threshold (most recall) whose estimated precision is at
    least ``x``; ``{"recall": y}`` the highest threshold (most precision) whose estimated recall
    is at least ``y``. When no candidate meets a precision or recall target, the one closest to
    it is returned with ``met=False``. With no audited match (or none predicted) the threshold
    stays :data:`~skrisk.matchers.MATCH_THRESHOLD`.

    Parameters
    ----------
    y_audit, proba_audit, weights : array-like of shape (n,)
        As in :func:`estimate_quality`.
    target : "f1" or dict, default="f1"
        ``"f1"``, ``{"precision": x}`` or ``{"recall": y}``.
    confidence : float, default=0.9
        Coverage of the intervals of the returned estimate (and of the standard error, taken as
        the best F1's interval width over ``2 z``).
    se_tolerance : float, default=1.0
        For ``"f1"`` with ``rule="one-se"``: how many standard errors below the best estimate a threshold nearer
        :data:`~skrisk.matchers.MATCH_THRESHOLD` may be; 0 takes the best estimate.
    rule : {"no-harm", "one-se"}, default="no-harm"
        How ``"f1"`` moves the threshold away from :data:`~skrisk.matchers.MATCH_THRESHOLD` (see above).
    proba_all : array-like of shape (N,), optional
        The matcher's probability of every candidate pair, for the model-assisted no-harm rule;
        ``weights`` must then be the Hansen-Hurwitz weights ``1 / (N q_i)`` with this ``N``.

    Returns
    -------
    ThresholdChoice

    Examples
    --------
    >>> y = [1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0]
    >>> p = [0.97, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.45, 0.3, 0.2, 0.1, 0.05, 0.02]
    >>> best = choose_threshold(y, p, [1] * 13, rule="one-se", se_tolerance=0)
    >>> best.threshold, round(best.f1, 3)
    (0.375, 0.933)
    >>> c = choose_threshold(y, p, [1] * 13)  # 13 answers cannot show that 0.375 is better
    >>> c.threshold, round(c.f1, 3)
    (0.5, 0.857)
    """
    y, p, w = _audit_arrays(y_audit, proba_audit, weights)
    confidence = _check_confidence(confidence)
    kind, goal = _check_target(target)
    if isinstance(se_tolerance, bool) or not isinstance(se_tolerance, (int, float, np.floating)) or not (
        np.isfinite(se_tolerance) and se_tolerance >= 0
    ):
        raise ValueError(f"se_tolerance must be a finite number >= 0, got {se_tolerance!r}.")
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}.")
    u = np.unique(p)
    cands = np.unique(np.concatenate([[0.0, MATCH_THRESHOLD], (u[:-1] + u[1:]) / 2]))
    if len(y) == 0 or y.sum() == 0:
        est = _estimate(y, (p > MATCH_THRESHOLD).astype(np.float64), w, MATCH_THRESHOLD, confidence)
        return ThresholdChoice(MATCH_THRESHOLD, est, target, kind == "f1", cands)
    D = (p[None, :] > cands[:, None]).astype(np.float64)  # (n_candidates, n)
    wn = _unit(w)  # the plain estimates take ratios of weighted sums: in units of the largest weight
    tp = D @ (wn * y)
    pred = D @ wn
    pos = float((wn * y).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.where(pred > 0, tp / pred, np.nan)
        rec = tp / pos
        f1 = 2 * tp / (pred + pos)
    near = -np.abs(cands - MATCH_THRESHOLD)
    met = True
    if kind == "f1" and rule == "no-harm":
        z = float(norm.ppf(0.5 + confidence / 2))
        base = int(np.flatnonzero(cands == MATCH_THRESHOLD)[0])
        low = np.full(len(cands), -np.inf)
        gain_low = _assisted_gains(y, p, w, proba_all, base, z) if proba_all is not None else None
        for c in np.flatnonzero(D.any(axis=1) & (cands != MATCH_THRESHOLD)):
            if gain_low is not None:
                low[c] = gain_low(float(cands[c]), D[c], D[base])
            elif (D[c] != D[base]).any():  # a candidate that decides no audited draw differently gains nothing seen
                low[c] = _f1_difference(y, D[c], D[base], w, z)[1][0]
        best = int(np.argmax(low)) if low.max() > 0 else base
    elif kind == "f1":
        best = np.lexsort((near, f1))[-1]
        if se_tolerance > 0:
            lo, hi = _estimate(y, D[best], w, float(cands[best]), confidence).f1_interval
            z = float(norm.ppf(0.5 + confidence / 2))
            close = np.flatnonzero(np.nan_to_num(f1, nan=-1.0) >= f1[best] - se_tolerance * (hi - lo) / (2 * z) - 1e-12)
            best = close[np.argmax(near[close])]
    elif kind == "precision":
        ok = np.flatnonzero(np.nan_to_num(prec, nan=-1.0) >= goal - 1e-12)
        if len(ok):
            best = ok.min()
        else:
            met = False
            best = int(np.nanargmax(np.nan_to_num(prec, nan=-1.0)))
    else:
        ok = np.flatnonzero(rec >= goal - 1e-12)
        best = ok.max() if len(ok) else 0
        met = bool(len(ok))
    t = float(cands[best])
    est = _estimate(y, D[best], w, t, confidence)
    return ThresholdChoice(t, est, target, met, cands)
