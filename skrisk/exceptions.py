"""Exceptions raised by skrisk.

All of them subclass a builtin or scikit-learn exception, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SkNotFittedError

__all__ = ["SkriskError", "DataError", "EmptyPoolError", "NotFittedError", "MissingCapabilityError"]


class SkriskError(Exception):
    """Base class of every skrisk-specific exception."""


class DataError(SkriskError, ValueError):
    """A data file or table is malformed; the message names the file, row or column and the fix."""


class EmptyPoolError(SkriskError, ValueError):
    """The unlabelled pool is empty (or smaller than the batch asked for)."""


class NotFittedError(SkriskError, _SkNotFittedError):
    """An estimator, matcher or learner was used before it was fitted."""


class MissingCapabilityError(SkriskError, TypeError):
    """A query strategy needs something (MC dropout, gradients, ...) the matcher does not offer."""
