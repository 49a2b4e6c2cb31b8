"""Column types of record attributes: inferred from the values, standardised before comparison.

A type says what an attribute holds (a person's given name, a date, a phone number ...) and so
how its values are standardised (dates in mixed formats to one calendar date, phone numbers to
their digits, postcodes padded, accents and case folded, missing-value tokens as missing) and
compared (:class:`~skrisk.data.SimilarityFeatures` with ``types``). A column's type is a small
JSON-able dictionary, ``{"type": "date", "order": "dmy", "missing": ["na", ...]}``, stored with a
model and checked when it is read back.

Inference reads the column's name and its distinct values: names need a name-like column name
(``first_name``, ``surname`` ...) and letter-only values; dates, phone numbers and e-mail
addresses are recognised from most values (80 %) alone; postcodes and categorical place columns
need their column name too. Everything else is ``"text"``, compared as before (the generic
metrics), and ``"number"`` for numeric columns (the generic metrics with ``num_delta``).
"""

from __future__ import annotations

import contextvars
import json
import re
import unicodedata
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from ..exceptions import DataError

__all__ = ["COLUMN_TYPES", "infer_column_type", "check_column_type", "resolve_types", "standardise",
           "parse_dates", "phonetic_codes", "NAME_TYPES"]

#: The column types, in the order inference tries them.
COLUMN_TYPES: tuple[str, ...] = ("given_name", "family_name", "full_name", "date", "phone", "postcode", "email",
                                 "address", "number", "categorical", "text")
#: Types compared as person names.
NAME_TYPES = frozenset({"given_name", "family_name", "full_name"})
#: Tokens read as a missing value in a typed column (never in a ``text`` one, where they are data).
MISSING_TOKENS: tuple[str, ...] = ("na", "n/a", "n.a.", "nan", "null", "none", "nil", "-", "--", "?", "unknown",
                                   "missing", "0000-00-00", "00/00/0000", "00.00.0000", "00000000")
_DATE_ORDERS = ("dmy", "mdy", "unknown")
# Share of a column's distinct values that must look like the type for it to be inferred.
_SHARE = 0.8
# Distinct values read by inference (the first ones of the column, deterministic).
_INFER_VALUES = 50_000

_GIVEN_HINT = re.compile(r"(^|_|\b)(first|given|fore|christian|middle)[_ ]?(name)?s?($|_)|^(f|g)name$|^vorname$|^prenom$")
_FAMILY_HINT = re.compile(r"(^|_|\b)(last|sur|family|maiden)[_ ]?(name)?s?($|_)|^(l|s)name$|^nachname$|^nom$")
_FULL_HINT = re.compile(r"^(full[_ ]?name|person[_ ]?name|customer[_ ]?name|patient[_ ]?name|contact[_ ]?name|"
                        r"client[_ ]?name|member[_ ]?name)$")
_POSTCODE_HINT = re.compile(r"(zip|post|postal|plz|pin)[_ ]?(code)?|^cap$|^zip$")
_PLACE_HINT = re.compile(r"^(city|town|suburb|state|country|county|region|province|district|gender|sex|"
                         r"birth[_ ]?place|place[_ ]?of[_ ]?birth)$")
_PHONE_HINT = re.compile(r"phone|tel|mobile|fax|cell")
_ADDRESS_HINT = re.compile(r"addr|street|^road$|line[_ ]?1")
_ADDRESS_VALUE = re.compile(r"^(?=.*\d)(?=.*[^\W\d_]{2}).*\s")
# street words and their usual abbreviations (standardised addresses use the short form)
_STREET_WORDS = {"street": "st", "road": "rd", "avenue": "ave", "boulevard": "blvd", "drive": "dr", "lane": "ln",
                 "place": "pl", "court": "ct", "square": "sq", "terrace": "ter", "highway": "hwy", "north": "n",
                 "south": "s", "east": "e", "west": "w", "apartment": "apt", "suite": "ste"}
_ADDRESS_PUNCT = re.compile(r"[^\w ]+|_")
_NON_DIGITS = re.compile(r"\D+")

