"""LearnRisk's risk forward in numpy (float64), for prediction on the CPU without torch.

The same formulas as :func:`skrisk.risk._model.forward` (see its module docstring), computed with
numpy and :mod:`scipy.special` (``ndtr``, ``ndtri``), so that scoring with a fitted risk model
(``skrisk match``, a :class:`~skrisk.pools.ChunkScorer`) needs no torch. Training stays in torch
(:mod:`skrisk.risk._model`); the two forwards agree to rounding (tests/risk/test_numpy_model.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr, ndtri

from ..matchers._base import MATCH_THRESHOLD

__all__ = ["matcher_weight", "predict"]

#: As :data:`skrisk.risk._model.EPS` and ``_CLAMP``.
EPS = 1e-10
_CLAMP = 1e-12
#: Rows of the activation matrix converted to float64 at a time.
_BLOCK = 1 << 16

F64 = npt.NDArray[np.float64]


def matcher_weight(p: Any, a: float, c: float) -> Any:
    """``g(p) = a + 1 - exp(-(p - 0.5)^2 / (2 c^2))``, as :func:`skrisk.risk._model.matcher_weight`."""
    return a + 1.0 - np.exp(-((np.asarray(p, dtype=np.float64) - 0.5) ** 2) / (2.0 * c**2 + EPS))


def _truncnorm_ppf(q: F64, mu: F64, sigma: F64) -> F64:
    lo = ndtr(-mu / sigma)
    hi = ndtr((1.0 - mu) / sigma)
    inner = np.clip(lo + q * (hi - lo), _CLAMP, 1.0 - _CLAMP)
    return np.clip(mu + sigma * ndtri(inner), 0.0, 1.0)


def predict(
    *, A: npt.ArrayLike, p: npt.ArrayLike, bins: npt.ArrayLike, w: F64, r: F64, a: float, c: float,
    mu: F64, mu_tilde: F64, theta: float,
) -> tuple[F64, F64, F64]:
    """VaR, mean and standard deviation of every pair (as :func:`skrisk.risk._model.predict`).

    Parameters
    ----------
    A : array-like of shape (n, J)
        Rule activations (0/1).
    p : array-like of shape (n,)
        Matcher match probabilities.
    bins : array-like of shape (n,)
        Probability bin of each pair.
    w, r, a, c, mu, mu_tilde
        The fitted parameters (rule weights, relative standard deviations of the rules then the
        bins, the matcher weight's ``a`` and ``c``, rule expectations, scale expectations).
    theta : float
        VaR confidence.

    Returns
    -------
    risk, mean, std : ndarray of float64, shape (n,)
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    A = np.asarray(A)
    bins = np.asarray(bins, dtype=np.intp).ravel()
    w, r = np.asarray(w, dtype=np.float64), np.asarray(r, dtype=np.float64)
    mu_r, mu_t = np.asarray(mu, dtype=np.float64), np.asarray(mu_tilde, dtype=np.float64)
    J = w.shape[0]
    A = A.reshape(p.shape[0], J)
    g = matcher_weight(p, float(a), float(c))
    sig_rule2 = (r[:J] * mu_t[:J]) ** 2
    sig_bin2 = ((r[J:] * mu_t[J:]) ** 2)[bins]
    # one matmul for the three rule sums (sum w, sum w mu, sum w^2 sigma^2), in row blocks so that
    # the float64 copy of the activations stays small
    coef = np.stack([w, w * mu_r, w * w * sig_rule2], axis=1)
    sums = np.empty((p.shape[0], 3))
    for start in range(0, p.shape[0], _BLOCK):
        sums[start:start + _BLOCK] = A[start:start + _BLOCK].astype(np.float64) @ coef
    W = sums[:, 0] + g + EPS
    m = (sums[:, 1] + g * p) / W + EPS
    var = (sums[:, 2] + g * g * sig_bin2) / (W * W) + EPS
    sigma = np.sqrt(var)
    yhat = p > MATCH_THRESHOLD
    # the torch forward's quantile levels are float32 (torch.where of two Python floats), then
    # float64: the same rounding here, so that both forwards give the same risks
    q = np.where(yhat, np.float32(1.0 - theta), np.float32(theta)).astype(np.float64)
    quant = _truncnorm_ppf(q, m, sigma)
    risk = np.where(yhat, 1.0 - quant, quant)
    return risk, m, sigma
