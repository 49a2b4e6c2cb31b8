"""Stopping rules for active learning: stabilising predictions, and a plateau of the summed risk.

Each rule is fed once per round (:meth:`update`) and says whether it recommends stopping
(:attr:`should_stop`) and why (:meth:`state_text`). They only advise: the session shows the
advice, the person decides. Both rules watch the matcher, not its quality: on large candidate
sets with few matches they fired long before the F1 stopped rising, so :func:`confirm_stop`
lets their advice through only when the audit shows that the last labels gained little, and
shows it precisely enough to know.
"""

from __future__ import annotations

import numbers

import numpy as np
import numpy.typing as npt
from sklearn.utils import check_random_state

from .._params import Interval, validate_call, validate_params
from .._typing import IntArray, RandomStateLike
from ..exceptions import DataError
from ._estimate import _vector

__all__ = ["RiskPlateau", "StabilizingPredictions", "cohen_kappa", "confirm_stop"]


def cohen_kappa(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cohen's kappa of two binary labelings; 1.0 when they agree everywhere (even on one class).

    Examples
    --------
    >>> cohen_kappa([1, 1, 0, 0], [1, 1, 0, 0]), cohen_kappa([0, 0, 0], [0, 0, 0])
    (1.0, 1.0)
    >>> cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1])
    -1.0
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) == 0:
        raise ValueError("cohen_kappa needs two non-empty labelings of the same length.")
    p_o = float(np.mean(x == y))
    if p_o == 1.0:
        return 1.0
    px, py = float(x.mean()), float(y.mean())
    p_e = px * py + (1 - px) * (1 - py)
    return float((p_o - p_e) / (1 - p_e)) if p_e < 1 else 0.0


