"""The matcher's uncertainty, the risk wherever there is no risk model (numpy only: the Dask
workers and the command line use it without loading torch)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["matcher_uncertainty"]


def matcher_uncertainty(proba: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The matcher's uncertainty ``min(p, 1 - p)``: the risk where there is no risk model.

    The one fallback of skrisk's risk: :class:`LearnRisk` without a risk model (the matcher made
    no mistake, or only mistakes, on the ranking pairs), a :class:`~skrisk.pools.ChunkScorer`
    without one, :func:`~skrisk.matching.match` and the labelling session use it.

    Parameters
    ----------
    proba : array-like of shape (n_pairs,)
        Match probabilities.

    Returns
    -------
    ndarray of float64, shape (n_pairs,), values in [0, 0.5]

    Examples
    --------
    >>> from skrisk.risk._uncertainty import matcher_uncertainty
    >>> matcher_uncertainty([0.1, 0.5, 0.75]).tolist()
    [0.1, 0.5, 0.25]
    """
    p = np.asarray(proba, dtype=np.float64)
    return np.minimum(p, 1.0 - p)
