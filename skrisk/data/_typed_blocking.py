"""The ``typed`` blocking method: several passes of exact keys derived from the column types.

Each pass joins the records that agree on a tuple of standardised keys (a person's family name
and date of birth, the first letters of both names with the birth year, the postcode with the
given name, the phone number, an identifier number ...), as a configured Splink's blocking rules do;
a number column pairs with the postcode and with the date, and on its own when at least a quarter
of its filled values are distinct (an identifier such as a social security number); the passes are
united by :func:`skrisk.data.block`. A key value held by more than ``max_block`` records (of
one side) pairs none of them in that pass: the cost stays linear in the tables, and the other
passes still pair those records on rarer keys.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..exceptions import DataError
from ._text import normalise_text
from ._types import NAME_TYPES, check_column_type, phonetic_codes, standardise

__all__ = ["typed_passes", "typed_pairs", "check_typed_params", "has_typed_keys", "table_types",
           "person_rules", "describe_types"]

_DEFAULT_MAX_BLOCK = 20
# a number column is an identifier (a pass of its own) when this share of its filled values are distinct
_ID_SHARE = 0.25
_STRONG = ("given_name", "family_name", "full_name", "date", "phone", "postcode", "email")


def _first(types: Mapping[str, Mapping[str, Any]], kind: str, cols: list[str]) -> str | None:
    return next((c for c in cols if types[c]["type"] == kind), None)


def table_types(left: pd.DataFrame, right: pd.DataFrame | None, types: object = "auto",
                where: str = "types") -> dict[str, dict[str, Any]]:
    """Each shared attribute's column type, inferred from both tables' distinct values, ``types`` overriding."""
    cols = [str(c) for c in left.columns if right is None or c in right.columns]
    values = {}
    for c in cols:
        parts = [left[c]] if right is None or right is left else [left[c], right[c]]
        uniq = pd.unique(pd.concat(parts, ignore_index=True).to_numpy(dtype=object))
        norm = np.unique(np.array([normalise_text(v) for v in uniq], dtype=object))
        values[c] = norm[norm != ""]
    from ._types import resolve_types

    return resolve_types(types, cols, values, where=where)


def person_rules(types: Mapping[str, Mapping[str, Any]]) -> list | None:
    """The default blocking of a person table (the ``typed`` method) when the types hold a person's
    name beside a date, postcode, phone or e-mail; None (the ``tokens`` default) otherwise."""
    kinds = {t["type"] for t in types.values()}
    if kinds & NAME_TYPES and kinds & {"date", "postcode", "phone", "email"}:
        return [("typed", None, {"types": {c: dict(t) for c, t in types.items()}})]
    return None


def describe_types(types: Mapping[str, Mapping[str, Any]]) -> str:
    """The types in one line: ``given_name=given_name, dob=date (day first), ...``."""
    order = {"dmy": " (day first)", "mdy": " (month first)", "unknown": " (day or month first: not settled)"}
    return ", ".join(f"{c}={t['type']}{order.get(t.get('order'), '') if t['type'] == 'date' else ''}"
                     for c, t in types.items())


def has_typed_keys(types: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether the types give the ``typed`` method at least one pass (two typed keys, or a phone or e-mail)."""
    return bool(typed_passes(types, list(types)))


def typed_passes(types: Mapping[str, Mapping[str, Any]], cols: list[str]) -> list[tuple[str, ...]]:
    """The passes (tuples of derived key names, ``<column>`` or ``<column>:<part>``) of the columns' types."""
    g = _first(types, "given_name", cols)
    f = _first(types, "family_name", cols)
    n = _first(types, "full_name", cols)
    d = _first(types, "date", cols)
    p = _first(types, "postcode", cols)
    ph = _first(types, "phone", cols)
    e = _first(types, "email", cols)
    c = _first(types, "categorical", cols)
    a = _first(types, "address", cols)
    def key(col: str | None, part: str = "") -> str | None:
        return None if col is None else (f"{col}:{part}" if part else col)

    swapped = None if g is None or f is None else f"{g}+{f}:swapped"
    passes = [
        (key(g, "prefix3"), key(f, "prefix4")), (f, d), (g, d), (p, g), (p, f), (d, c), (key(p, "prefix3"), d),
        (key(g, "phonetic"), key(f, "phonetic"), key(p, "prefix3")), (swapped, key(d, "year")), (swapped, p),
        (n, d), (key(n, "phonetic"), d), (key(n, "phonetic"), p), (n, p), (ph,), (e,),
        (a,), (key(a, "prefix6"), c), (key(a, "prefix6"), key(p, "prefix3")),
    ]
    for num in (col for col in cols if types[col]["type"] == "number"):  # an id or a house number
        passes += [(key(num, "id"),), (num, p), (num, d)]
    out = [tuple(k) for k in passes if all(x is not None for x in k)]
    return list(dict.fromkeys(out))


