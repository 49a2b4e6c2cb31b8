"""Blocking: candidate record pairs between two tables or within one, with completeness and reduction ratio.

Three methods, combined by union (on one table, each unordered pair of distinct records once):

- ``"standard"``: records agree exactly on the key column(s) (recordlinkage ``Index.block``);
- ``"sorted_neighbourhood"``: records close in the sorted order of one key column
  (recordlinkage ``Index.sortedneighbourhood``);
- ``"tokens"``: for every record, the ``top_k`` most similar records of the other table (on one
  table: the most similar *other* records) by the cosine of word TF-IDF vectors of the chosen
  columns, among the records found through an inverted index over rare tokens (time and memory
  grow linearly with the tables; small tables are scored exactly, all pairs in dense row chunks).

``standard`` and ``sorted_neighbourhood`` are recordlinkage's hash join and sort.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Sequence, Union

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import scipy.sparse as sp

from .._threads import map_in_order, n_threads
from ..exceptions import DataError
from ._text import normalise_text
from ._token_counts import tfidf_records
from ._typed_blocking import check_typed_params, typed_pairs

__all__ = ["block", "BlockingResult", "BLOCKING_METHODS"]

#: Blocking methods understood by :func:`block`.
BLOCKING_METHODS: tuple[str, ...] = ("standard", "sorted_neighbourhood", "tokens", "typed")

#: A blocking rule: ``(method, columns)`` or ``(method, columns, params)``.
BlockingRule = Union[tuple[str, Union[str, Sequence[str]]], tuple[str, Union[str, Sequence[str]], dict]]

_DEFAULT_PARAMS = {
    "standard": {"max_pairs": None},
    "sorted_neighbourhood": {"window": 5, "max_pairs": None},
    # prefix 5 and rescore 8: a true partner is missed when it shares none of a record's index
    # tokens (its rarest ones, often typos), or when ties on the index tokens' share (e.g. a
    # shared postcode) push it out of the rescore * top_k candidates ranked by the full cosine;
    # more index tokens and a wider rescore keep most of those pairs
    "tokens": {"top_k": 10, "min_similarity": 0.0, "budget": 100, "prefix": 5, "rescore": 8},
    "typed": {"types": None, "max_block": 50},
}
#: Largest values of the rule parameters (beyond them a rule would run for days or exhaust memory).
_PARAM_LIMITS = {"top_k": 1000, "prefix": 1000, "window": 10_001}
# Candidate pairs a ``standard`` or ``sorted_neighbourhood`` rule may make when ``max_pairs`` is None:
# this many per record, and at least _MIN_RULE_PAIRS.
_RULE_PAIRS_PER_RECORD = 100
_MIN_RULE_PAIRS = 1_000_000
# Pairs whose codes are computed at once (bounds the temporaries of ten million pairs).
_CODE_CHUNK = 1 << 20
# identical records: a pair of groups stands for all the pairs of their members up to this many
_MAX_PRODUCT = 10_000
# Candidate pairs the token blocker scores at once (a row chunk of the inverted-index product).
_TOKEN_CHUNK_CELLS = 2_000_000
# A row chunk whose candidates exceed 1 / _DENSE_RATIO of all its pairs is scored densely (all
# pairs, exact top-k): cheaper than scoring candidates one by one on small tables.
_DENSE_RATIO = 30


@dataclass
class BlockingResult:
    """Candidate pairs produced by :func:`block`, with quality figures.

    Attributes
    ----------
    pairs : pandas.DataFrame
        One row per candidate pair: ``left_id``, ``right_id`` (``str``), plus ``label`` (``int8``,
        1 for a true link, 0 otherwise) when ``true_links`` was given. Sorted by left then right
        position in the tables.
    n_left, n_right : int
        Sizes of the two tables.
    reduction_ratio : float
        ``1 - n_candidates / (n_left * n_right)``.
    pair_completeness : float or None
        Share of the true links among the candidates; ``None`` without ``true_links``.
    n_true_links : int or None
        Number of true links given.
    rule_sizes : dict of str to int
        Candidates each rule produced on its own (before the union).
    seconds : float
        Wall time of the blocking.
    task : {"link", "dedup"}
        ``"dedup"`` when one table was blocked against itself (then ``n_right == n_left``, every
        pair is stored once with ``left_id < right_id`` and the reduction ratio counts against
        the ``n * (n - 1) / 2`` unordered pairs of distinct records).
    n_candidates : int
        Candidate pairs blocking produced (``len(pairs)``, and ``len(self)``). The one figure
        that stays when the pairs are released (:meth:`without_pairs`).
    """

    pairs: pd.DataFrame
    n_left: int
    n_right: int
    reduction_ratio: float
    pair_completeness: float | None
    n_true_links: int | None
    rule_sizes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    task: str = "link"
    n_candidates: int = -1

    def __post_init__(self) -> None:
        if self.n_candidates < 0:
            self.n_candidates = len(self.pairs)

    def __len__(self) -> int:
        return self.n_candidates

    def without_pairs(self) -> "BlockingResult":
        """The same figures without the candidate pairs (``pairs`` holds no row; the count stays
        in ``n_candidates``): what :func:`skrisk.matching.match` keeps once it has scored
        them, so that a million records' 7.6 million pairs do not stay in memory.

        Examples
        --------
        >>> import pandas as pd
        >>> from skrisk.data import block
        >>> t = pd.DataFrame({"name": ["acme corp", "acme co", "globex"]}, index=["a", "b", "c"])
        >>> light = block(t, None, ("tokens", "name")).without_pairs()
        >>> len(light), len(light.pairs), light.n_candidates
        (1, 0, 1)
        """
        return replace(self, pairs=self.pairs.iloc[:0].copy())

    def summary(self) -> dict[str, object]:
        """The figures as a flat dict (for reports and benchmark tables)."""
        return {
            "task": self.task,
            "n_left": self.n_left,
            "n_right": self.n_right,
            "n_candidates": self.n_candidates,
            "reduction_ratio": self.reduction_ratio,
            "pair_completeness": self.pair_completeness,
            "n_true_links": self.n_true_links,
            "seconds": self.seconds,
            **{f"rule[{k}]": v for k, v in self.rule_sizes.items()},
        }

    def report(self) -> str:
        """One line for a person: the number of candidate pairs and the pair completeness.

        Pair completeness (the share of true matches that blocking kept) needs known matches
        (``true_links``); without them the line says that it cannot be known.
        """
        what = "within one table" if self.task == "dedup" else "between the two tables"
        rules = ", ".join(self.rule_sizes) or "no rule"
        line = (f"Blocking ({rules}) {what}: {self.n_candidates} candidate pairs (reduction ratio "
                f"{self.reduction_ratio:.4f}); ")
        if self.pair_completeness is None or self.n_true_links is None:
            return line + ("pair completeness (the share of true matches kept) cannot be known without labels: "
                           "give known matches to measure it, or loosen the blocking if matches seem missing.")
        kept = int(round(self.pair_completeness * self.n_true_links))
        return line + (f"pair completeness {self.pair_completeness:.4f} ({kept} of {self.n_true_links} known "
                       "matches kept).")

    def __repr__(self) -> str:
        pc = "n/a" if self.pair_completeness is None else f"{self.pair_completeness:.4f}"
        return (
            f"BlockingResult(candidates={self.n_candidates}, reduction_ratio="
            f"{self.reduction_ratio:.5f}, pair_completeness={pc}, seconds={self.seconds:.2f})"
        )


# ---------------------------------------------------------------------------- helpers
def _check_tables(left: object, right: object) -> tuple[pd.DataFrame, pd.DataFrame]:
    dedup = right is None or right is left
    sides = (("table", left),) if dedup else (("left", left), ("right", right))
    for side, table in sides:
        if not isinstance(table, pd.DataFrame):
            raise TypeError(
                f"{side} must be a pandas DataFrame indexed by record id, got {type(table).__name__}."
            )
        if len(table) == 0:
            raise DataError(f"The {side} table is empty: blocking needs records on both sides.")
        ids = table.index.astype(str)
        if not ids.is_unique:
            dup = ids[ids.duplicated()][0]
            rows = np.flatnonzero(ids == dup)
            raise DataError(
                f"The {side} table has duplicate record id {dup!r} (rows {rows[0]} and {rows[1]}): "
                "ids must be unique; give every record its own id."
            )
    if dedup and len(left) < 2:  # type: ignore[arg-type]
        raise DataError("The table has a single record: deduplication needs at least two records.")
    return left, (left if dedup else right)  # type: ignore[return-value]


def _normalise_rules(rules: object, left: pd.DataFrame, right: pd.DataFrame) -> list[tuple[str, list[str], dict]]:
    if rules is None:
        shared = [c for c in left.columns if c in right.columns]
        return [("tokens", shared, dict(_DEFAULT_PARAMS["tokens"]))]
    if isinstance(rules, tuple) and rules and isinstance(rules[0], str):
        rules = [rules]
    out = []
    for rule in rules:  # type: ignore[union-attr]
        if not isinstance(rule, (tuple, list)) or len(rule) not in (2, 3):
            raise TypeError(
                f"A blocking rule is (method, columns) or (method, columns, params), got {rule!r}; "
                "e.g. ('standard', 'postcode') or ('tokens', ['name', 'city'], {'top_k': 20})."
            )
        method, cols = rule[0], rule[1]
        params = dict(rule[2]) if len(rule) == 3 else {}
        if method not in BLOCKING_METHODS:
            raise ValueError(f"Unknown blocking method {method!r}: choose from {list(BLOCKING_METHODS)}.")
        if cols is None:  # every shared attribute
            cols = [c for c in left.columns if c in right.columns]
        cols = [cols] if isinstance(cols, str) else list(cols)
        if not cols:
            raise ValueError(f"Blocking rule {rule!r} names no column.")
        missing = [c for c in cols if c not in left.columns or c not in right.columns]
        if missing and left is right:
            raise DataError(
                f"Blocking rule {rule!r}: column(s) {missing} are not in the table, whose columns are "
                f"{list(left.columns)}. Block on those names."
            )
        if missing:
            raise DataError(
                f"Blocking rule {rule!r}: column(s) {missing} are not in both tables (left has "
                f"{list(left.columns)}, right has {list(right.columns)}). Use shared attribute names."
            )
        try:
            merged = _check_rule_params(method, params, cols)
        except ValueError as exc:
            raise ValueError(f"Blocking rule {rule!r}: {exc}") from None
        out.append((method, cols, merged))
    if not out:
        raise ValueError("rules is empty: give at least one blocking rule (or None for the default).")
    return out


def _check_rule_params(method: str, params: dict, cols: Sequence[str] | None = None) -> dict:
    """The parameters of a blocking rule with the defaults filled in, each checked.

    Parameters
    ----------
    method : str
        One of ``BLOCKING_METHODS``.
    params : dict
        The rule's own parameters.
    cols : sequence of str or None, default=None
        The rule's columns (``sorted_neighbourhood`` sorts on exactly one).

    Returns
    -------
    dict
        ``params`` over the method's defaults.

    Raises
    ------
    ValueError
        An unknown method or parameter, or a value of the wrong type or outside its range (the
        message names the parameter, its range and the value).
    """
    if method not in BLOCKING_METHODS:
        raise ValueError(f"Unknown blocking method {method!r}: choose from {list(BLOCKING_METHODS)}.")
    unknown = set(params) - set(_DEFAULT_PARAMS[method])
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {sorted(unknown)} for {method!r}; it takes {sorted(_DEFAULT_PARAMS[method])}."
        )
    if method == "typed":
        return check_typed_params(params, None)
    merged = {**_DEFAULT_PARAMS[method], **params}

    def integer(name: str, low: int, what: str) -> None:
        v, high = merged[name], _PARAM_LIMITS.get(name)
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < low or (
                high is not None and v > high):
            raise ValueError(f"{method} {name} must be {what}{f' at most {high}' if high else ''}, got {v!r}.")

    if method == "sorted_neighbourhood":
        if cols is not None and len(cols) != 1:
            raise ValueError(f"sorted_neighbourhood sorts on one column, got {list(cols)}.")
        integer("window", 1, "a positive odd int")
        if merged["window"] % 2 == 0:
            raise ValueError(f"sorted_neighbourhood window must be a positive odd int, got {merged['window']!r}.")
    if method != "tokens":
        if merged["max_pairs"] is not None:
            integer("max_pairs", 1, "None or a positive int")
        return merged
    integer("top_k", 1, "a positive int")
    integer("prefix", 0, "an int >= 0")
    integer("rescore", 1, "a positive int")
    v = merged["budget"]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not np.isfinite(v) or not v > 0:
        raise ValueError(f"tokens budget must be a positive number, got {v!r}.")
    v = merged["min_similarity"]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not np.isfinite(v) or not 0.0 <= v < 1.0:
        raise ValueError(f"tokens min_similarity must be a number in [0, 1), got {v!r}.")
    return merged


def _check_rule_size(method: str, cols: list[str], params: dict, lk: pd.DataFrame, rk: pd.DataFrame,
                     dedup: bool, n_records: int) -> None:
    """Refuse a ``standard`` or ``sorted_neighbourhood`` rule that would make more than its
    ``max_pairs`` candidates, counted from the sizes of its blocks before any pair exists; the
    message names the largest block (its key and size) and how to split it."""
    limit = params.get("max_pairs")
    if limit is None:
        limit = max(_MIN_RULE_PAIRS, _RULE_PAIRS_PER_RECORD * n_records)
    keys = pd.concat([lk, rk], ignore_index=True) if not dedup else lk
    if len(cols) == 1 or method == "sorted_neighbourhood":
        sort_key = keys[cols[0]].to_numpy(dtype=object)
        codes, uniq = pd.factorize(sort_key, sort=method == "sorted_neighbourhood")
    else:
        codes, uniq = pd.MultiIndex.from_frame(keys).factorize()
    nl = np.bincount(codes[:len(lk)], minlength=len(uniq)).astype(np.float64)
    nr = nl if dedup else np.bincount(codes[len(lk):], minlength=len(uniq)).astype(np.float64)
    per_block = nl * (nl - 1) / 2 if dedup else nl * nr  # pairs within one key value
    total = float(per_block.sum())
    if method == "sorted_neighbourhood":  # and between key values at most (window - 1) / 2 apart
        h = min(int(params["window"]) // 2, len(uniq))
        cr = np.concatenate(([0.0], np.cumsum(nr)))
        at = np.arange(len(uniq))
        ahead = cr[np.minimum(at + h + 1, len(uniq))] - cr[at + 1]  # keys after, within the window
        total += float((nl * ahead).sum())
        if not dedup:
            behind = cr[at] - cr[np.maximum(at - h, 0)]
            total += float((nl * behind).sum())
    if total <= limit:
        return
    big = int(np.argmax(nl + nr))
    value = uniq[big]
    key = ", ".join(f"{c} = {v!r}" for c, v in zip(cols, value if isinstance(value, tuple) else (value,)))
    size = f"{int(nl[big])} records" if dedup else f"{int(nl[big])} left and {int(nr[big])} right records"
    if method == "standard":
        other = ("block on more columns (--block-on " + ",".join(cols) + ",OTHER), or use --blocking tokens "
                 "or --blocking sorted_neighbourhood on a more varied column")
    else:
        other = (f"sort on a more varied column, use a smaller window (now {params['window']}), or use "
                 "--blocking standard on more columns or --blocking tokens")
    raise DataError(
        f"Blocking rule {method}:{'+'.join(cols)} would make {int(total):,} candidate pairs, more than the "
        f"{int(limit):,} a rule may make (max_pairs): its largest block, {key}, holds {size} "
        f"({int(per_block[big]):,} pairs). Split it: {other}; or raise the rule's max_pairs "
        "(--block-max-pairs) if the machine can score that many pairs."
    )


def _recordlinkage_pairs(
    method: str, cols: list[str], params: dict, left: pd.DataFrame, right: pd.DataFrame, n_records: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    import recordlinkage

    # Keys are compared as normalised text; records with a missing key take no part (pandas
    # would otherwise join all missing keys with each other).
    lk = pd.DataFrame({c: left[c].map(normalise_text).to_numpy() for c in cols})
    rk = pd.DataFrame({c: right[c].map(normalise_text).to_numpy() for c in cols})
    lk = lk[(lk != "").all(axis=1)]
    rk = rk[(rk != "").all(axis=1)]
    if len(lk) == 0 or len(rk) == 0:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    _check_rule_size(method, cols, params, lk, rk, left is right, n_records)
    indexer = recordlinkage.Index()
    if left is right:  # one table: recordlinkage's deduplication index (each unordered pair once)
        if method == "standard":
            indexer.block(left_on=cols)
        else:
            indexer.sortedneighbourhood(left_on=cols[0], window=int(params["window"]))
        mi = indexer.index(lk)
    else:
        if method == "standard":
            indexer.block(left_on=cols, right_on=cols)
        else:
            indexer.sortedneighbourhood(left_on=cols[0], right_on=cols[0], window=int(params["window"]))
        mi = indexer.index(lk, rk)
    return mi.get_level_values(0).to_numpy(np.intp), mi.get_level_values(1).to_numpy(np.intp)


def _sorted_unique(codes: np.ndarray) -> np.ndarray:
    """The distinct values of an int64 array, sorted (a sort and a diff: linear memory)."""
    codes = np.sort(codes)  # values only: any sort gives the same result (introsort is the fastest)
    return codes[np.r_[True, codes[1:] != codes[:-1]]] if len(codes) else codes


def _affordable(df_a: np.ndarray, df_b: np.ndarray, budget: float) -> np.ndarray:
    """Tokens whose record pairs (``df_a * df_b``), taken cheapest first, fit in ``budget``."""
    cost = df_a.astype(np.float64) * df_b
    order = np.argsort(cost, kind="stable")
    keep = np.zeros(len(cost), dtype=bool)
    keep[order[np.cumsum(cost[order]) <= budget]] = True
    return keep & (cost > 0)


def _index_entries(present: sp.csr_matrix, rank: np.ndarray, rare: np.ndarray, prefix: int) -> sp.csr_matrix:
    """The tokens each record is indexed under: its rare tokens and its ``prefix`` rarest ones."""
    import scipy.sparse as sp

    n_rows, nnz = present.shape[0], present.nnz
    lengths = np.diff(present.indptr).astype(np.int32)
    # the columns renamed by rank and sorted within each row (in C): each row's tokens rarest first
    by_rank = sp.csr_matrix((np.ones(nnz, bool), rank.astype(np.int32)[present.indices], present.indptr),
                            shape=present.shape)
    by_rank.sort_indices()
    token_of = np.empty(len(rank), dtype=np.int32)
    token_of[rank] = np.arange(len(rank), dtype=np.int32)
    col = token_of[by_rank.indices]
    del by_rank
    pos = np.arange(nnz, dtype=np.int32) - np.repeat(present.indptr[:-1].astype(np.int32), lengths)
    sel = (pos < prefix) | rare[col]
    del pos
    row = np.repeat(np.arange(n_rows, dtype=np.int32), lengths)[sel]
    return sp.csr_matrix((np.ones(len(row), np.float32), (row, col[sel])), shape=present.shape)


def _best_per_row(r: np.ndarray, c: np.ndarray, score: np.ndarray, k: int, start: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` entries of highest score of each row (rows counted from ``start``, scores in
    [0, 1]); rows with at most ``k`` entries keep them all. One stable sort of
    ``row + (1 - score) / 2``: equal scores keep their input order."""
    per = np.bincount(r - start)
    small = per[r - start] <= k
    if small.all():
        return r, c
    rb, cb = r[~small], c[~small]
    key = (rb - start).astype(np.float64) + 0.5 * (1.0 - np.clip(score[~small], 0.0, 1.0))
    order = np.argsort(key, kind="stable")  # ties keep the input order: deterministic per row
    rb, cb = rb[order], cb[order]
    seg = np.flatnonzero(np.r_[True, rb[1:] != rb[:-1]])
    rank = np.arange(len(rb)) - np.repeat(seg, np.diff(np.r_[seg, len(rb)]))
    return np.concatenate([r[small], rb[rank < k]]), np.concatenate([c[small], cb[rank < k]])


