"""Declared parameters: skrisk's small equivalent of scikit-learn's ``_parameter_constraints``.

A class declares one table, ``_parameter_constraints = {"name": [constraint, ...]}``, and its
``fit`` (or call) runs :func:`validate_params` once; a public function declares its table in
the decorator :func:`validate_call`, which checks each call's arguments. A parameter is valid when it satisfies any
of its constraints; otherwise :class:`~skrisk.exceptions.InvalidParameterError` says, in
scikit-learn's words, what it must be: ``The 'preselect' parameter of RiskSampler must be None
or a float in the range [1, inf). Got 0.5 instead.`` (scikit-learn's helper is private to it, so
skrisk does not import it.)

Constraints:

- :class:`Interval` ``(numbers.Integral or numbers.Real, left, right, closed=...)``: a number
  in a range (booleans are never numbers here);
- :class:`Options` ``(str, {"a", "b"})``: one of the given values;
- ``None``; ``"boolean"``; ``"callable"``; ``"random_state"`` (None, an int or a
  ``numpy.random.RandomState``); ``"array-like"``; any ``type`` (an instance of it);
- :class:`HasMethods` ``(("transform",))``: an object with these methods;
- :class:`SubsetOf` ``(("a", "b"))``: a non-empty list of some of the values.
"""

from __future__ import annotations

import functools
import inspect
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

import numpy as np

from .exceptions import InvalidParameterError

__all__ = ["HasMethods", "Interval", "Options", "SubsetOf", "validate_call", "validate_params"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Interval:
    """A number of ``kind`` (``numbers.Integral`` or ``numbers.Real``) between ``left`` and
    ``right`` (None: unbounded); ``closed`` in {"left", "right", "both", "neither"}."""

    kind: type
    left: float | None
    right: float | None
    closed: str = "left"

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind) or value != value:
            return False  # booleans are not numbers here, and NaN is in no range
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed not in ("left", "both")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed not in ("right", "both")):
                return False
        return True

    def __str__(self) -> str:
        what = "an int" if self.kind is numbers.Integral else "a float"
        lo = "-inf" if self.left is None else repr(self.left)
        hi = "inf" if self.right is None else repr(self.right)
        lb = "[" if self.left is not None and self.closed in ("left", "both") else "("
        rb = "]" if self.right is not None and self.closed in ("right", "both") else ")"
        return f"{what} in the range {lb}{lo}, {hi}{rb}"


@dataclass(frozen=True)
class Options:
    """One of ``values`` (all of type ``kind``)."""

    kind: type
    values: frozenset

    def __init__(self, kind: type, values: Iterable[Any]) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "values", frozenset(values))

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, self.kind) and value in self.values

    def __str__(self) -> str:
        what = "a str" if self.kind is str else f"a {self.kind.__name__}"
        return f"{what} among {{{', '.join(repr(v) for v in sorted(self.values, key=repr))}}}"


@dataclass(frozen=True)
class SubsetOf:
    """A non-empty list (or tuple) of some of ``values``, never a bare string."""

    values: tuple

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
            return False
        return all(isinstance(v, str) and v in self.values for v in value)

    def __str__(self) -> str:
        return f"a non-empty list of str among {{{', '.join(repr(v) for v in self.values)}}}"


@dataclass(frozen=True)
class HasMethods:
    """An object with all of ``methods``."""

    methods: tuple[str, ...]

    def is_satisfied_by(self, value: Any) -> bool:
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def __str__(self) -> str:
        names = ", ".join(repr(m) for m in self.methods)
        return f"an object implementing {names}"


def _satisfied(constraint: Any, value: Any) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, str):
        if constraint == "boolean":
            return isinstance(value, (bool, np.bool_))
        if constraint == "callable":
            return callable(value)
        if constraint == "random_state":
            return value is None or isinstance(value, np.random.RandomState) or (
                isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)))
        if constraint == "array-like":
            return hasattr(value, "__len__") or hasattr(value, "shape") or hasattr(value, "__array__")
        raise ValueError(f"Unknown parameter constraint {constraint!r}.")  # a bug of the table
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return bool(constraint.is_satisfied_by(value))


