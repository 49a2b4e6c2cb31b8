"""Comparisons of value pairs: the numbers of a text and the typed comparisons (``TYPED_METRICS``).

:class:`~skrisk.data.SimilarityFeatures` calls these on the distinct values of each attribute; every
function is vectorised over the pairs.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

# The encoded attributes given to these functions are those of SimilarityFeatures (``_Encoded``:
# ``text``, ``missing``, ``phonetic``, ``ymd``, ``rarity``), typed Any to keep the imports one way.

# years_apart is capped here (a difference of 10 years or more reads as 10)
_MAX_YEARS = 10
# digits of the phone-number ends compared by last_digits, and of the postcode start by prefix
_LAST_DIGITS = 7
_PREFIX = 3

#: Value of a similarity feature when either side of the pair is missing.
MISSING = -1.0

# Number tokens: digit runs with an optional decimal part (the digits of model codes such as
# dsc-w120 count too, so formatting variants like "310/246-1501" and "310-246-1501" agree).
_NUMBER_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL_RE = re.compile(r"^\d+\.\d+$")
# A numeric-looking value: optional currency, a number, optional unit/percent.
_NUMERIC_VALUE_RE = (
    r"^\s*[$€£]?\s*[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?\s*(?:%|[a-z]{0,3}\.?)\s*$"
)
# The first number of a value, with an optional exponent ("1e5", "2.5e-3")
_NUMBER_RE = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
#: Share of non-missing values that must look numeric for ``num_delta`` to be produced.
_NUMERIC_SHARE = 0.9


def _number_tokens(text: str) -> list[str]:
    """Number tokens of a text, canonicalised ("1,299.00" -> "1299", "5.50" -> "5.5", "07" -> "07")."""
    text = _THOUSANDS_RE.sub("", text)
    out = []
    for tok in _NUMBER_TOKEN_RE.findall(text):
        if _DECIMAL_RE.match(tok):
            tok = tok.rstrip("0").rstrip(".")
        out.append(tok)
    return out


def _parse_numbers(values: np.ndarray) -> np.ndarray:
    """First number in each string (thousands separators removed, exponents read); NaN where
    there is none, +-inf where it exceeds float64."""
    s = pd.Series(values, dtype=object).str.replace(_THOUSANDS_RE, "", regex=True)
    found = s.str.extract(_NUMBER_RE, expand=False).to_numpy(dtype=object)
    out = np.full(len(found), np.nan)
    has = np.flatnonzero(pd.notna(found))
    if len(has):
        out[has] = np.asarray(found[has].astype(str)).astype(np.float64)
    return out


def _num_delta(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``|x - y| / max(|x|, |y|)`` (0 when both are 0); MISSING where either has no number.

    Values beyond float64 (+-inf) differ from any other value by 1 and equal their own infinity.
    """
    denom = np.maximum(np.abs(x), np.abs(y))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        col = np.where(denom > 0, np.abs(x - y) / denom, 0.0)
        huge = ~np.isfinite(col) & np.isfinite(x) & np.isfinite(y)
        if huge.any():  # the difference overflowed: compare the scaled values
            col[huge] = np.abs(x[huge] / denom[huge] - y[huge] / denom[huge])
    inf = np.isinf(x) | np.isinf(y)
    col[inf] = np.where(x[inf] == y[inf], 0.0, 1.0)
    col[np.isnan(x) | np.isnan(y)] = MISSING
    return col


def _looks_numeric(values: np.ndarray) -> bool:
    vals = pd.Series(values, dtype=object)
    vals = vals[vals != ""]
    if len(vals) == 0:
        return False
    return bool(vals.str.match(_NUMERIC_VALUE_RE).mean() >= _NUMERIC_SHARE)


_TYPED_ONLY = frozenset({"exact", "exact_tf", "phonetic", "date_fields", "day_month_swap", "years_apart",
                         "last_digits", "prefix", "domain"})


def _ends(texts: np.ndarray, k: int, last: bool) -> np.ndarray:
    """The first (or last) ``k`` characters of each text, ``""`` for a text shorter than ``k``."""
    s = pd.Series(texts, dtype=object)
    part = s.str[-k:] if last else s.str[:k]
    return np.where(s.str.len().to_numpy() >= k, part.to_numpy(dtype=object), "")


def _typed_metric(m: str, L: Any, R: Any, li: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """A comparison of typed values (``TYPED_METRICS``) for the value pairs ``(L[li], R[ri])``;
    the caller sets the pairs with a missing value to ``MISSING``."""
    if m in ("exact", "exact_tf"):
        eq = (L.text[li] == R.text[ri]).astype(np.float64)
        return eq if m == "exact" else eq * np.minimum(L.rarity[li], R.rarity[ri])
    if m == "phonetic":
        lp, rp = L.phonetic[li], R.phonetic[ri]
        return ((lp == rp) & (lp != "")).astype(np.float64)
    if m in ("date_fields", "day_month_swap", "years_apart"):
        a, b = L.ymd[li], R.ymd[ri]
        ok = (a[:, 0] > 0) & (b[:, 0] > 0)
        if m == "date_fields":
            return np.where(ok, (a == b).sum(axis=1) / 3.0, 0.0)
        if m == "day_month_swap":
            swap = (a[:, 0] == b[:, 0]) & (a[:, 1] == b[:, 2]) & (a[:, 2] == b[:, 1]) & (a[:, 1] != a[:, 2])
            return (ok & swap).astype(np.float64)
        years = np.minimum(np.abs(a[:, 0] - b[:, 0]), _MAX_YEARS) / _MAX_YEARS
        return np.where(ok, years, 1.0)
    # last_digits, prefix, domain: the parts were taken of each distinct value at encoding
    lt, rt = L.parts[m][li], R.parts[m][ri]
    return ((lt == rt) & (lt != "")).astype(np.float64)


#: The typed metrics that compare a part of each value (see :func:`_value_parts`).
_PART_METRICS = ("last_digits", "prefix", "domain")


def _value_parts(m: str, texts: np.ndarray) -> np.ndarray:
    """The part of each distinct standardised value that the metric ``m`` compares (``""``: none):
    the last 7 digits of a phone, the first 3 characters of a postcode, an e-mail's domain."""
    if m == "domain":
        return pd.Series(texts, dtype=object).str.partition("@")[2].to_numpy(dtype=object)
    k, last = (_LAST_DIGITS, True) if m == "last_digits" else (_PREFIX, False)
    return _ends(texts, k, last)


def _name_swap(gl: Any, gr: Any, fl: Any, fr: Any, gli: np.ndarray, gri: np.ndarray,
               fli: np.ndarray, fri: np.ndarray, workers: int) -> np.ndarray:
    """``min(JW(given_l, family_r), JW(family_l, given_r))`` of each pair, ``MISSING`` where a name is missing."""
    out = np.full(len(gli), MISSING, dtype=np.float64)
    ok = np.flatnonzero(~(gl.missing[gli] | gr.missing[gri] | fl.missing[fli] | fr.missing[fri]))
    if len(ok):
        a = process.cpdist(gl.text[gli[ok]], fr.text[fri[ok]], scorer=JaroWinkler.normalized_similarity,
                           workers=workers)
        b = process.cpdist(fl.text[fli[ok]], gr.text[gri[ok]], scorer=JaroWinkler.normalized_similarity,
                           workers=workers)
        out[ok] = np.minimum(a, b)
    return out