_NAME_VALUE = re.compile(r"^[^\W\d_]+(?:[ '\-.][^\W\d_]+)*\.?$")
_EMAIL_VALUE = re.compile(r"^[^@\s]+@[^@\s]+\.[^\W\d_]{2,}$")
_PHONE_VALUE = re.compile(r"^\+?[\d\s\-().\/x]+$")
_POSTCODE_VALUE = re.compile(r"^(?=.*\d)[0-9a-z][0-9a-z \-]{1,9}$")
_NUMERIC_VALUE = re.compile(r"^\s*[$€£]?\s*[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?\s*(?:%|[a-z]{0,3}\.?)\s*$")
# dates: ISO (2001-02-03, 2001/2/3), day or month first (03/02/2001, 3.2.01 is not read: two-digit
# years are ambiguous), compact (20010203)
_ISO = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[t ].*)?$")
_DMY = re.compile(r"^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})$")
_COMPACT = re.compile(r"^(1[89]|20)(\d{2})(\d{2})(\d{2})$")


def _hint(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def check_column_type(value: object, column: str, where: str) -> dict[str, Any]:
    """A column type as a checked dictionary, or :class:`DataError` naming ``where`` and the fix.

    ``value`` is a type name (``"date"``) or a dictionary ``{"type": "date", "order": "dmy",
    "missing": [...]}``; options not given take their defaults.
    """
    if isinstance(value, str):
        value = {"type": value}
    if not isinstance(value, Mapping) or "type" not in value:
        raise DataError(f"{where}: the type of column {column!r} is {value!r}, not a type name or a "
                        f"{{'type': ...}} entry; use one of {list(COLUMN_TYPES)}.")
    kind = value["type"]
    if kind not in COLUMN_TYPES:
        raise DataError(f"{where}: column {column!r} has the unknown type {kind!r}; the types are "
                        f"{list(COLUMN_TYPES)} (e.g. {column}=date).")
    allowed = {"type", "missing"} | ({"order"} if kind == "date" else set()) | ({"length"} if kind == "postcode" else set())
    extra = sorted(set(value) - allowed)
    if extra:
        raise DataError(f"{where}: the type of column {column!r} has the unknown option(s) {extra}; a "
                        f"{kind!r} column takes {sorted(allowed)}.")
    out: dict[str, Any] = {"type": kind}
    missing = value.get("missing", list(MISSING_TOKENS) if kind != "text" else [])
    if (not isinstance(missing, (list, tuple)) or len(missing) > 100
            or not all(isinstance(t, str) and len(t) <= 50 for t in missing)):
        raise DataError(f"{where}: the missing-value tokens of column {column!r} must be a list of at most "
                        f"100 short texts, got {str(missing)[:80]}.")
    out["missing"] = sorted({t.strip().lower() for t in missing})
    if kind == "date":
        order = value.get("order", "unknown")
        if order not in _DATE_ORDERS:
            raise DataError(f"{where}: the date order of column {column!r} is {order!r}, not one of "
                            f"{list(_DATE_ORDERS)} (day first, month first, not settled).")
        out["order"] = order
    if kind == "postcode":
        length = value.get("length")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int) or not 3 <= length <= 10):
            raise DataError(f"{where}: the postcode length of column {column!r} is {length!r}, not a whole "
                            "number from 3 to 10 (or null).")
        out["length"] = length
    return out


def _share(values: list[str], pattern: re.Pattern) -> float:
    return sum(1 for v in values if pattern.match(v)) / len(values) if values else 0.0


def _date_order(values: list[str]) -> str | None:
    """``"dmy"``/``"mdy"``/``"unknown"`` when most values read as dates, else None."""
    dated, day_first, month_first = 0, 0, 0
    for v in values:
        if _ISO.match(v) or _COMPACT.match(v):
            dated += 1
            continue
        m = _DMY.match(v)
        if m:
            dated += 1
            a, b = int(m.group(1)), int(m.group(2))
            day_first += a > 12 >= b
            month_first += b > 12 >= a
    if not values or dated / len(values) < _SHARE:
        return None
    if day_first and not month_first:
        return "dmy"
    if month_first and not day_first:
        return "mdy"
    if day_first or month_first:  # both kinds seen: the order the evidence favours by far, else unsettled
        return "dmy" if day_first >= 10 * month_first else "mdy" if month_first >= 10 * day_first else "unknown"
    return "unknown"


