"""Stopping rules for active learning: stabilising predictions, and a plateau of the summed risk.

Each rule is fed once per round (:meth:`update`) and says whether it recommends stopping
(:attr:`should_stop`) and why (:meth:`state_text`). They only advise: the session shows the
advice, the person decides. Both rules watch the matcher, not its quality: on large candidate
sets with few matches they can fire long before the F1 stops rising, so :func:`confirm_stop`
lets their advice through only when the audit shows that the last labels gained little, and
shows it precisely enough to know.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from sklearn.utils import check_random_state

from .._typing import IntArray, RandomStateLike
from ..exceptions import DataError
from ._estimate import _vector

__all__ = ["RiskPlateau", "StabilisingPredictions", "cohen_kappa", "confirm_stop"]


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    return int(value)


def _check_fraction(value: object, name: str, *, closed_low: bool) -> float:
    ok = isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
    if ok:
        ok = (0 <= value <= 1) if closed_low else (0 < value <= 1)
    if not ok:
        raise ValueError(f"{name} must be a number in {'[0' if closed_low else '(0'}, 1], got {value!r}.")
    return float(value)  # type: ignore[arg-type]


def _number(value: object, name: str, low: float, high: float, *, missing: bool = False) -> float:
    """``value`` as a float in ``[low, high]``; with ``missing``, None and nan give nan (unknown)."""
    if missing and (value is None or (isinstance(value, (float, np.floating)) and np.isnan(value))):
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not (
        low <= value <= high
    ):
        unknown = " (None or nan when not known)" if missing else ""
        raise ValueError(f"{name} must be a number in [{low:g}, {high:g}]{unknown}, got {value!r}.")
    return float(value)


def _interval(value: object, name: str, low: float, high: float) -> tuple[float, float] | None:
    """``value`` as ``(lo, hi)``, two numbers with ``low <= lo <= hi <= high``; None stays None."""
    if value is None:
        return None
    try:
        lo, hi = value  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high) or None, got {value!r}.") from None
    lo, hi = _number(lo, f"{name}[0]", low, high), _number(hi, f"{name}[1]", low, high)
    if lo > hi:
        raise ValueError(f"{name} = {value!r} has its low end above its high end: give (low, high).")
    return lo, hi


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
    for name, v in (("a", x), ("b", y)):
        if not np.isin(v, (0.0, 1.0)).all():
            i = int(np.flatnonzero(~np.isin(v, (0.0, 1.0)))[0])
            raise ValueError(f"cohen_kappa: {name}[{i}] = {float(v[i])!r}: the labelings must hold 0 and 1 only "
                             "(cut probabilities first, e.g. p > 0.5).")
    p_o = float(np.mean(x == y))
    if p_o == 1.0:
        return 1.0
    px, py = float(x.mean()), float(y.mean())
    p_e = px * py + (1 - px) * (1 - py)
    return float((p_o - p_e) / (1 - p_e)) if p_e < 1 else 0.0


class StabilisingPredictions:
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
    >>> rule = StabilisingPredictions(window=2, agreement=0.9, random_state=0)
    >>> for preds in ([0, 1, 0, 1], [0, 1, 1, 1], [0, 1, 1, 1], [0, 1, 1, 1]):
    ...     _ = rule.update(preds)
    >>> rule.kappas_, rule.should_stop, rule.fired_at_
    ([0.5, 1.0, 1.0], True, 4)
    """

    def __init__(
        self, window: int = 3, agreement: float = 0.99, sample_size: int = 1000, random_state: RandomStateLike = None
    ) -> None:
        self.window = window
        self.agreement = agreement
        self.sample_size = sample_size
        self.random_state = random_state

    def update(self, predictions: npt.ArrayLike) -> "StabilisingPredictions":
        """Add one round's predictions of every candidate pair (the same pairs each round).

        Parameters
        ----------
        predictions : array-like of shape (n_pairs,)
            0/1 labels or match probabilities (a pair is a match iff above 0.5).

        Returns
        -------
        self
        """
        window = _check_int(self.window, "window", 1)
        _check_fraction(self.agreement, "agreement", closed_low=False)
        size = _check_int(self.sample_size, "sample_size", 1)
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
        as flat. A larger ``tol`` fires earlier, possibly while the F1 still rises; a smaller one
        may not fire within a session's budget (see the benchmarks in the documentation).

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

    def __init__(self, window: int = 3, tol: float = 0.05) -> None:
        self.window = window
        self.tol = tol

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
        window = _check_int(self.window, "window", 1)
        tol = _check_fraction(self.tol, "tol", closed_low=True)
        r = _vector(risk, "risk", low=0)
        if len(r) == 0:
            raise DataError("risk is empty: pass the risks of the unlabelled pool.")
        with np.errstate(over="ignore"):  # an infinite total is refused below
            total = float(r.sum()) if n_pool is None else float(r.mean()) * _check_int(n_pool, "n_pool", 1)
        if not np.isfinite(total):
            raise DataError(f"the risks add up to {total} (largest {float(r.max())!r}): give risks on a scale whose "
                            "sum is finite, e.g. LearnRisk's, in [0, 1].")
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
    only when this check passes in three rounds in a row, so that one lucky audit comparison does
    not stop a session.

    With ``min_kappa``, the advice also needs the matcher's decisions to have settled: ``kappa``,
    Cohen's kappa (``cohen_kappa``) between the current matcher's decisions on every
    candidate and those of the matcher ``kappa_labels`` labels before, at least ``min_kappa``
    (the stabilising-predictions idea of Bloodgood and Vijay-Shanker, 2009, over a longer span
    and on all candidates): a small recent gain alone does not show that the next labels gain
    little while the matcher still moves. An unknown kappa (None or nan: too few rounds yet)
    keeps the advice to go on. The session does not ask it: a ``min_kappa`` strict enough to
    be safe over a long span rarely passes, and would hold back advice the audit supports.

    Parameters
    ----------
    rule_fires : bool
        Whether a stopping rule (``StabilisingPredictions``, ``RiskPlateau``) fires.
    gain : float or None
        The estimated recent F1 gain, in [-1, 1] (None or nan: not estimated).
    gain_interval : tuple of float or None
        Its interval ``(low, high)``, within [-1, 1] and holding ``gain``.
    labels : int
        How many labels the gain spans (>= 0).
    f1_interval : tuple of float or None
        The interval ``(low, high)`` of the current F1 estimate, within [0, 1] (None: no estimate).
    n_matches : int
        Audit answers that are true matches (>= 0).
    max_gain : float, default=0.01
        The largest recent gain (high end of the interval) at which stopping is advised.
    max_half_width : float, default=0.1
        The widest F1 interval (half its width) at which stopping is advised.
    min_matches : int, default=10
        The fewest audited true matches at which stopping is advised.
    per_labels : int, optional
        Read ``max_gain`` as a gain per this many labels (None: over the ``labels`` of the gain).
    kappa : float, optional
        In [-1, 1]: Cohen's kappa of the current matcher's decisions on every candidate with those of the
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

    Raises
    ------
    ValueError
        A number out of its range, an interval that is not two numbers ``low <= high`` in range
        (nan included), or a gain outside its interval: the message names the argument.

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
    for name, v in (("max_gain", max_gain), ("max_half_width", max_half_width)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not 0 <= v <= 1:
            raise ValueError(f"{name} must be a number in [0, 1], got {v!r}.")
    if per_labels is not None:
        per_labels = _check_int(per_labels, "per_labels", 1)
    if min_kappa is not None:
        min_kappa = _check_fraction(min_kappa, "min_kappa", closed_low=True)
    if not isinstance(rule_fires, (bool, np.bool_)):
        raise ValueError(f"rule_fires must be True or False (a rule's should_stop), got {rule_fires!r}.")
    labels = _check_int(labels, "labels", 0)
    n_matches = _check_int(n_matches, "n_matches", 0)
    min_matches = _check_int(min_matches, "min_matches", 0)
    if kappa_labels is not None:
        kappa_labels = _check_int(kappa_labels, "kappa_labels", 0)
    kappa = _number(kappa, "kappa", -1.0, 1.0, missing=True)
    gain = _number(gain, "gain", -1.0, 1.0, missing=True)
    intervals = _interval(gain_interval, "gain_interval", -1.0, 1.0), _interval(f1_interval, "f1_interval", 0.0, 1.0)
    head = f"F1 gained by the last {labels} labels, on the audit"
    if not np.isfinite(gain) or intervals[0] is None or intervals[1] is None:
        return False, f"{head}: not enough audit answers to say: go on."
    (lo, hi), (f_lo, f_hi) = intervals
    if not lo <= gain <= hi:
        raise ValueError(f"gain {gain!r} lies outside its gain_interval {gain_interval!r}: pass the estimate "
                         "and the interval of one comparison (compare_f1).")
    if per_labels is not None and labels <= 0:
        return False, f"{head}: no labels since that matcher, so no pace to know: go on."
    what = f"{head}: {gain:+.3f} ({lo:+.3f} to {hi:+.3f})"
    allowed = max_gain if per_labels is None else max_gain * labels / per_labels
    pace = f"{max_gain:g}" if per_labels is None else f"{max_gain:g} per {per_labels} labels"
    if hi > allowed:
        more = "possibly more" if gain <= allowed else "more"
        return False, f"{what}: {more} than {pace}: go on."
    if n_matches < min_matches:
        return False, f"{what}, but only {n_matches} audited matches (fewer than {min_matches}): too few to know: go on."
    if (f_hi - f_lo) / 2 > max_half_width:
        return False, (f"{what}, but the F1 estimate ({f_lo:.2f}-{f_hi:.2f}) is wider than ±{max_half_width:g}: "
                       "too uncertain to know: go on.")
    settled = ""
    if min_kappa is not None:
        if not np.isfinite(kappa):
            return False, f"{what}: at most {pace}, but whether the matcher's decisions have settled is not known yet: go on."
        span = f"kappa {kappa:.3f} on all candidates with the matcher of {kappa_labels} labels before"
        if kappa < min_kappa:
            return False, f"{what}: at most {pace}, but the matcher's decisions still change ({span}, {min_kappa:g} needed): go on."
        settled = f", the matcher's decisions have settled ({span})"
    if not rule_fires:
        return False, f"{what}: at most {pace}{settled}, but no stopping rule fires: go on."
    return True, f"{what}: at most {pace}{settled}, and a stopping rule fires: recommends stopping."
