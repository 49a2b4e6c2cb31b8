"""What a query strategy may ask of a matcher: the small matcher interface.

Every matcher in skrisk is a scikit-learn classifier over pairs (``fit``, ``predict``,
``predict_proba`` with classes ``[0, 1]``). Query strategies need a few more pieces; a matcher
offers those it can, and :func:`require` turns a missing one into a clear error.

=============================  =======================================================  ===========
method                         returns                                                  used by
=============================  =======================================================  ===========
``predict_proba(X)``           ``(n, 2)`` class probabilities                           all
``represent(X)``               ``(n, h)`` penultimate-layer representation               risk, core-set
``predict_proba_mc(X, n_iter,  ``(n_iter, n, 2)`` stochastic (MC-dropout) probabilities  BALD
random_state)``
``gradient_embedding(X)``      ``(n, 2 * h)`` last-layer loss gradient at the predicted  BADGE
                               label (hypothetical-label gradient embedding)
``expected_gradient_length``   ``(n,)`` expected norm of the last-layer gradient over    EGL
``(X)``                        the hypothetical labels, weighted by ``predict_proba``
=============================  =======================================================  ===========

All of them keep row order and work in batches. :class:`RNNMatcher` also offers
``predict_proba_and_represent(X) -> (P, H)``, both from one pass over the pool (what risk sampling
needs each round); a strategy may use it when present and fall back to the two calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..exceptions import MissingCapabilityError, NotFittedError
from ._threshold import MATCH_THRESHOLD

__all__ = ["CAPABILITIES", "MATCH_THRESHOLD", "match_labels", "require"]


def last_layer_gradients(proba: np.ndarray, h: np.ndarray) -> np.ndarray:
    """BADGE embeddings ``(n, 2 * d)``: the cross-entropy gradient w.r.t. a softmax output layer's
    weights at the predicted label, ``(p - onehot(yhat)) outer h``, class by class (analytic).

    ``proba``: ``(n, 2)`` class probabilities; ``h``: ``(n, d)`` the layer's input.

    Examples
    --------
    >>> last_layer_gradients(np.array([[0.25, 0.75]]), np.array([[2.0]])).tolist()
    [[0.5, -0.5]]
    """
    onehot = np.eye(2, dtype=proba.dtype)[proba.argmax(axis=1)]
    return ((proba - onehot)[:, :, None] * h[:, None, :]).reshape(len(h), -1)


def expected_gradient_lengths(proba: np.ndarray, h: np.ndarray) -> np.ndarray:
    """EGL ``(n,)``: ``sum_y p(y) ||p - onehot(y)|| ||h||`` over both hypothetical labels, the
    expected norm of that output layer's gradient.

    Examples
    --------
    >>> round(float(expected_gradient_lengths(np.array([[0.5, 0.5]]), np.array([[1.0]]))[0]), 4)
    0.7071
    """
    norms = np.linalg.norm(proba[:, None, :] - np.eye(2, dtype=proba.dtype)[None], axis=2)
    return (proba * norms).sum(axis=1) * np.linalg.norm(h, axis=1)



def match_labels(proba: npt.ArrayLike, threshold: float = MATCH_THRESHOLD) -> npt.NDArray[np.int64]:
    """The predicted labels (1 = match) of match probabilities: ``1[p > threshold]``.

    Parameters
    ----------
    proba : array-like of shape (n_pairs,) or (n_pairs, 2)
        Match probabilities, or class probabilities (non-match, match) whose second column is used.
    threshold : float, default=MATCH_THRESHOLD
        A pair is a match iff its probability is strictly above it (a tie is a non-match).

    Returns
    -------
    ndarray of int64, shape (n_pairs,)

    Raises
    ------
    ValueError
        ``proba`` is neither 1-D nor of shape (n_pairs, 2).

    Examples
    --------
    >>> match_labels([0.2, 0.5, 0.7]).tolist()
    [0, 0, 1]
    >>> match_labels([[0.5, 0.5], [0.1, 0.9]]).tolist()
    [0, 1]
    """
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 2:
        p = p[:, 1]
    elif p.ndim != 1:
        raise ValueError(
            f"match_labels needs match probabilities of shape (n_pairs,) or class probabilities of "
            f"shape (n_pairs, 2), got shape {p.shape}."
        )
    return (p > threshold).astype(np.int64)

#: capability name -> (method name, what it is for)
CAPABILITIES: dict[str, tuple[str, str]] = {
    "proba": ("predict_proba", "class probabilities"),
    "representation": ("represent", "the penultimate-layer representation of pairs"),
    "mc_dropout": ("predict_proba_mc", "MC-dropout probabilities"),
    "gradient_embedding": ("gradient_embedding", "last-layer gradient embeddings (BADGE)"),
    "expected_gradient_length": ("expected_gradient_length", "expected gradient lengths (EGL)"),
}


def require(matcher: Any, capability: str, strategy: str) -> Any:
    """Return the bound method behind ``capability`` or raise a clear error naming the fix.

    Parameters
    ----------
    matcher : object
        The matcher (or a modAL learner wrapping it).
    capability : str
        A key of :data:`CAPABILITIES`.
    strategy : str
        The strategy asking, for the message.
    """
    if capability not in CAPABILITIES:
        raise ValueError(f"Unknown capability {capability!r}; known: {sorted(CAPABILITIES)}.")
    method, what = CAPABILITIES[capability]
    est = getattr(matcher, "estimator", matcher)
    fn = getattr(est, method, None)
    if fn is None or not callable(fn):
        raise MissingCapabilityError(
            f"{strategy} needs {what}, but {type(est).__name__} has no {method}(). Use a matcher "
            "that offers it (skrisk.matchers.RNNMatcher offers all; FeatureMatcher offers what its "
            "classifier allows), or choose another strategy."
        )
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(est)
    except Exception as exc:  # sklearn raises NotFittedError, skorch its own subclass of it
        raise NotFittedError(
            f"{strategy} needs a fitted matcher: fit {type(est).__name__} (or teach the learner) "
            "on the initial labelled pairs first."
        ) from exc
    return fn