def infer_column_type(name: str, values: np.ndarray) -> dict[str, Any]:
    """The type of one column from its name and its distinct normalised values (``""`` missing).

    Parameters
    ----------
    name : str
        The column's name (hints such as ``surname`` or ``zip``).
    values : ndarray of str
        Its distinct values, lower-cased and stripped (as :func:`normalise_text` gives them).

    Returns
    -------
    dict
        A checked type (:func:`check_column_type`).

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.data._types import infer_column_type
    >>> infer_column_type("dob", np.array(["1987-03-12", "31/01/1990", "02/03/1991"]))["order"]
    'dmy'
    >>> infer_column_type("surname", np.array(["smith", "o'brien", "müller"]))["type"]
    'family_name'
    >>> infer_column_type("title", np.array(["sony camera", "canon eos"]))["type"]
    'text'
    """
    hint = _hint(name)
    tokens = set(MISSING_TOKENS)
    vals = [str(v) for v in values[:_INFER_VALUES] if v and str(v) not in tokens]
    if not vals:
        return check_column_type("text", name, "inference")
    order = _date_order(vals)
    if order is not None:
        return check_column_type({"type": "date", "order": order}, name, "inference")
    if _share(vals, _EMAIL_VALUE) >= _SHARE:
        return check_column_type("email", name, "inference")
    phone_like = [v for v in vals if _PHONE_VALUE.match(v) and 7 <= sum(c.isdigit() for c in v) <= 15]
    if len(phone_like) >= _SHARE * len(vals) and (_PHONE_HINT.search(hint) or _share(vals, re.compile(r".*\D")) >= 0.5):
        return check_column_type("phone", name, "inference")
    if _POSTCODE_HINT.search(hint) and _share(vals, _POSTCODE_VALUE) >= _SHARE:
        digits = [len(v) for v in vals if v.isdigit()]
        length = None
        if len(digits) >= _SHARE * len(vals):
            lengths, counts = np.unique(digits, return_counts=True)
            length = int(lengths[np.argmax(counts)]) if 3 <= lengths[np.argmax(counts)] <= 10 else None
        return check_column_type({"type": "postcode", "length": length}, name, "inference")
    if _ADDRESS_HINT.search(hint) and _share(vals, _ADDRESS_VALUE) >= 0.6:
        return check_column_type("address", name, "inference")
    names = _share(vals, _NAME_VALUE)
    if names >= 0.9:
        if _GIVEN_HINT.search(hint):
            return check_column_type("given_name", name, "inference")
        if _FAMILY_HINT.search(hint):
            return check_column_type("family_name", name, "inference")
        if _FULL_HINT.match(hint):
            return check_column_type("full_name", name, "inference")
        if _PLACE_HINT.match(hint):
            return check_column_type("categorical", name, "inference")
    if _share(vals, _NUMERIC_VALUE) >= 0.9:
        return check_column_type("number", name, "inference")
    return check_column_type("text", name, "inference")


def resolve_types(types: object, attributes: list[str], values: Mapping[str, np.ndarray],
                  where: str = "types") -> dict[str, dict[str, Any]]:
    """Every attribute's type: ``types`` (``"auto"``, or a mapping of overrides) over the inferred ones.

    Raises :class:`DataError` for an override naming an unknown column or type.
    """
    overrides: Mapping[str, object] = {} if types == "auto" else types  # type: ignore[assignment]
    if not isinstance(overrides, Mapping):
        raise DataError(f"{where} must be 'auto', None or a mapping of column to type, got {type(types).__name__}.")
    unknown = [c for c in overrides if c not in attributes]
    if unknown:
        raise DataError(f"{where} names the column {unknown[0]!r}, which is not an attribute of the table "
                        f"(the attributes: {attributes[:12]}); give one of them (e.g. --types "
                        f"{attributes[0]}=text).")
    out = {}
    for a in attributes:
        if a in overrides:
            out[a] = check_column_type(overrides[a], a, where)
        else:
            out[a] = infer_column_type(a, values[a])
    return out


