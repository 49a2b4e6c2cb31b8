"""The one normalisation of record values: tokens, similarity features, blocking keys and the
pool scorer read it (its own module, so that blocking and the pair datasets need not import each other)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["normalise_text"]


def normalise_text(value: object) -> str:
    """A cell as lower-cased, stripped text; a missing value (None, NaN, pd.NA) is ``""``.

    Only real missing values become ``""``: the *text* ``"None"``, ``"NaN"`` or ``"NA"`` is data
    (a product may be called "NA"), as the table readers keep it. The one normalisation of
    record values: tokens, similarity features, blocking keys and the pool scorer read it.

    Parameters
    ----------
    value : object
        A table cell.

    Returns
    -------
    str

    Examples
    --------
    >>> from skrisk.data._text import normalise_text
    >>> normalise_text("  Apple iPod "), normalise_text(None), normalise_text(3.0), normalise_text("NA")
    ('apple ipod', '', '3', 'na')
    """
    if isinstance(value, str):
        return value.strip().lower()
    if value is None or (np.ndim(value) == 0 and pd.isna(value)):  # type: ignore[arg-type]
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip().lower()