class StabilizingPredictions:
    """Stop when successive matchers agree on a fixed stop set (Bloodgood and Vijay-Shanker, 2009).

    Each :meth:`update` takes the current matcher's predictions (labels, or match probabilities
    cut at 0.5) of the same candidate pairs; on the first call a seeded random stop set of
    ``sample_size`` of them is fixed. Cohen's kappa is computed between the predictions of
    consecutive rounds on the stop set; the rule fires once the mean of the last ``window``
    kappas is at least ``agreement``. (small-text's ``KappaAverage`` instead fires when the mean
    absolute change between the window's kappas is below ``1 - agreement``; this class follows
    the paper.)

    Parameters
    ----------
    window : int, default=3
        Number of successive kappas averaged.
    agreement : float, default=0.99
        The mean kappa at which the rule fires.
    sample_size : int, default=1000
        Size of the stop set (all pairs when there are fewer).
    random_state : int, RandomState instance or None
        Seeds the stop set.

    Attributes
    ----------
    stop_set_ : ndarray of intp
        Positions of the stop set.
    kappas_ : list of float
        Kappa of each round with the one before (one fewer than the updates).
    n_updates_ : int
    fired_at_ : int or None
        The update (1-based) at which the rule first fired.

    References
    ----------
    .. [1] Bloodgood, M. and Vijay-Shanker, K. "A method for stopping active learning based on
       stabilizing predictions and the need for user-adjustable stopping", CoNLL 2009.

    Examples
    --------
    >>> rule = StabilizingPredictions(window=2, agreement=0.9, random_state=0)
    >>> for preds in ([0, 1, 0, 1], [0, 1, 1, 1], [0, 1, 1, 1], [0, 1, 1, 1]):
    ...     _ = rule.update(preds)
    >>> rule.kappas_, rule.should_stop, rule.fired_at_
    ([0.5, 1.0, 1.0], True, 4)
    """

    _parameter_constraints: dict = {
        "window": [Interval(numbers.Integral, 1, None)],
        "agreement": [Interval(numbers.Real, 0, 1, closed="right")],
        "sample_size": [Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
    }

    def __init__(
        self, window: int = 3, agreement: float = 0.99, sample_size: int = 1000, random_state: RandomStateLike = None
    ) -> None:
        self.window = window
        self.agreement = agreement
        self.sample_size = sample_size
        self.random_state = random_state

    def update(self, predictions: npt.ArrayLike) -> "StabilizingPredictions":
        """Add one round's predictions of every candidate pair (the same pairs each round).

        Parameters
        ----------
        predictions : array-like of shape (n_pairs,)
            0/1 labels or match probabilities (a pair is a match iff above 0.5).

        Returns
        -------
        self
        """
        validate_params(self)
        window, size = int(self.window), int(self.sample_size)
        x = _vector(predictions, "predictions", low=0, high=1)
        if not hasattr(self, "stop_set_"):
            if len(x) == 0:
                raise DataError("predictions is empty: the stop set needs candidate pairs.")
            rng = check_random_state(self.random_state)
            n = len(x)
            self.stop_set_: IntArray = (
                np.arange(n, dtype=np.intp) if size >= n
                else np.sort(rng.choice(n, size=size, replace=False)).astype(np.intp)
            )
            self.n_pairs_ = n
            self.kappas_: list[float] = []
            self.n_updates_ = 0
            self.fired_at_: int | None = None
            self._last: np.ndarray | None = None
        elif len(x) != self.n_pairs_:
            raise DataError(
                f"predictions has {len(x)} values but the first update had {self.n_pairs_}: pass the "
                "predictions of the same candidate pairs every round."
            )
        labels = (x[self.stop_set_] > 0.5).astype(np.int8)
        if self._last is not None:
            self.kappas_.append(cohen_kappa(self._last, labels))
        self._last = labels
        self.n_updates_ += 1
        if self.fired_at_ is None and len(self.kappas_) >= window and np.mean(self.kappas_[-window:]) >= self.agreement:
            self.fired_at_ = self.n_updates_
        return self

    @property
    def should_stop(self) -> bool:
        """Whether the mean of the last ``window`` kappas is at least ``agreement`` now."""
        k = getattr(self, "kappas_", [])
        return len(k) >= self.window and float(np.mean(k[-self.window :])) >= self.agreement

    def state_text(self) -> str:
        """One line on the rule's state, ending with its advice."""
        k = getattr(self, "kappas_", [])
        head = f"stabilising predictions (kappa of successive matchers on {len(getattr(self, 'stop_set_', []))} pairs)"
        if len(k) < self.window:
            return (f"{head}: {len(k)} of the {self.window} kappas it needs"
                    + (f" (last {k[-1]:.3f})" if k else "") + ": go on.")
        last = ", ".join(f"{v:.3f}" for v in k[-self.window :])
        mean = float(np.mean(k[-self.window :]))
        verdict = "recommends stopping" if self.should_stop else "go on"
        return f"{head}: last {last}, mean {mean:.3f} vs {self.agreement:g} needed: {verdict}."


class RiskPlateau:
    """Stop when the expected number of mispredicted pool pairs stops falling.

    The expected number is the summed risk of the unlabelled pool (LearnRisk's risk, or the
    matcher's uncertainty): ``mean(risk) * n_pool`` when the risk is known on a subset of the
    pool. The rule fires once it has changed by at most ``tol`` (relative, up or down) in each of
    the last ``window`` rounds: a total that still falls means the labels still teach the
    matcher, and one that jumps up means the risk model is still unsettled.

    Parameters
    ----------
    window : int, default=3
    tol : float, default=0.05
        The relative change ``|previous - current| / previous`` at or below which a round counts
        as flat. In simulated sessions (``benchmarks/bench_quality.py``, batches of 50) 5 % fired
        at 350 labels on DBLP-Scholar, 0.5-1.1 points of F1 short of the F1 at 600 labels, and not
        before 550 labels on Abt-Buy, whose F1 was still rising; 2 % never fired within 600.

    Attributes
    ----------
    totals_ : list of float
        The expected mispredictions of each round.
    n_updates_ : int
    fired_at_ : int or None
        The update (1-based) at which the rule first fired.

    Examples
    --------
    >>> rule = RiskPlateau(window=2, tol=0.05)
    >>> for total in (100.0, 60.0, 59.0, 58.5):
    ...     _ = rule.update([total])
    >>> rule.should_stop, rule.fired_at_
    (True, 4)
    """

    _parameter_constraints: dict = {
        "window": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, 1, closed="both")],
    }

    def __init__(self, window: int = 3, tol: float = 0.05) -> None:
        self.window = window
        self.tol = tol

    @validate_call({"n_pool": [None, Interval(numbers.Integral, 1, None)]})
    def update(self, risk: npt.ArrayLike, *, n_pool: int | None = None) -> "RiskPlateau":
        """Add one round's risks of the unlabelled pool (or a random subset of it).

        Parameters
        ----------
        risk : array-like of shape (n,)
            Non-negative risks (e.g. LearnRisk's, in [0, 1]) of the pool pairs.
        n_pool : int, optional
            Size of the whole unlabelled pool when ``risk`` covers a random subset of it.

        Returns
        -------
        self
        """
        validate_params(self)
        window, tol = int(self.window), float(self.tol)
        r = _vector(risk, "risk", low=0)
        if len(r) == 0:
            raise DataError("risk is empty: pass the risks of the unlabelled pool.")
        total = float(r.sum()) if n_pool is None else float(r.mean()) * int(n_pool)
        if not hasattr(self, "totals_"):
            self.totals_: list[float] = []
            self.n_updates_ = 0
            self.fired_at_: int | None = None
        self.totals_.append(total)
        self.n_updates_ += 1
        if self.fired_at_ is None and self._flat(window, tol):
            self.fired_at_ = self.n_updates_
        return self

    def _falls(self) -> list[float]:
        t = getattr(self, "totals_", [])
        return [(a - b) / a if a > 0 else 0.0 for a, b in zip(t, t[1:])]

    def _flat(self, window: int, tol: float) -> bool:
        f = self._falls()
        return len(f) >= window and all(abs(x) <= tol for x in f[-window:])

    @property
    def should_stop(self) -> bool:
        """Whether each of the last ``window`` relative changes is at most ``tol``."""
        return self._flat(self.window, self.tol)

    def state_text(self) -> str:
        """One line on the rule's state, ending with its advice."""
        t = getattr(self, "totals_", [])
        head = "expected mispredictions (sum of risks over the unlabelled pairs)"
        if not t:
            return f"{head}: not measured yet: go on."
        f = self._falls()
        change = "" if not f else f", {-f[-1]:+.1%} since the last round"
        if len(f) < self.window:
            return f"{head}: {t[-1]:.1f}{change}; {len(f)} of the {self.window} rounds it compares: go on."
        verdict = "recommends stopping" if self.should_stop else "go on"
        return (f"{head}: {t[-1]:.1f}{change}; changed by at most {self.tol:.0%} in each of the last "
                f"{self.window} rounds: {'yes' if self.should_stop else 'no'}: {verdict}.")


