"""Exceptions raised by skrisk.

All of them subclass a builtin or scikit-learn exception, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SkNotFittedError

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


class NotFittedError(SkriskError, _SkNotFittedError):
    """An estimator, matcher or learner was used before it was fitted."""


class MissingCapabilityError(SkriskError, TypeError):
    """A query strategy needs something (MC dropout, gradients, ...) the matcher does not offer."""
