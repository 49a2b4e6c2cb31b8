"""``LearnRiskEstimator``: the research core of LearnRisk (Chen et al., SIGMOD 2020); private.

Its ``X`` holds the matcher's probability as a column; :class:`~skrisk.LearnRisk` wraps it as a
meta-estimator around the matcher and is the estimator to use. The core is not exported: its
input has a domain (the probability column in [0, 1]) that scikit-learn's generic estimator checks
do not respect, so it is not a public estimator; ``tests/risk/test_common.py`` runs every check on
it through a harness that maps the checks' data into that domain.
"""

from __future__ import annotations

import math
import numbers
import sys
import time
import warnings
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator
from sklearn.utils import ClassifierTags
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._params import Interval, Options, validate_params
from ..matchers._base import MATCH_THRESHOLD, match_labels
from . import _numpy_model
from ._defaults import DEFAULT_EPOCHS
from ._explain import RiskExplanation, build_reasons
from ._rules import Rule, generate_rules, rule_activations

__all__ = ["DEFAULT_EPOCHS", "LearnRiskEstimator", "RiskDistribution", "RiskExplanation", "mispredicted"]



def mispredicted(proba: npt.ArrayLike, y: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Risk labels: whether the matcher's label ``1[p > 0.5]`` differs from the true label.

    The matcher's label is ``match_labels`` of ``proba``: a tie at exactly
    0.5 is a non-match.

    Use them to stratify cross-validation folds of :class:`LearnRiskEstimator` (every fold needs
    mispredicted and correctly predicted pairs).

    Parameters
    ----------
    proba : array-like of shape (n_pairs,)
        Matcher match probabilities.
    y : array-like of shape (n_pairs,)
        True labels (1 = match).

    Returns
    -------
    ndarray of bool, shape (n_pairs,)

    Examples
    --------
    >>> mispredicted([0.9, 0.2, 0.7, 0.5], [1, 1, 0, 1]).tolist()
    [False, True, True, True]
    """
    return match_labels(proba) != np.asarray(y)


class RiskDistribution(NamedTuple):
    """Per-pair outputs of the risk model: VaR risk, and the untruncated normal's mean and std."""

    risk: npt.NDArray[np.float64]
    mean: npt.NDArray[np.float64]
    std: npt.NDArray[np.float64]


#: (name, type, lower bound, "left" closed / "neither") of the scalar hyperparameters


class _TorchDevice:
    """Constraint: a ``torch.device`` (checked without importing torch: an object can only be one
    when torch is loaded)."""

    def is_satisfied_by(self, value: Any) -> bool:
        torch = sys.modules.get("torch")
        return torch is not None and isinstance(value, torch.device)

    def __str__(self) -> str:
        return "an instance of 'device'"


def _on_cpu(device: Any) -> bool:
    """Whether ``device`` names the CPU (a str or a ``torch.device``), without importing torch."""
    name = device if isinstance(device, str) else getattr(device, "type", None)
    return isinstance(name, str) and (name == "cpu" or name.startswith("cpu:"))


#: The constraints of the risk hyperparameters that LearnRiskEstimator and LearnRisk both take.
HYPERPARAMETER_CONSTRAINTS: dict = {
    "max_depth": [Interval(numbers.Integral, 1, None)],
    "match_gini": [Interval(numbers.Real, 0, None, closed="neither")],
    "unmatch_gini": [Interval(numbers.Real, 0, None, closed="neither")],
    "min_coverage": [Interval(numbers.Integral, 0, None)],
    "n_bins": [Interval(numbers.Integral, 1, None)],
    "theta": [Interval(numbers.Real, 0.5, 1, closed="neither")],
    "rsd_scale": [Options(str, {"mean", "symmetric"})],
    "rsd_init": [Options(str, {"random"}), Interval(numbers.Real, 0.1, 0.9, closed="both")],
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
    "optimizer": [Options(str, {"sgd", "adam"})],
    "epochs": [Interval(numbers.Integral, 0, None)],
    "batch_size": [Interval(numbers.Integral, 1, None)],
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    "n_iter_no_change": [None, Interval(numbers.Integral, 1, None)],
    "alpha_l1": [Interval(numbers.Real, 0, None)],
    "alpha_l2": [Interval(numbers.Real, 0, None)],
    "device": [None, str, _TorchDevice()],
    "random_state": ["random_state"],
}


class LearnRiskEstimator(BaseEstimator):
    """Interpretable misprediction risk of a matcher's labels (LearnRisk): the research core.

    For research use: the matcher's probabilities are an input column here, so the caller
    computes them (out of fold for the training pairs). :class:`~skrisk.LearnRisk` does that
    itself around a matcher, passes scikit-learn's estimator checks and is built on this class;
    use it unless you study the risk model on given probabilities.

    Rules (one-sided decision trees over the similarity features) and the matcher's probability
    give each pair a normal distribution of its match probability, truncated to [0, 1]; the risk
    is its Value-at-Risk at confidence ``theta``. Expectations come from labelled *training*
    pairs; weights, relative standard deviations and the ranking scale are learned on labelled
    *validation* pairs with a pairwise RankNet loss so that mispredicted pairs rank above
    correctly predicted ones.

    **Input design.** ``X`` holds the similarity features of the pairs *plus one column with the
    matcher's match probability* (``proba_column``: the last column by default, or a column name
    when ``X`` is a DataFrame); ``y`` holds the pairs' true labels. In ``fit``, ``(X, y)`` are the
    **validation pairs**, the ones whose ranking is learned. The matcher's **training pairs**, which
    yield the rules and the expectations, are not samples of ``fit``: they come either as the fit
    parameters ``X_train`` (same columns as ``X``) and ``y_train``, or as the constructor
    parameter ``train_pairs=(X_train, y_train)``. Cross-validation therefore splits only the ranked
    pairs: each fold learns its ranking on some validation pairs and is scored on held-out ones,
    while every fold sees all training pairs (no validation label leaks into the statistics).

    Which of the two routes? ``train_pairs`` is never touched by scikit-learn's splitters, so it is
    the safe choice inside ``GridSearchCV``/``cross_validate``. The fit parameters are convenient
    for a single fit; in a search they stay whole as long as ``len(X_train) != len(X)``, because
    scikit-learn (with or without metadata routing) slices every fit parameter that has as many
    rows as ``X`` with the fold's indices (the fold then draws its statistics from a subset of the
    training pairs: weaker, but still no leak). When neither is given, a stratified
    ``fallback_train_size`` share of ``X`` (drawn with ``random_state``) serves as training pairs
    and only the rest is ranked.

    Give the training pairs out-of-fold probabilities (e.g. ``cross_val_predict``) where you can:
    a matcher is overconfident on the pairs it was fitted on, which empties the middle bins.
    In a search, stratify the folds on ``mispredicted`` (every fold needs mispredicted and
    correct pairs to be fitted and scored): ``cv=StratifiedKFold(k).split(X, mispredicted(p, y))``.

    Parameters
    ----------
    train_pairs : tuple (X_train, y_train) or None, default=None
        The matcher's labelled training pairs (same columns as ``X``) for the rules and the
        expectations; see "Input design". Mutually exclusive with the fit parameters.
    proba_column : int or str, default=-1
        Which column of ``X`` is the matcher's match probability (values in [0, 1]). A str needs a
        DataFrame ``X``. All other columns are similarity features.
    max_depth : int, default=2
        Maximum number of conditions per rule.
    match_gini : float, default=0.2
        Gini threshold below which a match-majority leaf becomes a rule (research code: 0.01).
    unmatch_gini : float, default=0.05
        Gini threshold below which an unmatch-majority leaf becomes a rule (research code:
        1e-4, which can leave a single rule; see "Defaults" below).
    class_weight : float, default=1000.0
        Class weight ``W`` of the one-sided stumps.
    min_coverage : int, default=5
        Rules, and probability bins, need at least this many training pairs (bins with fewer get
        no expectation and a default scale of 0.1).
    n_bins : int, default=50
        Equal-width bins of the matcher probability.
    theta : float, default=0.9
        VaR confidence, in (0.5, 1).
    rsd_scale : {"mean", "symmetric"}, default="symmetric"
        What the learned relative standard deviations ``r`` scale: ``"mean"`` (research code)
        ``sigma = r * mu`` with zero or missing expectations replaced by 0.1, so features pointing
        to "match" (mu near 1) are ten times wider than those pointing to "unmatch";
        ``"symmetric"`` ``sigma = r * max(min(mu, 1 - mu), 0.1)``, the same for both sides.
    rsd_init : "random" or float, default="random"
        Initial relative standard deviations: uniform in (0.1, 0.9) as in the research code, or
        one value in [0.1, 0.9] for every feature (then the initial ranking follows the
        matcher's own uncertainty, and learning starts from there).
    learning_rate : float, default=1e-2
        Optimiser step size (research code: 1e-3 with SGD).
    optimizer : {"sgd", "adam"}, default="adam"
        Adam, or plain SGD as in the research code.
    epochs : int, default=DEFAULT_EPOCHS (200)
        Passes over the validation pairs (research code: 1000).
    batch_size : int, default=512
        Pairs per mini-batch; the RankNet loss is summed over its (mispredicted, correct) pairs.
    early_stopping : bool, default=False
        Hold out a stratified ``validation_fraction`` of the ranked pairs, score the ranking on
        them (ROC AUC) before training and every 10 epochs, and keep the best-scoring
        parameters. Guards against the summed RankNet loss overfitting a small validation set.
    validation_fraction : float, default=0.25
        Share of the ranked pairs held out when ``early_stopping``.
    n_iter_no_change : int or None, default=None
        With ``early_stopping``: stop after this many evaluations (10 epochs each) without
        improvement; None trains all ``epochs`` and restores the best.
    alpha_l1, alpha_l2 : float, default=1e-3
        L1 and L2 (``alpha_l2 / 2 * ||v||^2``) penalties on the rule weights, the ranking scale
        and the weight-function parameters.
    fallback_train_size : float, default=0.5
        Share of ``X`` used as training pairs when ``X_train`` is not given.
    device : str or torch.device, default="cpu"
        Torch device for training and prediction, e.g. ``"cuda"``. On the CPU (``"cpu"``),
        prediction and :meth:`explain` compute the same formulas in numpy, without torch.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the batch order and the fallback split.

    Attributes
    ----------
    rules_ : list of Rule
        The risk-feature rules (``str(rule)`` reads like ``title_jaccard <= 0.31 -> unmatch``).
    rule_expectations_ : ndarray of shape (n_rules,)
        Match rate of the training pairs each rule covers.
    rule_coverage_ : ndarray of shape (n_rules,)
        Number of training pairs each rule covers.
    rule_weights_ : ndarray of shape (n_rules,)
        Learned non-negative weights.
    rule_rsd_ : ndarray of shape (n_rules,)
        Learned relative standard deviations.
    bin_expectations_ : ndarray of shape (n_bins,)
        Match rate of the training pairs per probability bin (-1 where fewer than
        ``min_coverage``).
    bin_counts_ : ndarray of shape (n_bins,)
        Training pairs per bin.
    bin_rsd_ : ndarray of shape (n_bins,)
        Learned relative standard deviations of the matcher feature per bin.
    rsd_base_ : ndarray of shape (n_rules + n_bins,)
        What the relative standard deviations multiply (``mu~``), rules then bins:
        ``std_j = rsd_j * rsd_base_j`` (see ``rsd_scale``).
    weight_function_ : tuple of float
        ``(a, c)`` of ``g(p) = a + 1 - exp(-(p - 0.5)^2 / (2 c^2))``.
    rank_scale_ : float
        Learned RankNet scale.
    loss_curve_ : list of float
        Mean loss per epoch.
    validation_scores_ : list of float
        With ``early_stopping``: the held-out ROC AUC at each evaluation (before training first).
    best_validation_score_ : float or None
        The best of them (None without early stopping).
    proba_index_ : int
        Position of the probability column.
    feature_names_ : ndarray of str
        Names of the similarity-feature columns (``x<j>`` for arrays).
    fit_timings_ : dict of str to float
        Wall seconds of rule generation (``"rules"``) and of the ranking epochs (``"ranking"``).
    n_train_pairs_, n_ranked_pairs_, n_mispredicted_ : int
        Training pairs used for rules/expectations, validation pairs ranked, and mispredicted
        pairs among them.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` is a DataFrame with string column names.

    Notes
    -----
    Defaults. The research code's settings are ``match_gini=0.01, unmatch_gini=1e-4,
    rsd_scale="mean", optimizer="sgd", learning_rate=1e-3, epochs=1000``; pass them to reproduce
    it. The defaults here differ from them for these reasons (the evidence is in the benchmarks
    of the documentation): the strict Gini thresholds leave few rules and the looser ones rank
    the matcher's mistakes better; ``"symmetric"`` spreads stop every predicted match from
    outranking every predicted non-match; Adam reaches the same or a better ranking in fewer
    epochs (``DEFAULT_EPOCHS``).

    Cost: rule generation ``O(n_train m^2)`` for ``m`` features at depth 2 (see
    ``generate_rules``); training ``O(epochs * n_valid * (J + batch_size * e))`` with ``J``
    rules and ``e`` the misprediction rate, dominated by per-step overhead for the default batch
    of 512. On CPU the training runs on one torch thread (restored afterwards): the tensors are
    small and thread synchronisation costs more than it saves. Rules that fire on no validation
    pair get no ranking gradient; their weight only shrinks under the L1/L2 penalty and they
    still act on new pairs that fire them. A pair that fires no rule gets ``mean = p``,
    ``std = r_b * mu~_b`` from its probability bin alone.

    References
    ----------
    .. [1] Z. Chen, Q. Chen, B. Hou, Z. Li, G. Li. "Towards Interpretable and Learnable Risk
       Analysis for Entity Resolution". SIGMOD 2020.
    .. [2] Y. Nafa, Q. Chen, Z. Chen, X. Lu, H. He, T. Duan, Z. Li. "Active Deep Learning on
       Entity Resolution by Risk Sampling". Knowledge-Based Systems, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.risk._estimator import LearnRiskEstimator
    >>> rng = np.random.default_rng(0)
    >>> def pairs(n):
    ...     y = rng.integers(0, 2, n)
    ...     sim = np.clip(0.3 + 0.4 * y + 0.2 * rng.standard_normal(n), 0, 1)
    ...     p = np.clip(sim + 0.3 * rng.standard_normal(n), 0, 1)  # a noisy matcher
    ...     return np.column_stack([sim, p]), y
    >>> X_tr, y_tr = pairs(400)
    >>> X_va, y_va = pairs(200)
    >>> est = LearnRiskEstimator(epochs=20, random_state=0)
    >>> est = est.fit(X_va, y_va, X_train=X_tr, y_train=y_tr)
    >>> risk = est.predict_risk(X_va)
    >>> risk.shape
    (200,)
    >>> round(est.score(X_va, y_va), 2) > 0.5
    True
    >>> print(est.explain(X_va, 0))  # doctest: +ELLIPSIS
    Matcher says ...
    """

    _parameter_constraints: dict = {
        "train_pairs": [None, tuple, list],  # of two: (X_train, y_train), checked in fit
        "proba_column": [Interval(numbers.Integral, None, None), str],
        **HYPERPARAMETER_CONSTRAINTS,
        "class_weight": [Interval(numbers.Real, 0, None, closed="neither")],
        "fallback_train_size": [Interval(numbers.Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        *,
        train_pairs: tuple[Any, Any] | None = None,
        proba_column: int | str = -1,
        max_depth: int = 2,
        match_gini: float = 0.2,
        unmatch_gini: float = 0.05,
        class_weight: float = 1000.0,
        min_coverage: int = 5,
        n_bins: int = 50,
        theta: float = 0.9,
        rsd_scale: str = "symmetric",
        rsd_init: str | float = "random",
        learning_rate: float = 1e-2,
        optimizer: str = "adam",
        epochs: int = DEFAULT_EPOCHS,
        batch_size: int = 512,
        early_stopping: bool = False,
        validation_fraction: float = 0.25,
        n_iter_no_change: int | None = None,
        alpha_l1: float = 1e-3,
        alpha_l2: float = 1e-3,
        fallback_train_size: float = 0.5,
        device: Any = "cpu",
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.train_pairs = train_pairs
        self.proba_column = proba_column
        self.max_depth = max_depth
        self.match_gini = match_gini
        self.unmatch_gini = unmatch_gini
        self.class_weight = class_weight
        self.min_coverage = min_coverage
        self.n_bins = n_bins
        self.theta = theta
        self.rsd_scale = rsd_scale
        self.rsd_init = rsd_init
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.epochs = epochs
        self.batch_size = batch_size
        self.alpha_l1 = alpha_l1
        self.alpha_l2 = alpha_l2
        self.fallback_train_size = fallback_train_size
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ validation helpers
    def _check_params(self) -> Any:
        validate_params(self)
        from .._device import resolve_device  # torch: fitting trains the risk model in torch

        return resolve_device(self.device)

    def _resolve_proba_column(self, n_features: int) -> int:
        col = self.proba_column
        if isinstance(col, str):
            names = getattr(self, "feature_names_in_", None)
            if names is None:
                raise ValueError(
                    f"proba_column={col!r} is a name, but X has no column names: pass X as a "
                    "pandas DataFrame, or give proba_column as a position (e.g. -1)."
                )
            hits = np.flatnonzero(names == col)
            if hits.size == 0:
                raise ValueError(
                    f"proba_column={col!r} is not a column of X; its columns are {list(names)[:10]}..."
                )
            return int(hits[0])
        if not -n_features <= col < n_features:
            raise ValueError(f"proba_column={col} is out of range for X with {n_features} columns.")
        return int(col) % n_features

    def _split_columns(
        self, X: npt.NDArray[np.float64], what: str
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Check finiteness and the probability range; return (features, proba)."""
        finite = np.isfinite(X)
        if not finite.all():
            row, col = np.argwhere(~finite)[0]
            names = self._column_names()
            raise ValueError(
                f"{what} contains NaN or infinity ({(~finite).sum()} values, first at row {row}, "
                f"column {names[col]!r}). Encode missing similarities with a sentinel such as -1 "
                "(as skrisk.data.SimilarityFeatures does) and give every pair a finite probability."
            )
        p = X[:, self.proba_index_]
        bad = (p < 0.0) | (p > 1.0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{what}: the probability column {self._column_names()[self.proba_index_]!r} must "
                f"hold match probabilities in [0, 1]; {bad.sum()} values lie outside (e.g. {p[i]:g} "
                f"at row {i}). Pass predict_proba(...)[:, 1] of the matcher, or set proba_column to "
                "the right column."
            )
        return np.delete(X, self.proba_index_, axis=1), p

    def _column_names(self) -> list[str]:
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            return [str(n) for n in names]
        return [f"x{j}" for j in range(self.n_features_in_)]

    @staticmethod
    def _check_labels(y: npt.ArrayLike, what: str) -> npt.NDArray[np.int64]:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"{what} must be 1-D labels (1 = match, 0 = non-match), got shape {y.shape}.")
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError(f"{what} contains NaN: give every pair a 0/1 label.")
        type_of_target(y, input_name=what, raise_unknown=True)  # "Unknown label type" for odd y
        ok = np.isin(y, (0, 1)) if y.dtype.kind in "biuf" else np.zeros(y.shape, bool)
        if not ok.all():
            bad = np.unique(y[~ok])[:5]
            raise ValueError(
                f"{what} must hold true labels 1 (match) and 0 (non-match) only; found {bad.tolist()}."
            )
        return y.astype(np.int64)

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        X: npt.ArrayLike,
        y: npt.ArrayLike,
        X_train: npt.ArrayLike | None = None,
        y_train: npt.ArrayLike | None = None,
    ) -> "LearnRiskEstimator":
        """Learn rules and expectations on training pairs, and the risk model on ``(X, y)``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_pairs, n_features + 1)
            Validation pairs: similarity features plus the matcher-probability column.
        y : array-like of shape (n_pairs,)
            Their true labels (1 = match, 0 = non-match).
        X_train : array-like or DataFrame of shape (n_train_pairs, n_features + 1), default=None
            The matcher's training pairs, same columns as ``X``. If None (and ``train_pairs`` is
            None), a stratified ``fallback_train_size`` share of ``X`` plays that role and the rest
            is ranked.
        y_train : array-like of shape (n_train_pairs,), default=None
            Their true labels; required with ``X_train``.

        Returns
        -------
        self : LearnRiskEstimator
        """
        device = self._check_params()
        shape = getattr(X, "shape", None)
        n_given = int(shape[0]) if shape is not None and len(shape) >= 1 else (
            len(X) if isinstance(X, (list, tuple)) else None)
        if n_given is not None and n_given < 2:
            raise ValueError(self._too_few_message(n_given, with_train=X_train is not None
                                                   or self.train_pairs is not None))
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite=False, y_numeric=False,
                             ensure_min_samples=2)
        y = self._check_labels(y, "y")
        self.proba_index_ = self._resolve_proba_column(X.shape[1])
        F, p = self._split_columns(X, "X")
        if self.train_pairs is not None:
            if X_train is not None or y_train is not None:
                raise ValueError(
                    "Training pairs were given twice (train_pairs and X_train/y_train): use one."
                )
            if not isinstance(self.train_pairs, (tuple, list)) or len(self.train_pairs) != 2:
                raise TypeError("train_pairs must be a tuple (X_train, y_train) or None.")
            X_train, y_train = self.train_pairs
        if (X_train is None) != (y_train is None):
            raise ValueError("Pass X_train and y_train together (or neither, to split X).")
        if X_train is not None:
            names = getattr(X_train, "columns", None)
            if names is not None and hasattr(self, "feature_names_in_"):
                if [str(c) for c in names] != [str(c) for c in self.feature_names_in_]:
                    raise ValueError(
                        "X_train's columns differ from X's: give both the same columns in the same "
                        "order (features plus the probability column)."
                    )
            Xt = check_array(X_train, dtype=np.float64, ensure_all_finite=False, input_name="X_train")
            if Xt.shape[1] != X.shape[1]:
                raise ValueError(
                    f"X_train has {Xt.shape[1]} columns but X has {X.shape[1]}: both need the same "
                    "features plus the probability column."
                )
            yt = self._check_labels(y_train, "y_train")
            if yt.shape[0] != Xt.shape[0]:
                raise ValueError(f"y_train has {yt.shape[0]} labels for {Xt.shape[0]} rows of X_train.")
            Ft, pt = self._split_columns(Xt, "X_train")
            rank_idx = np.arange(X.shape[0])
        else:
            rng = check_random_state(self.random_state)
            stat_idx, rank_idx = self._fallback_split(p, y, rng)
            Ft, pt, yt = F[stat_idx], p[stat_idx], y[stat_idx]
            if yt.size == 0 or yt.min() == yt.max():
                raise ValueError(self._too_few_message(y.size, y=y, p=p, with_train=False))
        if yt.min() == yt.max():
            raise ValueError(
                f"The training pairs hold only label {yt[0]}: rules and expectations need both "
                "matches and non-matches. Add labelled pairs of the other class."
            )
        Fr, pr, yr = F[rank_idx], p[rank_idx], y[rank_idx]
        z = mispredicted(pr, yr)
        if z.all() or not z.any():
            state = "mispredicted" if z.all() else "correctly predicted"
            raise ValueError(
                f"Nothing to rank: all {z.size} validation pairs are {state} by the matcher "
                f"(threshold: p > {MATCH_THRESHOLD}). LearnRisk learns to rank mispredicted above correct pairs and "
                "needs both; use more validation pairs (or, in cross-validation, folds stratified "
                "on skrisk.risk.research.mispredicted(p, y))."
            )

        # ---- risk features from the training pairs
        names = [n for j, n in enumerate(self._column_names()) if j != self.proba_index_]
        self.feature_names_ = np.asarray(names, dtype=object)
        tick = time.perf_counter()
        self.rules_: list[Rule] = generate_rules(
            Ft, yt, feature_names=names, max_depth=self.max_depth, match_gini=self.match_gini,
            unmatch_gini=self.unmatch_gini, class_weight=self.class_weight,
            min_coverage=self.min_coverage,
        )
        self.fit_timings_ = {"rules": time.perf_counter() - tick}
        At = rule_activations(self.rules_, Ft)
        cover = At.sum(axis=0)
        self.rule_coverage_ = cover.astype(np.int64)
        self.rule_expectations_ = (At.T.astype(np.float64) @ yt) / np.maximum(cover, 1)
        bt = self._bins(pt)
        counts = np.bincount(bt, minlength=self.n_bins)
        matches = np.bincount(bt, weights=yt.astype(np.float64), minlength=self.n_bins)
        self.bin_counts_ = counts.astype(np.int64)
        self.bin_expectations_ = np.where(
            counts >= max(self.min_coverage, 1), matches / np.maximum(counts, 1), -1.0
        )
        mu_tilde = np.concatenate([self.rule_expectations_, self.bin_expectations_])
        if self.rsd_scale == "mean":  # research code: sigma = r * mu, zeros / missing -> 0.1
            mu_tilde = np.where(mu_tilde <= 0.0, 0.1, mu_tilde)
        else:  # "symmetric": sigma = r * max(min(mu, 1 - mu), 0.1), missing -> 0.1
            mu_tilde = np.where(mu_tilde < 0.0, 0.1, np.maximum(np.minimum(mu_tilde, 1.0 - mu_tilde), 0.1))

        # ---- learn the ranking on the validation pairs
        rng = check_random_state(self.random_state)
        import torch

        from . import _model

        gen = torch.Generator().manual_seed(int(rng.randint(np.iinfo(np.int32).max)))
        fit_idx, monitor = np.arange(z.size), None
        scores: list[float] = []
        self.best_validation_score_ = None
        if self.early_stopping:
            fit_idx, hold_idx = self._holdout_split(z, rng)
            if hold_idx is None:
                warnings.warn(
                    f"early_stopping needs at least 2 mispredicted and 2 correct validation "
                    f"pairs to hold some out; got {int(z.sum())} and {int((~z).sum())}. Training "
                    "on all of them without early stopping.", UserWarning, stacklevel=2,
                )
            else:
                x_hold = self._inputs(Fr[hold_idx], pr[hold_idx], device)
                z_hold = z[hold_idx]
                theta = float(self.theta)

                def monitor(pv: _model.RiskParams) -> float:
                    risk = _model.forward(pv, x_hold, theta)[0].detach().cpu().numpy()
                    scores.append(float(roc_auc_score(z_hold, risk)))
                    return scores[-1]

        x = self._inputs(Fr[fit_idx], pr[fit_idx], device)
        Ar = rule_activations(self.rules_, Fr[fit_idx])
        max_active = int(Ar.sum(axis=1).max(initial=0)) + 1
        rsd_init = None if self.rsd_init == "random" else float(self.rsd_init)
        tick = time.perf_counter()
        params = _model.init_params(self.rule_expectations_, mu_tilde, max_active, gen, device,
                                    rsd_init=rsd_init)
        self.loss_curve_ = _model.train_risk_model(
            params, x, torch.as_tensor(z[fit_idx], device=device), theta=float(self.theta),
            epochs=self.epochs, batch_size=self.batch_size, lr=float(self.learning_rate),
            optimizer=self.optimizer, l1=float(self.alpha_l1), l2=float(self.alpha_l2),
            generator=gen, monitor=monitor,
            patience=self.n_iter_no_change,
        )
        self.fit_timings_["ranking"] = time.perf_counter() - tick
        if scores:
            self.validation_scores_ = scores
            self.best_validation_score_ = max(scores)
        J = len(self.rules_)
        self.rule_weights_ = params.w.detach().cpu().numpy().copy()
        r = params.r.detach().cpu().numpy()
        self.rule_rsd_, self.bin_rsd_ = r[:J].copy(), r[J:].copy()
        self.weight_function_ = (float(params.a.detach()), float(params.c.detach()))
        self.rank_scale_ = float(params.s.detach())
        self.rsd_base_ = mu_tilde
        self.n_train_pairs_ = int(Ft.shape[0])
        self.n_ranked_pairs_ = int(rank_idx.size)
        self.n_mispredicted_ = int(z.sum())
        return self

    def _too_few_message(
        self, n: int, *, y: npt.NDArray[np.int64] | None = None, p: npt.NDArray[np.float64] | None = None,
        with_train: bool,
    ) -> str:
        """How many validation pairs, of which kinds, a fit needs (``n`` were given)."""
        rank_need = ("at least one pair the matcher mispredicts and one it predicts correctly "
                     "(threshold 0.5) to rank")
        if y is not None and p is not None:
            z = mispredicted(p, y)
            got = (f"{n} pair(s): {int((y == 1).sum())} match(es), {int((y == 0).sum())} "
                   f"non-match(es), {int(z.sum())} mispredicted")
        else:
            got = f"{n} sample(s)"
        if with_train:
            return (f"LearnRiskEstimator.fit got {got} in X. The validation pairs X need {rank_need}: "
                    "at least 2 pairs. Label more validation pairs.")
        f = float(self.fallback_train_size)
        group = math.ceil(1.0 / f)
        missing = ""
        if y is not None and y.size and y.min() == y.max():
            missing = f"X holds no {'non-matches (label 0)' if y[0] == 1 else 'matches (label 1)'}. "
        return missing + (
            f"LearnRiskEstimator.fit got {got} in X and no X_train, so it splits X: "
            f"{f:g} of each (label, mispredicted) group, rounded down, becomes the training pairs "
            "for rules and expectations, which need matches and non-matches, and the rest is "
            f"ranked, which needs {rank_need}. That takes, for each label, a group of at least "
            f"{group} pairs (e.g. {group} correctly predicted matches and {group} correctly "
            f"predicted non-matches) plus a mispredicted pair: at least {2 * group + 1} pairs. "
            "Label more pairs of the missing kinds, or pass the matcher's training pairs as "
            "X_train / y_train (then X needs only the pairs to rank)."
        )

    def _holdout_split(
        self, z: npt.NDArray[np.bool_], rng: np.random.RandomState
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp] | None]:
        """Stratified on the risk label: ``validation_fraction`` of each class held out."""
        if z.sum() < 2 or (~z).sum() < 2:
            return np.arange(z.size), None
        hold: list[npt.NDArray[np.intp]] = []
        for cls in (True, False):
            members = rng.permutation(np.flatnonzero(z == cls))
            k = min(max(1, int(round(self.validation_fraction * members.size))), members.size - 1)
            hold.append(members[:k])
        hold_idx = np.sort(np.concatenate(hold))
        return np.setdiff1d(np.arange(z.size), hold_idx), hold_idx

    def _fallback_split(
        self, p: npt.NDArray[np.float64], y: npt.NDArray[np.int64], rng: np.random.RandomState
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """Stratified on (label, mispredicted): a share of each stratum for statistics, rest ranked."""
        strata = 2 * y + mispredicted(p, y)
        stat: list[npt.NDArray[np.intp]] = []
        for s in np.unique(strata):
            members = rng.permutation(np.flatnonzero(strata == s))
            stat.append(members[: int(np.floor(self.fallback_train_size * members.size))])
        stat_idx = np.sort(np.concatenate(stat))
        rank_idx = np.setdiff1d(np.arange(y.size), stat_idx)
        return stat_idx, rank_idx

    def _bins(self, p: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        return np.minimum((p * self.n_bins).astype(np.intp), self.n_bins - 1)

    def _inputs(self, F: npt.NDArray[np.float64], p: npt.NDArray[np.float64], device: Any) -> Any:
        """The torch inputs (:class:`~skrisk.risk._model.RiskInputs`) of pairs, on ``device``."""
        import torch

        from . import _model

        A = rule_activations(self.rules_, F)
        return _model.RiskInputs(
            A=torch.as_tensor(A, dtype=torch.float64, device=device),
            p=torch.as_tensor(p, dtype=torch.float64, device=device),
            bins=torch.as_tensor(self._bins(p), dtype=torch.int64, device=device),
        )

    def _params(self, device: Any) -> Any:
        """The fitted parameters as torch tensors (:class:`~skrisk.risk._model.RiskParams`)."""
        import torch

        from . import _model

        t = lambda v: torch.as_tensor(np.asarray(v, dtype=np.float64), device=device)  # noqa: E731
        return _model.RiskParams(
            w=t(self.rule_weights_), r=t(np.concatenate([self.rule_rsd_, self.bin_rsd_])),
            a=t(self.weight_function_[0]), c=t(self.weight_function_[1]), s=t(self.rank_scale_),
            mu=t(self.rule_expectations_), mu_tilde=t(self.rsd_base_),
        )

    # ------------------------------------------------------------------ prediction
    def _transform_input(self, X: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=False, reset=False)
        return self._split_columns(X, "X")

    def predict_distribution(self, X: npt.ArrayLike) -> RiskDistribution:
        """VaR risk, mean and standard deviation of every pair's match-probability distribution.

        Parameters
        ----------
        X : array-like of shape (n_pairs, n_features + 1)
            Features plus the probability column, as in ``fit``.

        Returns
        -------
        RiskDistribution
            Named tuple ``(risk, mean, std)`` of float64 arrays of shape (n_pairs,). ``mean`` and
            ``std`` are those of the normal before truncation to [0, 1].
        """
        F, p = self._transform_input(X)
        if _on_cpu(self.device):  # numpy: scoring on the CPU needs no torch
            risk, mu, sigma = _numpy_model.predict(
                A=rule_activations(self.rules_, F), p=p, bins=self._bins(p), w=self.rule_weights_,
                r=np.concatenate([self.rule_rsd_, self.bin_rsd_]), a=self.weight_function_[0],
                c=self.weight_function_[1], mu=self.rule_expectations_, mu_tilde=self.rsd_base_,
                theta=float(self.theta),
            )
            return RiskDistribution(risk, mu, sigma)
        import torch

        from . import _model

        device = torch.device(self.device)
        x = self._inputs(F, p, device)
        risk, mu, sigma = _model.predict(self._params(device), x, float(self.theta))
        return RiskDistribution(risk, mu, sigma)

    def predict_risk(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Value-at-Risk of every pair's matcher label (higher = more likely mislabelled).

        Parameters
        ----------
        X : array-like of shape (n_pairs, n_features + 1)

        Returns
        -------
        ndarray of shape (n_pairs,), values in [0, 1]
        """
        return self.predict_distribution(X).risk

    def decision_function(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Same as :meth:`predict_risk`, so ``scoring="roc_auc"``-style tools can use it."""
        return self.predict_risk(X)

    def score(self, X: npt.ArrayLike, y: npt.ArrayLike, sample_weight: npt.ArrayLike | None = None) -> float:
        """ROC AUC of the risk for separating mispredicted from correctly predicted pairs.

        Parameters
        ----------
        X : array-like of shape (n_pairs, n_features + 1)
        y : array-like of shape (n_pairs,)
            True labels (1 = match); the matcher's label is ``1[p > 0.5]``.
        sample_weight : array-like of shape (n_pairs,), default=None

        Returns
        -------
        float
        """
        F, p = self._transform_input(X)
        y = self._check_labels(y, "y")
        z = mispredicted(p, y)
        if z.all() or not z.any():
            raise ValueError(
                "score needs mispredicted and correctly predicted pairs, but all "
                f"{z.size} are {'mispredicted' if z.all() else 'correct'}: use more pairs, or "
                "stratify CV folds on skrisk.risk.research.mispredicted(p, y)."
            )
        risk = self.predict_risk(X)
        return float(roc_auc_score(z, risk, sample_weight=sample_weight))

    def explain(
        self, X: npt.ArrayLike, index: int = 0, *, values: Any = None, feature_names: Any = None
    ) -> RiskExplanation:
        """Explain one pair's risk: fired rules, the matcher's bin, the distribution and the VaR.

        Parameters
        ----------
        X : array-like of shape (n_pairs, n_features + 1) or (n_features + 1,)
            Pairs (or a single pair's row) with the probability column, as in ``fit``.
        index : int, default=0
            Which row of ``X`` to explain.
        values : mapping of str to (left, right), optional
            The pair's raw values per attribute, quoted in the reasons' sentences.
        feature_names : sequence of str, optional
            Names of the similarity features (default: the names the rules were fitted with).

        Returns
        -------
        RiskExplanation
            ``str()`` of it is a readable text; ``.to_dict()`` the structured form.
        """
        check_is_fitted(self)
        if hasattr(X, "iloc"):
            row = X.iloc[[index]]
        else:
            arr = np.asarray(X)
            if arr.ndim == 1:
                arr = arr[None, :]
            if not -arr.shape[0] <= index < arr.shape[0]:
                raise IndexError(f"index {index} is out of range for {arr.shape[0]} pairs.")
            row = arr[[index]]
        F, p = self._transform_input(row)
        risk, mean, std = self.predict_distribution(row)
        fired = np.flatnonzero(rule_activations(self.rules_, F)[0])
        a, c = self.weight_function_
        p0 = float(p[0])
        g = float(_numpy_model.matcher_weight(p0, float(a), float(c)))
        total = g + self.rule_weights_[fired].sum()
        rules = [
            {
                "rule": str(self.rules_[j]),
                "label": int(self.rules_[j].label),
                "weight": float(self.rule_weights_[j]),
                "share": float(self.rule_weights_[j] / total) if total > 0 else 0.0,
                "expectation": float(self.rule_expectations_[j]),
                "train_pairs": int(self.rule_coverage_[j]),
                "rsd": float(self.rule_rsd_[j]),
            }
            for j in fired
        ]
        rules.sort(key=lambda r: -r["weight"])
        b = int(self._bins(p)[0])
        exp_b = float(self.bin_expectations_[b])
        return RiskExplanation(
            probability=p0,
            predicted_label=int(match_labels([p0])[0]),
            bin={
                "index": b, "low": b / self.n_bins, "high": (b + 1) / self.n_bins,
                "train_pairs": int(self.bin_counts_[b]),
                "train_match_rate": None if exp_b < 0 else exp_b,
                "weight": float(g), "share": float(g / total) if total > 0 else 1.0,
                "rsd": float(self.bin_rsd_[b]),
            },
            rules=rules, mean=float(mean[0]), std=float(std[0]), risk=float(risk[0]),
            theta=float(self.theta),
            reasons=build_reasons(
                self.rules_, fired, weights=self.rule_weights_, expectations=self.rule_expectations_,
                coverage=self.rule_coverage_, matcher_weight=g, probability=p0, features=F[0],
                feature_names=feature_names, values=values,
            ),
        )

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = False
        # y holds binary class labels (1 = match); not a classifier (no predict), but the tag
        # tells scikit-learn's checks to feed binary targets
        tags.classifier_tags = ClassifierTags(multi_class=False, poor_score=True)
        return tags
