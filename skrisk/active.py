"""A pool-based active learner with modAL's shape that works on current scikit-learn.

modAL 0.4.x's ``ActiveLearner.teach``/``fit`` fail on scikit-learn >= 1.8 (``force_all_finite``),
its ``query`` runs a strategy twice when unpacking fails (inside a bare ``except``), its row helpers
index DataFrames by label and stack them with the removed ``DataFrame.append``, and its learners
cannot be cloned. :class:`ActiveLearner` keeps modAL's interface (``estimator``, ``query_strategy``,
``X_training``, ``y_training``, ``query``, ``teach``, ``predict``, ``predict_proba``, ``score``) so
every modAL-style strategy works with it, and fixes those points. modAL itself is not needed.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ._rows import num_rows, stack_rows, take_rows
from .exceptions import NotFittedError

__all__ = ["ActiveLearner", "unpack_query"]


def unpack_query(result: Any, n_pool: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Split a strategy's return value into ``(positions, scores)``.

    Accepts both conventions: a ``(positions, scores)`` pair (modAL 0.4.2.1, skrisk) or positions
    alone (modAL 0.4.1). A 2-tuple whose parts have different lengths is an error rather than a
    silent misreading.
    """
    if isinstance(result, tuple) and len(result) == 2:
        pos, scores = result
        pos = np.asarray(pos)
        if scores is not None and np.ndim(scores) > 0 and len(np.atleast_1d(scores)) != len(np.atleast_1d(pos)):
            raise ValueError(
                "The strategy returned a pair whose positions and scores differ in length: return "
                "(positions, scores) with one score per position."
            )
        scores = None if scores is None else np.asarray(scores)
    else:
        pos, scores = np.asarray(result), None
    pos = np.atleast_1d(pos)
    if pos.dtype.kind not in "iu":
        raise TypeError(f"The strategy returned positions of dtype {pos.dtype}: they must be integers.")
    pos = pos.astype(np.intp)
    if len(np.unique(pos)) != len(pos):
        raise ValueError("The strategy returned a position more than once.")
    if n_pool is not None and len(pos) and (pos.min() < 0 or pos.max() >= n_pool):
        raise ValueError(f"The strategy returned positions outside the pool of {n_pool} pairs.")
    return pos, scores


class ActiveLearner:
    """Pool-based active learner in modAL's shape.

    Parameters
    ----------
    estimator : sklearn classifier
        The matcher. It is refitted on all labelled pairs after each :meth:`teach`.
    query_strategy : callable
        ``strategy(learner, X_pool, n_instances=..., **kw) -> (positions, scores)`` (positions
        alone are accepted too).
    X_training, y_training : array-like, optional
        The initial labelled pairs; when given, the estimator is fitted on them at once.
    **fit_kwargs
        Passed to ``estimator.fit`` on every (re)fit, e.g. a fixed validation set for early
        stopping.

    Attributes
    ----------
    last_scores_ : ndarray or None
        The scores of the last query.

    Examples
    --------
    >>> import numpy as np
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
    """

    def __init__(
        self,
        estimator: Any,
        query_strategy: Callable[..., Any],
        X_training: Any = None,
        y_training: Any = None,
        **fit_kwargs: Any,
    ) -> None:
        if not callable(query_strategy):
            raise TypeError(
                f"query_strategy must be callable, got {type(query_strategy).__name__}: pass a "
                "strategy such as skrisk.risk_sampling."
            )
        self.estimator = estimator
        self.query_strategy = query_strategy
        self.X_training = None
        self.y_training = None
        self.fit_kwargs = fit_kwargs
        self.last_scores_: np.ndarray | None = None
        self._init_params = {"X_training": X_training, "y_training": y_training}
        if X_training is not None:
            self.fit(X_training, y_training)

    # ----------------------------------------------------------- sklearn-ish plumbing
    def get_params(self, deep: bool = False) -> dict[str, Any]:
        """Constructor parameters (for ``repr`` and ``clone``)."""
        return {
            "estimator": self.estimator,
            "query_strategy": self.query_strategy,
            **self._init_params,
            **self.fit_kwargs,
        }

    def __repr__(self) -> str:
        n = 0 if self.X_training is None else num_rows(self.X_training)
        strat = getattr(self.query_strategy, "__name__", type(self.query_strategy).__name__)
        return f"ActiveLearner(estimator={self.estimator!r}, query_strategy={strat}, n_labelled={n})"

    def __sklearn_clone__(self) -> "ActiveLearner":
        params = self.get_params()
        params["estimator"] = clone(self.estimator)
        return type(self)(**params)

    # ----------------------------------------------------------- training
    @staticmethod
    def _check_xy(X: Any, y: Any) -> np.ndarray:
        if y is None:
            raise ValueError("y is None: teach/fit need the labels of the pairs given.")
        y_arr = np.asarray(y).ravel()
        n = num_rows(X)
        if len(y_arr) != n:
            raise ValueError(f"X has {n} rows but y has {len(y_arr)} labels: give one label per pair.")
        return y_arr

    def fit(self, X: Any, y: Any, **fit_kwargs: Any) -> "ActiveLearner":
        """Forget the labelled set, store ``(X, y)`` as the new one and fit the estimator on it."""
        y_arr = self._check_xy(X, y)
        self.X_training, self.y_training = X, y_arr
        return self._fit_to_known(**fit_kwargs)

    def _fit_to_known(self, **fit_kwargs: Any) -> "ActiveLearner":
        self.estimator.fit(self.X_training, self.y_training, **{**self.fit_kwargs, **fit_kwargs})
        return self

    def teach(self, X: Any, y: Any, only_new: bool = False, **fit_kwargs: Any) -> None:
        """Add labelled pairs and refit (on all of them, or on the new ones with ``only_new``)."""
        y_arr = self._check_xy(X, y)
        if self.X_training is None:
            self.X_training, self.y_training = X, y_arr
        else:
            self.X_training = stack_rows([self.X_training, X])
            self.y_training = np.concatenate([self.y_training, y_arr])
        if only_new:
            self.estimator.fit(X, y_arr, **{**self.fit_kwargs, **fit_kwargs})
        else:
            self._fit_to_known(**fit_kwargs)

    # ----------------------------------------------------------- querying
    def query(self, X_pool: Any, n_instances: int = 1, *, return_metrics: bool = False, **query_kwargs: Any):
        """Run the strategy once; return ``(positions, rows)`` (and the scores with ``return_metrics``)."""
        try:
            check_is_fitted(self.estimator)
        except Exception as exc:
            raise NotFittedError(
                "The learner's estimator is not fitted: give X_training/y_training or call teach() "
                "before query()."
            ) from exc
        n_pool = num_rows(X_pool)
        result = self.query_strategy(self, X_pool, n_instances=n_instances, **query_kwargs)
        pos, scores = unpack_query(result, n_pool)
        if len(pos) != n_instances:
            warnings.warn(
                f"The strategy returned {len(pos)} positions for n_instances={n_instances}.",
                stacklevel=2,
            )
        self.last_scores_ = scores
        rows = take_rows(X_pool, pos)
        if return_metrics:
            return pos, rows, scores
        return pos, rows

    # ----------------------------------------------------------- prediction
    def predict(self, X: Any, **kw: Any) -> np.ndarray:
        return self.estimator.predict(X, **kw)

    def predict_proba(self, X: Any, **kw: Any) -> np.ndarray:
        return self.estimator.predict_proba(X, **kw)

    def score(self, X: Any, y: Any, **kw: Any) -> float:
        return self.estimator.score(X, y, **kw)