@validate_call({
    "max_gain": [Interval(numbers.Real, 0, 1, closed="both")],
    "max_half_width": [Interval(numbers.Real, 0, 1, closed="both")],
    "per_labels": [None, Interval(numbers.Integral, 1, None)],
    "min_kappa": [None, Interval(numbers.Real, 0, 1, closed="both")],
})
def confirm_stop(
    rule_fires: bool,
    gain: float | None,
    gain_interval: tuple[float, float] | None,
    *,
    labels: int,
    f1_interval: tuple[float, float] | None,
    n_matches: int,
    max_gain: float = 0.01,
    max_half_width: float = 0.1,
    min_matches: int = 10,
    per_labels: int | None = None,
    kappa: float | None = None,
    min_kappa: float | None = None,
    kappa_labels: int | None = None,
) -> tuple[bool, str]:
    """Whether to advise stopping: a rule fires *and* the audit shows the recent F1 gain is small.

    ``gain`` is the estimated F1 of the current matcher minus that of the matcher ``labels``
    labels ago, on the same audit draws (:func:`~skrisk.quality.compare_f1`); the advice
    stands only when the high end of its interval is at most ``max_gain`` (the gain is small)
    *and* the current F1 estimate's interval is at most ``± max_half_width`` (the audit sees the
    matcher well enough to know it: a matcher that finds almost no match gains nothing either,
    on an audit that cannot tell, while its next labels may teach it the most), from at least
    ``min_matches`` audited true matches (with fewer, one heavily weighted missed match can put a
    narrow F1 interval far from the truth). An interval too wide to tell, or no estimate, keeps
    the advice to go on.

    With ``per_labels``, ``max_gain`` is a pace: the high end of the gain over ``labels`` labels
    may be at most ``max_gain * labels / per_labels``, so that, if the next labels gain no more
    than the last did, the next ``per_labels`` gain at most ``max_gain``. The session compares
    with the matcher of about 100 labels before at 0.01 per 100 labels, and advises stopping
    only when this check passes in three rounds in a row (issue #30: ``benchmarks/RESULTS.md``
    measures it).

    With ``min_kappa``, the advice also needs the matcher's decisions to have settled: ``kappa``,
    Cohen's kappa (:func:`cohen_kappa`) between the current matcher's decisions on every
    candidate and those of the matcher ``kappa_labels`` labels before, at least ``min_kappa``
    (the stabilising-predictions idea of Bloodgood and Vijay-Shanker, 2009, over a longer span
    and on all candidates): a small recent gain alone does not show that the next labels gain
    little while the matcher still moves. An unknown kappa (None or nan: too few rounds yet)
    keeps the advice to go on. The session does not ask it: over 20 rounds at 0.98 it was right
    where it fired on simulated sessions but fired on one path of four (issue #30, fifth part).

    Parameters
    ----------
    rule_fires : bool
        Whether a stopping rule (:class:`StabilizingPredictions`, :class:`RiskPlateau`) fires.
    gain : float or None
        The estimated recent F1 gain (None or nan: not estimated).
    gain_interval : tuple of float or None
        Its interval.
    labels : int
        How many labels the gain spans (for the text).
    f1_interval : tuple of float or None
        The interval of the current F1 estimate (None: no estimate).
    n_matches : int
        Audit answers that are true matches.
    max_gain : float, default=0.01
        The largest recent gain (high end of the interval) at which stopping is advised.
    max_half_width : float, default=0.1
        The widest F1 interval (half its width) at which stopping is advised.
    min_matches : int, default=10
        The fewest audited true matches at which stopping is advised.
    per_labels : int, optional
        Read ``max_gain`` as a gain per this many labels (None: over the ``labels`` of the gain).
    kappa : float, optional
        Cohen's kappa of the current matcher's decisions on every candidate with those of the
        matcher ``kappa_labels`` labels before (used only with ``min_kappa``).
    min_kappa : float, optional
        The smallest ``kappa`` at which stopping is advised (None: the decisions are not asked).
    kappa_labels : int, optional
        How many labels ``kappa`` spans (for the text).

    Returns
    -------
    stop : bool
    text : str
        One line on the check, ending with its advice.

    Examples
    --------
    >>> confirm_stop(True, 0.002, (-0.004, 0.008), labels=30, f1_interval=(0.85, 0.93), n_matches=40)[0]
    True
    >>> stop, text = confirm_stop(True, 0.01, (-0.05, 0.09), labels=30, f1_interval=(0.85, 0.93), n_matches=40)
    >>> stop, text.endswith("go on.")
    (False, True)

    As a pace: 100 labels that gained at most 0.015 gain at most 0.0075 per 50:

    >>> confirm_stop(True, 0.001, (-0.01, 0.015), labels=100, f1_interval=(0.85, 0.93), n_matches=40,
    ...              per_labels=50)[1]
    'F1 gained by the last 100 labels, on the audit: +0.001 (-0.010 to +0.015): at most 0.01 per 50 labels, and a stopping rule fires: recommends stopping.'

    Asking the decisions to have settled as well:

    >>> confirm_stop(True, 0.001, (-0.01, 0.015), labels=100, f1_interval=(0.85, 0.93), n_matches=40,
    ...              per_labels=50, kappa=0.97, min_kappa=0.98, kappa_labels=200)[0]
    False
    """
    per_labels = None if per_labels is None else int(per_labels)
    min_kappa = None if min_kappa is None else float(min_kappa)
    head = f"F1 gained by the last {labels} labels, on the audit"
    if gain is None or gain_interval is None or not np.isfinite(gain) or f1_interval is None:
        return False, f"{head}: not enough audit answers to say: go on."
    if per_labels is not None and labels <= 0:
        return False, f"{head}: no labels since that matcher, so no pace to know: go on."
    lo, hi = gain_interval
    what = f"{head}: {gain:+.3f} ({lo:+.3f} to {hi:+.3f})"
    allowed = max_gain if per_labels is None else max_gain * labels / per_labels
    pace = f"{max_gain:g}" if per_labels is None else f"{max_gain:g} per {per_labels} labels"
    if hi > allowed:
        more = "possibly more" if gain <= allowed else "more"
        return False, f"{what}: {more} than {pace}: go on."
    if n_matches < min_matches:
        return False, f"{what}, but only {n_matches} audited matches (fewer than {min_matches}): too few to know: go on."
    f_lo, f_hi = f1_interval
    if (f_hi - f_lo) / 2 > max_half_width:
        return False, (f"{what}, but the F1 estimate ({f_lo:.2f}-{f_hi:.2f}) is wider than ±{max_half_width:g}: "
                       "too uncertain to know: go on.")
    settled = ""
    if min_kappa is not None:
        if kappa is None or not np.isfinite(kappa):
            return False, f"{what}: at most {pace}, but whether the matcher's decisions have settled is not known yet: go on."
        span = f"kappa {kappa:.3f} on all candidates with the matcher of {kappa_labels} labels before"
        if kappa < min_kappa:
            return False, f"{what}: at most {pace}, but the matcher's decisions still change ({span}, {min_kappa:g} needed): go on."
        settled = f", the matcher's decisions have settled ({span})"
    if not rule_fires:
        return False, f"{what}: at most {pace}{settled}, but no stopping rule fires: go on."
    return True, f"{what}: at most {pace}{settled}, and a stopping rule fires: recommends stopping."
