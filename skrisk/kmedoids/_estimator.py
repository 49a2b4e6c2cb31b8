"""scikit-learn estimator around :func:`skrisk.kmedoids.weighted_fastpam`."""

from __future__ import annotations

import numbers
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import torch
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.metrics import euclidean_distances, pairwise_distances_argmin
from sklearn.utils.validation import check_is_fitted, validate_data

from skrisk._params import Interval, Options, validate_params
from skrisk._typing import IntArray, RandomStateLike
from skrisk.kmedoids._fastpam import weighted_fastpam

__all__ = ["WeightedKMedoids"]


class WeightedKMedoids(ClusterMixin, TransformerMixin, BaseEstimator):
    """Weighted k-medoids with fixed medoids, fitted by weighted fastPAM.

    Chooses ``n_select`` new medoids among the rows of ``X`` that are not in ``fixed`` so that the
    weighted total deviation ``sum_i w_i * min_m ||x_i - x_m||`` over all medoids (``fixed`` and
    the new ones) is swap-optimal. In risk sampling ``fixed`` is the labelled set ``L``, the
    weights are the Lipschitz estimates of the paper's eq. 6, and the new medoids are the query
    batch ``Q``.

    Parameters
    ----------
    n_select : int, default=8
        Number of medoids to choose (the query budget ``b``).
    fixed : array-like of int, default=None
        Row indices (into the ``X`` given to :meth:`fit`) of the fixed medoids. They stay medoids
        and are not counted in ``n_select``.
    init : {"heaviest", "build"}, default="heaviest"
        Initial medoids: the heaviest points (the paper), or greedy weighted BUILD.
    schedule : {"eager", "best"}, default="eager"
        Swap schedule: FasterPAM-like eager swaps per candidate block, or the paper's single best
        swap per pass (FastPAM1).
    max_iter : int, default=1000
        Maximum number of passes over the candidates.
    block_size : int, default=64
        Candidates evaluated together; memory grows as ``n_samples * block_size``.
    device : {"auto", "cpu", "cuda"}, default="auto"
        Torch device of the kernel (``"auto"``: CUDA when available).
    random_state : int, RandomState, Generator or None, default=None
        Breaks ties among equal weights in ``init="heaviest"``.
    verbose : bool, default=False
        Show a tqdm progress bar.

    Attributes
    ----------
    medoid_indices_ : ndarray of shape (n_fixed + n_select,)
        Row indices of all medoids in the training ``X``: ``fixed`` first, then the selected ones.
    selected_indices_ : ndarray of shape (n_select,)
        Row indices of the chosen medoids (sorted).
    cluster_centers_ : ndarray of shape (n_fixed + n_select, n_features)
        Coordinates of the medoids, in the order of ``medoid_indices_``.
    labels_ : ndarray of shape (n_samples,)
        Position in ``medoid_indices_`` of each training point's nearest medoid.
    total_deviation_ : float
        Weighted total deviation of the training data (float64).
    n_iter_ : int
        Passes over the candidates in the SWAP phase.
    n_swaps_ : int
        Swaps applied.
    converged_ : bool
        Whether the SWAP phase reached a swap-optimal solution within ``max_iter``.
    n_features_in_ : int
        Number of features seen during :meth:`fit`.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during :meth:`fit` (only when ``X`` has string column names).

    See Also
    --------
    skrisk.kmedoids.weighted_fastpam : The function this estimator wraps.

    Notes
    -----
    :meth:`predict` returns, for new points, the position of the nearest medoid (the same
    numbering as ``labels_``); :meth:`transform` returns the Euclidean distances to all medoids.
    Complexity and memory are those of :func:`~skrisk.kmedoids.weighted_fastpam`.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.kmedoids import WeightedKMedoids
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [9.0]])
    >>> km = WeightedKMedoids(n_select=1, fixed=[0], device="cpu")
    >>> km.fit(X, sample_weight=[1, 1, 1, 1, 1, 5]).selected_indices_.tolist()
    [5]
    >>> km.predict([[8.0], [1.0]]).tolist()
    [1, 0]
    """

    _parameter_constraints: dict = {
        "n_select": [Interval(numbers.Integral, 1, None)],
        "fixed": [None, "array-like"],
        "init": [Options(str, {"heaviest", "build"})],
        "schedule": [Options(str, {"eager", "best"})],
        "max_iter": [Interval(numbers.Integral, 0, None)],
        "block_size": [Interval(numbers.Integral, 1, None)],
        "device": [str, torch.device],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["boolean"],
    }

    def __init__(
        self,
        n_select: int = 8,
        *,
        fixed: IntArray | list[int] | None = None,
        init: Literal["heaviest", "build"] = "heaviest",
        schedule: Literal["eager", "best"] = "eager",
        max_iter: int = 1000,
        block_size: int = 64,
        device: str | torch.device = "auto",
        random_state: RandomStateLike = None,
        verbose: bool = False,
    ) -> None:
        self.n_select = n_select
        self.fixed = fixed
        self.init = init
        self.schedule = schedule
        self.max_iter = max_iter
        self.block_size = block_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def fit(
        self, X: npt.ArrayLike, y: Any = None, sample_weight: npt.ArrayLike | None = None
    ) -> "WeightedKMedoids":
        """Choose the medoids.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points; ``fixed`` indexes its rows.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; ``None`` means unit weights.

        Returns
        -------
        self : WeightedKMedoids
            The fitted estimator.
        """
        validate_params(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        res = weighted_fastpam(
            X,
            self.n_select,
            sample_weight=sample_weight,
            fixed=self.fixed,
            init=self.init,
            schedule=self.schedule,
            max_iter=self.max_iter,
            block_size=self.block_size,
            device=self.device,
            random_state=self.random_state,
            verbose=self.verbose,
        )
        self.medoid_indices_ = res.medoids
        self.selected_indices_ = res.selected
        self.cluster_centers_ = np.array(X[res.medoids], dtype=np.float64)
        self.labels_ = res.labels
        self.total_deviation_ = res.total_deviation
        self.n_iter_ = res.n_iter
        self.n_swaps_ = res.n_swaps
        self.converged_ = res.converged
        return self

    def predict(self, X: npt.ArrayLike) -> IntArray:
        """Position (in ``medoid_indices_``) of the nearest medoid of each point.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New points.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Nearest medoid per point; ties go to the lowest position.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return pairwise_distances_argmin(X, self.cluster_centers_).astype(np.intp)

    def transform(self, X: npt.ArrayLike) -> np.ndarray:
        """Euclidean distances of each point to every medoid.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New points.

        Returns
        -------
        distances : ndarray of shape (n_samples, n_fixed + n_select)
            Distances to the medoids, columns in the order of ``medoid_indices_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return euclidean_distances(np.asarray(X, dtype=np.float64), self.cluster_centers_)

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        return tags
