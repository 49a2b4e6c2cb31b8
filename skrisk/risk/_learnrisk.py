"""``LearnRisk``: the risk of a matcher's labels, as a meta-estimator around the matcher.

Shaped like :class:`sklearn.calibration.CalibratedClassifierCV`: the matcher is the ``estimator``
parameter, ``X`` is the matcher's own input, and the probabilities LearnRisk learns from are
computed inside ``fit`` (out of fold for the labelled pairs, with :func:`oof_proba`, the one home of
out-of-fold probabilities in skrisk).
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._params import HasMethods, Interval, Options, validate_params
from .._rows import num_rows, take_rows
from .._typing import RandomStateLike
from ..exceptions import DataError, NotFittedError
from ..matchers._base import match_labels
from ._estimator import (
    DEFAULT_EPOCHS, HYPERPARAMETER_CONSTRAINTS, LearnRiskEstimator, RiskDistribution, RiskExplanation, mispredicted,
)
from ._uncertainty import matcher_uncertainty

__all__ = ["LearnRisk", "holds_risk_features", "oof_proba", "risk_features", "risk_roc_auc"]

_PROBA = "matcher_proba"

#: The hyperparameters LearnRisk hands to its research core, LearnRiskEstimator (same names).
_CORE_PARAMS = (
    "max_depth", "match_gini", "unmatch_gini", "min_coverage", "n_bins", "theta",
    "rsd_scale", "rsd_init", "learning_rate", "optimizer", "epochs", "batch_size", "early_stopping",
    "validation_fraction", "n_iter_no_change", "alpha_l1", "alpha_l2", "device", "random_state",
)


#: The folds of ``cv="auto"`` for a matcher that is cheap to refit.
_AUTO_FOLDS = 5


def _is_neural(est: Any) -> bool:
    """Whether the fitted matcher ``est`` is a neural one (it holds a torch ``module_``)."""
    return hasattr(est, "module_")


def holds_risk_features(X: Any) -> bool:
    """Whether :func:`risk_features` can read ``X`` as it is (a mapping or a numeric matrix).

    Parameters
    ----------
    X : pairs in a matcher's input format

    Returns
    -------
    bool
        False for, e.g., a pair frame of texts (a pipeline's encoder makes features of it).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> holds_risk_features(np.zeros((2, 3))), holds_risk_features(pd.DataFrame({"left_a": ["x"]}))
    (True, False)
    """
    if isinstance(X, Mapping) or sp.issparse(X):
        return True
    if isinstance(X, pd.DataFrame):  # look at the dtypes, not at a converted copy of the frame
        return all(pd.api.types.is_numeric_dtype(t) for t in X.dtypes)
    try:
        return np.asarray(X).dtype.kind in "biuf"
    except (TypeError, ValueError):  # pragma: no cover - ragged input
        return False


def risk_features(X: Any) -> npt.NDArray[np.float64]:
    """The similarity features LearnRisk's rules use, taken from a matcher's input.

    A mapping / ``SliceDict`` supplies them under the key ``"features"``; a 2-D numeric array (or
    an all-numeric DataFrame) *is* the feature matrix (the feature-based matcher's input).

    Parameters
    ----------
    X : ndarray, DataFrame, mapping or SliceDict
        Pairs in the matcher's input format.

    Returns
    -------
    ndarray of float64, shape (n_pairs, n_features)

    Raises
    ------
    TypeError
        ``X`` holds no similarity features; the message names the fix (``features=``).

    Examples
    --------
    >>> risk_features({"features": [[0.5, 1.0]], "tokens": [[1, 2]]}).tolist()
    [[0.5, 1.0]]
    """
    if isinstance(X, Mapping):
        if "features" not in X:
            raise TypeError(
                f"The pairs are a mapping with keys {sorted(map(str, X))} but no 'features': encode "
                "pairs with similarity features (e.g. RNNMatcher's hybrid encoding), or give "
                "LearnRisk / RiskSampler features=<callable returning the similarity features of "
                "pairs>."
            )
        return np.asarray(X["features"], dtype=np.float64)
    if sp.issparse(X):
        X = X.toarray()
    arr = np.asarray(X)
    if arr.ndim == 2 and arr.dtype.kind in "biufO":
        try:
            return arr.astype(np.float64, copy=False)
        except (TypeError, ValueError):  # text columns, e.g. a pair frame: fall through
            pass
    raise TypeError(
        f"Cannot find similarity features in pairs of type {type(X).__name__} with shape "
        f"{getattr(arr, 'shape', None)} and dtype {arr.dtype}: give LearnRisk / RiskSampler "
        "features=<callable returning the similarity features of pairs>."
    )


def oof_proba(
    estimator: Any, X: Any, y: npt.ArrayLike, *, cv: Any = 5, random_state: RandomStateLike = None
) -> npt.NDArray[np.float64]:
    """Out-of-fold class probabilities of labelled pairs: each fold predicted by a clone fitted
    on the other folds.

    A matcher is overconfident on the pairs it was fitted on (a random forest is always right on
    them), so statistics of its mistakes must come from probabilities of pairs it did not see.
    This is skrisk's one implementation of them (LearnRisk, risk sampling and the labelling
    session use it).

    Parameters
    ----------
    estimator : classifier with ``predict_proba``
        The matcher; cloned for every fold, never fitted itself.
    X : ndarray, DataFrame, sparse matrix, mapping or SliceDict
        The labelled pairs in the matcher's input format (rows are taken by position).
    y : array-like of shape (n_pairs,)
        Their labels.
    cv : int or cross-validation splitter, default=5
        An int: that many stratified folds, shuffled with ``random_state``, capped at the size of
        the smaller class. With fewer than 2 pairs in the smaller class no fold can hold both
        classes: a ``UserWarning`` says so and the probabilities come from ``estimator`` fitted on
        all pairs (in-sample). A splitter (``split(X, y)``) is used as given.
    random_state : int, RandomState instance or None, default=None
        Shuffles the folds of an int ``cv``.

    Returns
    -------
    ndarray of float64, shape (n_pairs, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.arange(20.0)[:, None]; y = (X[:, 0] > 9).astype(int)
    >>> oof_proba(LogisticRegression(), X, y, cv=4, random_state=0).shape
    (20, 2)
    """
    y = np.asarray(y)
    n = num_rows(X)
    if y.shape[0] != n:
        raise ValueError(f"oof_proba: y has {y.shape[0]} labels for {n} pairs.")
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}.")
        _, counts = np.unique(y, return_counts=True)
        k = min(int(cv), int(counts.min()) if counts.size else 0)
        if k < 2:
            warnings.warn(
                f"oof_proba: the smaller class holds {int(counts.min()) if counts.size else 0} "
                "labelled pair(s), too few for 2 stratified folds; using the probabilities of the "
                "matcher fitted on all pairs (in-sample, overconfident). Label more pairs of both "
                "classes.",
                UserWarning, stacklevel=2,
            )
            return np.asarray(clone(estimator).fit(X, y).predict_proba(X), dtype=np.float64)
        splitter = StratifiedKFold(k, shuffle=True, random_state=random_state)
    elif hasattr(cv, "split") and not isinstance(cv, str):
        splitter = cv
    else:
        raise TypeError(f"cv must be an int >= 2 or a cross-validation splitter, got {cv!r}.")
    P: npt.NDArray[np.float64] | None = None
    seen = np.zeros(n, dtype=bool)
    for tr, te in splitter.split(np.zeros((n, 1)), y):
        m = clone(estimator).fit(take_rows(X, tr), y[tr])
        proba = np.asarray(m.predict_proba(take_rows(X, te)), dtype=np.float64)
        if P is None:
            P = np.full((n, proba.shape[1]), np.nan)
        if proba.shape[1] != P.shape[1]:
            raise ValueError(
                "oof_proba: a fold's training pairs miss a class, so its probabilities have "
                f"{proba.shape[1]} columns instead of {P.shape[1]}: use stratified folds."
            )
        P[te] = proba
        seen[te] = True
    if P is None or not seen.all():
        raise ValueError(
            "oof_proba: the folds of cv do not predict every pair once (it must be a partition, "
            "like KFold / StratifiedKFold)."
        )
    return P


@contextmanager
def _clock(timings: dict[str, float], key: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = timings.get(key, 0.0) + time.perf_counter() - start


def _check_finite(F: npt.NDArray[np.float64], what: str) -> None:
    """LearnRisk's one rule for NaN / infinity in the similarity features: refused, whether or not
    the matcher makes mistakes (the rules and the risk model cannot read them)."""
    finite = np.isfinite(F)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        raise DataError(
            f"The similarity features of {what} hold NaN or infinity ({int((~finite).sum())} values, "
            f"first at row {row}, column {col}). Encode a missing similarity with the sentinel -1, "
            "as skrisk.data.SimilarityFeatures does, before LearnRisk."
        )


def _as_input(X: Any) -> Any:
    """Array-likes that are neither arrays, frames, sparse matrices nor mappings become arrays."""
    if sp.issparse(X):
        return X.tocsr()  # a DOK matrix is also a dict: never read it as a mapping pool
    if isinstance(X, (np.ndarray, pd.DataFrame, pd.Series, Mapping, list, tuple)):
        return X
    if hasattr(X, "__array__"):
        return np.asarray(X)
    return X


class LearnRisk(ClassifierMixin, BaseEstimator):
    """The misprediction risk of a matcher's labels (LearnRisk), around the matcher itself.

    LearnRisk (Chen et al., SIGMOD 2020) gives each pair a normal distribution of its match
    probability from one-sided rules over similarity features and from the matcher's own
    probability, truncated to [0, 1]; the risk is its Value-at-Risk at confidence ``theta``
    (higher = more likely mislabelled by the matcher). Like
    :class:`~sklearn.calibration.CalibratedClassifierCV` it wraps the matcher: ``X`` is the
    matcher's normal input and ``fit`` computes the probabilities LearnRisk needs.

    ``fit(X, y)`` on labelled pairs:

    1. the rules and their expectations are learned from ``(X, y)`` with out-of-fold
       probabilities of the matcher (:func:`oof_proba` over ``cv`` folds; with ``cv="prefit"``
       the fitted matcher's own probabilities);
    2. ``estimator_`` is the matcher fitted on all of ``(X, y)`` (or the prefit one);
    3. the weights are ranked on ``(X_valid, y_valid)`` with ``estimator_``'s probabilities when
       given (the paper's validation set), else on the out-of-fold probabilities of ``(X, y)``.

    When the matcher makes no mistake (or only mistakes) on the ranking pairs there is nothing to
    rank: a ``UserWarning`` says so, ``risk_model_`` is None and the risk is the matcher's
    uncertainty ``min(p, 1 - p)``.

    Parameters
    ----------
    estimator : classifier with ``predict_proba``, default=None
        The matcher: any binary scikit-learn classifier (or Pipeline) on pairs. None:
        :class:`~skrisk.matchers.FeatureMatcher`.
    cv : int, cross-validation splitter, "auto" or "prefit", default="auto"
        Folds of the out-of-fold probabilities (see :func:`oof_proba`), or ``"prefit"`` to use
        the already fitted ``estimator`` as is (its probabilities of ``X`` are then in-sample).
        ``"auto"``: 5 folds, except for a neural matcher (one that holds a torch ``module_``
        once fitted, as :class:`~skrisk.matchers.RNNMatcher` and
        :class:`~skrisk.matchers.LMMatcher` do), whose own probabilities of ``X`` after fitting
        on ``(X, y)`` are used: it keeps its best epoch on validation pairs and would need 5
        more trainings for out-of-fold probabilities.
    features : callable, default=None
        ``features(X) -> (n_pairs, n_features)`` similarity features of pairs for the rules.
        None: :func:`risk_features` (``X`` itself when it is a 2-D numeric array, else
        ``X["features"]`` for a mapping / SliceDict).
    feature_names : sequence of str, default=None
        Names of those features, so that rules read ``title_jaccard <= 0.31 -> unmatch``.
    max_depth, match_gini, unmatch_gini, min_coverage, n_bins, theta, rsd_scale, \
rsd_init, learning_rate, optimizer, epochs, batch_size, early_stopping, validation_fraction, \
n_iter_no_change, alpha_l1, alpha_l2, device
        The risk hyperparameters, with the meanings and defaults of
        the research core :class:`skrisk.risk.research.LearnRiskEstimator` (``epochs`` defaults to
        ``DEFAULT_EPOCHS``).
    rule_class_weight : float, default=1000.0
        ``LearnRiskEstimator``'s ``class_weight``: the class weight ``W`` of the one-sided rule
        stumps. Renamed here because a classifier's ``class_weight`` means the weight of each
        class of ``y`` in scikit-learn (and its checks set it so).
    random_state : int, RandomState instance or None, default=None
        Seeds the folds, the initial risk weights and the batch order.

    Attributes
    ----------
    estimator_ : classifier
        The matcher fitted on all of ``(X, y)`` (or the prefit one).
    classes_ : ndarray of shape (2,)
        The class labels (``classes_[1]`` is "match").
    risk_model_ : LearnRiskEstimator or None
        The fitted research core (rules, weights, ...); None when there was nothing to rank.
    rules_ : list of Rule
        The rules (empty when ``risk_model_`` is None).
    cv_ : int, cross-validation splitter or "prefit"
        The ``cv`` the fit used (``"auto"`` resolved).
    fit_timings_ : dict of str to float
        Wall seconds of ``"oof_proba"``, ``"matcher_fit"``, ``"valid_proba"``, ``"rules"``,
        ``"ranking"`` and ``"total"``.
    n_features_in_ : int
        Only when ``estimator_`` defines it.
    feature_names_in_ : ndarray of str
        Only when ``estimator_`` defines it.

    See Also
    --------
    skrisk.risk.research.LearnRiskEstimator : the research core (the probability as a column of X).
    skrisk.risk.oof_proba : out-of-fold probabilities.
    skrisk.risk.risk_roc_auc : the scorer of the risk's ranking.

    Notes
    -----
    ``predict`` and ``score`` are the matcher's (``estimator_``'s labels by
    ``match_labels``, accuracy); the risk comes from :meth:`predict_risk`.
    Tune the risk hyperparameters with :func:`risk_roc_auc` as the scorer (see Examples):
    ``GridSearchCV(LearnRisk(FeatureMatcher()), {"theta": [0.8, 0.9]}, scoring=risk_roc_auc)``.

    References
    ----------
    .. [1] Z. Chen, Q. Chen, B. Hou, Z. Li, G. Li. "Towards Interpretable and Learnable Risk
       Analysis for Entity Resolution". SIGMOD 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skrisk import LearnRisk
    >>> from skrisk.risk import risk_roc_auc
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> X = np.clip(0.35 + 0.3 * y[:, None] + 0.25 * rng.standard_normal((300, 3)), 0, 1)
    >>> model = LearnRisk(LogisticRegression(), epochs=20, random_state=0).fit(X, y)
    >>> model.predict_risk(X[:3]).shape
    (3,)
    >>> search = GridSearchCV(LearnRisk(LogisticRegression(), epochs=20, random_state=0),
    ...                       {"theta": [0.8, 0.9]}, scoring=risk_roc_auc, cv=3).fit(X, y)
    >>> sorted(search.best_params_)
    ['theta']
    """

    _parameter_constraints: dict = {
        "cv": [Options(str, {"auto", "prefit"}), Interval(numbers.Integral, 2, None),
               HasMethods(("split", "get_n_splits"))],
        "estimator": [None, HasMethods(("fit", "predict_proba"))],
        "features": [None, "callable"],
        "feature_names": [None, "array-like"],
        **HYPERPARAMETER_CONSTRAINTS,
        "rule_class_weight": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        estimator: Any = None,
        *,
        cv: Any = "auto",
        features: Callable[[Any], Any] | None = None,
        feature_names: Any = None,
        max_depth: int = 2,
        match_gini: float = 0.2,
        unmatch_gini: float = 0.05,
        rule_class_weight: float = 1000.0,
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
        device: Any = "cpu",
        random_state: RandomStateLike = None,
    ) -> None:
        self.estimator = estimator
        self.cv = cv
        self.features = features
        self.feature_names = feature_names
        self.max_depth = max_depth
        self.match_gini = match_gini
        self.unmatch_gini = unmatch_gini
        self.rule_class_weight = rule_class_weight
        self.min_coverage = min_coverage
        self.n_bins = n_bins
        self.theta = theta
        self.rsd_scale = rsd_scale
        self.rsd_init = rsd_init
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.epochs = epochs
        self.batch_size = batch_size
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.alpha_l1 = alpha_l1
        self.alpha_l2 = alpha_l2
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _matcher(self) -> Any:
        if self.estimator is None:
            from ..matchers._feature import FeatureMatcher

            return FeatureMatcher()
        if not hasattr(self.estimator, "predict_proba"):
            raise TypeError(
                f"LearnRisk needs a matcher with predict_proba; {type(self.estimator).__name__} has "
                "none (e.g. use SVC(probability=True), or a FeatureMatcher)."
            )
        return self.estimator

    def _core(self) -> LearnRiskEstimator:
        params = {name: getattr(self, name) for name in _CORE_PARAMS}
        params["class_weight"] = self.rule_class_weight
        if isinstance(params["random_state"], np.random.RandomState):
            params["random_state"] = int(params["random_state"].randint(np.iinfo(np.int32).max))
        if self.feature_names is not None:
            params["proba_column"] = _PROBA
        return LearnRiskEstimator(**params)

    def _features(self, X: Any, n: int, what: str) -> npt.NDArray[np.float64]:
        if self.features is not None:
            F = self.features(X)
        else:
            est = getattr(self, "estimator_", None)
            if isinstance(est, Pipeline) and len(est.steps) > 1 and not holds_risk_features(X):
                X = est[:-1].transform(X)  # e.g. a pair frame through the pipeline's encoder
            F = risk_features(X)
        F = np.asarray(F, dtype=np.float64)
        if F.ndim != 2 or F.shape[0] != n:
            raise ValueError(
                f"The similarity features of {what} have shape {F.shape}; they must be 2-D with one "
                f"row per pair ({n}): check features=."
            )
        _check_finite(F, what)
        return F

    def _risk_input(self, F: npt.NDArray[np.float64], p: npt.NDArray[np.float64]) -> Any:
        """The research core's input: the features plus the match probability as last column."""
        out = np.column_stack([F, p])
        if self.feature_names is None:
            return out
        names = [str(n) for n in self.feature_names]
        if len(names) != F.shape[1]:
            raise ValueError(
                f"feature_names has {len(names)} names for {F.shape[1]} similarity features: give "
                "one name per feature column."
            )
        return pd.DataFrame(out, columns=[*names, _PROBA])

    def _check_y(self, y: Any, what: str, classes: np.ndarray | None = None) -> np.ndarray:
        if y is None:
            raise ValueError(
                f"LearnRisk requires {what} to be passed, but the target {what} is None: pass the "
                "true labels of the pairs (1 = match, 0 = non-match)."
            )
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        if classes is not None:
            unknown = ~np.isin(y, classes)
            if unknown.any():
                raise ValueError(
                    f"{what} holds labels {np.unique(y[unknown])[:5].tolist()} the matcher does not "
                    f"know (its classes are {classes.tolist()})."
                )
        return y

    def _match_proba(self, X: Any) -> npt.NDArray[np.float64]:
        P = np.asarray(self.estimator_.predict_proba(X), dtype=np.float64)
        return P[:, 1]

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: npt.ArrayLike, *, X_valid: Any = None, y_valid: Any = None) -> "LearnRisk":
        """Fit the matcher (unless prefit), the rules and the risk model.

        Parameters
        ----------
        X : ndarray, DataFrame, mapping or SliceDict of n_pairs rows
            Labelled pairs in the matcher's input format.
        y : array-like of shape (n_pairs,)
            Their true labels (two classes; the second of the sorted labels is "match").
        X_valid : same kind as X, default=None
            Validation pairs the risk weights are ranked on (the paper's V). None: the
            out-of-fold probabilities of ``(X, y)`` are ranked.
        y_valid : array-like of shape (n_valid,), default=None
            Their true labels; required with ``X_valid``.

        Returns
        -------
        self : LearnRisk
        """
        return self._fit(X, y, X_valid, y_valid)

    def fit_around(self, X: Any, y: npt.ArrayLike, *, X_valid: Any = None, y_valid: Any = None) -> "LearnRisk":
        """Fit the rules and the risk model around ``estimator``, already fitted on ``(X, y)``.

        As :meth:`fit`, except that the matcher is not fitted again: ``estimator_`` is
        ``estimator`` itself (risk sampling's learner holds a matcher fitted on its labelled
        set). The rules' probabilities of ``(X, y)`` are still out-of-fold ones from ``cv``
        clones (with ``cv="prefit"``, the matcher's own: then this is :meth:`fit`).

        Parameters
        ----------
        X, y, X_valid, y_valid
            As in :meth:`fit`.

        Returns
        -------
        self : LearnRisk

        Raises
        ------
        NotFittedError
            ``estimator`` is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skrisk import LearnRisk
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 2, 200)
        >>> X = np.clip(0.35 + 0.3 * y[:, None] + 0.25 * rng.standard_normal((200, 3)), 0, 1)
        >>> matcher = LogisticRegression().fit(X, y)
        >>> model = LearnRisk(matcher, cv=3, epochs=5, random_state=0).fit_around(X, y)
        >>> model.estimator_ is matcher
        True
        """
        est = self._matcher()
        _require_fitted(est, "fit_around", "fit it on the labelled pairs first, or use fit()")
        return self._fit(X, y, X_valid, y_valid, fitted=est)

    def _fit(
        self, X: Any, y: Any, X_valid: Any, y_valid: Any, *, fitted: Any = None, stacklevel: int = 3,
    ) -> "LearnRisk":
        """``fit``; ``fitted`` is a matcher already fitted on all of ``(X, y)`` (:meth:`fit_around`),
        used as ``estimator_`` instead of fitting a clone again."""
        timings: dict[str, float] = {}
        start = time.perf_counter()
        if (X_valid is None) != (y_valid is None):
            raise ValueError("Give both X_valid and y_valid, or neither.")
        self._matcher()  # a matcher without predict_proba: the error names the fix (SVC(probability=True))
        validate_params(self)  # hyperparameter errors before any matcher is fitted
        core = self._core()
        cv = self.cv
        X = _as_input(X)
        y = self._check_y(y, "y")
        n = num_rows(X)
        if n == 0:
            raise ValueError("LearnRisk got 0 labelled pairs (n_samples = 0): give labelled pairs.")
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels for {n} pairs of X.")
        if np.unique(y).size < 2:
            raise ValueError(
                f"The labelled pairs hold only one class ({np.unique(y)[:1].tolist()}): LearnRisk "
                "and its matcher need matches and non-matches. Label pairs of the other class."
            )
        if type_of_target(y, input_name="y") != "binary":
            raise ValueError(
                "Only binary classification is supported: LearnRisk needs match labels (1 = match, "
                f"0 = non-match); got {np.unique(y).size} classes."
            )
        if self.features is None and holds_risk_features(X) and (isinstance(X, Mapping) or np.ndim(X) == 2):
            _check_finite(np.asarray(risk_features(X), dtype=np.float64), "X")  # before the matcher sees them
        est = self._matcher()
        if sp.issparse(X) and not get_tags(est).input_tags.sparse:
            raise TypeError(
                f"Sparse data was passed to LearnRisk, but {type(est).__name__} needs dense data: "
                "pass a dense array (X.toarray())."
            )
        if isinstance(cv, str) and cv == "auto":
            if fitted is None:  # whether the matcher is neural shows once it is fitted
                with _clock(timings, "matcher_fit"):
                    fitted = clone(est).fit(X, y)
            cv, est = ("prefit", fitted) if _is_neural(fitted) else (_AUTO_FOLDS, est)
        self.cv_ = cv
        if isinstance(cv, str):  # "prefit"
            _require_fitted(est, "cv='prefit'", "fit it first, or use cv=5 to let LearnRisk fit it")
            self.estimator_ = est
            with _clock(timings, "oof_proba"):
                P = np.asarray(est.predict_proba(X), dtype=np.float64)
        else:
            with _clock(timings, "oof_proba"):
                P = oof_proba(est, X, y, cv=cv, random_state=self._fold_seed())
            if fitted is not None:
                self.estimator_ = fitted
            else:
                with _clock(timings, "matcher_fit"):
                    self.estimator_ = clone(est).fit(X, y)
        classes = np.asarray(getattr(self.estimator_, "classes_", np.unique(y)))
        if classes.size != 2 or not np.isin(y, classes).all():
            raise ValueError(
                f"The matcher's classes {classes.tolist()} are not the two labels of y "
                f"{np.unique(y).tolist()}."
            )
        self.classes_ = classes
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, attr):
                setattr(self, attr, getattr(self.estimator_, attr))
            elif attr in self.__dict__:
                delattr(self, attr)
        yb = (y == classes[1]).astype(np.int64)
        F = self._features(X, n, "X")
        R_train = self._risk_input(F, P[:, 1])
        if X_valid is not None:
            X_valid = _as_input(X_valid)
            y_v = self._check_y(y_valid, "y_valid", classes)
            n_v = num_rows(X_valid)
            if y_v.shape[0] != n_v:
                raise ValueError(f"y_valid has {y_v.shape[0]} labels for {n_v} pairs of X_valid.")
            with _clock(timings, "valid_proba"):
                p_v = self._match_proba(X_valid)
            yb_v = (y_v == classes[1]).astype(np.int64)
            R_rank = self._risk_input(self._features(X_valid, n_v, "X_valid"), p_v)
        else:
            p_v, yb_v, R_rank = P[:, 1], yb, R_train
        z = mispredicted(p_v, yb_v)
        if z.all() or not z.any():
            warnings.warn(
                f"LearnRisk: the matcher {'mispredicts' if z.all() else 'predicts correctly'} all "
                f"{z.size} ranking pairs, so LearnRisk has nothing to learn from; the risk is the "
                "matcher's uncertainty min(p, 1 - p) (risk_model_ is None). More validation pairs "
                "avoid this.",
                UserWarning, stacklevel=stacklevel,  # the caller's line
            )
            self.risk_model_ = None
            self.rules_ = []
        else:
            self.risk_model_ = core.fit(R_rank, yb_v, X_train=R_train, y_train=yb)
            self.rules_ = list(self.risk_model_.rules_)
            timings.update(self.risk_model_.fit_timings_)
        timings["total"] = time.perf_counter() - start
        self.fit_timings_ = timings
        return self

    def _fold_seed(self) -> Any:
        rs = self.random_state
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(np.iinfo(np.int32).max))
        return rs

    # ------------------------------------------------------------------ prediction
    def predict_proba(self, X: Any) -> npt.NDArray[np.float64]:
        """The matcher's class probabilities (``estimator_.predict_proba``).

        Parameters
        ----------
        X : pairs in the matcher's input format

        Returns
        -------
        ndarray of shape (n_pairs, 2)
        """
        check_is_fitted(self)
        return np.asarray(self.estimator_.predict_proba(_as_input(X)), dtype=np.float64)

    def predict(self, X: Any) -> np.ndarray:
        """The matcher's labels: ``classes_[1]`` where ``p > 0.5`` (``match_labels``).

        Parameters
        ----------
        X : pairs in the matcher's input format

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        check_is_fitted(self)
        return self.classes_[match_labels(self.predict_proba(X)).astype(np.intp)]

    def predict_distribution(self, X: Any, *, proba: npt.ArrayLike | None = None) -> RiskDistribution:
        """VaR risk, mean and standard deviation of every pair's match-probability distribution.

        Parameters
        ----------
        X : pairs in the matcher's input format
        proba : array-like of shape (n_pairs,), default=None
            The match probabilities of ``X`` when they are known already (``estimator_``'s
            ``predict_proba(X)[:, 1]``, e.g. from a query that scored the pool): the matcher is
            then not called again. None: ``predict_proba(X)[:, 1]``.

        Returns
        -------
        RiskDistribution
            ``(risk, mean, std)``, float64 arrays of shape (n_pairs,). Without a risk model
            (nothing was ranked): ``(matcher_uncertainty(p), p, 0)``.
        """
        check_is_fitted(self)
        X = _as_input(X)
        n = num_rows(X)
        p = self.predict_proba(X)[:, 1] if proba is None else np.asarray(proba, dtype=np.float64).ravel()
        if p.shape != (n,):
            raise ValueError(f"proba has {p.size} probabilities for {n} pairs of X: give one per pair.")
        if self.risk_model_ is None:
            return RiskDistribution(matcher_uncertainty(p), p.copy(), np.zeros_like(p))
        R = self._risk_input(self._features(X, n, "X"), p)
        return self.risk_model_.predict_distribution(R)

    def predict_risk(self, X: Any, *, proba: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
        """Value-at-Risk of every pair's matcher label (higher = more likely mislabelled).

        Parameters
        ----------
        X : pairs in the matcher's input format
        proba : array-like of shape (n_pairs,), default=None
            Known match probabilities of ``X`` (see :meth:`predict_distribution`).

        Returns
        -------
        ndarray of shape (n_pairs,), values in [0, 1]
        """
        return self.predict_distribution(X, proba=proba).risk

    def explain(self, X: Any, index: int = 0, *, pairs: Any = None,
                proba: npt.ArrayLike | None = None) -> RiskExplanation:
        """Why pair ``index`` of ``X`` gets its risk: readable reasons, fired rules, distribution.

        Parameters
        ----------
        X : pairs in the matcher's input format
        index : int, default=0
            Which pair to explain.
        pairs : DataFrame, PairDataset or mapping, optional
            The pairs' raw records, so that reasons quote and count them ("titles share 9 of 10
            words", "prices differ by 18%: 19.99 vs 24.50"): a pair frame with ``left_<a>`` and
            ``right_<a>`` columns (:meth:`~skrisk.data.PairDataset.to_frame`) with one row per
            pair of ``X`` (or a single row: the explained pair's), a
            :class:`~skrisk.data.PairDataset` (its pairs in the order of ``X``), or a mapping
            ``{attribute: (left value, right value)}`` of the explained pair.
        proba : array-like of shape (n_pairs,), default=None
            The match probabilities of ``X`` when they are known already (see
            :meth:`predict_distribution`): the matcher is then not called, so that explaining
            every pair of ``X`` in turn costs one ``predict_proba`` in all. None:
            ``predict_proba`` of the explained pair.

        Returns
        -------
        RiskExplanation
            ``.reasons``: deduplicated, ranked :class:`~skrisk.risk.Reason` objects (see
            :class:`~skrisk.risk.RiskExplanation` for the ranking); ``.short_text(k=3)``: the summary and
            the ``k`` strongest reasons; ``str()``: the full text; ``.to_dict()``: all of it.
            Features are named by ``feature_names``, else by the matcher pipeline's
            ``get_feature_names_out()`` when it has one, else ``x<j>``.
        """
        check_is_fitted(self)
        X = _as_input(X)
        n = num_rows(X)
        if not isinstance(index, numbers.Integral) or not -n <= index < n:
            raise IndexError(f"index {index!r} is out of range for {n} pairs.")
        if self.risk_model_ is None:
            raise ValueError(
                "LearnRisk has no risk model to explain with: the matcher made no mistake (or only "
                "mistakes) on the ranking pairs when it was fitted. Fit it with more validation pairs."
            )
        i = int(index) % n
        row = take_rows(X, [i])
        F = self._features(row, 1, "X")
        if proba is None:
            p = self.predict_proba(row)[:, 1]
        else:
            p = np.asarray(proba, dtype=np.float64).ravel()
            if len(p) != n:
                raise ValueError(f"proba has {len(p)} values for {n} pairs: give one per pair of X.")
            p = p[[i]]
        R = self._risk_input(F, p)
        return self.risk_model_.explain(
            R, 0, values=_pair_values(pairs, i, n), feature_names=self._explain_names(F.shape[1])
        )

    def _explain_names(self, n_features: int) -> list[str] | None:
        """Feature names for reasons: ``feature_names``, else the matcher pipeline's encoder's."""
        if self.feature_names is not None:
            return [str(v) for v in self.feature_names]
        est = getattr(self, "estimator_", None)
        if isinstance(est, Pipeline) and len(est.steps) > 1:
            try:
                names = [str(v) for v in est[:-1].get_feature_names_out()]
            except (AttributeError, ValueError, TypeError):
                return None
            return names if len(names) == n_features else None
        return None

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        inner = get_tags(self.estimator if self.estimator is not None else _default_matcher())
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = False
        return tags


def _pair_values(pairs: Any, i: int, n: int) -> dict[str, tuple[Any, Any]] | None:
    """``{attribute: (left value, right value)}`` of pair ``i`` (of ``n``) from ``explain``'s ``pairs``."""
    if pairs is None:
        return None
    if isinstance(pairs, Mapping):
        out = {}
        for k, v in pairs.items():
            if not isinstance(v, (tuple, list)) or len(v) != 2:
                raise ValueError(
                    f"pairs maps attribute {k!r} to {v!r}: give (left value, right value) for each attribute."
                )
            out[str(k)] = (v[0], v[1])
        return out
    if hasattr(pairs, "to_frame") and hasattr(pairs, "left") and hasattr(pairs, "right"):
        pairs = pairs.to_frame()
    if not isinstance(pairs, pd.DataFrame):
        raise TypeError(
            f"pairs must be a pair frame (PairDataset.to_frame()), a PairDataset or a mapping "
            f"{{attribute: (left, right)}}, got {type(pairs).__name__}."
        )
    if len(pairs) not in (1, n):
        raise ValueError(
            f"pairs has {len(pairs)} rows for {n} pairs of X: give one row per pair of X, or the "
            "explained pair's row alone."
        )
    row = pairs.iloc[0 if len(pairs) == 1 else i]
    attrs = [str(c)[len("left_"):] for c in pairs.columns if str(c).startswith("left_")]
    missing = [a for a in attrs if f"right_{a}" not in pairs.columns]
    if not attrs or missing:
        raise ValueError(
            "pairs needs a 'left_<a>' and a 'right_<a>' column for every attribute <a> (as "
            f"PairDataset.to_frame() builds it); its columns are {list(map(str, pairs.columns))[:8]}."
        )
    return {a: (row[f"left_{a}"], row[f"right_{a}"]) for a in attrs}


def _require_fitted(est: Any, who: str, fix: str) -> None:
    """A :class:`~skrisk.exceptions.NotFittedError` naming ``who`` needs a fitted matcher, and the fix."""
    try:
        check_is_fitted(est)
    except Exception as exc:  # sklearn's NotFittedError, or skorch's subclass of it
        raise NotFittedError(
            f"{who} needs a fitted matcher, but {type(est).__name__} is not fitted: {fix}."
        ) from exc


def _default_matcher() -> Any:
    from ..matchers._feature import FeatureMatcher

    return FeatureMatcher()


def risk_roc_auc(estimator: LearnRisk, X: Any, y: npt.ArrayLike) -> float:
    """Scorer: ROC AUC of the risk for separating the matcher's mistakes on ``(X, y)`` from its
    correct labels (use as ``scoring=risk_roc_auc`` in ``GridSearchCV`` / ``cross_validate``).

    Parameters
    ----------
    estimator : LearnRisk
        Fitted.
    X : pairs in the matcher's input format
    y : array-like of shape (n_pairs,)
        Their true labels.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        The matcher makes no mistake (or only mistakes) on ``X``: there is no ranking to score
        (use larger folds, or stratify them on :func:`~skrisk.risk.research.mispredicted`).

    Notes
    -----
    scikit-learn's searches catch a scorer's error and record NaN with a warning
    (``error_score=np.nan``), so a ``GridSearchCV`` whose folds all fail still picks
    ``best_params_`` from NaN scores. Pass ``error_score="raise"`` to stop at the first fold
    that cannot be scored, with this reason.
    """
    check_is_fitted(estimator)
    y = column_or_1d(y)
    P = estimator.predict_proba(X)
    z = mispredicted(P[:, 1], (y == estimator.classes_[1]).astype(np.int64))
    if z.all() or not z.any():
        raise ValueError(
            f"risk_roc_auc needs mispredicted and correctly predicted pairs, but all {z.size} are "
            f"{'mispredicted' if z.all() else 'correct'}: use larger folds or more pairs."
        )
    risk = estimator.predict_distribution(X, proba=P[:, 1]).risk
    return float(roc_auc_score(z, risk))