# ---------------------------------------------------------------------------- standardisation
def _fold(text: str) -> str:
    """Accents removed (NFKD, combining marks dropped), case folded, whitespace collapsed."""
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(text.casefold().split())


_NAME_PUNCT = re.compile(r"[^\w ]+|[\d_]+")


def parse_dates(values: np.ndarray, order: str) -> np.ndarray:
    """``(year, month, day)`` of each text, int32, ``-1`` where it does not read as a date.

    Fields are kept when each lies in its range (year 1000-2999, month 1-12, day 1-31) even if
    the calendar has no such day (``31/02/2001`` keeps its fields: a typo of a real date); a
    day-or-month-first value of an ``"unknown"`` order column is read day first.
    """
    out = np.full((len(values), 3), -1, dtype=np.int32)
    if not len(values):
        return out
    v = pd.Series(values, dtype=object)
    fields = np.full((len(values), 3), -1, dtype=np.int64)
    for pattern, cols in ((_ISO, (0, 1, 2)), (_COMPACT, None), (_DMY, None)):
        todo = fields[:, 0] < 0
        if not todo.any():
            break
        got = v[todo].str.extract(pattern.pattern)
        ok = got.notna().all(axis=1).to_numpy()
        if not ok.any():
            continue
        g = got[ok].astype(np.int64).to_numpy()
        if pattern is _ISO:
            ymd = g
        elif pattern is _COMPACT:
            ymd = np.column_stack([g[:, 0] * 100 + g[:, 1], g[:, 2], g[:, 3]])
        else:  # day or month first
            first, second = (g[:, 1], g[:, 0]) if order == "mdy" else (g[:, 0], g[:, 1])
            ymd = np.column_stack([g[:, 2], second, first])
        fields[np.flatnonzero(todo)[ok]] = ymd
    valid = ((fields[:, 0] >= 1000) & (fields[:, 0] <= 2999) & (fields[:, 1] >= 1) & (fields[:, 1] <= 12)
             & (fields[:, 2] >= 1) & (fields[:, 2] <= 31))
    out[valid] = fields[valid]
    return out


_SOUNDEX = {c: d for letters, d in (("bfpv", "1"), ("cgjkqsxz", "2"), ("dt", "3"), ("l", "4"), ("mn", "5"),
                                      ("r", "6")) for c in letters}


def _soundex(word: str) -> str:
    """American Soundex of a word of ``a``-``z`` letters (others ignored): ``robert`` -> ``r163``."""
    word = "".join(c for c in word if "a" <= c <= "z")
    if not word:
        return ""
    coded, prev = [], _SOUNDEX.get(word[0], "")
    for c in word[1:]:
        code = _SOUNDEX.get(c)
        if code is None:
            if c not in "hw":  # a vowel separates equal codes; h and w do not
                prev = ""
            continue
        if code != prev:
            coded.append(code)
        prev = code
    return (word[0] + "".join(coded) + "000")[:4]


def phonetic_codes(values: np.ndarray) -> np.ndarray:
    """The Soundex code of every word of each (standardised) name, joined by spaces (``""`` for none)."""
    out = np.empty(len(values), dtype=object)
    out[:] = [" ".join(filter(None, (_soundex(w) for w in v.split()))) for v in values]
    return out


_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("skrisk_standardised", default=None)


