"""Blocking new records against records already matched, from what an index keeps of them.

An incremental run (:mod:`skrisk.matching._incremental`) blocks its new records against the
known records of an earlier run without holding those as a table: the index keeps, per known
record, its *identical key* (:func:`identical_keys`, a 64-bit hash of its normalised values), the
word counts of the ``tokens`` rule and its key of each pass of a ``typed`` rule
(:func:`typed_keys`), and gives the values of other rules' columns on request.
:func:`block_new_against_known` gives the pairs that ``block(new, known, rules, identical=True,
one_way=True)`` gives (a hash collision can only add a candidate pair, which is then scored).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from ._blocking import _Groups, _groups_of, _normalise_rules, _recordlinkage_pairs, _sorted_unique, _token_pairs, _top_k
from ._text import normalise_text
from ._token_counts import TokenCounts, tfidf_of_counts, token_counts
from ._typed_blocking import _between, _key, typed_pairs, typed_passes

#: The key of a record with no value at all (never identical to another record).
NO_KEY = np.uint64(0)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def hash_probe() -> str:
    """The keys of a fixed set of records, as text: an index written with another hash function
    (another pandas) is told apart by it."""
    probe = pd.DataFrame({"a": ["Anna", None, "12 Main St"], "b": ["x", "", "ß"]})
    return ",".join(str(int(k)) for k in identical_keys(probe, ["a", "b"]))


def identical_keys(table: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """Each record's identical key over ``cols`` (uint64): equal for records whose normalised
    values are all equal, :data:`NO_KEY` for a record without any value (each distinct value
    normalised and hashed once, :func:`pandas.util.hash_array`)."""
    key = np.zeros(len(table), dtype=np.uint64)
    empty = np.ones(len(table), dtype=bool)
    for c in cols:
        codes, uniq = pd.factorize(table[c].astype(object), use_na_sentinel=False)
        norm = np.array([normalise_text(v) for v in uniq], dtype=object)
        h = pd.util.hash_array(norm, categorize=False) if len(norm) else np.zeros(0, np.uint64)
        empty &= (norm == "")[codes] if len(codes) else empty
        with np.errstate(over="ignore"):
            key = (key ^ h[codes]) * _MIX + np.uint64(1)  # order-sensitive, wraps around
    key[key == NO_KEY] = np.uint64(1)
    key[empty] = NO_KEY
    return key


def _groups(new_keys: np.ndarray, known_keys: np.ndarray) -> _Groups:
    """The identical-record groups of the new records (left) and the known ones (right), as
    ``_identical_groups`` makes them from the values."""
    keys = np.concatenate([new_keys, known_keys])
    codes, _ = pd.factorize(keys)
    alone = np.flatnonzero(keys == NO_KEY)
    codes[alone] = codes.max(initial=-1) + 1 + np.arange(len(alone))  # no twin
    return _groups_of(codes, len(new_keys), dedup=False)


def _tokens_one_way(cols: list[str], params: dict, new: pd.DataFrame, known: TokenCounts, rows: np.ndarray,
                    threads: int) -> tuple[np.ndarray, np.ndarray]:
    """``_token_pairs(cols, params, new, known.iloc[rows], one_way=True)`` from the known records'
    word counts (their ids are not looked at)."""
    counts = known.counts if len(rows) == known.counts.shape[0] else known.counts[rows]
    mats = tfidf_of_counts([token_counts(new, cols), TokenCounts(cols, pd.Index([]), known.vocab, counts)],
                           [False, counts is known.counts])
    if mats is None:  # no token at all
        return np.empty(0, np.intp), np.empty(0, np.intp)
    k, thr = int(params["top_k"]), float(params["min_similarity"])
    how = (float(params["budget"]) * mats[0].shape[0], int(params["prefix"]), int(params["rescore"]))
    return _top_k(mats[0], mats[1], k, thr, *how, dedup=False, threads=threads)


def typed_rule_passes(rules: Any, attributes: list[str]) -> tuple[list[tuple[str, ...]], dict] | None:
    """The passes whose keys an index keeps of the first ``typed`` rule of ``rules`` over tables of
    ``attributes``, and that rule's types; None without such a rule (see :func:`kept_typed_passes`)."""
    if rules is None:
        return None
    frame = pd.DataFrame({a: pd.Series(dtype=object) for a in attributes})
    try:
        parsed = _normalise_rules(rules, frame, frame)
    except (ValueError, TypeError, KeyError):  # DataError is a ValueError
        return None
    for method, cols, params in parsed:
        if method == "typed" and isinstance(params.get("types"), dict):
            passes = kept_typed_passes(list(cols), params["types"])
            return None if passes is None else (passes, params["types"])
    return None


def kept_typed_passes(cols: list[str], types: dict) -> list[tuple[str, ...]] | None:
    """The passes of a ``typed`` rule whose keys an index keeps per record (None: one of them is
    an ``:id`` key, decided over all the records, so none is kept)."""
    passes = typed_passes(types, [c for c in cols if c in types])
    if not passes or any(k.endswith(":id") for p in passes for k in p):
        return None
    return passes


