"""The ``typed`` blocking of :func:`skrisk.data.block` (with ``identical=True``) split into
per-record keys, for blocking on a cluster.

Each record's keys are computed where the record is (one partition of a table): the hash of its
normalised values (the groups of identical records) and the hash of each ``typed`` pass's key.
Records with equal keys are brought together by a shuffle on the first hash; where they meet,
the groups and the pairs of each key are made exactly as on one machine (the first record of a
group in table order is its head; only heads are blocked, at most ``max_block`` records a key
and side; a pair of heads stands for every pair of their members). A key is compared by two
independent 64-bit hashes of its values, so two different keys are taken for one only if both
hashes collide.

Positions are those of a record in its whole table (the partitions in order, as
``pandas.concat`` of them would number the rows). Nothing here needs Dask: the functions take
and return pandas and numpy objects, and :mod:`skrisk.matching` moves them between workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ._text import normalise_text
from ._typed_blocking import _key, typed_passes

__all__ = ["Groups", "identical_keys", "group_members", "id_key_columns", "id_key_hashes", "pass_keys",
           "key_pairs", "KEY_COLUMNS", "MAX_PRODUCT"]

# two independent 16-character keys of pandas' SipHash
_HASH_KEYS = ("skrisk-key-one-1", "skrisk-key-two-2")
#: The columns of a frame of keys: the two hashes, the record's position and its side (0 left, 1 right).
KEY_COLUMNS = ("h1", "h2", "pos", "side")
#: A pair of groups of identical records stands for all the pairs of their members up to this many.
MAX_PRODUCT = 10_000


def _hashes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Two independent uint64 hashes of each row of a frame of texts."""
    return tuple(pd.util.hash_pandas_object(frame, index=False, hash_key=k).to_numpy() for k in _HASH_KEYS)


def _keys_frame(h1: np.ndarray, h2: np.ndarray, pos: np.ndarray, side: int) -> pd.DataFrame:
    return pd.DataFrame({"h1": h1, "h2": h2, "pos": pos.astype(np.int64), "side": np.full(len(pos), side, np.int8)})


def _normalised(table: pd.DataFrame) -> pd.DataFrame:
    """Every column's values normalised (each distinct value once)."""
    out = {}
    for c in table.columns:
        codes, uniq = pd.factorize(table[c].astype(object), use_na_sentinel=False)
        out[str(c)] = np.array([normalise_text(v) for v in uniq], dtype=object)[codes] if len(uniq) else \
            np.empty(0, dtype=object)
    return pd.DataFrame(out, index=pd.RangeIndex(len(table)))


def identical_keys(table: pd.DataFrame, offset: int, side: int = 0) -> pd.DataFrame:
    """The keys of the groups of identical records: one row per record with at least one value
    (a record with no value is never identical to another)."""
    norm = _normalised(table)
    filled = (norm != "").any(axis=1).to_numpy() if len(norm.columns) else np.zeros(len(norm), bool)
    at = np.flatnonzero(filled)
    h1, h2 = _hashes(norm.iloc[at]) if len(at) else (np.empty(0, np.uint64), np.empty(0, np.uint64))
    return _keys_frame(h1, h2, offset + at, side)