def check_typed_params(params: dict, cols: list[str] | None) -> dict:
    """The ``typed`` rule's parameters checked: ``types`` (column -> type entry), ``max_block``."""
    merged = {"types": None, "max_block": _DEFAULT_MAX_BLOCK, **params}
    types = merged["types"]
    if not isinstance(types, Mapping) or not types:
        raise ValueError("typed blocking needs 'types', a mapping of column to column type "
                         "(SimilarityFeatures(types='auto').fit(...).column_types_ gives one).")
    merged["types"] = {str(c): check_column_type(t, str(c), "typed blocking") for c, t in types.items()}
    v = merged["max_block"]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not 2 <= v <= 10_000:
        raise ValueError(f"typed max_block must be an int from 2 to 10000, got {v!r}.")
    if cols is not None:
        unknown = [c for c in merged["types"] if c not in cols]
        if unknown:
            raise DataError(f"typed blocking: the types name the column {unknown[0]!r}, which the tables lack "
                            f"(their columns: {list(cols)[:12]}).")
    return merged


def _key(table: pd.DataFrame, key: str, types: Mapping[str, Mapping[str, Any]], cache: dict) -> np.ndarray:
    """The values of one derived key for every record (``""``: missing)."""
    if key in cache:
        return cache[key]
    col, _, part = key.partition(":")
    if "+" in col:  # the two names in sorted order: a swap of given and family name keeps the key
        a, b = (_key(table, x, types, cache) for x in col.split("+"))
        lo, hi = np.where(a <= b, a, b), np.where(a <= b, b, a)
        out = np.where((a != "") & (b != ""), lo.astype(object) + "|" + hi.astype(object), "")
    elif not part:
        raw = table[col].to_numpy(dtype=object)
        codes, uniq = pd.factorize(pd.Series(raw, dtype=object), use_na_sentinel=False)
        if all(type(v) is str or v is None for v in uniq):
            norm = pd.Series(uniq, dtype=object).str.strip().str.lower().fillna("").to_numpy(dtype=object)
        else:
            norm = np.array([normalise_text(v) for v in uniq], dtype=object)
        std = standardise(norm, types[col])
        if types[col]["type"] == "phone":
            std = np.where(pd.Series(std, dtype=object).str.len().to_numpy() >= 7, std, "")
        out = std[codes] if len(uniq) else np.empty(0, dtype=object)
    else:
        base = _key(table, col, types, cache)
        codes, uniq = pd.factorize(pd.Series(base, dtype=object))
        u = pd.Series(uniq, dtype=object)
        if part.startswith("prefix"):
            k = int(part[len("prefix"):])
            derived = np.where(u.str.len().to_numpy() >= k, u.str[:k].to_numpy(dtype=object), "")
        elif part == "id":  # a number column of mostly distinct values is a key by itself
            is_id = cache.get(("id-share", col))  # decided over all the records (blocking on a cluster)
            if is_id is None:
                filled = u.to_numpy(dtype=object) != ""
                n_filled = int((base != "").sum())
                is_id = bool(n_filled and filled.sum() >= _ID_SHARE * n_filled)
            derived = u.to_numpy(dtype=object) if is_id else np.full(len(u), "", dtype=object)
        elif part == "year":
            derived = np.where(u.str.match(r"^\d{4}-").to_numpy(dtype=bool), u.str[:4].to_numpy(dtype=object), "")
        else:  # phonetic
            derived = phonetic_codes(np.asarray(uniq, dtype=object)) if len(uniq) else np.empty(0, dtype=object)
        out = np.asarray(derived, dtype=object)[codes] if len(uniq) else np.empty(0, dtype=object)
    out = np.asarray(out, dtype=object)
    cache[key] = out
    return out


def _key_codes(table: pd.DataFrame, key: str, types: Mapping[str, Mapping[str, Any]], cache: dict) -> np.ndarray:
    """:func:`_key` as int64 codes (``-1``: missing), computed once per key and table."""
    name = ("codes", key)
    if name not in cache:
        values = _key(table, key, types, cache)
        codes = _shared_codes(values, values[:0])
        cache[name] = codes
    return cache[name]


