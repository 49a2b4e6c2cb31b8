"""Risk sampling (Nafa, Chen et al., KBS 2022): LearnRisk risk + weighted k-medoids with fixed medoids."""

from __future__ import annotations

import inspect
import numbers
import time
import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state

from .._device import resolve_device, torch_threads
from .._params import HasMethods, Interval, Options, validate_params
from .._rows import first_non_finite, num_rows, take_rows
from .._sampling import stratified_choice
from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import DataError, NotFittedError
from ..kmedoids import KMedoidsResult
from ..matchers._base import require
from ..risk import LearnRisk, risk_features
from ..risk._learnrisk import holds_risk_features
from ._batch import SELECTORS
from ._selection import (
    _first_beyond_float32,
    check_pool_matches,
    check_query,
    checked_finite,
    checked_proba,
    labelled_pool,
    proba_function,
)

__all__ = ["RiskQuery", "RiskSampler", "risk_sampling"]


@contextmanager
def _clock(timings: dict, key: str) -> Iterator[None]:
    """Add the wall time of the block to ``timings[key]`` (seconds)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = timings.get(key, 0.0) + time.perf_counter() - start


def _takes_return_proba(fn: Any) -> bool:
    try:
        return "return_proba" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins, odd callables
        return False


def _summary(value: Any) -> str:
    """A short text for a parameter value: data are shown by type and shape, never printed."""
    if isinstance(value, (np.ndarray, pd.DataFrame, pd.Series)):
        return f"<{type(value).__name__} of shape {tuple(value.shape)}>"
    if isinstance(value, Mapping):
        try:
            n = num_rows(value)
        except (TypeError, ValueError):
            n = "?"
        return f"<{type(value).__name__} with keys {sorted(map(str, value))} of {n} rows>"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"<{type(value).__name__} of {len(value)} items>"
    if hasattr(value, "shape") and not np.isscalar(value):
        return f"<{type(value).__name__} of shape {tuple(value.shape)}>"
    return repr(value)


@dataclass(frozen=True)
class RiskQuery:
    """What one risk-sampling call computed (``RiskSampler.last_query_``).

    Attributes
    ----------
    positions : ndarray of intp, shape (n_instances,)
        The chosen pool positions, riskiest first (what the call returned).
    scores : ndarray of float64, shape (n_instances,)
        Their risks (what the call returned).
    risk : ndarray of float64, shape (n_pool,)
        The risk of every pool pair.
    weights : ndarray of float64, shape (n_pool,)
        The selector's weight of every pool pair (see its ``weighting``).
    risk_model : LearnRisk or None
        The risk model fitted for this call; None when the matcher made no mistake (or only
        mistakes) on the ranking pairs and the risk was its uncertainty ``min(p, 1 - p)``.
    kmedoids : KMedoidsResult or None
        The kernel's result (:class:`~skrisk.strategies.KMedoidsSelector` only). Its indices
        count the labelled pairs first, then the candidates: the whole pool, the preselected
        pairs, or the representative sample of more candidates than the selector's ``max_pool``
        (whose ``total_deviation`` is then the sample's re-weighted estimate).
    timings : dict of str to float
        Wall seconds per phase: ``"proba_repr"`` (matcher probabilities and representations of
        the pool and the labelled set), ``"labelled_proba"`` (out-of-fold refits),
        ``"valid_proba"``, ``"rules"``, ``"ranking"``, ``"learnrisk_fit"`` (all of LearnRisk's
        fit), ``"risk"`` (risk of the pool), the selector's (``"weights"``, ``"sample"``,
        ``"kmedoids"`` or ``"kmeanspp"``) and ``"total"``.
    n_threads : int
        Torch CPU threads the call ran with.
    """

    positions: IntArray
    scores: FloatArray
    risk: FloatArray
    weights: FloatArray
    risk_model: LearnRisk | None
    kmedoids: KMedoidsResult | None
    timings: dict[str, float] = field(default_factory=dict)
    n_threads: int = 1

    def __repr__(self) -> str:
        return (
            f"RiskQuery(positions={_summary(self.positions)}, risk={_summary(self.risk)}, "
            f"risk_model={'None' if self.risk_model is None else 'LearnRisk(...)'}, "
            f"total_s={self.timings.get('total', float('nan')):.3f}, n_threads={self.n_threads})"
        )


class RiskSampler(BaseEstimator):
    """Risk sampling as a modAL query strategy (a callable object you make and keep).

    One call, given the learner and the unlabelled pool:

    1. fits a copy of ``risk`` (:class:`~skrisk.LearnRisk`) around the current matcher: rules
       and expectations from the labelled set, weights ranked on (a ``valid_ratio`` share of)
       the validation pairs this sampler was given;
    2. computes the risk ``R_i`` (VaR) of every pool pair;
    3. takes the representations of the pool and of the labelled set: ``transform`` when given,
       else the matcher's ``represent``; for a ``Pipeline``, its last step's ``represent`` of the
       transformed pairs, else the transform of the steps before the last; for any other
       classifier with ``predict_proba``, the risk features (similarity features) of the pairs.
       The two fallbacks are announced by one ``UserWarning`` per sampler;
    4. hands the risks and representations to ``selector``, which chooses the batch: by default
       the paper's weighted k-medoids with the labelled pairs as fixed medoids
       (:class:`~skrisk.strategies.KMedoidsSelector`, eq. 6-7), and returns the chosen pool
       positions with their risks.

    Parameters
    ----------
    X_valid, y_valid : pool-like and array-like, optional
        Labelled validation pairs (the matcher's input format) for LearnRisk's ranking. Without
        them LearnRisk ranks on the labelled set's out-of-fold probabilities.
    risk : LearnRisk, default=None
        The risk model, unfitted, with its hyperparameters (``epochs``, ``theta``, ...),
        ``features``, ``feature_names`` and ``cv`` (see :class:`~skrisk.LearnRisk`). Each call
        fits a copy of it around the learner's matcher, so its ``estimator`` must be None. None:
        ``LearnRisk()``.
    selector : selector or "auto", default="auto"
        How the batch is chosen from the risks:
        :class:`~skrisk.strategies.KMedoidsSelector` (the paper's, with skrisk's preselection of
        the riskiest pairs), :class:`~skrisk.strategies.BadgeSelector` (risk-weighted BADGE),
        :class:`~skrisk.strategies.TopKSelector` (the riskiest pairs), or any object with their
        ``select`` method and ``needs_representation`` attribute. ``"auto"``: the matcher's
        ``risk_selection`` attribute where it has one (``"badge"`` for
        :class:`~skrisk.matchers.LMMatcher`), else ``KMedoidsSelector()``.
    transform : callable, optional
        ``transform(X) -> (n, h)`` representation; default the matcher's ``represent``.
    valid_ratio : float, default=1.0
        Share of the validation pairs used (a stratified sample fixed by ``random_state``).
    n_threads : int or None, default=None
        Torch intra-op CPU threads during a call (restored afterwards); None leaves torch's
        setting alone. The k-medoids kernel chooses its own threads by the size of its work and
        the CPUs other processes leave idle, within this limit.
    random_state : int or None, default=None
        Seeds the validation sample, the copy of ``risk`` (when None, the risk's own
        ``random_state`` is kept) and the selector (a per-call ``random_state`` overrides it for
        that call).

    Attributes
    ----------
    last_query_ : RiskQuery
        What the last call computed: positions, scores, the risk and weight of every pool pair,
        the fitted risk model, the k-medoids result, timings and threads. Only an instance you
        made keeps it; :func:`risk_sampling` keeps nothing.

    See Also
    --------
    skrisk.strategies.KMedoidsSelector, skrisk.strategies.BadgeSelector,
    skrisk.strategies.TopKSelector : the selectors.
    skrisk.pools.stream_query, skrisk.pools.dask_query : the same query over pools read in chunks.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk import LearnRisk, RiskSampler
    >>> from skrisk.strategies import KMedoidsSelector
    >>> sampler = RiskSampler(np.zeros((5742, 33)), np.zeros(5742), risk=LearnRisk(epochs=300),
    ...                       selector=KMedoidsSelector(preselect=3), random_state=0)
    >>> sampler
    RiskSampler(X_valid=<ndarray of shape (5742, 33)>, y_valid=<ndarray of shape (5742,)>, risk=LearnRisk(epochs=300), selector=KMedoidsSelector(preselect=3), random_state=0)
    >>> sampler.set_params(selector__preselect=5).selector.preselect
    5
    """

    _parameter_constraints: dict = {
        "X_valid": [None, "array-like"],
        "y_valid": [None, "array-like"],
        "risk": [None, LearnRisk],
        "selector": [Options(str, {"auto"}), HasMethods(("select",))],
        "transform": [None, "callable"],
        "valid_ratio": [Interval(numbers.Real, 0, 1, closed="right")],
        "n_threads": [None, Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        X_valid: Any = None,
        y_valid: Any = None,
        *,
        risk: LearnRisk | None = None,
        selector: Any = "auto",
        transform: Callable[[Any], Any] | None = None,
        valid_ratio: float = 1.0,
        n_threads: int | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.X_valid = X_valid
        self.y_valid = y_valid
        self.risk = risk
        self.selector = selector
        self.transform = transform
        self.valid_ratio = valid_ratio
        self.n_threads = n_threads
        self.random_state = random_state

    @property
    def __name__(self) -> str:  # strategies are named in reports
        return "risk_sampling"

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        """Parameters that differ from the defaults; data are summarised, never printed."""
        defaults = {
            k: v.default for k, v in inspect.signature(type(self).__init__).parameters.items()
            if k != "self"
        }
        shown = []
        for key, d in defaults.items():  # in the signature's order
            value = getattr(self, key)
            same = value is d or (
                isinstance(value, (str, int, float, bool)) and type(value) is type(d) and value == d
            )
            if not same:
                shown.append(f"{key}={_summary(value)}")
        return f"{type(self).__name__}({', '.join(shown)})"

    # ------------------------------------------------------------------ helpers
    def _check_params(self) -> None:
        validate_params(self)
        if (self.X_valid is None) != (self.y_valid is None):
            raise ValueError("Give both X_valid and y_valid, or neither.")
        if self.risk is not None:
            validate_params(self.risk)  # the risk's hyperparameters, before any matcher is asked
        if self.risk is not None and self.risk.estimator is not None:
            raise ValueError(
                f"RiskSampler(risk=LearnRisk(estimator={type(self.risk.estimator).__name__}(...))): each "
                "query fits the risk around the learner's matcher. Leave the risk's estimator None."
            )

    def _risk(self) -> LearnRisk:
        return LearnRisk() if self.risk is None else self.risk

    def _valid_subset(self, X_lab: Any = None) -> tuple[Any, np.ndarray] | None:
        if self.X_valid is None:
            return None
        y_raw = np.asarray(self.y_valid).ravel()
        n = num_rows(self.X_valid)
        if len(y_raw) != n:
            raise ValueError(f"X_valid has {n} rows but y_valid has {len(y_raw)} labels.")
        if n == 0:
            raise ValueError(
                "X_valid holds no pairs: give labelled validation pairs, or neither X_valid nor y_valid."
            )
        y = binary_labels(y_raw, "y_valid")
        if X_lab is not None:
            check_pool_matches(self.X_valid, X_lab, "risk_sampling", what="X_valid")
        found = first_non_finite(self.X_valid)
        if found is not None:
            count, row, where = found
            raise DataError(
                f"risk_sampling: X_valid holds NaN or infinity in {count} pair(s), first at row {row}"
                f"{' (' + where + ')' if where else ''}. Impute them (e.g. with the -1 sentinel of "
                "skrisk.data.SimilarityFeatures) or drop those validation pairs."
            )
        beyond = _first_beyond_float32(self.X_valid)
        if beyond is not None:
            count, row, where, value = beyond
            raise DataError(
                f"risk_sampling: X_valid holds values beyond float32's range in {count} pair(s), first at row "
                f"{row} ({where}: {value!r}). The matchers and LearnRisk's rules compute in float32, where such "
                "a value is infinite: rescale that feature, or clip it (e.g. numpy.clip(X_valid, -1e30, 1e30))."
            )
        if len(np.unique(y)) < 2:
            raise ValueError(
                "The validation set holds a single class: LearnRisk needs matches and non-matches "
                "among the validation pairs to learn which pairs are mispredicted."
            )
        if self.valid_ratio >= 1.0:
            return self.X_valid, y
        ratio = float(self.valid_ratio)
        pos = stratified_choice(y, lambda cls, n: max(1, int(round(ratio * n))),
                                check_random_state(self.random_state))
        return take_rows(self.X_valid, pos), y[pos]

    def _features(self, X: Any) -> np.ndarray:
        features = self._risk().features
        return np.asarray(features(X) if features is not None else risk_features(X), dtype=np.float64)

    def _representation(self, learner: Any) -> tuple[Callable[[Any], Any], bool, Callable[[Any], Any] | None]:
        """The representation function, whether it is the matcher's own ``represent``, and, for a
        ``Pipeline``, the same representation of pairs already transformed by the steps before
        the last (None otherwise)."""
        if self.transform is not None:
            return self.transform, False, None
        est = getattr(learner, "estimator", learner)
        if callable(getattr(est, "represent", None)):
            return require(learner, "representation", "risk_sampling"), True, None
        note = "the risk features (similarity features) of the pairs"
        fn: Callable[[Any], Any] = self._features
        encoded: Callable[[Any], Any] | None = None
        if isinstance(est, Pipeline) and len(est.steps) > 0:
            last = est.steps[-1][1]
            head = est[:-1] if len(est.steps) > 1 else None
            if callable(getattr(last, "represent", None)):
                if head is None:
                    return last.represent, False, None
                return (lambda X: last.represent(head.transform(X))), False, last.represent
            if head is not None:
                fn, note = head.transform, "the pipeline's transform of the pairs up to its last step"
                encoded = _identity
        if not getattr(self, "_noted_representation", False):
            warnings.warn(
                f"risk_sampling: {type(est).__name__} has no represent(); the distances of risk "
                f"sampling use {note}. Give RiskSampler(transform=...) to choose another.",
                UserWarning, stacklevel=5,  # the line that called the sampler
            )
            self._noted_representation = True
        return fn, False, encoded

    # ------------------------------------------------------------------ the strategy
    def __call__(
        self,
        learner: Any,
        X_pool: Any,
        n_instances: int = 1,
        *,
        random_state: RandomStateLike = None,
        **kw: Any,
    ) -> tuple[IntArray, FloatArray]:
        """Choose ``n_instances`` pool positions; returns ``(positions, risks)``.

        The diagnostics of the call are kept in ``last_query_``.
        """
        self._check_params()
        n_pool = check_query(X_pool, n_instances, "risk_sampling", learner)  # the pool checked once, here
        selector = self.resolve_selector(learner)
        device = resolve_device(getattr(selector, "device", "auto"))
        with torch_threads(self.n_threads if device.type == "cpu" else None):
            query = self._query(learner, X_pool, n_pool, n_instances, random_state, selector)
        self.last_query_ = query
        return query.positions, query.scores

    def _query(
        self, learner: Any, X_pool: Any, n_pool: int, n_instances: int, random_state: RandomStateLike,
        selector: Any,
    ) -> RiskQuery:
        timings: dict[str, float] = {}
        n_threads = torch.get_num_threads()
        start = time.perf_counter()
        proba_fn = proba_function(learner, "risk_sampling")  # every probability checked once
        X_lab = labelled_pool(learner)
        y_lab = getattr(learner, "y_training", None)
        if X_lab is None or y_lab is None or num_rows(X_lab) == 0:
            raise NotFittedError(
                "risk_sampling needs the learner's labelled set (learner.X_training / y_training) "
                "for LearnRisk's statistics: start the learner with an initial labelled set."
            )
        y_lab = binary_labels(np.asarray(y_lab).ravel(), "learner.y_training")
        seed = random_state if random_state is not None else self.random_state
        valid = self._valid_subset(X_lab)
        need_repr = bool(getattr(selector, "needs_representation", True))

        # 0. the matcher's probabilities (and representations) of the pool and the labelled set;
        # a Pipeline's steps before the last transform the pool once, for all three uses
        est = getattr(learner, "estimator", learner)
        with _clock(timings, "proba_repr"):
            Z_pool = est[:-1].transform(X_pool) if isinstance(est, Pipeline) and len(est.steps) > 1 else None
            p_pool, rep_pool, rep_lab = self._proba_and_repr(learner, X_pool, n_pool, X_lab, proba_fn, need_repr,
                                                             Z_pool)

        # 1-2. a copy of the risk model around the current matcher, then the risk of every pool pair
        model = clone(self._risk()).set_params(estimator=est)
        if seed is not None:
            model.set_params(random_state=seed if isinstance(seed, (int, np.integer)) else None)
        X_v, y_v = valid if valid is not None else (None, None)
        with _clock(timings, "learnrisk_fit"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit_around(X_lab, y_lab, X_valid=X_v, y_valid=y_v)
        for w in caught:  # LearnRisk's warnings, said by risk_sampling at the line that called it
            text = str(w.message)
            if text.startswith("LearnRisk: "):
                text = "risk_sampling: " + text[len("LearnRisk: "):]
            warnings.warn(text, w.category, stacklevel=3)
        fit_t = model.fit_timings_
        timings["labelled_proba"] = fit_t.get("oof_proba", 0.0)
        for key in ("valid_proba", "rules", "ranking"):
            if key in fit_t:
                timings[key] = fit_t[key]
        # LearnRisk's default features of a pipeline's input are read from its transform (as in
        # LearnRisk._features): hand it the pool's transform computed above
        risk_X = X_pool
        if Z_pool is not None and model.features is None and not holds_risk_features(X_pool) \
                and holds_risk_features(Z_pool):
            risk_X = Z_pool
        with _clock(timings, "risk"):
            risk = np.asarray(model.predict_risk(risk_X, proba=p_pool[:, 1]), dtype=np.float64)
        risk_model = model if model.risk_model_ is not None else None

        # 3-4. the batch, by the selector (the one selection core, shared with skrisk.pools)
        chosen = selector.select(risk, rep_pool, rep_lab, n_instances, proba=p_pool[:, 1], random_state=seed)
        timings.update(chosen.timings)
        timings["total"] = time.perf_counter() - start
        return RiskQuery(
            positions=chosen.positions, scores=risk[chosen.positions], risk=risk, weights=chosen.weights,
            risk_model=risk_model, kmedoids=chosen.kmedoids, timings=timings, n_threads=n_threads,
        )

    def resolve_selector(self, matcher: Any = None) -> Any:
        """The selector this sampler uses with ``matcher``.

        ``selector`` itself, or for ``"auto"`` the selector the matcher's ``risk_selection``
        attribute names (a ``Pipeline``'s last step's, a learner's estimator's):
        ``"kmedoids"`` (:class:`~skrisk.strategies.KMedoidsSelector`), ``"badge"``
        (:class:`~skrisk.strategies.BadgeSelector`) or ``"topk"``
        (:class:`~skrisk.strategies.TopKSelector`), each with its defaults; ``KMedoidsSelector()``
        when the matcher names none.

        Parameters
        ----------
        matcher : estimator, learner or None
            None: ``KMedoidsSelector()`` for ``"auto"``.

        Returns
        -------
        selector

        Examples
        --------
        >>> from skrisk import RiskSampler
        >>> from skrisk.matchers import FeatureMatcher, LMMatcher
        >>> RiskSampler().resolve_selector(FeatureMatcher())
        KMedoidsSelector()
        >>> RiskSampler().resolve_selector(LMMatcher())
        BadgeSelector()
        """
        validate_params(self)
        if not (isinstance(self.selector, str) and self.selector == "auto"):
            if hasattr(self.selector, "_parameter_constraints"):
                validate_params(self.selector)  # a selector's options, before any work
            return self.selector
        est = getattr(matcher, "estimator", matcher)
        if isinstance(est, Pipeline) and len(est.steps) > 0:
            est = est.steps[-1][1]
        chosen = getattr(est, "risk_selection", "kmedoids")
        if chosen not in SELECTORS:
            raise ValueError(
                f"{type(est).__name__}.risk_selection is {chosen!r}; RiskSampler(selector='auto') "
                f"reads it as one of {', '.join(map(repr, SELECTORS))}. Give RiskSampler(selector=...) instead."
            )
        return SELECTORS[chosen]()
    def _proba_and_repr(
        self, learner: Any, X_pool: Any, n_pool: int, X_lab: Any, proba_fn: Any, need_repr: bool,
        Z_pool: Any = None,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Pool probabilities, and pool / labelled representations when needed.

        A matcher with ``predict_proba_and_represent`` (or a ``represent`` that takes
        ``return_proba``), such as RNNMatcher, gives both from one forward pass over the pool.
        ``Z_pool``: for a ``Pipeline`` matcher, the pool transformed by the steps before its last
        (computed once per query); the probabilities and the representation start from it.
        """
        if Z_pool is not None:
            est = getattr(learner, "estimator", learner)
            last = est.steps[-1][1]
            p_pool = checked_proba(last.predict_proba(Z_pool), learner, "risk_sampling", n_rows=n_pool)
        if not need_repr:
            p = p_pool if Z_pool is not None else proba_fn(X_pool)
            return np.asarray(p, dtype=np.float64), None, None
        represent, own, encoded = self._representation(learner)
        est = getattr(learner, "estimator", learner)
        both = getattr(est, "predict_proba_and_represent", None)
        rep_method = "represent" if own else "transform"
        if Z_pool is not None:
            rep_pool = encoded(Z_pool) if encoded is not None else represent(X_pool)
        elif own and callable(both):
            p_pool, rep_pool = both(X_pool)
            p_pool = checked_proba(p_pool, learner, "risk_sampling", n_rows=n_pool,
                                   method="predict_proba_and_represent")
        elif own and _takes_return_proba(represent):
            rep_pool, p_pool = represent(X_pool, return_proba=True)
            p_pool = checked_proba(p_pool, learner, "risk_sampling", n_rows=n_pool, method="represent")
        else:
            p_pool = proba_fn(X_pool)
            rep_pool = represent(X_pool)
        rep_pool = np.asarray(rep_pool, dtype=np.float32)
        rep_lab = np.asarray(represent(X_lab), dtype=np.float32)
        if rep_pool.ndim == 2 and rep_lab.ndim == 2:
            checked_finite(rep_pool, learner, "risk_sampling", rep_method)
            checked_finite(rep_lab, learner, "risk_sampling", rep_method, what="the labelled pairs")
        if rep_pool.ndim != 2 or rep_lab.ndim != 2 or rep_pool.shape[1] != rep_lab.shape[1]:
            raise ValueError(
                f"risk_sampling: the representations of the pool {rep_pool.shape} and of the labelled "
                f"set {rep_lab.shape} must be 2-D with the same width."
            )
        if len(rep_pool) != n_pool:
            raise ValueError(
                f"risk_sampling: the representation has {len(rep_pool)} rows for a pool of "
                f"{n_pool} pairs."
            )
        return np.asarray(p_pool, dtype=np.float64), rep_pool, rep_lab


def _identity(X: Any) -> Any:
    return X


def binary_labels(y: np.ndarray, what: str) -> np.ndarray:
    """``y`` as int64 0/1 labels; a :class:`~skrisk.exceptions.DataError` naming the first other
    value and its position (strings such as ``"match"`` included) otherwise."""
    y = np.asarray(y)
    if y.dtype.kind == "b":
        return y.astype(np.int64)
    ok = np.zeros(y.shape, dtype=bool)
    if y.dtype.kind in "iuf":
        ok = (y == 0) | (y == 1)
    elif y.dtype.kind == "O":
        ok = np.array([isinstance(v, (bool, np.bool_, numbers.Real)) and v in (0, 1) for v in y], dtype=bool)
    if not ok.all():
        at = int(np.flatnonzero(~ok)[0])
        raise DataError(
            f"risk_sampling: {what} must hold 0 (non-match) and 1 (match) only, but position {at} holds "
            f"{np.asarray(y[at]).tolist()!r}. Map the labels to 0/1 first, e.g. y = (y == 'match').astype(int)."
        )
    return y.astype(np.int64)


def risk_sampling(
    learner: Any,
    X_pool: Any,
    n_instances: int = 1,
    *,
    random_state: RandomStateLike = None,
    **kw: Any,
) -> tuple[IntArray, FloatArray]:
    """Risk sampling as a plain modAL strategy: a fresh :class:`RiskSampler` per call.

    ``ActiveLearner(..., query_strategy=risk_sampling)``. Nothing is kept between calls or shared
    between threads; for diagnostics (``last_query_``) or validation pairs make a
    :class:`RiskSampler` and keep it.

    Parameters
    ----------
    learner : ActiveLearner
        The learner (its matcher and labelled set).
    X_pool : pool-like
        The unlabelled pairs.
    n_instances : int, default=1
        Batch size.
    random_state : int, RandomState instance or None, default=None
        Seeds LearnRisk and the tie-breaks.
    **kw
        Parameters of :class:`RiskSampler` (e.g. ``X_valid``, ``y_valid``, ``selector``).

    Returns
    -------
    positions : ndarray of intp, shape (n_instances,)
    risks : ndarray of float64, shape (n_instances,)
    """
    return RiskSampler(**kw)(learner, X_pool, n_instances, random_state=random_state)
