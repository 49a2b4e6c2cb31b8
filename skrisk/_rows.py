"""Positional row access for every pool type skrisk accepts: the one helper that tells pools apart.

Pools are ndarrays, sparse matrices, pandas DataFrames, skorch ``SliceDict``s or plain mappings of
equally long arrays. What a pool is decides by its Python type alone (:func:`pool_kind`), never by
its column names or contents. Rows are always taken by integer position (never by label: modAL's
``retrieve_rows`` returns columns for a DataFrame with integer column labels), and stacking uses
``pd.concat`` / per-key concatenation (``DataFrame.append`` is gone in pandas 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["num_rows", "pool_kind", "take_rows", "stack_rows"]


def pool_kind(X: Any) -> str:
    """The container type of a pool, by its Python type alone.

    Returns
    -------
    {"sparse", "mapping", "frame", "list", "array"}
        A scipy sparse matrix (tested first: a dok matrix is also a dict), a mapping or skorch
        ``SliceDict``, a pandas DataFrame or Series, a list or tuple, anything else (array-like).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> pool_kind(np.zeros((2, 3))), pool_kind(pd.DataFrame({"left_a": ["x"]})), pool_kind({"features": []})
    ('array', 'frame', 'mapping')
    """
    if sp.issparse(X):
        return "sparse"
    if isinstance(X, Mapping):
        return "mapping"
    if isinstance(X, (pd.DataFrame, pd.Series)):
        return "frame"
    if isinstance(X, (list, tuple)):
        return "list"
    return "array"


def num_rows(X: Any) -> int:
    """Number of rows (samples) of a pool."""
    if isinstance(X, Mapping):
        lengths = {len(v) for v in X.values()}
        if len(lengths) != 1:
            raise ValueError(
                f"The arrays of a dict/SliceDict pool have different lengths {sorted(lengths)}: "
                "every key must hold one row per pair."
            )
        return lengths.pop()
    if hasattr(X, "shape") and len(X.shape) > 0:
        return int(X.shape[0])
    if isinstance(X, (list, tuple)):
        return len(X)
    raise TypeError(
        f"Cannot count the rows of a {type(X).__name__}: pass an ndarray, a DataFrame, a sparse "
        "matrix, a skorch SliceDict or a dict of arrays."
    )


def take_rows(X: Any, positions: Sequence[int] | np.ndarray) -> Any:
    """Rows of ``X`` at integer ``positions``, in that order, keeping the container type."""
    idx = np.asarray(positions, dtype=np.intp)
    if isinstance(X, (pd.DataFrame, pd.Series)):
        return X.iloc[idx]
    if isinstance(X, Mapping):
        taken = {k: _take(v, idx) for k, v in X.items()}
        try:
            return type(X)(**taken)
        except TypeError:
            return taken
    return _take(X, idx)


def _take(v: Any, idx: np.ndarray) -> Any:
    if isinstance(v, (pd.DataFrame, pd.Series)):
        return v.iloc[idx]
    if sp.issparse(v):
        return v[idx]
    if isinstance(v, (list, tuple)):
        return [v[i] for i in idx]
    return v[idx]


def stack_rows(parts: Sequence[Any]) -> Any:
    """Concatenate pools of one type row-wise."""
    parts = [p for p in parts if p is not None]
    if not parts:
        raise ValueError("Nothing to stack.")
    first = parts[0]
    if len(parts) == 1:
        return first
    if isinstance(first, (pd.DataFrame, pd.Series)):
        return pd.concat(parts, axis=0, ignore_index=True)
    if isinstance(first, Mapping):
        keys = list(first.keys())
        for p in parts[1:]:
            if not isinstance(p, Mapping) or list(p.keys()) != keys:
                raise ValueError(
                    f"Cannot stack a mapping pool with keys {keys} and one with different keys."
                )
        stacked = {k: stack_rows([p[k] for p in parts]) for k in keys}
        try:
            return type(first)(**stacked)
        except TypeError:
            return stacked
    if sp.issparse(first):
        return sp.vstack(parts, format="csr")
    if isinstance(first, list):
        return [row for p in parts for row in p]
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def first_non_finite(X: Any) -> tuple[int, int, str] | None:
    """``(count, first row, where)`` of the rows of a pool holding NaN or infinity, or None.

    Looks at float values only (ndarray, sparse matrix, torch tensor, the float columns of a
    DataFrame, every float array of a mapping / SliceDict); token ids and text are left alone.
    ``where`` names the column or key of the first bad row ("" for a bare array). The one check
    of non-finite pools, used by the strategies and by :class:`skrisk.active.ActiveLearner`.
    """
    if isinstance(X, pd.Series):
        X = X.to_frame()
    if isinstance(X, pd.DataFrame):
        cols = X.select_dtypes(include="floating")
        parts = [(f"column {c!r}", cols[c].to_numpy()) for c in cols.columns]
    elif isinstance(X, Mapping):
        parts = [(f"key {k!r}", v) for k, v in X.items()]
    elif isinstance(X, (list, tuple)):
        return None
    else:
        parts = [("", X)]
    bad_rows: np.ndarray | None = None
    first_where = ""
    for where, v in parts:
        if sp.issparse(v):
            v = v.tocsr()
            if v.dtype.kind != "f" or np.isfinite(v.data).all():
                continue
            rows = np.zeros(v.shape[0], dtype=bool)
            rows[np.repeat(np.arange(v.shape[0]), np.diff(v.indptr))[~np.isfinite(v.data)]] = True
        else:
            a = v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)
            if a.dtype.kind != "f" or a.ndim == 0 or a.shape[0] == 0:
                continue
            rows = ~np.isfinite(a.reshape(a.shape[0], -1)).all(axis=1)
            if rows.any() and not where and a.ndim == 2:  # a bare matrix: name the column
                where = f"column {int(np.flatnonzero(~np.isfinite(a[np.flatnonzero(rows)[0]]))[0])}"
        if rows.any():
            if bad_rows is None or np.flatnonzero(rows)[0] < np.flatnonzero(bad_rows)[0]:
                first_where = where
            bad_rows = rows if bad_rows is None else (bad_rows | rows)
    if bad_rows is None:
        return None
    return int(bad_rows.sum()), int(np.flatnonzero(bad_rows)[0]), first_where