@contextmanager
def shared_standardisation() -> Iterator[None]:
    """Within the block, :func:`standardise` keeps what it computed, per column type, and
    computes only values it has not seen (blocking and the encoding of the same tables
    standardise the same values). Standardisation is value by value, so the results are the
    same; what is kept is released when the block ends (the outermost one, when blocks nest: an
    inner block shares the outer one's values).
    """
    if _SHARED.get() is not None:
        yield
        return
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def standardise(values: np.ndarray, column_type: Mapping[str, Any]) -> np.ndarray:
    """The standardised text of each distinct normalised value (``""``: missing); within
    :func:`shared_standardisation`, each value is standardised once.

    Names, categories and e-mail addresses lose accents, case and stray whitespace (names also
    punctuation); dates become ISO ``yyyy-mm-dd`` (a value that does not read as a date keeps its
    text); phone numbers their last ten digits (country prefixes dropped); postcodes lose spaces
    and dashes and, for a digit-only column of known length, get back their leading zeros. The
    column's missing-value tokens become ``""``.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.data._types import standardise
    >>> standardise(np.array(["12/03/1987", "na", "1987-03-12"], dtype=object), {"type": "date", "order": "dmy",
    ...             "missing": ["na"]}).tolist()
    ['1987-03-12', '', '1987-03-12']
    >>> standardise(np.array(["+1 (212) 555-0143"], dtype=object), {"type": "phone", "missing": []}).tolist()
    ['2125550143']
    """
    shared = _SHARED.get()
    if shared is None or not len(values):
        return _standardise(values, column_type)
    key = json.dumps(column_type, sort_keys=True, default=str)
    seen = shared.get(key)
    values = np.asarray(values, dtype=object)
    if seen is None:
        out = _standardise(values, column_type)
        _keep(shared, key, values, out)
        return out
    index, known = seen
    at = index.get_indexer(pd.Index(values, dtype=object))
    new = at < 0
    out = np.empty(len(values), dtype=object)
    out[~new] = known[at[~new]]
    if new.any():
        out[new] = _standardise(values[new], column_type)
        _keep(shared, key, values[new], out[new], seen)
    return out


def _keep(shared: dict, key: str, values: np.ndarray, out: np.ndarray, seen: tuple | None = None) -> None:
    """Add (value, standardised value) pairs to the shared ones, each value once."""
    idx = pd.Index(values, dtype=object)
    first = ~idx.duplicated()
    idx, out = idx[first], out[first]
    if seen is not None:
        idx, out = seen[0].append(idx), np.concatenate([seen[1], out])
    shared[key] = (idx, out)


def _standardise(values: np.ndarray, column_type: Mapping[str, Any]) -> np.ndarray:
    kind = column_type["type"]
    missing = list(column_type.get("missing", ()))
    v = pd.Series(values, dtype=object)
    gone = (v == "") | v.isin(missing) if missing else v == ""
    if kind in ("text", "number"):
        out = v.to_numpy(dtype=object, copy=True)
        out[gone.to_numpy()] = ""
        return out
    if kind in NAME_TYPES or kind in ("categorical", "email", "postcode", "address"):
        if not all(x.isascii() for x in v):
            v = v.map(_fold)
        else:
            v = v.str.lower()
    if kind in NAME_TYPES:
        v = v.str.replace(r"['’`.]", "", regex=True).str.replace(r"[^\w ]+|[\d_]+", " ", regex=True)
        v = v.str.split().str.join(" ")
    elif kind in ("categorical", "email"):
        v = v.str.split().str.join(" ")
    elif kind == "address":
        words = _STREET_WORDS  # one pass per value: punctuation to spaces, street words shortened
        v = pd.Series([" ".join([words.get(w, w) for w in _ADDRESS_PUNCT.sub(" ", x).split()]) for x in v],
                      index=v.index, dtype=object)
    elif kind == "phone":
        digits = [_NON_DIGITS.sub("", x) for x in v]
        v = pd.Series([(d[2:] if d.startswith("00") else d)[-10:] for d in digits], index=v.index, dtype=object)
    elif kind == "postcode":
        v = v.str.replace(r"[\W_]+", "", regex=True)
        length = column_type.get("length")
        if length:
            v = v.where(~v.str.isdigit(), v.str.zfill(length))
    out = v.to_numpy(dtype=object, copy=True)
    out[gone.to_numpy()] = ""
    if kind == "date":
        ymd = parse_dates(out, column_type.get("order", "unknown"))
        ok = np.flatnonzero(ymd[:, 0] > 0)
        out[ok] = [f"{y:04d}-{m:02d}-{d:02d}" for y, m, d in ymd[ok]]
    return out
