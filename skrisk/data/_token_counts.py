"""The word counts of records that the ``tokens`` blocking rule weighs by TF-IDF.

A table's :class:`TokenCounts` hold, per record, how often each word of its key columns occurs
(normalised text, words as ``TfidfVectorizer(token_pattern=r"(?u)\\b\\w+\\b")`` finds them),
over a vocabulary sorted by text, so that the counts of two tables combine whatever their order
and the word ids (which break ties between equally rare words) depend on the words alone
(:func:`combine`).

:func:`known_token_counts` lends the counts of records already counted (an incremental run's
known records, kept in its index) to every :func:`tfidf_records` of the block: a table whose
records all have lent counts is not tokenised again.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import pandas as pd

from ._text import normalise_text

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["TokenCounts", "combine", "concat_counts", "known_token_counts", "token_counts", "tfidf_of_counts",
           "tfidf_records"]

_WORD_RE = re.compile(r"(?u)\b\w+\b")
_LENT: contextvars.ContextVar = contextvars.ContextVar("skrisk_known_token_counts", default=None)


@dataclass
class TokenCounts:
    """Word counts of records over key columns: ``counts[i, j]`` is how often ``vocab[j]``
    occurs in the record ``ids[i]`` (``vocab`` sorted and distinct)."""

    columns: list[str]
    ids: pd.Index
    vocab: np.ndarray
    counts: sp.csr_matrix

    def take(self, positions: np.ndarray) -> TokenCounts:
        """The counts of the records at ``positions`` (the vocabulary is kept)."""
        return TokenCounts(self.columns, self.ids[positions], self.vocab, self.counts[positions])


def token_counts(table: pd.DataFrame, cols: Sequence[str]) -> TokenCounts:
    """The word counts of ``table``'s records over the columns ``cols`` (every distinct value of a
    column normalised and split into words once)."""
    import scipy.sparse as sp

    per_col = []  # (codes of the records, word lists of the distinct values)
    paused = gc.isenabled()
    gc.disable()  # millions of small word lists without cycles: the collector's passes cost more
    try:
        for c in cols:
            codes, uniq = pd.factorize(table[c].astype(object), use_na_sentinel=False)
            per_col.append((codes, [_WORD_RE.findall(normalise_text(v)) for v in uniq]))
    finally:
        if paused:
            gc.enable()
    flat = [t for _, toks in per_col for ts in toks for t in ts]
    ids, vocab = pd.factorize(pd.Series(flat, dtype=object))
    del flat
    vocab = np.asarray(vocab, dtype=object)
    order = np.argsort(vocab, kind="stable")  # word ids by text: the same whatever the tables
    place = np.empty(len(vocab), dtype=np.int64)
    place[order] = np.arange(len(vocab))
    ids = place[ids] if len(ids) else ids.astype(np.int64)
    m, at = None, 0
    while per_col:  # one column at a time: a records x words matrix in CSR form directly
        codes, toks = per_col.pop(0)
        lens = np.fromiter((len(t) for t in toks), dtype=np.int64, count=len(toks))
        del toks
        ptr = np.concatenate(([0], np.cumsum(lens)))
        value_ids = ids[at:at + ptr[-1]]
        at += int(ptr[-1])
        cnt = lens[codes]
        tok = value_ids[np.repeat(ptr[codes] - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))]
        part = sp.csr_matrix((np.ones(len(tok), np.float32), tok.astype(np.int32), np.r_[0, np.cumsum(cnt)]),
                             shape=(len(table), len(vocab)))
        m = part if m is None else m + part
    if m is None:
        m = sp.csr_matrix((len(table), 0), dtype=np.float32)
    m.sum_duplicates()  # a word twice in a record counts twice
    return TokenCounts(list(cols), pd.Index(table.index), vocab[order], m)


def _lookup(vocab: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each word is, or would be slotted, in the sorted ``vocab``, and whether it is there."""
    pos = np.searchsorted(vocab, words)
    hit = np.zeros(len(words), dtype=bool)
    inside = pos < len(vocab)
    hit[inside] = vocab[pos[inside]] == words[inside]
    return pos, hit


def combine(parts: list[TokenCounts]) -> tuple[np.ndarray, list[sp.csr_matrix]]:
    """One vocabulary for the counts of several tables, and each table's counts over it.

    The vocabulary is that of the table with the most words (the first such), then the words of
    each other table that it lacks, in text order: the largest table's counts are used as they
    are (no copy), and the word ids depend on the tables' words alone.
    """
    import scipy.sparse as sp

    big = max(range(len(parts)), key=lambda i: (len(parts[i].vocab), -i))
    base = parts[big].vocab
    added: dict[str, int] = {}
    extra: list[np.ndarray] = []
    places: list[np.ndarray | None] = []
    for i, p in enumerate(parts):
        if i == big:
            places.append(None)
            continue
        pos, hit = _lookup(base, p.vocab)
        where = np.full(len(p.vocab), -1, dtype=np.int64)
        where[hit] = pos[hit]
        for j in np.flatnonzero(~hit):  # the words the largest table lacks (few)
            w = p.vocab[j]
            if w not in added:
                added[w] = len(base) + len(added)
                extra.append(w)
            where[j] = added[w]
        places.append(where)
    vocab = np.concatenate([base, np.array(extra, dtype=object)]) if extra else base
    out = []
    for p, where in zip(parts, places):
        m = p.counts
        indices = m.indices if where is None else where[m.indices].astype(np.int32)
        out.append(sp.csr_matrix((m.data, indices, m.indptr), shape=(m.shape[0], len(vocab))))
    return vocab, out