def _top_k(
    a: sp.csr_matrix, b: sp.csr_matrix, k: int, min_similarity: float, budget: float, prefix: int,
    rescore: int, dedup: bool, threads: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """For every row of ``a``, the ``k`` rows of ``b`` of highest cosine (above ``min_similarity``)
    among its candidates; ``dedup``: ``a`` is ``b`` and a row is never its own neighbour.

    Candidates come from an inverted index: each record is indexed under its rare tokens (the
    tokens whose record pairs, cheapest first, fit in ``budget``) and its ``prefix`` rarest
    tokens; two records are candidates when they share an index token (a sparse product over the
    index, in row chunks of about ``_TOKEN_CHUNK_CELLS`` pairs), and each candidate is scored by
    the full cosine over all tokens. Index tokens whose pairs exceed ``2 * budget`` (a frequent
    token in many prefixes) are dropped, so time and memory grow with ``budget`` and the tables,
    never with ``n_a * n_b``. The row chunks run on ``threads`` threads (the same chunks for
    any number of threads, their pairs kept in row order: the same result).
    """
    import scipy.sparse as sp

    present_a = a.astype(bool).astype(np.float32)
    present_b = present_a if dedup else b.astype(bool).astype(np.float32)
    df_a = np.asarray(present_a.sum(axis=0)).ravel()
    df_b = df_a if dedup else np.asarray(present_b.sum(axis=0)).ravel()
    rare = _affordable(df_a, df_b, budget)
    rank = np.empty(len(df_a), np.int64)
    rank[np.lexsort((np.arange(len(df_a)), df_a + df_b))] = np.arange(len(df_a))
    ia = _index_entries(present_a, rank, rare, prefix)
    ib = ia if dedup else _index_entries(present_b, rank, rare, prefix)
    del present_a, present_b  # each large table's copies go as soon as they are used
    dfi_a = np.asarray(ia.sum(axis=0)).ravel()
    dfi_b = dfi_a if dedup else np.asarray(ib.sum(axis=0)).ravel()
    used = sp.diags(_affordable(dfi_a, dfi_b, 2 * budget).astype(np.float32))
    ia = (ia @ used).tocsr()
    ia.eliminate_zeros()
    ib_t = (ib @ used).T.tocsr()
    ib_t.eliminate_zeros()
    del ib
    per_row = np.asarray(ia @ np.diff(ib_t.indptr).astype(np.float64)).ravel()
    if per_row.sum() == 0:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    csum = np.cumsum(per_row)
    cuts = np.searchsorted(csum, np.arange(_TOKEN_CHUNK_CELLS, csum[-1], _TOKEN_CHUNK_CELLS), side="right")
    edges = np.unique(np.r_[0, cuts, a.shape[0]])
    wa = a.multiply(ia).tocsr()  # TF-IDF weights of the index entries: each candidate's partial cosine
    del ia
    wb_t = (wa if dedup else b.multiply(ib_t.T)).T.tocsr()
    del ib_t

    def chunk_pairs(part: tuple[int, int, bool]) -> tuple[np.ndarray, np.ndarray] | None:
        start, stop, dense = part
        if dense:
            # the candidates are a large share of all pairs (small tables): score all pairs densely
            block = (a[start:stop] @ b.T).toarray()
            if dedup:
                r = np.arange(stop - start)
                block[r, start + r] = -np.inf
            kk = min(k, block.shape[1])
            if kk < block.shape[1]:
                top = np.argpartition(-block, kk - 1, axis=1)[:, :kk]
            else:
                top = np.broadcast_to(np.arange(block.shape[1]), block.shape)
            vals = np.take_along_axis(block, top, axis=1)
            keep = vals > min_similarity
            return (np.repeat(np.arange(start, stop, dtype=np.int32), top.shape[1])[keep.ravel()],
                    top.ravel()[keep.ravel()].astype(np.int32))
        prod = (wa[start:stop] @ wb_t).tocsr()
        prod.sort_indices()  # candidates of a row by column: ties broken alike in any chunking
        r = np.repeat(np.arange(start, stop, dtype=np.int64), np.diff(prod.indptr))
        c = prod.indices.astype(np.int64)
        part = prod.data
        if dedup:
            r, c, part = r[r != c], c[r != c], part[r != c]
        # the best `rescore * k` of each row by the shared index tokens' share of the cosine are
        # scored by the full cosine; the k best of those are kept
        r, c = _best_per_row(r, c, part, rescore * k, start)
        if not len(r):
            return None
        score = np.asarray(a[r].multiply(b[c]).sum(axis=1), dtype=np.float32).ravel()
        ok = score > min_similarity
        r, c = _best_per_row(r[ok], c[ok], score[ok], k, start)
        return r.astype(np.int32), c.astype(np.int32)  # positions of a table: int32 halves the pairs' memory

    rows_out, cols_out = [], []
    # each chunk scored densely or from the index as decided for the whole chunk, then split into
    # ``threads`` parts of about equal cells: a row's pairs do not depend on the rows beside it,
    # and the parts in flight together hold about one chunk's memory
    parts = []
    for start, stop in zip(edges[:-1], edges[1:]):
        dense = bool(per_row[start:stop].sum() * _DENSE_RATIO >= (stop - start) * b.shape[0])
        cells = np.cumsum(per_row[start:stop]) if not dense else np.arange(1, stop - start + 1, dtype=np.float64)
        inner = np.searchsorted(cells, cells[-1] * np.arange(1, threads) / threads, side="right")
        bounds = np.unique(np.r_[start, start + inner, stop])
        parts += [(int(s), int(e), dense) for s, e in zip(bounds[:-1], bounds[1:]) if e > s]
    for got in map_in_order(chunk_pairs, parts, threads):
        if got is not None:
            rows_out.append(got[0])
            cols_out.append(got[1])
    if not rows_out:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    return np.concatenate(rows_out), np.concatenate(cols_out)


def _token_pairs(
    cols: list[str], params: dict, left: pd.DataFrame, right: pd.DataFrame, threads: int = 1,
    one_way: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    mats = tfidf_records([left] if right is left else [left, right], cols)
    if mats is None:  # no token at all
        return np.empty(0, np.intp), np.empty(0, np.intp)
    k, thr = int(params["top_k"]), float(params["min_similarity"])
    # the budget of pairs grows with the records that look for neighbours (one way: the left ones)
    n_records = mats[0].shape[0] if one_way else sum(m.shape[0] for m in mats)
    how = (float(params["budget"]) * n_records, int(params["prefix"]), int(params["rescore"]))
    if right is left:  # one table: each record's top_k neighbours, itself excluded
        return _top_k(mats[0], mats[0], k, thr, *how, dedup=True, threads=threads)
    lm, rm = mats
    # left -> right and right -> left
    lr, lc = _top_k(lm, rm, k, thr, *how, dedup=False, threads=threads)
    if one_way:
        return lr, lc
    rr, rc = _top_k(rm, lm, k, thr, *how, dedup=False, threads=threads)
    return np.concatenate([lr, rc]), np.concatenate([lc, rr])


@dataclass
class _Groups:
    """Records identical in every blocked attribute: each record's group head (the first record
    of its group in table order, the record itself when it has no twin), per side."""

    left_head: np.ndarray  # per left record: the left position of its group's left head
    right_head: np.ndarray  # per right record (empty: one table)
    cross: tuple[np.ndarray, np.ndarray]  # (left head, right head) of the groups on both sides
    dedup: bool = False
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def left_reps(self) -> np.ndarray:
        return np.flatnonzero(self.left_head == np.arange(len(self.left_head)))

    @property
    def right_reps(self) -> np.ndarray:
        return np.flatnonzero(self.right_head == np.arange(len(self.right_head)))

    def identical_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """One table: every pair within a group (a group of more than ``_MAX_PRODUCT ** 0.5``
        records: each member with its head); between two tables the pairs of :meth:`spread` of
        the heads of each group found on both sides."""
        if not self.dedup:
            hl, hr = self.cross
            return self.spread(hl, hr)
        lo, ls, lc = self._members(True)
        heads = self.left_reps
        count = lc[heads]
        within = count * count  # the pairs of a group with itself
        small = heads[(count > 1) & (within <= _MAX_PRODUCT)]
        li, ri = self._product(small, small, lo, ls, lo, ls, (lc[small], lc[small]))
        keep = li < ri
        big = np.isin(self.left_head, heads[within > _MAX_PRODUCT])
        at = np.flatnonzero(big & (self.left_head != np.arange(len(self.left_head))))
        return np.concatenate([li[keep], at]), np.concatenate([ri[keep], self.left_head[at]])

    def _members(self, left: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions ordered by group, start and size of each head's group) of one side; cached."""
        key = "left" if left or self.dedup else "right"
        if key not in self._cache:
            head = self.left_head if key == "left" else self.right_head
            order = np.argsort(head, kind="stable")
            count = np.bincount(head, minlength=len(head)).astype(np.int64)
            self._cache[key] = (order, np.cumsum(count) - count, count)
        return self._cache[key]

    @staticmethod
    def _product(li: np.ndarray, ri: np.ndarray, lo: np.ndarray, ls: np.ndarray, ro: np.ndarray, rs: np.ndarray,
                 count: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """For each pair of heads, the first ``count[0]`` members of ``li``'s group with the first
        ``count[1]`` of ``ri``'s (vectorised; the head is its group's first member)."""
        cl, cr = count
        n = cl * cr
        k = np.repeat(np.arange(len(li)), n)
        off = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        return lo[ls[li][k] + off // cr[k]], ro[rs[ri][k] + off % cr[k]]

    def spread(self, li: np.ndarray, ri: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every member of ``li``'s group (``li`` included) with every member of ``ri``'s: the
        pairs the rules give the records the heads stand for. A pair of groups whose product
        exceeds ``_MAX_PRODUCT`` pairs gives each head with the other group's members only."""
        lo, ls, lc = self._members(True)
        ro, rs, rc = self._members(False)
        cl, cr = lc[li], rc[ri]
        big = cl * cr > _MAX_PRODUCT
        if not big.any():
            return self._product(li, ri, lo, ls, ro, rs, (cl, cr))
        one = np.ones(int(big.sum()), dtype=np.int64)
        parts = [self._product(li[~big], ri[~big], lo, ls, ro, rs, (cl[~big], cr[~big])),
                 self._product(li[big], ri[big], lo, ls, ro, rs, (one, cr[big])),
                 self._product(li[big], ri[big], lo, ls, ro, rs, (cl[big], one))]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _identical_groups(left: pd.DataFrame, right: pd.DataFrame, cols: list[str]) -> _Groups:
    """Group the records of one table (``right is left``) or two by their normalised values of
    ``cols`` (each distinct value normalised once); records whose values are all empty stay alone."""
    dedup = right is left
    tables = [left] if dedup else [left, right]
    key = np.zeros(sum(len(t) for t in tables), dtype=np.int64)
    empty = np.ones(len(key), dtype=bool)
    for c in cols:
        codes, uniq = pd.factorize(pd.concat([t[c] for t in tables], ignore_index=True).astype(object),
                                   use_na_sentinel=False)
        norm, uniq_norm = pd.factorize(pd.Series([normalise_text(v) for v in uniq], dtype=object))
        col = norm[codes]
        empty &= np.asarray(uniq_norm, dtype=object)[col] == ""
        key, _ = pd.factorize(key * len(uniq_norm) + col)  # stays below n * n_values: no overflow
    key = np.where(empty, -1 - np.arange(len(key)), key)  # a record without values has no twin
    codes, _ = pd.factorize(key)
    return _groups_of(codes, len(left), dedup)


def _groups_of(codes: np.ndarray, n_left: int, dedup: bool) -> _Groups:
    """The groups of records sharing a code (codes ``0..k``: of the left records, then of the
    right ones; one table: of its records only)."""
    heads = []
    for lo, hi in ((0, n_left), (n_left, len(codes))) if not dedup else ((0, n_left),):
        part = codes[lo:hi]
        f = np.full(int(codes.max(initial=-1)) + 1, -1, dtype=np.int64)
        uniq, at = np.unique(part, return_index=True)
        f[uniq] = at  # the first position of each group on this side
        heads.append((part, f))
    left_head = heads[0][1][heads[0][0]]
    if dedup:
        return _Groups(left_head, np.empty(0, np.int64), (np.empty(0, np.int64), np.empty(0, np.int64)), dedup=True)
    (_, fl), (pr, fr) = heads
    both = np.flatnonzero((fl >= 0) & (fr >= 0))
    return _Groups(left_head, fr[pr], (fl[both], fr[both]))


def _pair_codes(li: np.ndarray, ri: np.ndarray, rank: np.ndarray | None, n_right: int) -> np.ndarray:
    """Sorted distinct codes of pairs of positions (one table: unordered, never a record with itself)."""
    if rank is not None:
        c = _dedup_codes(li, ri, rank, n_right)
        return _sorted_unique(c[li != ri])
    return _sorted_unique(li.astype(np.int64) * n_right + ri)


def _dedup_codes(a: np.ndarray, b: np.ndarray, rank: np.ndarray, n: int) -> np.ndarray:
    """Codes ``lo * n + hi`` of unordered pairs of positions, ``lo`` the record whose id sorts first
    (``_CODE_CHUNK`` pairs at a time: the temporaries stay small beside ten million pairs)."""
    out = np.empty(len(a), dtype=np.int64)
    for s in range(0, len(a), _CODE_CHUNK):
        x, y = a[s:s + _CODE_CHUNK].astype(np.int64), b[s:s + _CODE_CHUNK].astype(np.int64)
        swap = rank[x] > rank[y]
        out[s:s + _CODE_CHUNK] = np.where(swap, y, x) * n + np.where(swap, x, y)
    return out


def _true_link_codes(true_links: object, left: pd.DataFrame, right: pd.DataFrame) -> np.ndarray:
    if isinstance(true_links, pd.MultiIndex):
        lid, rid = true_links.get_level_values(0), true_links.get_level_values(1)
    elif isinstance(true_links, pd.DataFrame):
        cols = [c for c in (("left_id", "right_id"), ("ltable_id", "rtable_id")) if set(c) <= set(true_links.columns)]
        if not cols:
            raise DataError(
                "true_links needs columns left_id/right_id (or ltable_id/rtable_id), got "
                f"{list(true_links.columns)}."
            )
        lid, rid = true_links[cols[0][0]], true_links[cols[0][1]]
    else:
        arr = list(true_links)  # type: ignore[call-overload]
        lid = [p[0] for p in arr]
        rid = [p[1] for p in arr]
    lpos = left.index.astype(str).get_indexer(pd.Index(lid).astype(str))
    rpos = right.index.astype(str).get_indexer(pd.Index(rid).astype(str))
    for side, pos, ids in (("left", lpos, lid), ("right", rpos, rid)):
        bad = np.flatnonzero(pos < 0)
        if len(bad):
            where = "the table" if left is right else f"the {side} table"
            raise DataError(
                f"true_links: {side} id {list(ids)[bad[0]]!r} (link {bad[0]}) is not a record of "
                f"{where} ({len(bad)} such links). Fix the link or the table."
            )
    if left is right:
        same = np.flatnonzero(lpos == rpos)
        if len(same):
            raise DataError(
                f"true_links: link {same[0]} pairs record {list(lid)[same[0]]!r} with itself "
                f"({len(same)} such links): remove those links (a record always matches itself)."
            )
        return _sorted_unique(_dedup_codes(lpos, rpos, _id_rank(left), len(left)))
    return _sorted_unique(lpos.astype(np.int64) * len(right) + rpos)


def _id_rank(table: pd.DataFrame) -> np.ndarray:
    """Rank of every record's id in string order (the canonical order of a dedup pair)."""
    ids = table.index.astype(str).to_numpy(dtype=object)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(ids, kind="stable")] = np.arange(len(ids))
    return rank


# ---------------------------------------------------------------------------- public
def block(
    left: pd.DataFrame,
    right: pd.DataFrame | None = None,
    rules: BlockingRule | Iterable[BlockingRule] | None = None,
    *,
    true_links: pd.MultiIndex | pd.DataFrame | Iterable[tuple[object, object]] | None = None,
    n_jobs: int | None = -1,
    identical: bool = False,
    one_way: bool = False,
) -> BlockingResult:
    """Candidate pairs between two tables, or within one: the union of the pairs of each rule.

    Parameters
    ----------
    left : pandas.DataFrame
        The (left) table, indexed by unique record id (as ``PairDataset.left``).
    right : pandas.DataFrame or None, default=None
        The right table; ``None`` (or ``left`` itself) blocks ``left`` against itself for
        deduplication: every unordered pair of distinct records at most once, stored as
        ``left_id < right_id`` (string order), never a record with itself.
    rules : rule or list of rules, default=None
        A rule is ``(method, columns)`` or ``(method, columns, params)`` with ``method`` one of
        ``BLOCKING_METHODS`` (``columns=None``: every shared attribute):

        - ``("standard", cols, {"max_pairs": None})``: the normalised values of all ``cols``
          are equal;
        - ``("sorted_neighbourhood", col, {"window": 5, "max_pairs": None})``: within
          ``window`` (odd) positions of each other in the sorted order of ``col``'s distinct
          values (recordlinkage's definition: records of equal value all pair);
        - ``("tokens", cols, {"top_k": 10, "min_similarity": 0.0, "budget": 100, "prefix": 5,
          "rescore": 8})``: each record's ``top_k`` nearest records of the other table (both
          directions) by TF-IDF cosine of the words of ``cols``, kept when the cosine exceeds
          ``min_similarity``. On one table: each record's ``top_k`` nearest *other* records.
          The nearest are sought among candidates that share an index token: every token whose
          record pairs fit, rarest first, in ``budget`` pairs per record (``budget * n_records``
          in all), and each record's ``prefix`` rarest tokens; the ``rescore * top_k`` best
          candidates of a record by their shared index tokens are ranked by the full cosine.
          Tokens beyond the budget (a first name shared by thousands) never pair records on
          their own, so the cost grows linearly with the tables.

        Records with a missing key take no part in ``standard``/``sorted_neighbourhood``. Their
        pairs are counted from the sizes of the blocks before any is made: a rule that would
        make more than ``max_pairs`` (None: 100 per record blocked, at least 1,000,000) is a
        :class:`~skrisk.exceptions.DataError` naming its largest block (key value and size) and
        how to split it. ``None`` means one ``tokens`` rule over all shared columns. ``top_k``
        and ``prefix`` are at most 1000, ``window`` at most 10001.
    true_links : MultiIndex, DataFrame or iterable of (left_id, right_id), optional
        The known matching pairs (on one table, in either order). When given, the result
        reports pair completeness and its pairs
        carry a ``label`` column.
    n_jobs : int or None, default=-1
        Threads of the ``tokens`` rule's row chunks (-1: every CPU, None: 1; never more than the
        CPUs). The pairs do not depend on it.
    identical : bool, default=False
        Make records that are identical in every shared attribute (after normalisation; a record
        with no value at all is never identical to another) candidates whatever the rules say.
        The records of such a group are blocked as one (its first record in table order, the
        group's head: copies of a record do not crowd out its neighbours), and each pair of
        heads a rule finds stands for every pair of their members. On one table every two
        members of a group are paired; between two tables every member of a group on one side
        with every member of it on the other. A pair of groups (or a group with itself) that
        would give more than 10,000 pairs gives each head with the other group's members only
        (connected components still hold the group together). :func:`skrisk.matching.match`
        sets it.
    one_way : bool, default=False
        Two tables: ``tokens`` rules pair each left record with its ``top_k`` nearest right
        records only, not also each right record with its nearest left ones, and the pair
        budget is ``budget`` per left record: a few left records against a large right table
        cost in proportion to the left ones (how incremental matching blocks new records
        against known ones).

    Returns
    -------
    BlockingResult
        The candidate pairs (no duplicates), reduction ratio, pair completeness, timing and
        ``task`` (``"link"`` or ``"dedup"``).

    Notes
    -----
    Values are compared after the same normalisation as :meth:`PairDataset.texts` (strings,
    lower-cased, stripped). The ``tokens`` rule examines at most about ``3 * budget`` candidate
    pairs per record (an inverted index over the affordable tokens, never the all-pairs product),
    holds about 2 million candidates at a time (row chunks), and produces at most
    ``top_k * (n_left + n_right)`` pairs. Where the candidates are a large share of all pairs
    (tables of a few thousand records) it scores all pairs in dense row chunks instead: the exact
    top-k, for less time.

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.data import block
    >>> left = pd.DataFrame({"name": ["acme corp", "globex inc", "initech"],
    ...                      "city": ["paris", "rome", "oslo"]}, index=["a1", "a2", "a3"])
    >>> right = pd.DataFrame({"name": ["acme corporation", "globex", "umbrella"],
    ...                       "city": ["paris", "rome", "oslo"]}, index=["b1", "b2", "b3"])
    >>> res = block(left, right, [("standard", "city")], true_links=[("a1", "b1"), ("a2", "b2")])
    >>> res.pairs
      left_id right_id  label
    0      a1       b1      1
    1      a2       b2      1
    2      a3       b3      0
    >>> round(res.reduction_ratio, 3), res.pair_completeness
    (0.667, 1.0)

    One table (deduplication): each unordered pair once, the smaller id first.

    >>> people = pd.DataFrame({"city": ["paris", "rome", "paris", "paris"]}, index=["p4", "p2", "p3", "p1"])
    >>> res = block(people, None, ("standard", "city"))
    >>> res.task, res.pairs.values.tolist()
    ('dedup', [['p3', 'p4'], ['p1', 'p4'], ['p1', 'p3']])
    """
    t0 = time.perf_counter()
    threads = n_threads(n_jobs)
    left, right = _check_tables(left, right)
    dedup = left is right
    parsed = _normalise_rules(rules, left, right)
    truth = None if true_links is None else _true_link_codes(true_links, left, right)
    n_right = len(right)
    rank = _id_rank(left) if dedup else None
    codes, sizes = [], {}
    groups = _identical_groups(left, right, [c for c in left.columns if c in right.columns]) \
        if identical else None
    # the rules block one record of each group of identical records (on each side)
    lpos = np.arange(len(left)) if groups is None else groups.left_reps
    rpos = lpos if dedup else (np.arange(n_right) if groups is None else groups.right_reps)
    sub_l = left if len(lpos) == len(left) else left.iloc[lpos]
    sub_r = sub_l if dedup else (right if len(rpos) == n_right else right.iloc[rpos])
    for method, cols, params in parsed:
        if dedup and len(sub_l) < 2:  # every record identical to one other: nothing left to block
            li = ri = np.empty(0, np.intp)
        elif method == "tokens":
            li, ri = _token_pairs(cols, params, sub_l, sub_r, threads, one_way=one_way and not dedup)
        elif method == "typed":
            li, ri = typed_pairs(cols, params, sub_l, sub_r)
        else:
            li, ri = _recordlinkage_pairs(method, cols, params, sub_l, sub_r,
                                          len(sub_l) + (0 if dedup else len(sub_r)))
        li, ri = lpos[li], rpos[ri]
        if groups is not None:  # each pair of group heads stands for their groups
            li, ri = groups.spread(li, ri)
        c = _pair_codes(li, ri, rank, n_right)
        del li, ri
        label = f"{method}:{'+'.join(cols)}"
        sizes[label] = sizes.get(label, 0) + len(c)
        codes.append(c)
    if groups is not None:
        li, ri = groups.identical_pairs()
        if len(li):
            c = _pair_codes(li, ri, rank, n_right)
            sizes["identical records"] = len(c)
            codes.append(c)
    all_codes = codes[0] if len(codes) == 1 else _sorted_unique(np.concatenate(codes))
    del codes
    li, ri = np.divmod(all_codes, n_right)
    pairs = pd.DataFrame(
        {
            "left_id": left.index.astype(str).to_numpy()[li],
            "right_id": right.index.astype(str).to_numpy()[ri],
        }
    )
    pc = None
    if truth is not None:
        at = np.minimum(np.searchsorted(truth, all_codes), max(len(truth) - 1, 0))
        found = (truth[at] == all_codes) if len(truth) else np.zeros(len(all_codes), bool)
        pairs["label"] = found.astype(np.int8)
        pc = float(found.sum() / len(truth)) if len(truth) else float("nan")
    n_all = len(left) * (len(left) - 1) // 2 if dedup else len(left) * n_right
    return BlockingResult(
        pairs=pairs,
        n_left=len(left),
        n_right=n_right,
        reduction_ratio=1.0 - len(pairs) / n_all,
        pair_completeness=pc,
        n_true_links=None if truth is None else int(len(truth)),
        rule_sizes=sizes,
        seconds=time.perf_counter() - t0,
        task="dedup" if dedup else "link",
    )