def _block_codes(keys: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(order, code): the rows sorted by (h1, h2, side, pos), and each sorted row's block number."""
    order = np.lexsort((keys["pos"].to_numpy(), keys["side"].to_numpy(), keys["h2"].to_numpy(),
                        keys["h1"].to_numpy()))
    h1, h2 = keys["h1"].to_numpy()[order], keys["h2"].to_numpy()[order]
    new = np.r_[True, (h1[1:] != h1[:-1]) | (h2[1:] != h2[:-1])] if len(order) else np.empty(0, bool)
    return order, np.cumsum(new) - 1


def group_members(pieces: list[pd.DataFrame]) -> pd.DataFrame:
    """The records of the groups of more than one identical record found in ``pieces`` (frames of
    :func:`identical_keys`, every record of a group in the same piece's shuffle bucket): ``pos``,
    ``side`` and ``group`` (a number unique within this call)."""
    keys = pd.concat(pieces, ignore_index=True) if pieces else _keys_frame(*(np.empty(0, np.uint64),) * 2,
                                                                               np.empty(0, np.int64), 0)
    order, code = _block_codes(keys)
    size = np.bincount(code) if len(code) else np.empty(0, np.int64)
    keep = size[code] > 1 if len(code) else np.empty(0, bool)
    rows = order[keep]
    return pd.DataFrame({"pos": keys["pos"].to_numpy()[rows], "side": keys["side"].to_numpy()[rows],
                         "group": code[keep].astype(np.int64)})


@dataclass
class Groups:
    """The groups of identical records of more than one record, compact: per side, the sorted
    positions of the heads that have twins, where their members start in ``members`` and how many
    there are (the head first, then the others in table order). Records outside a group are
    their own group of one. ``cross``: the (left head, right head) of each group on both sides."""

    heads: list[np.ndarray]
    start: list[np.ndarray]
    count: list[np.ndarray]
    members: list[np.ndarray]
    others: list[np.ndarray]  # per side, sorted: the members that are not their group's head
    cross: tuple[np.ndarray, np.ndarray]
    dedup: bool

    @classmethod
    def from_members(cls, members: pd.DataFrame, dedup: bool) -> "Groups":
        """From the rows of :func:`group_members` of all the shuffle buckets (their ``group``
        numbers made unique across buckets by a ``bucket`` column, when there is one)."""
        g = members["group"].to_numpy(np.int64)
        if "bucket" in members and len(g):  # (bucket, group) as one number
            g = members["bucket"].to_numpy(np.int64) * (int(g.max()) + 1) + g
        pos, side = members["pos"].to_numpy(np.int64), members["side"].to_numpy(np.int8)
        heads, start, count, mem, others, first = [], [], [], [], [], []
        for s in ((0,) if dedup else (0, 1)):
            at = np.flatnonzero(side == s)
            order = at[np.lexsort((pos[at], g[at]))]
            gs, ps = g[order], pos[order]
            new = np.r_[True, gs[1:] != gs[:-1]] if len(gs) else np.empty(0, bool)
            starts = np.flatnonzero(new)
            cnt = np.diff(np.r_[starts, len(gs)])
            first.append(pd.Series(ps[starts], index=gs[starts]))
            starts, cnt = starts[cnt > 1], cnt[cnt > 1]  # one record on this side: its own head
            head_pos = ps[starts]
            by_head = np.argsort(head_pos, kind="stable")
            heads.append(head_pos[by_head])
            start.append(starts[by_head])
            count.append(cnt[by_head])
            mem.append(ps)
            others.append(np.sort(ps[~new]))
        cross = (np.empty(0, np.int64), np.empty(0, np.int64))
        if not dedup:
            both = first[0].index.intersection(first[1].index)
            cross = (first[0][both].to_numpy(np.int64), first[1][both].to_numpy(np.int64))
        return cls(heads, start, count, mem, others, cross, dedup)

    def _side(self, s: int) -> int:
        return 0 if self.dedup else s

    def not_heads(self, pos: np.ndarray, side: int = 0) -> np.ndarray:
        """Whether each position is a member of a group but not its head (not blocked)."""
        others = self.others[self._side(side)]
        if not len(others):
            return np.zeros(len(pos), bool)
        at = np.minimum(np.searchsorted(others, pos), len(others) - 1)
        return others[at] == pos

    def _lookup(self, x: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
        """(count, start) of each head's group; a record outside a group: (1, -1)."""
        heads = self.heads[s]
        m = np.minimum(np.searchsorted(heads, x), max(len(heads) - 1, 0))
        inside = (heads[m] == x) if len(heads) else np.zeros(len(x), bool)
        cnt = np.where(inside, self.count[s][m] if len(heads) else 1, 1)
        st = np.where(inside, self.start[s][m] if len(heads) else -1, -1)
        return cnt.astype(np.int64), st.astype(np.int64)

    def _product(self, a: np.ndarray, b: np.ndarray, ca: np.ndarray, cb: np.ndarray, sa: np.ndarray,
                 sb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first ``ca`` members of ``a``'s group with the first ``cb`` of ``b``'s."""
        n = ca * cb
        k = np.repeat(np.arange(len(a)), n)
        off = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        ia, ib = off // cb[k], off % cb[k]
        ma, mb = self.members[0], self.members[self._side(1)]
        out_a = np.where(sa[k] < 0, a[k], ma[np.maximum(sa[k], 0) + ia] if len(ma) else a[k])
        out_b = np.where(sb[k] < 0, b[k], mb[np.maximum(sb[k], 0) + ib] if len(mb) else b[k])
        return out_a, out_b

    def spread(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every member of ``a``'s group with every member of ``b``'s (a pair of groups of more
        than ``MAX_PRODUCT`` pairs: each head with the other group's members only)."""
        ca, sa = self._lookup(a, 0)
        cb, sb = self._lookup(b, self._side(1))
        if not ((ca > 1) | (cb > 1)).any():
            return a, b
        big = ca * cb > MAX_PRODUCT
        one = np.ones(int(big.sum()), np.int64)
        parts = [self._product(a[~big], b[~big], ca[~big], cb[~big], sa[~big], sb[~big]),
                 self._product(a[big], b[big], one, cb[big], sa[big], sb[big]),
                 self._product(a[big], b[big], ca[big], one, sa[big], sb[big])]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def identical_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """One table: every two members of a group (a group of more than ``MAX_PRODUCT ** 0.5``
        records: each member with its head); two tables: :meth:`spread` of the cross heads."""
        if not self.dedup:
            return self.spread(*self.cross)
        heads, cnt, st, mem = self.heads[0], self.count[0], self.start[0], self.members[0]
        small = cnt * cnt <= MAX_PRODUCT
        a, b = self._product(heads[small], heads[small], cnt[small], cnt[small], st[small], st[small])
        keep = a < b
        big_at = [mem[s + 1:s + c] for s, c in zip(st[~small], cnt[~small])]
        big_heads = [np.full(c - 1, h, np.int64) for h, c in zip(heads[~small], cnt[~small])]
        a2 = np.concatenate(big_at) if big_at else np.empty(0, np.int64)
        b2 = np.concatenate(big_heads) if big_heads else np.empty(0, np.int64)
        return np.concatenate([a[keep], a2]), np.concatenate([b[keep], b2])


def id_key_columns(types: Mapping[str, Mapping[str, Any]], cols: list[str]) -> list[str]:
    """The columns whose ``:id`` key (a pass of its own when a quarter of the filled values are
    distinct) is decided over all the records."""
    usable = [c for c in cols if c in types]
    return sorted({k.partition(":")[0] for p in typed_passes(types, usable) for k in p if k.endswith(":id")})


def id_key_hashes(table: pd.DataFrame, types: Mapping[str, Mapping[str, Any]], col: str,
                  blocked: np.ndarray) -> tuple[int, np.ndarray]:
    """For the ``:id`` decision of ``col`` over the blocked records of ``table``: how many have a
    value, and the distinct hashes of their values."""
    base = _key(table.iloc[np.flatnonzero(blocked)], col, types, {})
    filled = base[base != ""]
    return len(filled), np.unique(pd.util.hash_array(filled.astype(object), hash_key=_HASH_KEYS[0]))


def pass_keys(table: pd.DataFrame, offset: int, types: Mapping[str, Mapping[str, Any]], cols: list[str],
              blocked: np.ndarray, id_keys: Mapping[str, bool], side: int = 0) -> pd.DataFrame:
    """The keys of every ``typed`` pass of the blocked records of ``table`` (one row per record
    and pass whose keys are all filled); ``id_keys``: each ``:id`` column's decision."""
    usable = [c for c in cols if c in types]
    passes = typed_passes(types, usable)
    at = np.flatnonzero(blocked)
    sub = table.iloc[at]
    cache: dict = {("id-share", c): bool(v) for c, v in id_keys.items()}
    out = []
    for number, keys in enumerate(passes):
        vals = {f"k{j}": _key(sub, k, types, cache) for j, k in enumerate(keys)}
        frame = pd.DataFrame(vals)
        filled = np.flatnonzero((frame != "").all(axis=1).to_numpy()) if len(frame) else np.empty(0, np.intp)
        if not len(filled):
            continue
        frame = frame.iloc[filled]
        frame.insert(0, "pass", str(number))
        h1, h2 = _hashes(frame)
        out.append(_keys_frame(h1, h2, offset + at[filled], side))
    if not out:
        return _keys_frame(np.empty(0, np.uint64), np.empty(0, np.uint64), np.empty(0, np.int64), side)
    return pd.concat(out, ignore_index=True)


def key_pairs(pieces: list[pd.DataFrame], max_block: int, dedup: bool) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of positions (left, right; on one table ``a < b``) of the records that share a
    key in ``pieces`` (frames of :func:`pass_keys`), keys of more than ``max_block`` records a
    side pairing none; a pair may repeat (several keys)."""
    from ._typed_blocking import _between, _within

    keys = pd.concat(pieces, ignore_index=True) if pieces else None
    if keys is None or not len(keys):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order, code = _block_codes(keys)
    pos, side = keys["pos"].to_numpy()[order], keys["side"].to_numpy()[order]
    if dedup:
        i, j = _within(code.astype(np.int64), int(max_block))
        a, b = pos[i], pos[j]
        return np.minimum(a, b), np.maximum(a, b)
    left, right = np.flatnonzero(side == 0), np.flatnonzero(side == 1)
    i, j = _between(code[left].astype(np.int64), code[right].astype(np.int64), int(max_block))
    return pos[left][i], pos[right][j]