def _describe(constraint: Any) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, str):
        return {"boolean": "an instance of 'bool'", "callable": "a callable",
                "random_state": "an int, a numpy.random.RandomState instance or None",
                "array-like": "an array-like"}[constraint]
    if isinstance(constraint, type):
        return f"an instance of {constraint.__name__!r}"
    return str(constraint)


def validate_params(obj: Any, params: Iterable[str] | None = None) -> None:
    """Check ``obj``'s parameters against its class's ``_parameter_constraints`` table.

    Parameters
    ----------
    obj : object
        An estimator (or any object) whose class declares ``_parameter_constraints``.
    params : iterable of str, optional
        Only these parameters; default every parameter in the table.

    Raises
    ------
    InvalidParameterError
        The first parameter that satisfies none of its constraints, in the table's order
        (a subclass of both ``ValueError`` and ``TypeError``, as scikit-learn's).

    Examples
    --------
    >>> import numbers
    >>> from skrisk._params import Interval, validate_params
    >>> class Model:
    ...     _parameter_constraints = {"k": [Interval(numbers.Integral, 1, None)]}
    ...     k = 0
    >>> validate_params(Model())
    Traceback (most recent call last):
    ...
    skrisk.exceptions.InvalidParameterError: The 'k' parameter of Model must be an int in the range [1, inf). Got 0 instead.
    """
    table = type(obj)._parameter_constraints
    for name in table if params is None else params:
        _check(name, getattr(obj, name), table[name], type(obj).__name__)


def validate_call(constraints: dict[str, list[Any]]) -> Callable[[F], F]:
    """Decorate a function so that each call checks its arguments by name, before it runs.

    The function's table of :func:`validate_params`: ``{"name": [constraint, ...]}``, an argument
    valid when it satisfies any of its constraints; the parameters not in the table are not
    checked. Default values are checked too (they must satisfy the table).

    Parameters
    ----------
    constraints : dict of str to list
        The constraints of some of the function's parameters.

    Returns
    -------
    decorator : callable
        Wraps the function (``functools.wraps``); the table is its ``_parameter_constraints``.

    Raises
    ------
    ValueError
        At decoration, when the table names a parameter the function does not have.
    InvalidParameterError
        At a call, for the first argument (in the table's order) that satisfies none of its
        constraints: ``The 'n_select' parameter of weighted_fastpam must be an int in the range
        [1, inf). Got 0 instead.``

    Examples
    --------
    >>> import numbers
    >>> from skrisk._params import Interval, validate_call
    >>> @validate_call({"k": [Interval(numbers.Integral, 1, None)]})
    ... def top(values, k=1):
    ...     return sorted(values)[-k:]
    >>> top([3, 1, 2], k=2)
    [2, 3]
    >>> top([3, 1, 2], k=0)
    Traceback (most recent call last):
    ...
    skrisk.exceptions.InvalidParameterError: The 'k' parameter of top must be an int in the range [1, inf). Got 0 instead.
    """

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        unknown = sorted(set(constraints) - set(signature.parameters))
        if unknown:
            raise ValueError(f"The constraints of {func.__qualname__} name no parameter of it: {unknown}.")

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)  # a TypeError of Python's own when it cannot
            bound.apply_defaults()
            for name, allowed in constraints.items():
                _check(name, bound.arguments[name], allowed, func.__qualname__)
            return func(*args, **kwargs)

        checked._parameter_constraints = constraints  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]

    return decorate


def _check(name: str, value: Any, constraints: list[Any], owner: str) -> None:
    """Raise :class:`InvalidParameterError` unless ``value`` satisfies one of ``constraints``."""
    if any(_satisfied(c, value) for c in constraints):
        return
    texts = [_describe(c) for c in constraints]
    must = texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"
    raise InvalidParameterError(
        f"The {name!r} parameter of {owner} must be {must}. Got {_short(value)} instead."
    )


def _short(value: Any) -> str:
    """``repr`` of a value, data shown by type and shape only."""
    if hasattr(value, "shape") and not np.isscalar(value):
        return f"<{type(value).__name__} of shape {tuple(getattr(value, 'shape'))}>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
