"""Doctests of skrisk.pools: the Dask module's only where the optional extra skrisk[dask] is."""

try:
    import dask.dataframe  # noqa: F401
    import distributed  # noqa: F401
except ImportError:  # pragma: no cover - the extra is in [dev]
    collect_ignore = ["_dask.py"]
