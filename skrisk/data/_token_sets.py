"""Hashed token sets of the distinct values of an attribute, and their overlaps over pairs.

The sets of :class:`~skrisk.data.SimilarityFeatures`' ``jaccard``, ``jaccard_3gram`` and
``num_diff``: each distinct token (or character 3-gram) hashed once into HashingVectorizer's
columns, each value's set held as a row of codes (narrow sets, compared in numpy off the GIL)
or a string of code points (wide sets, compared by rapidfuzz's ``LCSseq``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from rapidfuzz import process
from rapidfuzz.distance import LCSseq
from sklearn.utils import murmurhash3_32

# Columns of the hashed token sets (HashingVectorizer's n_features)
_N_HASH = 2**20
# Widest hashed token set held as a row of codes (compared with numpy); wider sets are strings
# of code points compared by rapidfuzz
_SET_WIDTH = 24
# Pairs of narrow sets compared at a time (bounds the pairs x width x width temporary)
_OVERLAP_BLOCK = 4096
# Distinct values hashed into token sets at a time by ``encode``: bounds the memory of the token
# lists and sparse temporaries whatever the number of distinct values (a million addresses).
_ENCODE_CHUNK = 50_000


def _code_points(rows: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Each set of hashed indices (``rows[ptr[i]:ptr[i+1]]``, increasing) as one string of code
    points.

    A hashed token index ``h < 2**20`` becomes the character ``h`` (shifted past the surrogate
    range). Two such strings share exactly the characters of the sets' intersection, in the same
    order, so their longest common subsequence is the intersection's size (rapidfuzz's native
    ``LCSseq``): the overlap of wide sets (:func:`_set_overlap`).
    """
    cp = rows.astype(np.uint32)
    cp += (cp >= 0xD800).astype(np.uint32) * 2048
    buf = cp.astype("<u4").tobytes().decode("utf-32-le")
    bounds = ptr.tolist()
    out = np.empty(len(ptr) - 1, dtype=object)
    out[:] = [buf[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    codes, uniq = pd.factorize(out)
    if len(uniq) < len(out) // 2:  # equal sets share one string
        out = np.asarray(uniq, dtype=object)[codes]
    return out


@dataclass
class _Sets:
    """The hashed token sets of the distinct values of one attribute (one side).

    A set of at most ``_SET_WIDTH`` elements is a row of ``codes`` (its hashed indices in
    increasing order, then -1): the overlap of two such sets is a vectorised comparison of their
    rows (numpy, free of the GIL, so threads share the work). A wider set (long titles' 3-grams)
    is a string of code points (:func:`_code_points`) compared by rapidfuzz.
    """

    codes: np.ndarray  # (n, width) int32
    sizes: np.ndarray  # float64
    wide: np.ndarray  # bool: the set is in ``strings``, not in ``codes``
    strings: np.ndarray  # object: code-point strings of the wide sets ("" elsewhere)

    @classmethod
    def of(cls, m: sp.csr_matrix) -> "_Sets":
        """The sets of the rows of a 0/1 matrix (values x hashed columns)."""
        m = sp.csr_matrix(m)
        m.sum_duplicates()  # sorted, unique indices per row
        n = m.shape[0]
        sizes = np.diff(m.indptr)
        wide = sizes > _SET_WIDTH
        if 2 * int(wide.sum()) > n:  # mostly wide (long texts): rows would be wasted memory
            wide[:] = sizes > 0
        narrow = ~wide
        width = int(sizes[narrow].max()) if narrow.any() else 0
        codes = np.full((n, width), -1, dtype=np.int32)
        row = np.repeat(np.arange(n), sizes)
        keep = narrow[row]
        col = np.arange(len(row)) - m.indptr[row]
        codes[row[keep], col[keep]] = m.indices[keep]
        strings = np.full(n, "", dtype=object)
        if wide.any():
            sub = m[np.flatnonzero(wide)]
            strings[wide] = _code_points(sub.indices, sub.indptr)
        return cls(codes, sizes.astype(np.float64), wide, strings)

    @classmethod
    def concat(cls, parts: list["_Sets"]) -> "_Sets":
        width = max(p.codes.shape[1] for p in parts)
        codes = np.full((sum(len(p.sizes) for p in parts), width), -1, dtype=np.int32)
        s = 0
        for p in parts:
            codes[s:s + len(p.sizes), :p.codes.shape[1]] = p.codes
            s += len(p.sizes)
        return cls(codes, np.concatenate([p.sizes for p in parts]), np.concatenate([p.wide for p in parts]),
                   np.concatenate([p.strings for p in parts]))

    def strings_of(self, idx: np.ndarray) -> np.ndarray:
        """The code-point strings of the sets ``idx`` (narrow ones built from their rows)."""
        out = self.strings[idx]
        narrow = np.flatnonzero(~self.wide[idx])
        if len(narrow):
            rows = self.codes[idx[narrow]]
            ptr = np.concatenate(([0], np.cumsum(self.sizes[idx[narrow]].astype(np.int64))))
            out[narrow] = _code_points(rows[rows >= 0], ptr)
        return out


def _hash_index(tokens: Sequence[str]) -> np.ndarray:
    """HashingVectorizer's column of each string: ``|murmurhash3_32(t, seed=0)| mod 2**20``."""
    h = np.fromiter((murmurhash3_32(t, 0) for t in tokens), dtype=np.int64, count=len(tokens))
    return np.abs(h) % _N_HASH


def _char3(word: str) -> list[str]:
    """The character 3-grams of a word padded with a space on each side (``char_wb``)."""
    w = f" {word} "
    return [w[i:i + 3] for i in range(len(w) - 2)]


def _hashed_sets(
    token_lists: list[list[str]], grams: Callable[[str], list[str]] | None = None
) -> "_Sets":
    """:class:`_Sets` of each value's set of hashed features.

    The features of a value are its tokens (``grams=None``) or the union of ``grams(token)``
    over its tokens; each distinct token and gram is hashed once, into the columns
    HashingVectorizer gives them (so the same sets, collisions included).
    """
    n = len(token_lists)
    lens = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=n)
    flat = [t for ts in token_lists for t in ts]
    if not flat:
        return _Sets.of(sp.csr_matrix((n, _N_HASH), dtype=np.int32))
    codes, vocab = pd.factorize(pd.Series(flat, dtype=object))
    if grams is None:
        tok_ptr, tok_idx = np.arange(len(vocab) + 1), _hash_index(vocab)
    else:
        glists = [grams(t) for t in vocab]
        gcodes, gvocab = pd.factorize(pd.Series([g for gs in glists for g in gs], dtype=object))
        tok_idx = _hash_index(gvocab)[gcodes]
        tok_ptr = np.concatenate(([0], np.cumsum([len(g) for g in glists])))
    cnt = np.diff(tok_ptr)[codes]
    total = int(cnt.sum())
    pos = np.repeat(tok_ptr[codes] - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
    rows = np.repeat(np.repeat(np.arange(n), lens), cnt)
    m = sp.csr_matrix((np.ones(total, np.int32), (rows, tok_idx[pos])), shape=(n, _N_HASH))
    return _Sets.of(m)


def _chunked_sets(
    items: Sequence[Any], tokenize: Callable[[Any], list[str]] | None, grams: Callable[[str], list[str]] | None = None
) -> "_Sets":
    """:func:`_hashed_sets` of ``tokenize(item)`` (None: the items are token lists) for every
    item, ``_ENCODE_CHUNK`` items at a time (the same sets: each item's set depends on its own
    tokens only)."""
    parts = [_hashed_sets(list(items[i:i + _ENCODE_CHUNK]) if tokenize is None
                          else [tokenize(t) for t in items[i:i + _ENCODE_CHUNK]], grams)
             for i in range(0, max(len(items), 1), _ENCODE_CHUNK)]
    return parts[0] if len(parts) == 1 else _Sets.concat(parts)


def _groups_by(key: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The stable order that puts equal ``key`` values (non-negative ints) together, and each
    group's ``(start, end)`` in that order. Keys below 2**15 (sizes and token counts, as a rule)
    are sorted as int16: numpy's radix sort, several times faster than int64's."""
    if len(key) and key.max() < 2**15:
        key = key.astype(np.int16)
    order = np.argsort(key, kind="stable")
    starts = np.flatnonzero(np.diff(key[order], prepend=-1))
    return order, list(zip(starts.tolist(), np.append(starts[1:], len(key)).tolist()))


def _set_overlap(a: _Sets, b: _Sets, li: np.ndarray, ri: np.ndarray, workers: int) -> np.ndarray:
    """Sizes of the intersections of the sets ``a[li[i]]`` and ``b[ri[i]]``.

    Two narrow sets: the pairs are grouped by the sizes of their two sets, and in each group
    every element of one row is compared with every element of the other (the rows hold
    distinct indices, so each match is one shared element), ``_OVERLAP_BLOCK`` pairs at a time.
    A pair with a wide set: ``LCSseq`` of the two code-point strings.
    """
    out = np.zeros(len(li), dtype=np.float64)
    wide = a.wide[li] | b.wide[ri]
    narrow = np.flatnonzero(~wide)
    sa, sb = a.sizes[li[narrow]].astype(np.intp), b.sizes[ri[narrow]].astype(np.intp)
    order, groups = _groups_by(sa * (b.codes.shape[1] + 1) + sb)
    narrow, sa, sb = narrow[order], sa[order], sb[order]
    for s, e in groups:
        wa, wb = int(sa[s]), int(sb[s])
        if wa == 0 or wb == 0:
            continue
        for t in range(s, e, _OVERLAP_BLOCK):
            at = narrow[t:min(e, t + _OVERLAP_BLOCK)]
            eq = np.equal(a.codes[li[at], :wa][:, :, None], b.codes[ri[at], :wb][:, None, :])
            out[at] = eq.reshape(len(at), -1).view(np.uint8).sum(axis=1, dtype=np.int64)
    at = np.flatnonzero(wide)
    if len(at):
        out[at] = process.cpdist(a.strings_of(li[at]), b.strings_of(ri[at]), scorer=LCSseq.similarity,
                                 workers=workers, dtype=np.int32)
    return out