def _pass_codes(keys: list[np.ndarray]) -> np.ndarray:
    """One int64 code per record for the tuple of keys (int codes, ``-1`` missing), ``-1`` where any is missing."""
    codes = np.zeros(len(keys[0]), dtype=np.int64)
    missing = np.zeros(len(keys[0]), dtype=bool)
    for k in keys:
        missing |= k < 0
        # combine as a mixed-radix number, factorised again so that it never overflows
        codes, _ = pd.factorize(codes * (int(k.max(initial=0)) + 2) + k + 1)
        codes = codes.astype(np.int64)
    codes[missing] = -1
    return codes


def _within(codes: np.ndarray, max_block: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of records (positions, ``i < j`` by position) sharing a code, blocks of at most ``max_block``."""
    keep = np.flatnonzero(codes >= 0)
    if len(keep) < 2:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    order = keep[np.argsort(codes[keep], kind="stable")]
    c = codes[order]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    sizes = np.diff(np.r_[starts, len(c)])
    size_of = np.repeat(sizes, sizes)
    start_of = np.repeat(starts, sizes)
    ok = (size_of >= 2) & (size_of <= max_block)
    pos = np.arange(len(c))
    li, ri = [], []
    for k in range(1, int(sizes[sizes <= max_block].max(initial=1))):
        at = np.flatnonzero(ok & (pos - start_of + k < size_of))
        if not len(at):
            break
        li.append(order[at])
        ri.append(order[at + k])
    if not li:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    a, b = np.concatenate(li), np.concatenate(ri)
    return np.minimum(a, b).astype(np.intp), np.maximum(a, b).astype(np.intp)


def _between(lc: np.ndarray, rc: np.ndarray, max_block: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (left, right) pair sharing a code, blocks of at most ``max_block`` records a side."""
    n = int(max(lc.max(initial=-1), rc.max(initial=-1))) + 1
    if n == 0:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    nl = np.bincount(lc[lc >= 0], minlength=n)
    nr = np.bincount(rc[rc >= 0], minlength=n)
    good = (nl >= 1) & (nr >= 1) & (nl <= max_block) & (nr <= max_block)
    lsel = np.flatnonzero((lc >= 0) & good[np.maximum(lc, 0)])
    r_order = np.flatnonzero((rc >= 0) & good[np.maximum(rc, 0)])
    r_order = r_order[np.argsort(rc[r_order], kind="stable")]
    r_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rc[r_order], minlength=n), out=r_start[1:])
    reps = nr[lc[lsel]]
    li = np.repeat(lsel, reps)
    first = np.repeat(r_start[lc[lsel]], reps)
    offset = np.arange(len(li)) - np.repeat(np.cumsum(reps) - reps, reps)
    return li.astype(np.intp), r_order[first + offset].astype(np.intp)


def _shared_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Int codes of two tables' key values in one numbering (``-1``: missing)."""
    both = np.concatenate([a, b])
    codes, uniq = pd.factorize(both)
    codes = codes.astype(np.int64)
    empty = np.flatnonzero(np.asarray(uniq, dtype=object) == "")
    if len(empty):
        codes[codes == empty[0]] = -1
    return codes


def typed_pairs(cols: list[str], params: dict, left: pd.DataFrame, right: pd.DataFrame,
                one_way: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the candidate pairs of the ``typed`` rule (``left is right``: within one table)."""
    types = params["types"]
    usable = [c for c in cols if c in types]
    passes = typed_passes(types, usable)
    if not passes:
        raise DataError(
            "typed blocking: the column types "
            f"{ {c: types[c]['type'] for c in usable} } give no blocking key (it needs two of "
            f"{list(_STRONG)}, or a phone or e-mail column); block with 'tokens' instead."
        )
    dedup = left is right
    lcache: dict = {}
    rcache: dict = lcache if dedup else {}
    out_l, out_r = [], []
    for keys in passes:
        if dedup:
            li, ri = _within(_pass_codes([_key_codes(left, k, types, lcache) for k in keys]),
                             int(params["max_block"]))
        else:
            rkeys = [_key(right, k, types, rcache) for k in keys]
            lkeys = [_key(left, k, types, lcache) for k in keys]
            both = _pass_codes([_shared_codes(a, b) for a, b in zip(lkeys, rkeys)])
            li, ri = _between(both[:len(left)], both[len(left):], int(params["max_block"]))
        out_l.append(li)
        out_r.append(ri)
    return np.concatenate(out_l), np.concatenate(out_r)
