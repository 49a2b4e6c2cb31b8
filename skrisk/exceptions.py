"""Exceptions raised by skrisk.

All of them subclass a builtin or scikit-learn exception, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = [
    "SkriskError", "DataError", "EmptyPoolError", "InvalidParameterError", "NotFittedError",
    "MissingCapabilityError",
]


class SkriskError(Exception):
    """Base class of every skrisk-specific exception."""


class DataError(SkriskError, ValueError):
    """A data file or table is malformed; the message names the file, row or column and the fix."""


class EmptyPoolError(SkriskError, ValueError):
    """The unlabelled pool is empty (or smaller than the batch asked for)."""


class InvalidParameterError(SkriskError, ValueError, TypeError):
    """A parameter of an estimator or sampler has a value its declared constraints refuse (raised
    when it is used, at ``fit`` or the call, never in ``__init__``)."""


_NOT_FITTED_LOCK = threading.Lock()


def __getattr__(name: str) -> Any:
    # NotFittedError subclasses scikit-learn's, made on first use: importing this module (as
    # ``skrisk match`` does before it reads any table) does not import scikit-learn
    if name != "NotFittedError":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _NOT_FITTED_LOCK:
        if "NotFittedError" not in globals():
            from sklearn.exceptions import NotFittedError as sk_not_fitted

            globals()["NotFittedError"] = type("NotFittedError", (SkriskError, sk_not_fitted), {
                "__module__": __name__, "__qualname__": "NotFittedError",
                "__doc__": "An estimator, matcher or learner was used before it was fitted."})
    return globals()["NotFittedError"]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class MissingCapabilityError(SkriskError, TypeError):
    """A query strategy needs something (MC dropout, gradients, ...) the matcher does not offer."""
