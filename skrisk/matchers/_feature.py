"""FeatureMatcher: any scikit-learn classifier on pair similarity features, same interface."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import BaggingClassifier, ExtraTreesClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import validate_data

from .._params import HasMethods, Interval, validate_call, validate_params
from ..data._pairs import PairDataset
from ..exceptions import NotFittedError
from ._base import expected_gradient_lengths, last_layer_gradients, match_labels

__all__ = ["FeatureMatcher"]

_COMMITTEES = (RandomForestClassifier, ExtraTreesClassifier, BaggingClassifier)


def _default_classifier(random_state: object) -> RandomForestClassifier:
    return RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=random_state)


def _has_committee(self: "FeatureMatcher") -> bool:
    clf = self.classifier if self.classifier is not None else _default_classifier(None)
    return isinstance(clf, _COMMITTEES)


def _is_logistic(self: "FeatureMatcher") -> bool:
    return isinstance(self.classifier, LogisticRegression)


class FeatureMatcher(ClassifierMixin, BaseEstimator):
    """A scikit-learn classifier on similarity features, with the matcher interface.

    The fast alternative to :class:`RNNMatcher` for experiments and tests: strategies see the
    same methods (where the classifier allows them).

    One input contract, decided by the ``features`` parameter and the type of ``X`` (never by
    column names):

    * ``features`` given (e.g. ``FeatureMatcher(features=SimilarityFeatures(...))``): ``X`` is a
      pair frame (:meth:`PairDataset.to_frame`) or a :class:`PairDataset`, turned into features by
      ``features`` (fitted in ``fit``). A :class:`PairDataset` goes through ``features`` (default
      :class:`~skrisk.data.SimilarityFeatures`) even when it is None;
    * ``features=None``: ``X`` is a float matrix ``(n_pairs, n_features)`` of precomputed features
      (an ndarray, a sparse matrix or an all-numeric DataFrame; e.g. SimilarityFeatures fitted once
      on the whole pool, rows taken by integer position: the cheap way in active learning), or a
      mapping / :class:`skorch.helper.SliceDict` whose ``features`` entry is that matrix (the
      hybrid :class:`~skrisk.data.PairEncoder` output; its ``tokens`` are ignored). A DataFrame
      with text columns is refused with the fix (``features=``).

    ``fit`` records which kind it got; later calls must pass the same kind.

    ================================  =============================================================
    method                            available
    ================================  =============================================================
    ``predict_proba``, ``represent``  always (``represent`` = standardised features)
    ``predict_proba_mc``              ensembles of trees / bagging (RandomForest, ExtraTrees,
                                      Bagging): each draw is one member's probabilities
    ``gradient_embedding``,           ``LogisticRegression``: analytic last-layer gradients with the
    ``expected_gradient_length``      standardised features as the representation
    ================================  =============================================================

    Parameters
    ----------
    classifier : classifier or None, default=None
        Any sklearn classifier with ``predict_proba`` (cloned in ``fit``). None:
        ``RandomForestClassifier(n_estimators=100)`` (see the benchmarks in the documentation
        for how it compares with other classifiers).
    features : transformer or None, default=None
        Pair-frame transformer: given, ``X`` is a pair frame (see above). None: ``X`` is the feature
        matrix (a :class:`PairDataset` then goes through :class:`~skrisk.data.SimilarityFeatures`).
    random_state : int, RandomState or None, default=None
        Passed to the classifier (when it takes one and its own is None) and to the committee
        draws of ``predict_proba_mc`` when that call gets none.

    Attributes
    ----------
    classifier_ : classifier
        The fitted classifier.
    features_ : transformer or None
        The fitted feature transformer (frame input only).
    scaler_ : StandardScaler
        Standardises the features (the representation).
    input_kind_ : {"frame", "matrix", "mapping"}
        The kind of ``X`` seen in ``fit``.
    classes_ : ndarray of shape (2,)
        ``[0, 1]`` for match labels (any two labels work; the second is the "match" column).
    n_features_in_ : int
        Number of features (of the matrix the classifier sees).

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.matchers import FeatureMatcher
    >>> rng = np.random.RandomState(0)
    >>> X = rng.rand(100, 3); y = (X[:, 0] > 0.5).astype(int)
    >>> m = FeatureMatcher(random_state=0).fit(X, y)
    >>> m.predict_proba(X).shape, m.represent(X).shape, m.predict_proba_mc(X, n_iter=5).shape
    ((100, 2), (100, 3), (5, 100, 2))
    >>> hasattr(m, "gradient_embedding")
    False
    >>> from sklearn.linear_model import LogisticRegression
    >>> lr = FeatureMatcher(LogisticRegression()).fit(X, y)
    >>> lr.gradient_embedding(X).shape, hasattr(lr, "predict_proba_mc")
    ((100, 6), False)
    """

    _parameter_constraints: dict = {
        "classifier": [None, HasMethods(("fit", "predict_proba"))],
        "features": [None, HasMethods(("fit", "transform"))],
        "random_state": ["random_state"],
    }

    def __init__(self, classifier: object = None, features: object = None, random_state: object = None) -> None:
        self.classifier = classifier
        self.features = features
        self.random_state = random_state

    # ------------------------------------------------------------------ input
    def _input_kind(self, X: object) -> str:
        """The input contract, decided by the ``features`` parameter and the type of ``X`` (never
        by column names): pairs when ``features`` is given or ``X`` is a PairDataset, the
        ``features`` of a mapping / SliceDict, else the feature matrix itself."""
        if self.features is not None or isinstance(X, PairDataset):
            return "frame"
        if isinstance(X, Mapping) and not sp.issparse(X):  # a dok matrix is also a dict
            return "mapping"
        if isinstance(X, pd.DataFrame):
            text = [c for c, t in X.dtypes.items() if not pd.api.types.is_numeric_dtype(t)]
            if text:
                raise ValueError(
                    f"FeatureMatcher got a DataFrame with non-numeric columns {text[:4]}"
                    f"{'...' if len(text) > 4 else ''}; without features= its X is a matrix of "
                    "similarity features. For a pair frame pass "
                    "FeatureMatcher(features=SimilarityFeatures(...)), or give a PairDataset."
                )
        return "matrix"

    def _features(self, X: object, *, fit: bool) -> np.ndarray:
        kind = self._input_kind(X)
        if fit:
            self.input_kind_ = kind
        elif kind != self.input_kind_:
            raise ValueError(
                f"FeatureMatcher was fitted on a {self.input_kind_} input but got a {kind}: pass the "
                "same kind of X (pair frame, feature matrix, or SliceDict with 'features')."
            )
        if kind == "frame":
            frame = X.to_frame() if isinstance(X, PairDataset) else X
            if fit:
                from ..data._similarity import SimilarityFeatures

                tr = clone(self.features) if self.features is not None else SimilarityFeatures()
                self.features_ = tr.fit(frame)
            return np.asarray(self.features_.transform(frame), dtype=np.float64)
        if fit:
            self.features_ = None
        if kind == "mapping":
            if "features" not in X:
                raise ValueError(
                    "X is a mapping without 'features': pass PairEncoder(features=...) output, a "
                    "feature matrix, or a pair frame."
                )
            return np.asarray(X["features"])
        return X  # type: ignore[return-value]

    def _matrix(self, X: object, *, fit: bool, y: object = None):
        F = self._features(X, fit=fit)
        if fit:
            F, y = validate_data(self, F, y, dtype=np.float64, ensure_min_samples=1)
            return F, y
        return validate_data(self, F, reset=False, dtype=np.float64)

    # ------------------------------------------------------------------ fit / predict
    def fit(self, X: object, y: npt.ArrayLike) -> "FeatureMatcher":
        """Fit the feature transformer (frame input), the scaler and the classifier.

        Parameters
        ----------
        X : pair frame, PairDataset, float matrix (n, F) or SliceDict with "features"
        y : array-like of shape (n,)
            0 (non-match) / 1 (match); both classes are needed.

        Returns
        -------
        self : FeatureMatcher
        """
        if self.classifier is not None and not hasattr(self.classifier, "predict_proba"):
            raise TypeError(
                f"classifier must have predict_proba, {type(self.classifier).__name__} has not "
                "(e.g. use SVC(probability=True))."
            )
        validate_params(self)
        if y is None:
            raise ValueError(
                "FeatureMatcher requires y to be passed, but the target y is None: pass the labels."
            )
        F, y = self._matrix(X, fit=True, y=y)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(
                "The training labels hold one class only: a matcher needs at least one match and "
                "one non-match. Label more pairs."
            )
        if y_type != "binary":
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {y_type}: "
                "use 1 = match, 0 = non-match."
            )
        self.scaler_ = StandardScaler().fit(F)
        clf = clone(self.classifier) if self.classifier is not None else _default_classifier(None)
        if self.random_state is not None and "random_state" in clf.get_params() and clf.get_params()["random_state"] is None:
            clf.set_params(random_state=self.random_state)
        self.classifier_ = clf.fit(self.scaler_.transform(F), y)
        self.classes_ = classes
        return self

    def _proba_from_scaled(self, Z: np.ndarray) -> np.ndarray:
        return self.classifier_.predict_proba(Z)

    def represent(self, X: object) -> npt.NDArray[np.float64]:
        """Standardised features ``(n, n_features)``, in row order."""
        if not hasattr(self, "classifier_"):
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet: call fit(X, y) with labelled pairs first."
            )
        return self.scaler_.transform(self._matrix(X, fit=False))

    def predict_proba(self, X: object) -> npt.NDArray[np.float64]:
        """Class probabilities ``(n, 2)`` (non-match, match), in row order."""
        return self._proba_from_scaled(self.represent(X))

    def predict(self, X: object) -> npt.NDArray[np.int64]:
        """Predicted labels: the second class (1 = match) when its probability exceeds
        :data:`~skrisk.matchers.MATCH_THRESHOLD` (a tie at 0.5 is the first class, non-match)."""
        match = match_labels(self.predict_proba(X))  # raises NotFittedError before classes_ is read
        return self.classes_[match.astype(np.intp)]

    @available_if(_has_committee)
    @validate_call({"n_iter": [Interval(numbers.Integral, 1, None)]})
    def predict_proba_mc(
        self, X: object, n_iter: int = 20, random_state: object = None
    ) -> npt.NDArray[np.float64]:
        """Committee probabilities ``(n_iter, n, 2)``: each draw is one ensemble member's.

        Members are drawn without replacement while ``n_iter <= n_estimators`` (else with),
        seeded by ``random_state`` (or the matcher's ``random_state``).
        """
        Z = self.represent(X)
        members = self.classifier_.estimators_
        rng = check_random_state(random_state if random_state is not None else self.random_state)
        pick = rng.choice(len(members), size=n_iter, replace=n_iter > len(members))
        feats = getattr(self.classifier_, "estimators_features_", None)  # Bagging
        n = Z.shape[0]
        out = np.zeros((n_iter, n, 2))
        for t, i in enumerate(pick):
            Zi = Z if feats is None else Z[:, feats[i]]
            P = members[i].predict_proba(Zi)
            # members are fitted on the encoded labels 0, 1 (a member may have seen one only)
            cls = np.asarray(getattr(members[i], "classes_", np.arange(P.shape[1]))).astype(np.intp)
            out[t][:, cls] = P
        return out

    @available_if(_is_logistic)
    def gradient_embedding(self, X: object) -> npt.NDArray[np.float64]:
        """BADGE embeddings ``(n, 2 * n_features)``: ``(p - onehot(yhat)) outer z`` with ``z`` the
        standardised features (the logistic regression written as a 2-class softmax layer)."""
        Z = self.represent(X)
        P = self._proba_from_scaled(Z)
        return last_layer_gradients(P, Z)

    @available_if(_is_logistic)
    def expected_gradient_length(self, X: object) -> npt.NDArray[np.float64]:
        """EGL ``(n,)``: ``sum_y p(y) ||p - onehot(y)|| ||z||``."""
        Z = self.represent(X)
        P = self._proba_from_scaled(Z)
        return expected_gradient_lengths(P, Z)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.dict = True
        tags.classifier_tags.multi_class = False
        return tags
