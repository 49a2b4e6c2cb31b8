"""Lazy attributes of a package: ``import skrisk`` stays light (torch loads on first use)."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_attributes(
    package: str, names: dict[str, str], namespace: dict[str, Any], exported: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``.

    ``names`` maps an attribute to the (relative) module that defines it; the first access
    imports that module and caches the value in ``namespace`` (the package's ``globals()``).

    Examples
    --------
    >>> ns = {}
    >>> getattr_, dir_ = lazy_attributes("json", {"dumps": "json"}, ns, ["dumps"])
    >>> getattr_("dumps")([1])
    '[1]'
    >>> "dumps" in ns, dir_()
    (True, ['dumps'])
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(import_module(names[name], package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exported))

    return __getattr__, __dir__
