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

from ..exceptions import MissingCapabilityError, NotFittedError

__all__ = ["CAPABILITIES", "require"]

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
