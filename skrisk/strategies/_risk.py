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
from sklearn.base import BaseEstimator
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
from ..risk import LearnRisk, holds_risk_features, risk_features
from ._batch import BatchSelection, select_batch
from ._selection import (
    check_pool_matches,
    check_query,
    checked_finite,
    checked_proba,
    labelled_pool,
    proba_function,
)

__all__ = ["RiskQuery", "RiskSampler", "risk_sampling", "risk_features"]


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


#: The selections of a query (``RiskSampler(selection="auto")`` resolves to one of them).
_SELECTIONS = ("kmedoids", "topk", "badge", "kcenter")


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
        The k-medoids weight of every pool pair (see ``weighting``).
    risk_model : LearnRisk or None
        The risk model fitted for this call; None when the matcher made no mistake (or only
        mistakes) on the ranking pairs and the risk was its uncertainty ``min(p, 1 - p)``.
    kmedoids : KMedoidsResult or None
        The kernel's result (None with ``selection="topk"``). Its indices count the labelled
        pairs first, then the candidates: the whole pool, the preselected pairs, or the
        representative sample of a pool larger than ``max_kmedoids_pool`` (whose
        ``total_deviation`` is then the sample's re-weighted estimate).
    timings : dict of str to float
        Wall seconds per phase: ``"proba_repr"`` (matcher probabilities and representations of
        the pool and the labelled set), ``"labelled_proba"`` (out-of-fold refits),
        ``"valid_proba"``, ``"rules"``, ``"ranking"``, ``"learnrisk_fit"`` (all of LearnRisk's
        fit), ``"risk"`` (risk of the pool), ``"weights"``, ``"sample"`` (only when the pool was larger
        than ``max_kmedoids_pool``), ``"kmedoids"`` and ``"total"``.
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

    1. fits :class:`~skrisk.LearnRisk` around the current matcher: rules and expectations from
       out-of-fold probabilities of the labelled set, weights ranked on (a ``valid_ratio``
       share of) the validation pairs this sampler was given;
    2. computes the risk ``R_i`` (VaR) of every pool pair;
    3. takes the representations of the pool and of the labelled set: ``transform`` when given,
       else the matcher's ``represent``; for a ``Pipeline``, its last step's ``represent`` of the
       transformed pairs, else the transform of the steps before the last; for any other
       classifier with ``predict_proba``, the risk features (similarity features) of the pairs.
       The two fallbacks are announced by one ``UserWarning`` per sampler;
    4. weights every pool pair by the Lipschitz estimate ``L_i = R_i / min_{j in L} ||x_i - x_j||``
       (paper eq. 6, guarded against zero distance: see ``distance_floor``);
    5. solves the weighted k-medoids problem (eq. 7) with the labelled pairs as fixed medoids by
       weighted fastPAM, over the ``preselect * n`` riskiest pool pairs once the labelled set
       is larger than one batch (skrisk's default; the paper's whole pool with
       ``preselect=None``; a pool larger than ``max_kmedoids_pool`` is represented by a
       weight-stratified sample of that size), and returns the chosen pool positions with their
       risks. With :class:`~skrisk.matchers.LMMatcher` (``selection="auto"``) steps 4-5 are
       risk-weighted BADGE instead (see ``selection``).

    Parameters
    ----------
    X_valid, y_valid : pool-like and array-like, optional
        Labelled validation pairs (the matcher's input format) for LearnRisk's ranking. Without
        them LearnRisk falls back to splitting the labelled set.
    valid_ratio : float, default=1.0
        Share of the validation pairs used (a stratified sample fixed by ``random_state``).
    features : callable, optional
        ``features(X) -> (n, F)`` similarity features of pool rows; default
        :func:`risk_features` (``X["features"]`` or a float matrix ``X``).
    transform : callable, optional
        ``transform(X) -> (n, h)`` representation; default the matcher's ``represent``.
    weighting : {"lipschitz", "risk", "unit"}, default="lipschitz"
        Point weights of the k-medoids problem: eq. 6, the risk alone (no distance term), or 1.
        ``"risk"`` is the option to try where a batch is a large share of the pool (measured in
        ``benchmarks/RESULTS.md``, section 6.8 of the ablations page). With ``selection="badge"``
        the draw weights are the risk (``"unit"``: 1): its distance term is BADGE's own; so with
        ``selection="kcenter"``, whose distance term is the k-center's.
    selection : {"auto", "kmedoids", "topk", "badge", "kcenter"}, default="auto"
        How the batch is chosen from the risks. ``"kmedoids"``: the weighted k-medoids problem
        (eq. 7) solved by weighted fastPAM with the labelled set fixed (steps 4-5 above).
        ``"topk"``: simply the ``n`` largest weights. ``"kcenter"``: core-set's greedy k-center
        over the (preselected) candidates with the labelled pairs as centres, each step taking
        the largest risk times distance to the nearest centre (``weighting="unit"``: the
        distance alone, core-set itself over the candidates); tried for the RNN and the forest
        where core-set led, not the default (the active-learning page of
        ``benchmarks/RESULTS.md``). ``"badge"``: risk-weighted BADGE, the
        k-means++ seeding of BADGE on the whole pool's gradient embeddings (the matcher's
        representation scaled by its signed uncertainty), each draw's probability multiplied by
        the pair's risk (by 1 with ``weighting="unit"``, which is BADGE itself; see
        :func:`~skrisk.strategies.select_batch`); ``preselect`` is not used. ``"auto"``: the
        matcher's ``risk_selection`` attribute where it has one, else ``"kmedoids"`` (for a
        ``Pipeline``, its last step's). :class:`~skrisk.matchers.LMMatcher` says ``"badge"``:
        a barely trained language model learns little from the batches of its confident
        mistakes that the k-medoids of the riskiest pairs gives it, and risk-weighted BADGE
        raised its area under the learning curve on Abt-Buy and Fodors-Zagats, while the forest and
        the RNN keep ``"kmedoids"`` (measured: the active-learning page of
        ``benchmarks/RESULTS.md``).
    preselect : float or None, default=2
        With ``selection="kmedoids"`` (and ``"kcenter"``): solve the k-medoids problem over only
        the ``ceil(preselect * n)`` pool pairs of highest risk (the labelled pairs stay fixed
        medoids), so the batch is spread over the riskiest pairs instead of the whole pool.
        None: the whole pool, as in the paper. Must be >= 1 (1 is top-n by risk).
    preselect_after : int or "batch", default="batch"
        Preselect only when the labelled set holds more than this many pairs; until then the
        whole pool is used. ``"batch"``: more than ``n``, the query's batch size, so that the
        first query from a seed set of one batch spreads over the whole pool. 0: always.

        ``preselect=2, preselect_after="batch"`` is skrisk's measured change to the paper's
        method (simulated active learning, ``benchmarks/bench_al.py``; the areas under the
        learning curves are in ``benchmarks/RESULTS.md``). Preselection waits for the first
        batch because, from a seed set, the 2n riskiest pairs are mostly mispredicted ones, a
        poor batch to learn from.
    cold_start : {"risk", "diverse"}, default="risk"
        The first query's rule, while the labelled set holds at most ``preselect_after`` pairs
        (``"batch"``: ``n``). ``"risk"``: risk sampling, as at every later query. ``"diverse"``:
        the selection's own batch with unit weights over the whole pool, spread evenly over the
        matcher's representation: the unit-weight k-medoids (``selection="kmedoids"``), core-set
        (``"kcenter"``) or BADGE (``"badge"``); ``"topk"`` has no such batch and the query
        refuses it. Tried (with k-medoids) for neural matchers, whose first risk batches are
        mostly pairs they mispredict; it lowered the area under the learning curve
        of the language-model matcher (the active-learning page of ``benchmarks/RESULTS.md``),
        so it is an option, not the default.
    no_risk_model : {"uncertainty", "diverse"}, default="uncertainty"
        The rule of a query for which LearnRisk has no risk model, because the matcher predicts
        every one of its ranking pairs correctly. ``"uncertainty"``: the risk is the matcher's
        uncertainty ``min(p, 1 - p)``, chosen from as usual. ``"diverse"``: the batch of
        ``cold_start="diverse"`` (a batch spread over the representation, which the matcher has
        not shown to be wrong anywhere; refused with ``"topk"``). Tried for the RNN on
        Fodors-Zagats, where this state is common; within noise of ``"uncertainty"`` there (the
        active-learning page of ``benchmarks/RESULTS.md``), so it is an option, not the default. Like ``cold_start``, it
        acts in this sampler's own query; the queries of :mod:`skrisk.pools` do not read it.
    diversity : float in [0, 1), default=0.0
        With ``selection="kmedoids"`` only (another selection, ``"auto"`` resolved included,
        refuses a share above 0 rather than ignore it): the share of each batch spread over the
        whole pool instead of chosen by risk. The risk part (``n - round(diversity * n)`` pairs)
        is chosen as usual; the rest is the unit-weight k-medoids of the remaining pool with the labelled
        pairs and the risk part fixed as medoids, so it covers what neither covers. 0: risk
        sampling alone (the default; 0.5 did not help the language-model matcher, measured on
        the active-learning page of ``benchmarks/RESULTS.md``).
    max_kmedoids_pool : int or None, default=20000
        The most pool pairs the k-medoids problem is solved over (the first query, before
        preselection starts, or every query with ``preselect=None``). A larger set of candidates
        is replaced by a sample of ``max(max_kmedoids_pool, 2 * n)`` of them drawn with
        probability proportional to their weight, the heaviest with certainty, each re-weighted
        by ``w_i / pi_i`` so that the sample's total deviation estimates the whole pool's
        (CLARA's idea with Horvitz-Thompson weights, :func:`~skrisk.kmedoids.representative_sample`,
        seeded by ``random_state``). The kernel's swap phase grows with the square of its
        input, so the cap bounds a query's time on large pools; pools at or below the cap are
        solved exactly. None: no cap (the paper). The time and the sample's objective against
        the whole pool's are measured by ``benchmarks/bench_scale.py`` (``benchmarks/RESULTS.md``,
        "Scale").
    risk_params : dict, optional
        Risk hyperparameters of :class:`~skrisk.LearnRisk` (its defaults otherwise, e.g.
        ``epochs=DEFAULT_EPOCHS``). The risk's quality and a query's time with these settings
        and with the research code's are measured by ``benchmarks/bench_query.py``
        (``benchmarks/RESULTS.md``, "Query time").
    feature_names : sequence of str, optional
        Names of the similarity features, so that rules read ``title_jaccard <= 0.31 -> unmatch``
        rather than ``x0 <= 0.31 -> unmatch``.
    labelled_proba : {"auto", "oof", "fit"}, default="auto"
        Which matcher probabilities of the *labelled* pairs LearnRisk's expectations are drawn
        from. ``"fit"``: the fitted matcher's own, which are overconfident on the pairs it was
        trained on (a random forest is always right on them, so every probability bin looks
        perfectly calibrated). ``"oof"``: out-of-fold probabilities from ``cv`` stratified folds
        of a clone of the matcher, as for unseen pairs (:func:`~skrisk.risk.oof_proba`).
        ``"auto"``: ``"oof"`` for matchers that
        are cheap to refit, ``"fit"`` for neural matchers (those holding a torch ``module_``:
        :class:`~skrisk.matchers.RNNMatcher`, :class:`~skrisk.matchers.LMMatcher`), which keep
        their best epoch on validation pairs and would need ``cv`` more trainings per query for
        out-of-fold probabilities (the language-model prototype used ``"fit"`` too).
    cv : int, default=5
        Folds of ``labelled_proba="oof"``.
    schedule, init, block_size : see :func:`~skrisk.kmedoids.weighted_fastpam`.
    eps : float, default=1e-8
        Added to the distance in eq. 6.
    distance_floor : float or "auto", default="auto"
        Guard of eq. 6 against (near-)zero distances: a pool pair's distance to the labelled set
        is raised to at least this value, so no weight exceeds ``R_i / distance_floor``.
        ``"auto"``: 1 % of the median distance of the pool to the labelled set. A pool pair whose
        representation coincides with a labelled pair's (distance 0, up to float64 rounding)
        gets weight 0: in eq. 7 that labelled pair already covers it at cost 0, and an unbounded
        weight would only let rounding noise of the kernel's float32 distances decide the
        batch (on DBLP-Scholar with similarity-feature representations about 100 of 17,000
        pool pairs are such duplicates).
    device : str, default="auto"
        Device of the kernel and distance computations.
    n_threads : int or None, default=None
        Torch intra-op CPU threads during a call (restored afterwards); None leaves torch's
        setting alone. The k-medoids kernel chooses its own threads by the size of its work and
        the CPUs other processes leave idle, within this limit (the rule is in the README's
        architecture section, ``_device.py``).
    random_state : int or None, default=None
        Seeds the validation sample, LearnRisk and tie-breaking (a per-call ``random_state``
        overrides it for that call).

    Attributes
    ----------
    last_query_ : RiskQuery
        What the last call computed: positions, scores, the risk and weight of every pool pair,
        the fitted risk model, the k-medoids result, timings and threads. Only an instance you
        made keeps it; :func:`risk_sampling` keeps nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk import RiskSampler
    >>> sampler = RiskSampler(np.zeros((5742, 33)), np.zeros(5742), random_state=0)
    >>> sampler
    RiskSampler(X_valid=<ndarray of shape (5742, 33)>, y_valid=<ndarray of shape (5742,)>, random_state=0)
    >>> sampler.set_params(valid_ratio=0.5).valid_ratio
    0.5
    """

    _parameter_constraints: dict = {
        "valid_ratio": [Interval(numbers.Real, 0, 1, closed="right")],
        "features": [None, "callable"],
        "transform": [None, "callable"],
        "weighting": [Options(str, {"lipschitz", "risk", "unit"})],
        "selection": [Options(str, {"auto", *_SELECTIONS})],
        "preselect": [None, Interval(numbers.Real, 1, None)],
        "preselect_after": [Options(str, {"batch"}), Interval(numbers.Integral, 0, None)],
        "cold_start": [Options(str, {"risk", "diverse"})],
        "no_risk_model": [Options(str, {"uncertainty", "diverse"})],
        "diversity": [Interval(numbers.Real, 0, 1, closed="left")],
        "max_kmedoids_pool": [None, Interval(numbers.Integral, 1, None)],
        "risk_params": [None, Mapping],
        "labelled_proba": [Options(str, {"auto", "oof", "fit"})],
        "cv": [Interval(numbers.Integral, 2, None), HasMethods(("split", "get_n_splits"))],
        "schedule": [Options(str, {"eager", "best"})],
        "init": [Options(str, {"heaviest", "build"})],
        "block_size": [Interval(numbers.Integral, 1, None)],
        "eps": [Interval(numbers.Real, 0, None)],
        "distance_floor": [Options(str, {"auto"}), Interval(numbers.Real, 0, None)],
        "device": [None, str, torch.device],
        "n_threads": [None, Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        X_valid: Any = None,
        y_valid: Any = None,
        *,
        valid_ratio: float = 1.0,
        features: Callable[[Any], Any] | None = None,
        transform: Callable[[Any], Any] | None = None,
        weighting: str = "lipschitz",
        selection: str = "auto",
        preselect: float | None = 2,
        preselect_after: int | str = "batch",
        cold_start: str = "risk",
        no_risk_model: str = "uncertainty",
        diversity: float = 0.0,
        max_kmedoids_pool: int | None = 20_000,
        risk_params: dict | None = None,
        feature_names: Any = None,
        labelled_proba: str = "auto",
        cv: int = 5,
        schedule: str = "eager",
        init: str = "heaviest",
        block_size: int = 64,
        eps: float = 1e-8,
        distance_floor: float | str = "auto",
        device: str = "auto",
        n_threads: int | None = None,
        random_state: int | None = None,
    ) -> None:
        self.X_valid = X_valid
        self.y_valid = y_valid
        self.valid_ratio = valid_ratio
        self.features = features
        self.transform = transform
        self.weighting = weighting
        self.selection = selection
        self.preselect = preselect
        self.preselect_after = preselect_after
        self.cold_start = cold_start
        self.no_risk_model = no_risk_model
        self.diversity = diversity
        self.max_kmedoids_pool = max_kmedoids_pool
        self.risk_params = risk_params
        self.feature_names = feature_names
        self.labelled_proba = labelled_proba
        self.cv = cv
        self.schedule = schedule
        self.init = init
        self.block_size = block_size
        self.eps = eps
        self.distance_floor = distance_floor
        self.device = device
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
        return np.asarray(self.features(X) if self.features is not None else risk_features(X), dtype=np.float64)

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

        The diagnostics of the call are kept in :attr:`last_query_`.
        """
        self._check_params()
        n_pool = check_query(X_pool, n_instances, "risk_sampling", learner)  # the pool checked once, here
        device = resolve_device(self.device)
        with torch_threads(self.n_threads if device.type == "cpu" else None):
            query = self._query(learner, X_pool, n_pool, n_instances, random_state)
        self.last_query_ = query
        return query.positions, query.scores

    def _query(
        self, learner: Any, X_pool: Any, n_pool: int, n_instances: int, random_state: RandomStateLike
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
        selection = self.resolve_selection(learner)
        self._check_applies(selection)
        need_repr = selection != "topk" or self.weighting == "lipschitz"

        # 0. the matcher's probabilities (and representations) of the pool and the labelled set;
        # a Pipeline's steps before the last transform the pool once, for all three uses
        est = getattr(learner, "estimator", learner)
        with _clock(timings, "proba_repr"):
            Z_pool = est[:-1].transform(X_pool) if isinstance(est, Pipeline) and len(est.steps) > 1 else None
            p_pool, rep_pool, rep_lab = self._proba_and_repr(learner, X_pool, n_pool, X_lab, proba_fn, need_repr,
                                                             Z_pool)

        # 1-2. LearnRisk around the current matcher, then the risk of every pool pair
        mode = self.labelled_proba
        if mode == "auto":
            mode = "fit" if hasattr(est, "module_") else "oof"
        params = {
            **(self.risk_params or {}),
            "random_state": seed if isinstance(seed, (int, np.integer)) else None,
        }
        model = LearnRisk(
            est, cv="prefit" if mode == "fit" else self.cv, features=self.features,
            feature_names=self.feature_names, **params,
        )
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
        if Z_pool is not None and self.features is None and not holds_risk_features(X_pool) \
                and holds_risk_features(Z_pool):
            risk_X = Z_pool
        with _clock(timings, "risk"):
            risk = np.asarray(model.predict_risk(risk_X, proba=p_pool[:, 1]), dtype=np.float64)
        risk_model = model if model.risk_model_ is not None else None

        # 3-5. eq. 6 weights and the batch (the one selection core, shared with skrisk.pools); a
        # cold start, or a query without a risk model where asked, spreads the batch over the
        # whole pool with unit weights
        after = n_instances if self.preselect_after == "batch" else int(self.preselect_after)
        unit_batch = (self.cold_start == "diverse" and len(y_lab) <= after) or (
            self.no_risk_model == "diverse" and risk_model is None)
        overrides = {"weighting": "unit", "preselect": None} if unit_batch else {}
        chosen = self.select(risk, rep_pool, rep_lab, n_instances, random_state=seed, proba=p_pool[:, 1],
                             selection=selection, **overrides)
        timings.update(chosen.timings)
        timings["total"] = time.perf_counter() - start
        return RiskQuery(
            positions=chosen.positions, scores=risk[chosen.positions], risk=risk, weights=chosen.weights,
            risk_model=risk_model, kmedoids=chosen.kmedoids, timings=timings, n_threads=n_threads,
        )

    def resolve_selection(self, matcher: Any = None) -> str:
        """The selection this sampler uses with ``matcher``: ``selection``, or for ``"auto"`` the
        matcher's ``risk_selection`` attribute (a ``Pipeline``'s last step's, a learner's
        estimator's) where it names one, else ``"kmedoids"``.

        Parameters
        ----------
        matcher : estimator, learner or None
            None: ``"kmedoids"`` for ``"auto"``.

        Returns
        -------
        str
            ``"kmedoids"``, ``"topk"``, ``"badge"`` or ``"kcenter"``.

        Examples
        --------
        >>> from skrisk import RiskSampler
        >>> from skrisk.matchers import FeatureMatcher, LMMatcher
        >>> RiskSampler().resolve_selection(FeatureMatcher())
        'kmedoids'
        >>> RiskSampler().resolve_selection(LMMatcher())
        'badge'
        >>> RiskSampler(selection="kmedoids").resolve_selection(LMMatcher())
        'kmedoids'
        """
        if self.selection != "auto":
            return self.selection
        est = getattr(matcher, "estimator", matcher)
        if isinstance(est, Pipeline) and len(est.steps) > 0:
            est = est.steps[-1][1]
        chosen = getattr(est, "risk_selection", "kmedoids")
        if chosen not in _SELECTIONS:
            raise ValueError(
                f"{type(est).__name__}.risk_selection is {chosen!r}; RiskSampler(selection='auto') "
                f"reads it as one of {', '.join(map(repr, _SELECTIONS))}. Give RiskSampler(selection=...) instead."
            )
        return chosen

    def select(
        self,
        risk: FloatArray,
        rep_pool: np.ndarray | None,
        rep_lab: np.ndarray | None,
        n_instances: int,
        *,
        random_state: RandomStateLike = None,
        proba: FloatArray | None = None,
        matcher: Any = None,
        **overrides: Any,
    ) -> BatchSelection:
        """The batch this sampler's parameters choose, given the risks and representations.

        The selection step of a query, without scoring: :func:`~skrisk.strategies.select_batch`
        with this sampler's ``weighting``, ``selection``, ``preselect``, ``preselect_after``,
        ``max_kmedoids_pool``, ``eps``, ``distance_floor``, ``init``, ``schedule``,
        ``block_size`` and ``device``. The streamed and Dask queries of :mod:`skrisk.pools` call
        it on their riskiest candidates.

        Parameters
        ----------
        risk : ndarray of shape (n_pool,)
            The risk of every pool row.
        rep_pool : ndarray of shape (n_pool, h) or None
            The pool's representations.
        rep_lab : ndarray of shape (n_labelled, h) or None
            The labelled pairs' representations (the fixed medoids).
        n_instances : int
            Batch size.
        random_state : int, RandomState instance or None, default=None
            Overrides the sampler's ``random_state`` for this call.
        proba : ndarray of shape (n_pool,), optional
            The matcher's match probability of every pool row (needed by ``selection="badge"``).
        matcher : estimator, optional
            The matcher (or learner) that ``selection="auto"`` is resolved for
            (:meth:`resolve_selection`); None: ``"kmedoids"``.
        **overrides
            Selection parameters of :func:`~skrisk.strategies.select_batch` that replace the
            sampler's for this call (a cold start passes ``weighting="unit", preselect=None``).

        Returns
        -------
        BatchSelection

        Examples
        --------
        >>> import numpy as np
        >>> from skrisk import RiskSampler
        >>> rep = np.array([[0.0], [1.0], [2.0], [10.0], [11.0]], dtype=np.float32)
        >>> risk = np.array([0.1, 0.5, 0.4, 0.3, 0.2])
        >>> sampler = RiskSampler(preselect=None, device="cpu", random_state=0)
        >>> sampler.select(risk, rep, rep[:1], 2).positions.tolist()
        [1, 3]
        """
        self._check_params()
        params = dict(
            weighting=self.weighting, selection=self.selection, preselect=self.preselect,
            preselect_after=self.preselect_after, max_kmedoids_pool=self.max_kmedoids_pool,
            eps=self.eps, distance_floor=self.distance_floor, init=self.init, schedule=self.schedule,
            block_size=self.block_size, device=self.device,
        )
        unknown = set(overrides) - set(params)
        if unknown:
            raise TypeError(f"RiskSampler.select: unknown selection parameter(s) {sorted(unknown)}; "
                            f"known: {sorted(params)}.")
        params.update(overrides)
        if params["selection"] == "auto":
            params["selection"] = self.resolve_selection(matcher)
        seed = random_state if random_state is not None else self.random_state
        self._check_applies(params["selection"], spread_options=False)
        n_div = int(round(self.diversity * n_instances)) if params["selection"] == "kmedoids" else 0
        if n_div == 0 or params["weighting"] == "unit" or len(risk) <= n_instances:
            return select_batch(risk, rep_pool, rep_lab, n_instances, **params, proba=proba, random_state=seed)
        # the risk part, with "batch" still meaning the whole batch, then the spread part
        if params["preselect_after"] == "batch":
            params["preselect_after"] = n_instances
        first = select_batch(risk, rep_pool, rep_lab, n_instances - n_div, **params, random_state=seed)
        rest = np.setdiff1d(np.arange(len(risk)), first.positions)
        rep_pool = np.asarray(rep_pool)
        fixed = rep_pool[first.positions] if rep_lab is None or len(rep_lab) == 0 else \
            np.concatenate([np.asarray(rep_lab), rep_pool[first.positions]])
        spread = select_batch(risk[rest], rep_pool[rest], fixed, n_div,
                              **{**params, "weighting": "unit", "preselect": None}, random_state=seed)
        timings = dict(first.timings)
        for key, value in spread.timings.items():
            timings[key] = timings.get(key, 0.0) + value
        return BatchSelection(np.concatenate([first.positions, rest[spread.positions]]), first.weights,
                              first.kmedoids, timings)

    def _check_applies(self, selection: str, spread_options: bool = True) -> None:
        """Refuse, by name, an option that ``selection`` (resolved) would otherwise ignore:
        ``diversity`` spreads part of a k-medoids batch, and the "diverse" rules of ``cold_start``
        and ``no_risk_model`` need a selection with a unit-weight batch of its own."""
        why = (f"selection='auto' resolves to {selection!r} for this matcher" if self.selection == "auto"
               else f"selection={selection!r}")
        if self.diversity > 0 and selection != "kmedoids":
            raise ValueError(
                f"RiskSampler(diversity={self.diversity}) spreads part of a k-medoids batch, but {why}. "
                f"Give selection='kmedoids', or diversity=0.")
        asked = [name for name in ("cold_start", "no_risk_model") if getattr(self, name) == "diverse"]
        if spread_options and asked and selection == "topk":
            given = ", ".join(f"{name}='diverse'" for name in asked)
            raise ValueError(
                f"RiskSampler({given}) asks for a batch "
                f"spread over the representation, which a top-k batch cannot give ({why}). Give "
                f"selection='kmedoids' (or 'kcenter', 'badge'), or leave {' and '.join(asked)} at the default.")

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
        Parameters of :class:`RiskSampler` (e.g. ``X_valid``, ``y_valid``, ``preselect``).

    Returns
    -------
    positions : ndarray of intp, shape (n_instances,)
    risks : ndarray of float64, shape (n_instances,)
    """
    return RiskSampler(**kw)(learner, X_pool, n_instances, random_state=random_state)