def typed_keys(table: pd.DataFrame, passes: list[tuple[str, ...]], types: dict) -> np.ndarray:
    """Each record's key of each ``typed`` pass (``len(passes)`` x records, uint64): a hash of the
    pass's derived keys, :data:`NO_KEY` where one of them is missing (the record takes no part)."""
    out = np.zeros((len(passes), len(table)), dtype=np.uint64)
    cache: dict = {}
    hashed: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # a key of several passes hashed once
    for i, keys in enumerate(passes):
        h = np.full(len(table), np.uint64(i + 1))
        missing = np.zeros(len(table), dtype=bool)
        for k in keys:
            if k not in hashed:
                codes, uniq = pd.factorize(pd.Series(_key(table, k, types, cache), dtype=object))
                uniq = np.asarray(uniq, dtype=object)
                hashed[k] = (pd.util.hash_array(uniq, categorize=False)[codes], (uniq == "")[codes])
            key_hash, key_missing = hashed[k]
            missing |= key_missing
            with np.errstate(over="ignore"):
                h = (h ^ key_hash) * _MIX + np.uint64(1)
        h[h == NO_KEY] = np.uint64(1)
        h[missing] = NO_KEY
        out[i] = h
    return out


def _typed_against_known(params: dict, passes: list[tuple[str, ...]], mine: np.ndarray, kept: np.ndarray,
                         rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``typed_pairs(cols, params, new, known)`` from the pass keys of both (``mine``: passes x
    new records; ``kept``: passes x index rows; ``rows``: the index rows of the known records
    blocked): per pass, only the known records whose key a new record holds are looked at."""
    max_block = int(params["max_block"])
    out_l, out_r = [np.zeros(0, np.intp)], [np.zeros(0, np.intp)]
    for i in range(len(passes)):
        hn = mine[i]
        targets = np.unique(hn[hn != NO_KEY])
        if not len(targets):
            continue
        hk = kept[i][rows]
        at = np.minimum(np.searchsorted(targets, hk), len(targets) - 1)
        k_pos = np.flatnonzero((targets[at] == hk) & (hk != NO_KEY))
        codes, _ = pd.factorize(np.concatenate([hn, hk[k_pos]]))
        codes = codes.astype(np.int64)
        codes[:len(hn)][hn == NO_KEY] = -1
        li, ri = _between(codes[:len(hn)], codes[len(hn):], max_block)
        out_l.append(li)
        out_r.append(k_pos[ri])
    return np.concatenate(out_l), np.concatenate(out_r)


def block_new_against_known(
    new: pd.DataFrame, known_ids: np.ndarray, known_keys: np.ndarray, rules: Any, *,
    attributes: list[str], known_tokens: TokenCounts | None,
    known_columns: Callable[[list[str], np.ndarray], pd.DataFrame],
    threads: int = 1, known_typed: tuple[list, dict, np.ndarray, np.ndarray] | None = None,
    new_typed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs of a new record and a known one: (rows of ``new``, positions among the known).

    ``known_keys`` are the known records' :func:`identical_keys` over ``attributes``;
    ``known_tokens`` their word counts for the ``tokens`` rule (over its columns, in the order of
    ``known_ids``); ``known_typed`` ``(passes, types, keys, rows)``: the :func:`typed_keys` of
    the passes of a ``typed`` rule with these types, per pass and index row, and the index rows of
    the known records;
    ``new_typed`` the new records' keys of those passes (passes x records; None: derived here);
    ``known_columns(cols, positions)`` the values of other rules' columns, a frame indexed by the
    ids at ``positions``.
    """
    parsed = _normalise_rules(rules, new, new)
    groups = _groups(identical_keys(new, attributes), known_keys)
    lpos, rpos = groups.left_reps, groups.right_reps
    sub_l = new if len(lpos) == len(new) else new.iloc[lpos]
    n_known = len(known_ids)
    codes = []
    for method, cols, params in parsed:
        if method == "tokens" and known_tokens is not None and known_tokens.columns == list(cols):
            li, ri = _tokens_one_way(list(cols), params, sub_l, known_tokens, rpos, threads)
        elif method == "typed" and known_typed is not None and params["types"] == known_typed[1] \
                and kept_typed_passes(cols, params["types"]) == known_typed[0]:
            passes, types, keys, rows = known_typed
            mine = typed_keys(new, passes, types) if new_typed is None else new_typed
            li, ri = _typed_against_known(params, passes, mine[:, lpos], keys, rows[rpos])
        else:
            sub_r = known_columns(list(cols), rpos)
            if method == "tokens":
                li, ri = _token_pairs(cols, params, sub_l, sub_r, threads, one_way=True)
            elif method == "typed":
                li, ri = typed_pairs(cols, params, sub_l, sub_r)
            else:
                li, ri = _recordlinkage_pairs(method, cols, params, sub_l, sub_r, len(sub_l) + len(sub_r))
        li, ri = groups.spread(lpos[li], rpos[ri])
        codes.append(li.astype(np.int64) * n_known + ri)
    li, ri = groups.identical_pairs()
    codes.append(li.astype(np.int64) * n_known + ri)
    all_codes = _sorted_unique(np.concatenate(codes))
    return np.divmod(all_codes, n_known) if n_known else (all_codes, all_codes)