def concat_counts(a: TokenCounts, b: TokenCounts, order: np.ndarray | None = None) -> TokenCounts:
    """The counts of ``a``'s records then ``b``'s (or those rows in the rows of ``order``, which
    keeps each table's records in their order: ``b``'s slotted in among ``a``'s), over the sorted
    union of their words (``b`` the smaller: costs ``len(b.vocab) log len(a.vocab)`` comparisons
    and one pass over the counts, written once into the result)."""
    import scipy.sparse as sp

    pos, hit = _lookup(a.vocab, b.vocab)
    at = pos[~hit]
    vocab = np.insert(a.vocab, at, b.vocab[~hit])  # b's new words slotted in: still sorted
    where_a = (np.arange(len(a.vocab)) + np.searchsorted(at, np.arange(len(a.vocab)), side="right")).astype(np.int32)
    where_b = np.empty(len(b.vocab), dtype=np.int32)
    where_b[hit] = where_a[pos[hit]]
    where_b[~hit] = at + np.arange(len(at))
    n_a = a.counts.shape[0]
    order = np.arange(n_a + b.counts.shape[0]) if order is None else np.asarray(order)
    from_a = order < n_a
    lens = np.concatenate([np.diff(a.counts.indptr), np.diff(b.counts.indptr)])[order]
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    of_a = np.repeat(from_a, lens)  # each stored count: from a row of a (in a's order) or of b
    del lens
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    indices[of_a], data[of_a] = where_a[a.counts.indices], a.counts.data
    indices[~of_a], data[~of_a] = where_b[b.counts.indices], b.counts.data
    counts = sp.csr_matrix((data, indices, indptr), shape=(len(order), len(vocab)))
    return TokenCounts(list(a.columns), a.ids.append(b.ids)[order], vocab, counts)


@contextlib.contextmanager
def known_token_counts(counts: TokenCounts | None) -> Iterator[None]:
    """Within the block, the first :func:`tfidf_records` of a table whose records all have counts
    in ``counts`` over the same columns takes them from there (None: lends nothing). They are
    lent once: once taken they are no longer held here, so that their memory can go."""
    token = _LENT.set(counts)
    del counts  # held by the context variable only, until taken
    try:
        yield
    finally:
        _LENT.reset(token)


def _counts_of(table: pd.DataFrame, cols: list[str]) -> tuple[TokenCounts, bool]:
    """The counts of ``table``'s records, and whether they are lent (not to be changed)."""
    lent = _LENT.get()
    if lent is not None and lent.columns == list(cols) and len(table) and len(lent.ids):
        same = table.index.equals(lent.ids)
        pos = None if same else lent.ids.get_indexer(table.index)
        if same or (pos >= 0).all():
            _LENT.set(None)  # lent once
            return (lent if same else lent.take(pos)), same
    return token_counts(table, cols), False


def tfidf_records(tables: list[pd.DataFrame], cols: list[str]) -> list[sp.csr_matrix] | None:
    """Word TF-IDF vectors of the records of each table over the key columns (None: no word).

    The vectors of a ``TfidfVectorizer(token_pattern=r"(?u)\\b\\w+\\b", sublinear_tf=True)``
    fitted on the records' joined key texts of all tables: ``1 + log(tf)`` times the smoothed
    idf, rows of unit length; the columns are the words in text order.
    """
    parts = [_counts_of(t, cols) for t in tables]
    return tfidf_of_counts([p for p, _ in parts], [lent for _, lent in parts])


def tfidf_of_counts(parts: list[TokenCounts], lent: list[bool]) -> list[sp.csr_matrix] | None:
    """:func:`tfidf_records` of tables given by their word counts (``lent[i]``: the counts of
    ``parts[i]`` stay as they are, the weights get their own values)."""
    from sklearn.preprocessing import normalize

    vocab, counts = combine(parts)
    if not len(vocab):
        return None
    n_docs = sum(m.shape[0] for m in counts)
    df = sum(np.bincount(m.indices, minlength=len(vocab)) for m in counts)
    idf = (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0).astype(np.float32)
    out = []
    for m, keep in zip(counts, lent):
        if keep:  # the lent counts stay as they are
            m.data = m.data.copy()
        np.log(m.data, m.data)
        m.data += 1.0
        m.data *= idf[m.indices]
        out.append(normalize(m, norm="l2", copy=False))
    return out
