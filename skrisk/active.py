"""A pool-based active learner with modAL's interface that works on current scikit-learn.

modAL 0.4.x's ``ActiveLearner.teach``/``fit`` fail on scikit-learn >= 1.8 (``force_all_finite``),
its ``query`` runs a strategy twice when unpacking fails (inside a bare ``except``), its row helpers
index DataFrames by label and stack them with the removed ``DataFrame.append``, and its learners
cannot be cloned or printed. :class:`ActiveLearner` keeps modAL's interface (``estimator``,
``query_strategy``, ``X_training``, ``y_training``, ``bootstrap_init``, ``on_transformed``,
``force_all_finite``, ``query``, ``teach``, ``fit``, ``transform_without_estimating``,
``predict``, ``predict_proba``, ``score``) and its return conventions, so modAL's strategies (the
classic ones and the batch ones that read ``on_transformed``) and skrisk's work with it, and fixes
those points. It is a scikit-learn meta-estimator: ``clone`` gives an unfitted copy and
``__sklearn_tags__`` describes the wrapped estimator. modAL itself is not needed.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.ensemble import StackingClassifier, StackingRegressor, VotingClassifier, VotingRegressor
from sklearn.exceptions import NotFittedError as _SkNotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._params import HasMethods, Options, validate_params
from ._query import _check_positions, _split_result
from ._rows import first_non_finite, num_rows, pool_kind, stack_rows, take_rows
from .exceptions import DataError, NotFittedError

__all__ = ["ActiveLearner"]

_ENSEMBLES = (VotingClassifier, VotingRegressor, StackingClassifier, StackingRegressor)


# --------------------------------------------------------------------------- labelled data checks
def _as_pool(X: Any) -> Any:
    """``X`` in a form the row helpers index by position: array-likes (``__array__``) become arrays,
    sparse matrices without row indexing (dok, which is also a dict, coo, dia, bsr) become CSR."""
    if sp.issparse(X):
        return X if X.format in ("csr", "csc", "lil") else X.tocsr()
    if not isinstance(X, (Mapping, list, tuple)) and not hasattr(X, "shape") and hasattr(X, "__array__"):
        return np.asarray(X)
    return X


def _check_like(old: Any, new: Any, what: str) -> Any:
    """``new`` in the form of the labelled pairs ``old`` (same container, same width), or an error."""
    k_old, k_new = pool_kind(old), pool_kind(new)
    fix = "give the new pairs in the form of the labelled ones (the rows of the same pool)"
    if k_old == "mapping":
        if k_new != "mapping" or set(new) != set(old):
            got = sorted(new) if k_new == "mapping" else type(new).__name__
            raise DataError(f"{what}: the labelled pairs are a mapping with keys {sorted(old)}, the new "
                            f"pairs {got}: {fix}.")
        parts = {k: _check_like(old[k], new[k], f"{what} (key {k!r})") for k in old}
        try:
            return type(new)(**parts)
        except TypeError:
            return parts
    if k_old == "frame":
        if not isinstance(new, type(old)) or (
            isinstance(old, pd.DataFrame) and list(new.columns) != list(old.columns)
        ):
            got = list(new.columns) if isinstance(new, pd.DataFrame) else type(new).__name__
            want = list(old.columns) if isinstance(old, pd.DataFrame) else type(old).__name__
            raise DataError(f"{what}: the labelled pairs have columns {want}, the new pairs {got}: {fix}.")
        return new
    if k_old == "sparse":
        if k_new != "sparse":
            new = np.asarray(new)
            if new.ndim != 2:
                raise DataError(f"{what}: the labelled pairs are a sparse matrix and the new pairs have "
                                f"shape {new.shape}: {fix}.")
            new = sp.csr_matrix(new)
        if new.shape[1] != old.shape[1]:
            raise DataError(f"{what}: the new pairs have {new.shape[1]} columns, the labelled pairs "
                            f"{old.shape[1]}: {fix}.")
        return new
    if k_old == "list":
        if k_new in ("mapping", "frame", "sparse"):
            raise DataError(f"{what}: the labelled pairs are a list, the new pairs a {type(new).__name__}: "
                            f"{fix}.")
        return list(new)
    if k_new in ("mapping", "frame", "sparse"):
        raise DataError(f"{what}: the labelled pairs are an array, the new pairs a {type(new).__name__}: "
                        f"{fix}.")
    old_shape, new_shape = np.shape(old)[1:], np.shape(new)[1:]
    if old_shape != new_shape:
        raise DataError(f"{what}: the new pairs have rows of shape {new_shape}, the labelled pairs rows of "
                        f"shape {old_shape}: {fix}.")
    return new


def _one_row(X_pool: Any, position: int) -> Any:
    """The pool's row at one position, as the pool's own indexing gives it."""
    rows = take_rows(X_pool, [position])
    if isinstance(rows, (pd.DataFrame, pd.Series)):
        return rows.iloc[0]
    if isinstance(rows, (list, np.ndarray)):
        return rows[0]
    return rows  # sparse matrices and mappings have no single-row form: a one-row pool


def _estimator_has(attr: str) -> Callable[[Any], bool]:
    def check(self: "ActiveLearner") -> bool:
        return hasattr(self.estimator, attr)

    return check


def _accepts_nan(estimator: Any) -> bool:
    """Whether ``estimator`` declares that it takes NaN (scikit-learn's ``allow_nan`` input tag)."""
    try:
        return bool(estimator.__sklearn_tags__().input_tags.allow_nan)
    except Exception:  # noqa: BLE001 - an estimator without (working) tags: it does not declare it
        return False


def _add_note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(note)


# --------------------------------------------------------------------------- the learner
class ActiveLearner(BaseEstimator):
    """Pool-based active learner with modAL's interface, a scikit-learn meta-estimator.

    Parameters
    ----------
    estimator : estimator object
        The matcher (any classifier with ``fit``/``predict``; ``predict_proba`` for most
        strategies). It is refitted on all labelled pairs after each :meth:`teach`.
    query_strategy : callable, default=None
        ``strategy(learner, X_pool, n_instances=..., **kw)`` returning ``(positions, scores)``
        (skrisk's contract, modAL 0.4.2.1) or positions alone (modAL 0.4.1). None means
        :func:`skrisk.strategies.risk_sampling`.
    X_training, y_training : array-like, optional
        The initial labelled pairs; when given, the estimator is fitted on them at once
        (modAL's behaviour). They are data, not parameters: :func:`~sklearn.base.clone` and
        :meth:`get_params` leave them out, so a clone is an unfitted learner.
    bootstrap_init : bool, default=False
        Fit the initial estimator on a bootstrap sample of ``(X_training, y_training)``.
    on_transformed : bool, default=False
        Read by modAL's batch strategies (``modAL.batch.uncertainty_batch_sampling``): compare
        pairs as :meth:`transform_without_estimating` gives them rather than raw.
    force_all_finite : bool or "auto", default="auto"
        True: refuse labelled pairs holding NaN or infinite numbers (a
        :class:`~skrisk.exceptions.DataError` naming the row and column, raised before anything is
        stored, so that later ``teach`` calls still work). "auto": the same, unless the estimator
        declares that it takes NaN (scikit-learn's ``allow_nan`` input tag, e.g. a
        ``RandomForestClassifier``). False: no check, the estimator validates its own input
        (modAL's ``force_all_finite=False``). skrisk's similarity features never hold NaN: a
        missing value is the sentinel -1 (:class:`~skrisk.data.SimilarityFeatures`).
    random_state : int, RandomState instance or None, default=None
        Seeds the bootstrap samples (``bootstrap_init``, ``bootstrap=True``).
    **fit_kwargs
        Passed to ``estimator.fit`` on every (re)fit, e.g. a fixed validation set for early
        stopping.

    Attributes
    ----------
    X_training, y_training : array-like or None
        Every labelled pair so far (in the container of the first ones) and its label.
    last_scores_ : ndarray or None
        The scores of the last query (set by :meth:`query`).
    classes_ : ndarray
        The estimator's classes (when it has them).

    See Also
    --------
    skrisk.strategies : the query strategies (``(positions, scores)`` contract).

    Notes
    -----
    Differences from modAL 0.4.2.1 that skrisk's contract needs (all modAL's own
    ``TestActiveLearner`` tests pass with this class substituted for modAL's):

    - the strategy runs exactly once per :meth:`query` (no bare ``except`` rerun); positions
      must be integers inside the pool, and a position named twice gives a ``UserWarning``;
    - rows are taken by position (``iloc`` for DataFrames) and stacked with ``pd.concat`` /
      per key for mappings and skorch ``SliceDict`` objects;
    - constructor ``fit_kwargs`` are used on every refit, not only the first;
    - ``teach(..., only_new=True)`` still records the new pairs in ``X_training`` (no answer is
      lost); if the refit fails, the new labels are kept and the error says so;
    - new pairs of another container or width than the labelled ones are a ``DataError``;
    - :meth:`query` refuses an unfitted estimator before the strategy runs (modAL's uncertainty
      strategies would score every pair alike); for a cold start call a strategy that needs no
      model directly (``random_sampling(learner, X_pool, n_instances=...)``);
    - ``query_strategy=None`` means :func:`skrisk.strategies.risk_sampling` (modAL: uncertainty sampling);
      ``force_all_finite`` defaults to "auto" (modAL: True); bootstrap samples are seeded.

    scikit-learn's estimator checks pass except four that modAL's interface fails by design: the
    learner fits ``estimator`` in place (strategies read it as the current model), the public
    ``X_training``/``y_training`` grow with ``fit``/``teach``, the constructor fits given data,
    and ``**fit_kwargs`` are kept in ``fit_kwargs``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import clone
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skrisk.active import ActiveLearner
    >>> from skrisk.strategies import entropy_sampling
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
    >>> learner = ActiveLearner(LogisticRegression(), entropy_sampling, X_training=X[:10], y_training=y[:10])
    >>> pos, rows = learner.query(X[10:], n_instances=5)
    >>> learner.teach(rows, y[10:][pos])
    >>> learner.y_training.shape
    (15,)
    >>> clone(learner).X_training is None  # a clone is unfitted and holds no labels
    True
    """

    def __init__(
        self,
        estimator: Any,
        query_strategy: Callable[..., Any] | None = None,
        X_training: Any = None,
        y_training: Any = None,
        bootstrap_init: bool = False,
        on_transformed: bool = False,
        *,
        force_all_finite: bool | str = "auto",
        random_state: Any = None,
        **fit_kwargs: Any,
    ) -> None:
        self.estimator = estimator
        self.query_strategy = query_strategy
        self.bootstrap_init = bootstrap_init
        self.on_transformed = on_transformed
        self.force_all_finite = force_all_finite
        self.random_state = random_state
        self.fit_kwargs = dict(fit_kwargs)
        self.X_training: Any = None
        self.y_training: np.ndarray | None = None
        if X_training is not None or y_training is not None:
            self.fit(X_training, y_training, bootstrap=bootstrap_init)

    # ----------------------------------------------------------- scikit-learn plumbing
    #: The parameters; ``X_training``/``y_training`` are data and ``fit_kwargs`` the estimator's.
    _parameter_constraints: dict = {
        "estimator": [HasMethods(("fit",))],
        "query_strategy": [None, "callable"],
        "bootstrap_init": ["boolean"],
        "on_transformed": ["boolean"],
        "force_all_finite": ["boolean", Options(str, {"auto"})],
        "random_state": ["random_state"],
    }
    _PARAMS = tuple(_parameter_constraints)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of the learner: the constructor's, without the labelled data.

        Parameters
        ----------
        deep : bool, default=True
            Also return the estimator's (and an estimator-like strategy's) parameters as
            ``estimator__<name>``.

        Returns
        -------
        dict
            ``estimator``, ``query_strategy``, ``bootstrap_init``, ``on_transformed``,
            ``force_all_finite``, ``random_state`` and the fit keyword arguments.
        """
        params = {name: getattr(self, name) for name in self._PARAMS}
        params.update(self.fit_kwargs)
        if deep:
            for name in ("estimator", "query_strategy"):
                value = params[name]
                if hasattr(value, "get_params") and not isinstance(value, type):
                    params.update((f"{name}__{k}", v) for k, v in value.get_params(deep=True).items())
        return params

    def set_params(self, **params: Any) -> "ActiveLearner":
        """Set parameters (``estimator__C=...``, a fit keyword argument, ...); returns self."""
        for key in [k for k in params if k in self.fit_kwargs]:
            self.fit_kwargs[key] = params.pop(key)
        return super().set_params(**params)

    def __sklearn_clone__(self) -> "ActiveLearner":
        """An unfitted learner: a clone of the estimator, the same strategy and fit kwargs, no labels.

        A strategy function is shared; a strategy object with parameters (``RiskSampler``) is
        cloned too, so that ``set_params(query_strategy__...)`` on a clone and the diagnostics of
        its queries stay its own.
        """
        params = self.get_params(deep=False)
        params["estimator"] = clone(params["estimator"], safe=False)
        params["random_state"] = clone(params["random_state"], safe=False)
        strategy = params["query_strategy"]
        if hasattr(strategy, "get_params") and not isinstance(strategy, type):
            params["query_strategy"] = clone(strategy)
        return type(self)(**params)

    def _fitted(self) -> bool | None:
        """Whether the estimator is fitted (None: no way to tell, e.g. no scikit-learn estimator)."""
        try:
            check_is_fitted(self.estimator)
        except _SkNotFittedError:
            return False
        except TypeError:  # None, or an object scikit-learn cannot check
            return None
        return True

    def __sklearn_is_fitted__(self) -> bool:
        fitted = self._fitted()
        return (self.X_training is not None) if fitted is None else fitted

    def __sklearn_tags__(self):  # noqa: D105 - scikit-learn's protocol
        tags = super().__sklearn_tags__()
        try:
            inner = get_tags(self.estimator)
        except (AttributeError, TypeError):  # not a scikit-learn estimator (or None): defaults
            inner = None
        if inner is not None:
            tags.estimator_type = inner.estimator_type
            tags.target_tags = copy.deepcopy(inner.target_tags)
            tags.classifier_tags = copy.deepcopy(inner.classifier_tags)
            tags.regressor_tags = copy.deepcopy(inner.regressor_tags)
            tags.input_tags = copy.deepcopy(inner.input_tags)
            tags.non_deterministic = inner.non_deterministic
        tags.input_tags.allow_nan = tags.input_tags.allow_nan and self.force_all_finite is not True
        tags.non_deterministic = tags.non_deterministic or (self.bootstrap_init and self.random_state is None)
        tags.requires_fit = True
        return tags

    @property
    def classes_(self) -> np.ndarray:
        """The estimator's ``classes_``."""
        return self.estimator.classes_

    @property
    def n_features_in_(self) -> int:
        """The estimator's ``n_features_in_``."""
        return self.estimator.n_features_in_

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        n = 0 if self.X_training is None else num_rows(self.X_training)
        strat = self.query_strategy
        name = "None" if strat is None else getattr(strat, "__name__", type(strat).__name__)
        extra = "".join(
            f", {k}={getattr(self, k)!r}" for k, default in
            (("bootstrap_init", False), ("on_transformed", False), ("force_all_finite", "auto"),
             ("random_state", None)) if getattr(self, k) is not default
        )
        return f"ActiveLearner(estimator={self.estimator!r}, query_strategy={name}{extra}, n_labelled={n})"

    # ----------------------------------------------------------- training
    def _checked(self, X: Any, y: Any, what: str) -> np.ndarray:
        """``y`` as an array after checking ``(X, y)``: one label per row, finite where asked."""
        if y is None:
            raise ValueError(f"{what} requires y to be passed, but the target y is None: give the labels of "
                             "the pairs.")
        if X is None:
            raise ValueError(f"{what}: the pairs X are None: give the labelled pairs with their labels y.")
        y_arr = np.asarray(y)
        n = num_rows(X)
        if y_arr.ndim == 0 or len(y_arr) != n:
            got = "a single value" if y_arr.ndim == 0 else f"{len(y_arr)} labels"
            raise DataError(f"{what}: X has {n} rows but y has {got}: give one label per pair (row of X).")
        missing = np.asarray(pd.isna(y_arr))
        if y_arr.dtype.kind in "fc":
            missing = missing | np.isinf(y_arr)
        if missing.any():
            at = int(np.argwhere(missing)[0][0])
            raise DataError(f"{what}: the label at position {at} is {y_arr.reshape(n, -1)[at].tolist()}: "
                            "every label must be a class (no missing value, NaN or infinity).")
        validate_params(self)
        if self.force_all_finite is True or (self.force_all_finite == "auto" and not _accepts_nan(self.estimator)):
            found = first_non_finite(X)
            if found is not None:
                count, row, where = found
                fix = ("pass ActiveLearner(..., force_all_finite=False) when the estimator handles missing "
                       "values" if self.force_all_finite else
                       f"use an estimator that takes NaN (its scikit-learn tags say allow_nan; "
                       f"{type(self.estimator).__name__}'s do not)")
                raise DataError(
                    f"{what}: X holds NaN or infinity in {count} row(s), first at row {row}"
                    f"{', ' + where if where else ''}; nothing was stored. Replace it (impute, e.g. "
                    f"with the -1 sentinel of skrisk.data.SimilarityFeatures), or {fix}."
                )
        return y_arr

    def _bootstrap(self, X: Any, y: np.ndarray) -> tuple[Any, np.ndarray]:
        if not hasattr(self, "_rng"):
            self._rng = check_random_state(self.random_state)
        n = num_rows(X)
        idx = self._rng.randint(0, n, size=n) if n else np.zeros(0, dtype=np.intp)
        return take_rows(X, idx), y[idx]

    def _fit_on_new(self, X: Any, y: Any, bootstrap: bool = False, **fit_kwargs: Any) -> "ActiveLearner":
        """Fit the estimator on ``(X, y)`` only (a bootstrap sample of them with ``bootstrap``)."""
        y = np.asarray(y)
        if bootstrap:
            X, y = self._bootstrap(X, y)
        self.estimator.fit(X, y, **{**self.fit_kwargs, **fit_kwargs})
        return self

    def _fit_to_known(self, bootstrap: bool = False, **fit_kwargs: Any) -> "ActiveLearner":
        """Fit the estimator on every labelled pair (modAL's name, used by modAL's Committee)."""
        return self._fit_on_new(self.X_training, self.y_training, bootstrap=bootstrap, **fit_kwargs)

    def _add_training_data(self, X: Any, y: Any) -> None:
        """Check ``(X, y)`` and add them to the labelled pairs without refitting (modAL's contract).

        Raises
        ------
        DataError
            Not one label per row, a NaN/infinite value (see ``force_all_finite``), or pairs in
            another container or of another width than the labelled ones; nothing is stored then.
        """
        X = _as_pool(X)
        y_arr = self._checked(X, y, "ActiveLearner.teach")
        if self.X_training is None:
            self.X_training, self.y_training = X, y_arr
            return
        X = _check_like(self.X_training, X, "ActiveLearner.teach")
        if np.shape(self.y_training)[1:] != y_arr.shape[1:]:
            raise DataError(
                f"ActiveLearner.teach: the new labels have shape {y_arr.shape[1:]} per pair, the labels so "
                f"far {np.shape(self.y_training)[1:]}: give labels of the same form."
            )
        self.X_training = stack_rows([self.X_training, X])
        self.y_training = np.concatenate([self.y_training, y_arr])

    def fit(self, X: Any, y: Any, bootstrap: bool = False, **fit_kwargs: Any) -> "ActiveLearner":
        """Forget the labelled pairs, store ``(X, y)`` as the new ones and fit the estimator on them.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or mapping of arrays
            The labelled pairs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Their labels.
        bootstrap : bool, default=False
            Fit on a bootstrap sample of ``(X, y)`` (seeded by ``random_state``).
        **fit_kwargs
            Passed to ``estimator.fit`` (over the constructor's).

        Returns
        -------
        self : ActiveLearner
        """
        X = _as_pool(X)
        y_arr = self._checked(X, y, "ActiveLearner.fit")
        self.X_training, self.y_training = X, y_arr
        return self._fit_to_known(bootstrap=bootstrap, **fit_kwargs)

    def teach(
        self, X: Any, y: Any, bootstrap: bool = False, only_new: bool = False, **fit_kwargs: Any
    ) -> None:
        """Add labelled pairs and refit the estimator.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or mapping of arrays
            The new pairs, in the form of the labelled ones (e.g. the rows :meth:`query` returned).
        y : array-like
            Their labels.
        bootstrap : bool, default=False
            Refit on a bootstrap sample (seeded by ``random_state``).
        only_new : bool, default=False
            Refit on the new pairs only (estimators whose ``fit`` continues training); the new
            pairs are recorded in ``X_training`` all the same.
        **fit_kwargs
            Passed to ``estimator.fit`` (over the constructor's).

        Raises
        ------
        DataError
            Bad pairs or labels (see ``_add_training_data``), before anything is stored.
        """
        X = _as_pool(X)
        self._add_training_data(X, y)
        try:
            if only_new:
                self._fit_on_new(X, y, bootstrap=bootstrap, **fit_kwargs)
            else:
                self._fit_to_known(bootstrap=bootstrap, **fit_kwargs)
        except Exception as exc:
            _add_note(
                exc,
                f"ActiveLearner.teach: the {num_rows(X)} new labels are kept in learner.X_training / "
                f"learner.y_training ({len(self.y_training)} labelled pairs), but the estimator was not "
                "refitted on them: fix the cause, then teach more pairs or call "
                "learner.fit(learner.X_training, learner.y_training).",
            )
            raise

    # ----------------------------------------------------------- querying
    def transform_without_estimating(self, X: Any) -> Any:
        """``X`` as the estimator's final step sees it (modAL's batch strategies read this).

        A :class:`~sklearn.pipeline.Pipeline` applies every step but the last; a voting or
        stacking ensemble concatenates that of each of its fitted estimators; any other estimator
        gets ``X`` unchanged.
        """
        est = self.estimator
        pipes = list(est.estimators_) if isinstance(est, _ENSEMBLES) else [est]
        parts = [(p[:-1].transform(X) if len(p.steps) > 1 else X) for p in pipes if isinstance(p, Pipeline)]
        if not parts:
            return X
        if len(parts) == 1:
            return parts[0]
        if any(sp.issparse(p) for p in parts):
            return sp.hstack(parts, format="csr")
        return np.hstack([np.asarray(p) for p in parts])

    def query(self, X_pool: Any, *query_args: Any, return_metrics: bool = False, **query_kwargs: Any):
        """Run the query strategy once and return the positions it chose and their rows.

        Parameters
        ----------
        X_pool : array-like, sparse matrix, DataFrame or mapping of arrays
            The unlabelled pairs.
        *query_args, **query_kwargs
            Passed to the strategy (``n_instances=10``, ``random_state=0``, ...).
        return_metrics : bool, default=False
            Also return the strategy's scores.

        Returns
        -------
        positions : ndarray of int
            As the strategy returned them (checked: integers inside the pool).
        rows : same type as X_pool
            ``X_pool``'s rows at ``positions``, by position; a single (0-d) position gives the row
            as the pool's own indexing does (``X_pool[i]``, ``iloc[i]``).
        scores : ndarray or None
            Only with ``return_metrics``; None (with a warning) when the strategy returned
            positions alone.
        """
        if self._fitted() is False:
            raise NotFittedError(
                f"The learner's estimator {type(self.estimator).__name__} is not fitted: give "
                "X_training/y_training or teach labelled pairs before query() (for a cold start, call a "
                "strategy that needs no model directly: "
                "skrisk.strategies.random_sampling(learner, X_pool, ...))."
            )
        strategy = self.query_strategy
        if strategy is None:
            from .strategies import risk_sampling as strategy
        elif isinstance(strategy, type):
            name = strategy.__name__
            raise TypeError(
                f"query_strategy is the class {name}, not a strategy: pass an instance, "
                f"ActiveLearner(..., query_strategy={name}()) (with its parameters inside the brackets)."
            )
        elif not callable(strategy):
            raise TypeError(
                f"query_strategy must be callable, got {type(strategy).__name__}: pass a "
                "strategy such as skrisk.strategies.risk_sampling."
            )
        X_pool = _as_pool(X_pool)
        n_pool = num_rows(X_pool)
        result = strategy(self, X_pool, *query_args, **query_kwargs)
        pos, scores = _check_positions(*_split_result(result), n_pool, duplicates="warn")
        n_instances = query_kwargs.get("n_instances")
        if n_instances is not None and pos.size != n_instances:
            warnings.warn(
                f"The strategy returned {pos.size} positions for n_instances={n_instances}.",
                stacklevel=2,
            )
        self.last_scores_ = scores
        if pos.ndim == 0:
            pos = pos[()]
            rows = _one_row(X_pool, pos)
        else:
            rows = take_rows(X_pool, pos)
        if return_metrics:
            if scores is None:
                warnings.warn("The query strategy returned positions without scores: the metrics are None.",
                              UserWarning, stacklevel=2)
            return pos, rows, scores
        return pos, rows

    # ----------------------------------------------------------- prediction
    @available_if(_estimator_has("predict"))
    def predict(self, X: Any, **predict_kwargs: Any) -> Any:
        """The estimator's ``predict``."""
        return self.estimator.predict(X, **predict_kwargs)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X: Any, **predict_proba_kwargs: Any) -> Any:
        """The estimator's ``predict_proba``."""
        return self.estimator.predict_proba(X, **predict_proba_kwargs)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X: Any) -> Any:
        """The estimator's ``decision_function``."""
        return self.estimator.decision_function(X)

    @available_if(_estimator_has("score"))
    def score(self, X: Any, y: Any, **score_kwargs: Any) -> float:
        """The estimator's ``score``."""
        return self.estimator.score(X, y, **score_kwargs)
