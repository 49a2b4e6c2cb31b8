"""pytest's root configuration: the doctests of skrisk/ that need an optional extra.

It lives beside the package, not in it, so that no test helper ships in the wheel.
"""

try:
    import dask.dataframe  # noqa: F401
    import distributed  # noqa: F401
except ImportError:  # pragma: no cover - the extra is in [dev]
    collect_ignore = ["skrisk/pools/_dask.py"]
