"""Risk sampling (Nafa, Chen et al., KBS 2022): LearnRisk risk + weighted k-medoids with fixed medoids."""

from __future__ import annotations

import inspect
import os
import time
import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import check_random_state

from .._rows import num_rows, take_rows
from .._typing import FloatArray, IntArray, RandomStateLike
from ..exceptions import NotFittedError
from ..kmedoids import weighted_fastpam
from ..matchers._base import require
from ..risk import LearnRiskEstimator, mispredicted
from ._selection import (
    check_pool_matches,
    check_query,
    checked_finite,
    checked_proba,
    labelled_pool,
    min_distances,
    proba_function,
    resolve_device,
    top_k,
)

__all__ = ["RiskSampler", "risk_sampling", "risk_features"]

_PROBA = "matcher_proba"

#: LearnRiskEstimator settings RiskSampler uses unless ``risk_params`` overrides them (merged key
#: by key, so ``risk_params={"epochs": 50}`` keeps the others).
DEFAULT_RISK_PARAMS: dict[str, Any] = {"epochs": 200}


def _cpu_threads(setting: Any, device: torch.device) -> int | None:
    """Torch intra-op threads for one call, or None to leave torch's setting alone."""
    if device.type != "cpu" or setting is None:
        return None
    if setting != "auto":
        return int(setting)
    if os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE":
        return None
    # OpenMP threads spin while they wait: with no idle core for them, a 2-thread kernel ran 15-40x
    # slower than a 1-thread one on a loaded 2-core machine (benchmarks/results/query).
    try:
        free = (os.cpu_count() or 1) - os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average (Windows)
        return None
    return max(1, min(torch.get_num_threads(), int(free)))


@contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    prev = torch.get_num_threads()
    if n is not None and n != prev:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != prev:
            torch.set_num_threads(prev)


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


def risk_features(X: Any) -> np.ndarray:
    """The similarity features LearnRisk's rules use, taken from a pool.

    A mapping / ``SliceDict`` pool supplies them under the key ``"features"``; a 2-D float array
    pool *is* the feature matrix (the feature-based matcher's input).
    """
    if isinstance(X, Mapping):
        if "features" not in X:
            raise TypeError(
                f"The pool is a mapping with keys {sorted(X)} but no 'features': encode pairs with "
                "similarity features (e.g. RNNMatcher's hybrid encoding), or give RiskSampler "
                "features=<callable returning the similarity features of pool rows>."
            )
        return np.asarray(X["features"], dtype=np.float64)
    arr = np.asarray(X)
    if arr.ndim == 2 and arr.dtype.kind == "f":
        return arr.astype(np.float64, copy=False)
    raise TypeError(
        f"Cannot find similarity features in a pool of type {type(X).__name__} with "
        f"shape {getattr(arr, 'shape', None)}: give RiskSampler features=<callable returning the "
        "similarity features of pool rows>."
    )


class RiskSampler(BaseEstimator):
    """Risk sampling as a modAL query strategy (a callable object).

    One call, given the learner and the unlabelled pool:

    1. fits :class:`~skrisk.risk.LearnRiskEstimator` for the current matcher: rules and
       expectations from the labelled set, weights ranked on (a ``valid_ratio`` share of) the
       validation pairs this sampler was given;
    2. computes the risk ``R_i`` (VaR) of every pool pair;
    3. takes the representations (the matcher's ``represent``, or ``transform``) of the pool and
       of the labelled set;
    4. weights every pool pair by the Lipschitz estimate ``L_i = R_i / min_{j in L} ||x_i - x_j||``
       (paper eq. 6, guarded against zero distance: see ``distance_floor``);
    5. solves the weighted k-medoids problem (eq. 7) with the labelled pairs as fixed medoids by
       weighted fastPAM, over the ``preselect * n`` riskiest pool pairs once the labelled set
       is larger than one batch (skrisk's default; the paper's whole pool with
       ``preselect=None``), and returns the chosen pool positions with their risks.

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
        ``"risk"`` measured better where a batch is a large share of the pool (Abt-Buy, batch 575
        of 5,168: +0.005 in the area under the learning curve) and tied elsewhere
        (``benchmarks/RESULTS.md``, section 6.8).
    selection : {"kmedoids", "topk"}, default="kmedoids"
        Weighted fastPAM with the labelled set fixed, or simply the ``n`` largest weights.
    preselect : float or None, default=2
        With ``selection="kmedoids"``: solve the k-medoids problem over only the
        ``ceil(preselect * n)`` pool pairs of highest risk (the labelled pairs stay fixed
        medoids), so the batch is spread over the riskiest pairs instead of the whole pool.
        None: the whole pool, as in the paper. Must be >= 1 (1 is top-n by risk).
    preselect_after : int or "batch", default="batch"
        Preselect only when the labelled set holds more than this many pairs; until then the
        whole pool is used. ``"batch"``: more than ``n``, the query's batch size, so that the
        first query from a seed set of one batch spreads over the whole pool. 0: always.

        ``preselect=2, preselect_after="batch"`` is skrisk's measured change to the paper's
        method. In simulated active learning with a random forest matcher on DBLP-Scholar
        (``benchmarks/bench_al.py``, seed set and batch 100, 10 runs) it lifted the area under
        the learning curve from 0.923 (the paper's whole-pool problem) to 0.929, above every
        baseline's, and mean F1 at each of the first three queries above every baseline's.
        Preselecting from the very first query (``preselect_after=0``) lost the first query
        (0.907 against 0.915 at 200 labels): from a seed set, the 2n riskiest pairs are mostly
        mispredicted ones (82 %), a poor batch to learn from. On Abt-Buy the change is within
        noise and risk sampling trails core-set. See ``benchmarks/RESULTS.md``, section 6.
    risk_params : dict, optional
        Parameters of :class:`~skrisk.risk.LearnRiskEstimator`, merged over
        :data:`DEFAULT_RISK_PARAMS` (``{"epochs": 200}``, the estimator's other defaults
        otherwise). On DBLP-Scholar (|L| = 100, 5,742 validation pairs, random forest matcher)
        the risk's ROC AUC for the matcher's 697 mistakes on the pool was 0.955 with these
        settings (13 s per query), 0.949 with the research code's LearnRisk settings at 200 or
        1,000 epochs, and 0.938 for the matcher's own uncertainty; see
        ``benchmarks/bench_query.py`` and ``benchmarks/results/query``.
    feature_names : sequence of str, optional
        Names of the similarity features, so that rules read ``title_jaccard <= 0.31 -> unmatch``
        rather than ``x0 <= 0.31 -> unmatch``.
    labelled_proba : {"auto", "oof", "fit"}, default="auto"
        Which matcher probabilities of the *labelled* pairs LearnRisk's expectations are drawn
        from. ``"fit"``: the fitted matcher's own, which are overconfident on the pairs it was
        trained on (a random forest is always right on them, so every probability bin looks
        perfectly calibrated). ``"oof"``: out-of-fold probabilities from ``cv`` stratified folds
        of a clone of the matcher, as for unseen pairs. ``"auto"``: ``"oof"`` for matchers that
        are cheap to refit (not skorch nets), ``"fit"`` for neural matchers, which are
        early-stopped on validation pairs.
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
    n_threads : int, "auto" or None, default="auto"
        Torch intra-op CPU threads during a call (restored afterwards). ``"auto"``: torch's
        setting when ``OMP_WAIT_POLICY=PASSIVE`` is set, otherwise no more threads than there are
        idle cores (1-minute load average), at least one: OpenMP threads that spin while waiting
        made the k-medoids kernel 15-40x slower on a loaded 2-core machine, with the same result.
        None: leave torch's setting alone.
    random_state : int or None, default=None
        Seeds the validation sample, LearnRisk and tie-breaking (a per-call ``random_state``
        overrides it for that call).

    Attributes
    ----------
    risk_model_ : LearnRiskEstimator or None
        The risk model fitted by the last call; None when the matcher made no mistake (or only
        mistakes) on the ranking pairs, so that there was nothing to rank: that call used the
        expectation risk ``min(p, 1 - p)`` instead, with a warning.
    last_risk_, last_weights_ : ndarray
        Risk and k-medoids weight of every pool pair of the last call.
    last_result_ : KMedoidsResult or None
        The kernel's result of the last call.
    last_timings_ : dict of str to float
        Wall seconds of the phases of the last call: ``"proba_repr"`` (matcher probabilities and
        representations of the pool and the labelled set), ``"valid_proba"``,
        ``"labelled_proba"`` (out-of-fold refits), ``"learnrisk_fit"`` (rules and ranking
        epochs), ``"risk"`` (risk of the pool), ``"weights"`` (Lipschitz weights),
        ``"kmedoids"`` and ``"total"``.
    last_threads_ : int
        Torch CPU threads the last call ran with (see ``n_threads``).

    Examples
    --------
    >>> from skrisk import RiskSampler
    >>> sampler = RiskSampler(risk_params={"epochs": 200}, random_state=0)
    >>> sampler.set_params(valid_ratio=0.5).valid_ratio
    0.5
    """

    def __init__(
        self,
        X_valid: Any = None,
        y_valid: Any = None,
        *,
        valid_ratio: float = 1.0,
        features: Callable[[Any], Any] | None = None,
        transform: Callable[[Any], Any] | None = None,
        weighting: str = "lipschitz",
        selection: str = "kmedoids",
        preselect: float | None = 2,
        preselect_after: int | str = "batch",
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
        n_threads: int | str | None = "auto",
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

    # ------------------------------------------------------------------ helpers
    def _check_params(self) -> None:
        if self.weighting not in ("lipschitz", "risk", "unit"):
            raise ValueError(f"weighting must be 'lipschitz', 'risk' or 'unit', got {self.weighting!r}.")
        if self.selection not in ("kmedoids", "topk"):
            raise ValueError(f"selection must be 'kmedoids' or 'topk', got {self.selection!r}.")
        pre = self.preselect
        if pre is not None and (
            isinstance(pre, bool) or not isinstance(pre, (int, float, np.integer, np.floating)) or not pre >= 1
        ):
            raise ValueError(
                f"preselect must be None or a number >= 1 (a multiple of the batch size), got {pre!r}."
            )
        after = self.preselect_after
        if not (after == "batch" or (isinstance(after, (int, np.integer)) and not isinstance(after, bool) and after >= 0)):
            raise ValueError(f"preselect_after must be 'batch' or an int >= 0, got {after!r}.")
        if not (0.0 < float(self.valid_ratio) <= 1.0):
            raise ValueError(f"valid_ratio must be in (0, 1], got {self.valid_ratio}.")
        floor = self.distance_floor
        nt = self.n_threads
        is_int = isinstance(nt, (int, np.integer)) and not isinstance(nt, bool)
        if not (nt is None or nt == "auto" or (is_int and nt >= 1)):
            raise ValueError(f"n_threads must be 'auto', None or an int >= 1, got {nt!r}.")
        is_num = isinstance(floor, (int, float, np.floating)) and not isinstance(floor, bool)
        if not (floor == "auto" or (is_num and floor >= 0)):
            raise ValueError(f"distance_floor must be 'auto' or a number >= 0, got {floor!r}.")
        if self.labelled_proba not in ("auto", "oof", "fit"):
            raise ValueError(f"labelled_proba must be 'auto', 'oof' or 'fit', got {self.labelled_proba!r}.")
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
        if not np.isin(y_raw, (0, 1)).all():
            raise ValueError(
                f"y_valid must hold 0 (non-match) and 1 (match) only, got {np.unique(y_raw)[:5].tolist()}."
            )
        y = y_raw.astype(np.int64)
        if X_lab is not None:
            check_pool_matches(self.X_valid, X_lab, "risk_sampling", what="X_valid")
        if len(np.unique(y)) < 2:
            raise ValueError(
                "The validation set holds a single class: LearnRisk needs matches and non-matches "
                "among the validation pairs to learn which pairs are mispredicted."
            )
        if self.valid_ratio >= 1.0:
            return self.X_valid, y
        rng = check_random_state(self.random_state)
        keep = []
        for cls in (0, 1):
            idx = np.flatnonzero(y == cls)
            k = max(1, int(round(self.valid_ratio * len(idx))))
            keep.append(rng.choice(idx, size=k, replace=False))
        pos = np.sort(np.concatenate(keep))
        return take_rows(self.X_valid, pos), y[pos]

    def _risk_input(self, X: Any, proba: np.ndarray) -> Any:
        feats = self.features(X) if self.features is not None else risk_features(X)
        feats = np.asarray(feats, dtype=np.float64)
        out = np.column_stack([feats, proba[:, 1]])
        if self.feature_names is None:
            return out
        names = [str(n) for n in self.feature_names]
        if len(names) != feats.shape[1]:
            raise ValueError(
                f"feature_names has {len(names)} names for {feats.shape[1]} similarity features: "
                "give one name per feature column."
            )
        return pd.DataFrame(out, columns=[*names, _PROBA])

    def _labelled_proba(self, learner: Any, X_lab: Any, y_lab: np.ndarray, proba_fn: Any, seed: Any) -> np.ndarray:
        est = getattr(learner, "estimator", learner)
        mode = self.labelled_proba
        if mode == "auto":
            mode = "fit" if hasattr(est, "module_") else "oof"
        k = min(int(self.cv), int(np.bincount(y_lab, minlength=2).min()))
        if mode == "fit" or k < 2:
            return proba_fn(X_lab, what="the labelled pairs")
        folds = StratifiedKFold(k, shuffle=True, random_state=seed if isinstance(seed, (int, np.integer)) else 0)
        P = np.empty((len(y_lab), 2), dtype=np.float64)
        for tr, te in folds.split(np.zeros(len(y_lab)), y_lab):
            m = clone(est).fit(take_rows(X_lab, tr), y_lab[tr])
            P[te] = checked_proba(m.predict_proba(take_rows(X_lab, te)), m, "risk_sampling", n_rows=len(te),
                                  what="the labelled pairs (out-of-fold refit)")
        return P

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
        """Choose ``n_instances`` pool positions; returns ``(positions, risks)``."""
        self._check_params()
        check_query(X_pool, n_instances, "risk_sampling", learner)
        with _torch_threads(_cpu_threads(self.n_threads, resolve_device(self.device))):
            return self._query(learner, X_pool, n_instances, random_state)

    def _query(
        self, learner: Any, X_pool: Any, n_instances: int, random_state: RandomStateLike
    ) -> tuple[IntArray, FloatArray]:
        timings: dict[str, float] = {}
        self.last_timings_ = timings
        self.last_threads_ = torch.get_num_threads()
        start = time.perf_counter()
        proba_fn = proba_function(learner, "risk_sampling")
        X_lab = labelled_pool(learner)
        y_lab = getattr(learner, "y_training", None)
        if X_lab is None or y_lab is None or num_rows(X_lab) == 0:
            raise NotFittedError(
                "risk_sampling needs the learner's labelled set (learner.X_training / y_training) "
                "for LearnRisk's statistics: start the learner with an initial labelled set."
            )
        y_lab = np.asarray(y_lab).ravel().astype(np.int64)
        seed = random_state if random_state is not None else self.random_state
        valid = self._valid_subset(X_lab)
        need_repr = self.selection == "kmedoids" or self.weighting == "lipschitz"

        # 0. the matcher's probabilities (and representations) of the pool and the labelled set
        with _clock(timings, "proba_repr"):
            p_pool, rep_pool, rep_lab = self._proba_and_repr(learner, X_pool, X_lab, proba_fn, need_repr)

        # 1-2. LearnRisk for the current matcher, then the risk of every pool pair
        with _clock(timings, "labelled_proba"):
            P_lab = self._labelled_proba(learner, X_lab, y_lab, proba_fn, seed)
        R_lab = self._risk_input(X_lab, P_lab)
        if valid is not None:
            X_v, y_v = valid
            with _clock(timings, "valid_proba"):
                p_val = proba_fn(X_v, what="the validation pairs")
            R_val = self._risk_input(X_v, p_val)
            fit_args = (R_val, y_v)
            fit_kw = {"X_train": R_lab, "y_train": y_lab}
        else:
            fit_args, fit_kw = (R_lab, y_lab), {}
        params = {
            **DEFAULT_RISK_PARAMS,
            "random_state": seed if isinstance(seed, (int, np.integer)) else None,
            **(self.risk_params or {}),
        }
        if self.feature_names is not None:
            params["proba_column"] = _PROBA
        z = mispredicted(np.asarray(fit_args[0])[:, -1], fit_args[1])
        if z.all() or not z.any():
            # Nothing to rank (e.g. a matcher perfect on the validation pairs): LearnRisk cannot
            # learn its weights, so fall back to the expectation-based risk |label - p|.
            warnings.warn(
                f"risk_sampling: the matcher {'mispredicts' if z.all() else 'predicts correctly'} all "
                f"{z.size} ranking pairs, so LearnRisk has nothing to learn from; using the "
                "expectation risk |label - p| this round. More validation pairs avoid this.",
                stacklevel=3,
            )
            self.risk_model_ = None
            risk = np.minimum(p_pool[:, 1], 1.0 - p_pool[:, 1])
        else:
            with _clock(timings, "learnrisk_fit"):
                model = LearnRiskEstimator(**params).fit(*fit_args, **fit_kw)
            with _clock(timings, "risk"):
                risk = np.asarray(model.predict_risk(self._risk_input(X_pool, p_pool)), dtype=np.float64)
            self.risk_model_ = model
        self.last_risk_ = risk

        # 3-4. Lipschitz weights (eq. 6)
        with _clock(timings, "weights"):
            if self.weighting == "unit":
                weights = np.ones_like(risk)
            else:
                weights = risk.copy()
            if self.weighting == "lipschitz":
                d_lab = min_distances(rep_pool, rep_lab, device=resolve_device(self.device), dtype=torch.float64)
                weights = self._lipschitz(risk, d_lab)
        self.last_weights_ = weights

        # 5. selection
        if self.selection == "topk":
            self.last_result_ = None
            pos, _ = top_k(weights, n_instances, seed)
            timings["total"] = time.perf_counter() - start
            return pos, risk[pos]
        cand = np.arange(len(weights))
        after = n_instances if self.preselect_after == "batch" else int(self.preselect_after)
        if self.preselect is not None and len(rep_lab) > after:
            m = min(len(weights), max(n_instances, int(np.ceil(float(self.preselect) * n_instances))))
            cand = np.sort(top_k(risk, m, seed)[0])
        X_all = np.concatenate([rep_lab, rep_pool[cand]], axis=0)
        n_lab = len(rep_lab)
        w_all = np.concatenate([np.zeros(n_lab), weights[cand]])
        if not np.any(w_all > 0):  # nothing at risk: fall back to unit weights (pure coverage)
            w_all[n_lab:] = 1.0
        # weights below 1e-15 of the largest are 0 to the float32 kernel, which refuses such a
        # range rather than search blind: a pair with 1e-15 of the top weight counts as no risk
        w_all[w_all < w_all.max() * 1e-15] = 0.0
        with _clock(timings, "kmedoids"):
            res = weighted_fastpam(
                X_all,
                n_instances,
                sample_weight=w_all,
                fixed=np.arange(n_lab),
                init=self.init,
                schedule=self.schedule,
                block_size=self.block_size,
                device=self.device,
                random_state=seed,
            )
        self.last_result_ = res
        pos = cand[np.asarray(res.selected, dtype=np.intp) - n_lab]
        order = np.argsort(-risk[pos], kind="stable")
        pos = pos[order]
        timings["total"] = time.perf_counter() - start
        return pos, risk[pos]

    def _lipschitz(self, risk: np.ndarray, d_lab: np.ndarray) -> np.ndarray:
        """Eq. 6, ``R_i / min_j ||x_i - x_j||``, with the zero-distance guard (``distance_floor``)."""
        d = np.asarray(d_lab, dtype=np.float64)
        positive = d[d > 0]
        scale = float(np.median(positive)) if positive.size else 1.0
        if self.distance_floor == "auto":
            floor = 0.01 * scale
        else:
            floor = float(self.distance_floor)
        weights = risk / np.maximum(d + self.eps, floor)
        weights[d <= 1e-7 * scale] = 0.0  # duplicates of labelled pairs: covered at cost 0
        return weights

    def _proba_and_repr(
        self, learner: Any, X_pool: Any, X_lab: Any, proba_fn: Any, need_repr: bool
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Pool probabilities, and pool / labelled representations when needed.

        A matcher with ``predict_proba_and_represent`` (or a ``represent`` that takes
        ``return_proba``), such as RNNMatcher, gives both from one forward pass over the pool.
        """
        if not need_repr:
            return proba_fn(X_pool), None, None
        if self.transform is not None:
            represent = self.transform
        else:
            represent = require(learner, "representation", "risk_sampling")
        est = getattr(learner, "estimator", learner)
        both = getattr(est, "predict_proba_and_represent", None)
        n_pool = num_rows(X_pool)
        rep_method = "represent" if self.transform is None else "transform"
        if self.transform is None and callable(both):
            p_pool, rep_pool = both(X_pool)
            p_pool = checked_proba(p_pool, learner, "risk_sampling", n_rows=n_pool,
                                   method="predict_proba_and_represent")
        elif self.transform is None and _takes_return_proba(represent):
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
        if len(rep_pool) != num_rows(X_pool):
            raise ValueError(
                f"risk_sampling: the representation has {len(rep_pool)} rows for a pool of "
                f"{num_rows(X_pool)} pairs."
            )
        return np.asarray(p_pool, dtype=np.float64), rep_pool, rep_lab


#: The ready default: ``ActiveLearner(..., query_strategy=risk_sampling)``. Without validation
#: pairs LearnRisk splits the labelled set; for the paper's protocol give them:
#: ``RiskSampler(X_valid, y_valid)``.
risk_sampling = RiskSampler()
