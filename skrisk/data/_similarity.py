"""Per-attribute similarity features for record pairs (a scikit-learn transformer).

The features feed LearnRisk's rules and the fast sklearn baseline matcher. Every computation is
vectorised: string similarities run element-wise over the pairs in rapidfuzz's C code
(:func:`rapidfuzz.process.cpdist`), set similarities are overlaps of hashed token sets
(vectorised row comparisons in numpy, rapidfuzz's ``LCSseq`` for wide sets), and text is
tokenised once per distinct value, not once per pair.
"""

from __future__ import annotations

import gc
import numbers
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler, Levenshtein
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize
from sklearn.utils.validation import check_is_fitted, validate_data

from .._params import Interval, Options, SubsetOf, validate_params
from .._safetext import visible_short
from .._threads import map_in_order, n_threads
from ._pairs import PairDataset
from ._text import normalise_text
from ._token_sets import _char3, _chunked_sets, _groups_by, _set_overlap, _Sets
from ._types import NAME_TYPES, parse_dates, phonetic_codes, resolve_types, standardise
from ._value_metrics import (
    _PART_METRICS, _TYPED_ONLY, MISSING, _looks_numeric, _name_swap, _num_delta, _number_tokens, _parse_numbers,
    _typed_metric, _value_parts,
)

__all__ = ["SimilarityFeatures", "SIMILARITY_METRICS", "EncodedRecords"]

#: Metric names, in the order their features appear for each attribute.
#: ``num_delta`` is produced only for attributes detected as numeric in ``fit``.
SIMILARITY_METRICS: tuple[str, ...] = (
    "jaccard",
    "jaccard_3gram",
    "levenshtein",
    "jaro_winkler",
    "tfidf_cosine",
    "monge_elkan",
    "num_delta",
    "num_diff",
    "missing_diff",
)

#: The comparisons of typed attributes (``types``), by column type; ``text`` and ``number``
#: attributes get the generic ``SIMILARITY_METRICS``.
TYPED_METRICS: dict[str, tuple[str, ...]] = {
    "given_name": ("jaro_winkler", "levenshtein", "phonetic", "exact_tf", "missing_diff"),
    "family_name": ("jaro_winkler", "levenshtein", "phonetic", "exact_tf", "missing_diff"),
    "full_name": ("jaccard", "jaro_winkler", "jaccard_3gram", "monge_elkan", "phonetic", "exact_tf", "missing_diff"),
    "date": ("exact", "levenshtein", "date_fields", "day_month_swap", "years_apart", "missing_diff"),
    "phone": ("exact", "levenshtein", "last_digits", "missing_diff"),
    "postcode": ("exact", "levenshtein", "prefix", "missing_diff"),
    "email": ("exact", "jaro_winkler", "domain", "missing_diff"),
    "address": ("exact", "jaccard", "jaro_winkler", "levenshtein", "num_diff", "missing_diff"),
    "categorical": ("exact", "exact_tf", "jaro_winkler", "missing_diff"),
}
#: Every metric name a feature can end with (the generic ones, the typed ones, the name swap).
ALL_METRICS: tuple[str, ...] = tuple(dict.fromkeys(
    SIMILARITY_METRICS + tuple(m for ms in TYPED_METRICS.values() for m in ms) + ("name_swap",)))
_WORD_PATTERN = r"(?u)\b\w+\b"
_WORD_RE = re.compile(_WORD_PATTERN)
# Token pairs scored per Monge-Elkan chunk: bounds memory at a few tens of MB.
_ME_CHUNK = 1_000_000
# Pairs per thread below which transform_encoded stays on one thread (a thread's start-up and
# the lost sharing of repeated value pairs would cost more than it saves)
_THREAD_BLOCK = 20_000


def _row_dot(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    """Row-wise dot products of two sparse matrices of the same shape."""
    return np.asarray(a.multiply(b).sum(axis=1), dtype=np.float64).ravel()


def _incidence(token_lists: list[list[str]]) -> tuple[sp.csr_matrix, np.ndarray]:
    """Token counts of each value (values x distinct tokens, float32, sorted indices) and the
    distinct tokens, in order of first appearance."""
    lens = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    flat = [t for ts in token_lists for t in ts]
    codes, vocab = pd.factorize(pd.Series(flat, dtype=object)) if flat else (np.zeros(0, np.intp), [])
    ptr = np.concatenate(([0], np.cumsum(lens)))
    inc = sp.csr_matrix((np.ones(len(flat), np.float32), codes, ptr), shape=(len(token_lists), len(vocab)))
    inc.sum_duplicates()
    return inc, np.asarray(vocab, dtype=object)


def _tfidf_rows(inc: sp.csr_matrix, vocab: np.ndarray, vec: TfidfVectorizer) -> sp.csr_matrix:
    """``vec.transform`` of the values from their word-token incidence (same tokens, same steps:
    counts, sublinear tf, idf, l2 norm)."""
    vid = np.array([vec.vocabulary_.get(t, -1) for t in vocab], dtype=np.int64)
    coo = inc.tocoo()
    known = vid[coo.col] >= 0
    counts = sp.csr_matrix((coo.data[known], (coo.row[known], vid[coo.col[known]])),
                           shape=(inc.shape[0], len(vec.vocabulary_)), dtype=np.float32)
    counts.sum_duplicates()
    if vec.sublinear_tf:
        np.log(counts.data, counts.data)
        counts.data += 1.0
    counts.data *= vec.idf_[counts.indices]
    return normalize(counts, norm=vec.norm, copy=False)


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _char_masks(tokens: np.ndarray) -> np.ndarray:
    """A 64-bit mask of the characters of each token (character code modulo 64): two tokens
    whose masks share no bit share no character, so their Jaro-Winkler similarity is 0."""
    lens = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    cp = np.frombuffer("".join(tokens).encode("utf-32-le"), dtype="<u4")
    bits = np.left_shift(np.uint64(1), (cp % 64).astype(np.uint64))
    out = np.zeros(len(tokens), dtype=np.uint64)
    filled = np.flatnonzero(lens > 0)
    if len(filled):
        out[filled] = np.bitwise_or.reduceat(bits, (np.cumsum(lens) - lens)[filled])
    return out


def _monge_elkan(
    ltok: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    rtok: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    li: np.ndarray,
    ri: np.ndarray,
    workers: int,
    known: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Symmetric Monge-Elkan similarity with Jaro-Winkler as the inner similarity.

    ``ME(A, B) = mean_{a in A} max_{b in B} jw(a, b)``; the result is the mean of ``ME(A, B)`` and
    ``ME(B, A)``. The pairs are grouped by their numbers of tokens ``(|A|, |B|)``: in a group,
    the token pairs of each record pair form a ``|A| x |B|`` block, and the two maxima and means
    are reductions over its axes. Each distinct pair of tokens of a chunk (about ``_ME_CHUNK``
    token pairs) that shares a character is scored once, in one ``cpdist`` call (the others
    score 0: "12" against "street"). 0 where either side has no token.
    ``ltok``/``rtok`` are each side's ``(token ids, tokens per value, offset per value,
    vocabulary, character masks)`` (:func:`_char_masks`); ``known``: ``(pairs, values)`` already
    known (two one-token values: the Jaro-Winkler of their texts), not scored again.
    """
    out = np.zeros(len(li), dtype=np.float64)
    lflat, llen_u, loff_u, lvocab, lmask = ltok
    rflat, rlen_u, roff_u, rvocab, rmask = rtok
    nl, nr = llen_u[li], rlen_u[ri]
    cost = nl * nr
    if known is not None and len(known[0]):
        out[known[0]] = known[1]
        cost = cost.copy()
        cost[known[0]] = 0
    valid = np.flatnonzero(cost > 0)
    if len(valid) == 0:
        return out
    nv = len(rvocab)
    csum = np.cumsum(cost[valid])
    bounds = np.searchsorted(csum, np.arange(_ME_CHUNK, csum[-1], _ME_CHUNK), side="right")
    for chunk in np.split(valid, np.unique(bounds)):
        if len(chunk) == 0:
            continue
        order, runs = _groups_by(nl[chunk] * (int(nr[chunk].max()) + 1) + nr[chunk])
        chunk = chunk[order]
        groups, keys, share = [], [], []
        for s, e in runs:
            at = chunk[s:e]
            a, b = int(nl[at[0]]), int(nr[at[0]])
            lt = lflat[loff_u[li[at]][:, None] + np.arange(a)]
            rt = rflat[roff_u[ri[at]][:, None] + np.arange(b)]
            keys.append((lt[:, :, None] * nv + rt[:, None, :]).ravel())
            share.append(np.bitwise_and(lmask[lt][:, :, None], rmask[rt][:, None, :]).ravel() != 0)
            groups.append((at, a, b))
        shared = np.concatenate(share)
        scored = np.flatnonzero(shared)
        inv, uniq = pd.factorize(np.concatenate(keys)[scored])
        scores = np.zeros(len(shared), dtype=np.float64)
        scores[scored] = process.cpdist(lvocab[uniq // nv], rvocab[uniq % nv],
                                        scorer=JaroWinkler.normalized_similarity, workers=workers)[inv]
        p = 0
        for at, a, b in groups:
            block = scores[p:p + len(at) * a * b].reshape(len(at), a, b)
            p += len(at) * a * b
            out[at] = 0.5 * (block.max(axis=2).mean(axis=1) + block.max(axis=1).mean(axis=1))
    return out


@dataclass
class _Encoded:
    """What the metrics need of the distinct values of one attribute (one side)."""

    text: np.ndarray
    missing: np.ndarray
    sets: dict[str, _Sets] = field(default_factory=dict)
    tfidf: sp.csr_matrix | None = None
    tokens: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    whole_token: np.ndarray | None = None
    numbers: np.ndarray | None = None
    phonetic: np.ndarray | None = None  # names: Soundex codes of the standardised value
    ymd: np.ndarray | None = None  # dates: (year, month, day), -1 where unreadable
    rarity: np.ndarray | None = None  # -log10 of the share of the records holding the standardised value
    parts: dict[str, np.ndarray] = field(default_factory=dict)  # the part each of _PART_METRICS compares


def _pair_positions(ds: PairDataset) -> tuple[np.ndarray, np.ndarray] | None:
    """Row positions of each pair's left and right record in the dataset's tables (None: no pair,
    or an id that is not found as written)."""
    if not len(ds.pairs):
        return None
    out = []
    for side, table in (("left", ds.left), ("right", ds.right)):
        pos = pd.Index(table.index).get_indexer(ds.pairs[f"{side}_id"].to_numpy())
        if len(pos) and pos.min() < 0:
            return None
        out.append(pos.astype(np.intp))
    return out[0], out[1]


def _values_frame(ds: PairDataset, lpos: np.ndarray, rpos: np.ndarray) -> pd.DataFrame:
    """A pair frame holding, per column, exactly the distinct values of ``ds.to_frame()``: the
    records in pairs of each side, once each (the shorter side repeated; :meth:`SimilarityFeatures.fit`
    reads only the distinct values of each column)."""
    lu, ru = np.unique(lpos), np.unique(rpos)
    n = max(len(lu), len(ru), 1)
    lu, ru = np.resize(lu, n), np.resize(ru, n)
    cols = {f"left_{a}": ds.left[a].to_numpy(dtype=object)[lu] for a in ds.attributes}
    cols.update({f"right_{a}": ds.right[a].to_numpy(dtype=object)[ru] for a in ds.attributes})
    return pd.DataFrame(cols)


@dataclass
class EncodedRecords:
    """The records of one table, encoded by :meth:`SimilarityFeatures.encode`.

    Attributes
    ----------
    n_records : int
        Rows of the table.
    codes : dict of str to ndarray of int32
        Per attribute, each record's index into the attribute's distinct values.
    values : dict
        Per attribute, the encoded distinct values (normalised text, hashed token sets,
        TF-IDF rows, tokens, numbers), as the fitted metrics need them.
    """

    n_records: int
    codes: dict[str, np.ndarray]
    values: dict[str, _Encoded]

    def __repr__(self) -> str:
        n = {a: len(v.text) for a, v in self.values.items()}
        return f"EncodedRecords(n_records={self.n_records}, distinct_values={n})"


class SimilarityFeatures(TransformerMixin, BaseEstimator):
    """Per-attribute similarity features of record pairs.

    For every aligned attribute ``<a>`` of the two records of a pair it computes (in this order,
    restricted to ``metrics``):

    =====================  ======================================================================
    ``<a>_jaccard``        Jaccard of the word-token sets.
    ``<a>_jaccard_3gram``  Jaccard of the character 3-gram sets (words padded with a space).
    ``<a>_levenshtein``    Normalised Levenshtein similarity, ``1 - dist / max(len)``.
    ``<a>_jaro_winkler``   Jaro-Winkler similarity.
    ``<a>_tfidf_cosine``   Cosine of word TF-IDF vectors; the TF-IDF model is fitted in ``fit`` on
                           the distinct values of the attribute on both sides.
    ``<a>_monge_elkan``    Symmetric Monge-Elkan over word tokens, Jaro-Winkler inside.
    ``<a>_num_delta``      Relative difference ``|x - y| / max(|x|, |y|)`` (0 when both are 0) of
                           the first numbers of the two values (``1e5`` reads as 100000; a
                           value beyond float64 differs from any other by 1); ``-1`` when
                           either value holds no number (``n/a`` is missing, not equal); only
                           for attributes whose values look numeric in ``fit`` (at least 90 %
                           of the non-missing values).
    ``<a>_num_diff``       Binary: both values hold numbers (digit runs, also inside model codes:
                           ``1996``, ``5.5``, the ``120`` of ``dsc-w120``) and the two sets
                           conflict, i.e. neither contains the other (``{24, 4821}`` vs
                           ``{4821}`` is not a conflict; ``{1994}`` vs ``{1995}`` is).
    ``<a>_missing_diff``   Binary: exactly one of the two values is missing.
    =====================  ======================================================================

    Similarities lie in [0, 1] and are ``-1`` when either value is missing (empty). The binary
    flags are always 0 or 1 and are the only features whose name contains ``diff``; LearnRisk may
    rely on that.

    With ``types`` (``"auto"``: inferred from each column's name and values; a mapping overrides
    the guess of the columns it names), every attribute has a column type and typed attributes
    are standardised (see ``column_types_``) and compared by their type instead of the generic
    metrics (``TYPED_METRICS``; ``text`` and ``number`` attributes keep the generic ones):

    ======================  =====================================================================
    ``<a>_exact``           1 when the standardised values are equal, else 0.
    ``<a>_exact_tf``        Equal values weighted by rarity: ``-log10`` of the share of the
                            records holding the value (the larger share of the two tables'), 0
                            when the values differ: agreeing on a rare surname counts more than
                            on a common one. The shares are those of the records :meth:`encode`
                            read (of the pair frame's rows in :meth:`transform`).
    ``<a>_phonetic``        1 when the Soundex codes of the names' words agree.
    ``<a>_date_fields``     Share of year, month and day that agree (dates; 0 when either value
                            is not a readable date).
    ``<a>_day_month_swap``  1 when the year agrees and day and month are swapped.
    ``<a>_years_apart``     ``min(|year difference|, 10) / 10``.
    ``<a>_last_digits``     1 when the last seven digits agree (phones).
    ``<a>_prefix``          1 when the first three characters agree (postcodes).
    ``<a>_domain``          1 when the e-mail domains agree.
    ``<f>_name_swap``       For a given-name attribute ``<g>`` and a family-name attribute
                            ``<f>``: ``min(JW(g, f'), JW(f, g'))``, high when the two records
                            hold the names in swapped columns.
    ======================  =====================================================================

    Parameters
    ----------
    metrics : sequence of str, default=None
        Which metrics to compute, a subset of ``SIMILARITY_METRICS``; ``None`` means all.
    attributes : sequence of str, default=None
        Which attributes to use; ``None`` means all attributes of the input.
    types : "auto", dict or None, default=None
        Column types (see above): ``None`` compares every attribute as text with ``metrics``;
        ``"auto"`` infers each attribute's type in ``fit``; a dict maps attributes to a type name
        (``{"dob": "date"}``) or a type entry (``{"dob": {"type": "date", "order": "mdy"}}``) and
        the others are inferred. The types are ``given_name``, ``family_name``, ``full_name``,
        ``date``, ``phone``, ``postcode``, ``email``, ``number``, ``categorical`` and ``text``.
        ``metrics`` restricts the generic metrics of ``text`` and ``number`` attributes.
    n_jobs : int, default=None
        Threads: :meth:`transform_encoded` scores blocks of pairs on that many threads (every
        step of the features), :meth:`transform` uses them in rapidfuzz's element-wise scoring.
        ``None`` means 1, ``-1`` all cores. The values do not depend on it.

    Attributes
    ----------
    attributes_ : list of str
        The attributes used, in input order.
    numeric_attributes_ : list of str
        Attributes detected as numeric (they get a ``num_delta`` feature).
    attribute_metrics_ : dict of str to tuple of str
        The metrics of each attribute, in the order of its features (its type's typed
        comparisons, or the generic metrics of a ``text`` or ``number`` attribute).
    column_types_ : dict of str to dict
        Each attribute's type entry (``{"type": "date", "order": "dmy", "missing": [...]}``;
        every attribute ``{"type": "text", "missing": []}`` when ``types`` is None): what the
        attribute's values are standardised and compared as. ``missing`` lists the values read
        as missing, ``order`` says whether dates are written day or month first (settled in
        ``fit`` from values such as ``31/01/1990``), ``length`` is a digit-only postcode's
        length (leading zeros restored).
    tfidf_ : dict of str to TfidfVectorizer or None
        Fitted TF-IDF model per attribute (``None`` when the attribute had no token in ``fit``).
    n_features_in_ : int
        Number of input columns (``2 * n_attributes``).
    feature_names_in_ : ndarray of str
        Input column names, when the input had string column names.

    See Also
    --------
    PairDataset.to_frame : builds the input frame (``left_<a>`` ... then ``right_<a>`` ...).

    Notes
    -----
    Input is a pair frame as returned by :meth:`PairDataset.to_frame` (columns ``left_<a>`` and
    ``right_<a>`` for each attribute ``<a>``), a :class:`PairDataset` (converted once with
    ``to_frame``), or a 2-D array whose first half of columns are the left values and second half
    the right values. Values are normalised with the same rule as ``to_frame`` (strings,
    lower-cased, stripped, missing -> ``''``).

    Every distinct value is normalised, tokenised and hashed once (:meth:`encode` does it once
    per table); each distinct pair of values is then compared once, in rapidfuzz's native code
    on ``n_jobs`` threads (set overlaps as vectorised comparisons of the sets' hashed tokens).
    Cost is linear in the number of
    pairs, except Monge-Elkan, which scores ``n_tokens_left * n_tokens_right`` token pairs per
    record pair (each distinct token pair once, in bounded-memory chunks); leave it out of
    ``metrics`` for long free-text attributes if time matters.

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.data import SimilarityFeatures
    >>> X = pd.DataFrame({"left_name": ["sony dsc-w120 camera", "canon eos 40d", "acme"],
    ...                   "right_name": ["sony cybershot dsc-w120", "canon eos 50d", None]})
    >>> sf = SimilarityFeatures(metrics=["jaccard", "num_diff", "missing_diff"]).fit(X)
    >>> sf.get_feature_names_out().tolist()
    ['name_jaccard', 'name_num_diff', 'name_missing_diff']
    >>> sf.transform(X)
    array([[ 0.6,  0. ,  0. ],
           [ 0.5,  1. ,  0. ],
           [-1. ,  0. ,  1. ]], dtype=float32)

    A :class:`PairDataset` works directly (it is converted with ``to_frame``):

    >>> from skrisk.datasets import load_deepmatcher
    >>> ds = load_deepmatcher("beer")  # doctest: +SKIP
    >>> SimilarityFeatures().fit_transform(ds).shape  # doctest: +SKIP
    (450, 33)
    """

    _parameter_constraints: dict = {
        "metrics": [None, SubsetOf(tuple(SIMILARITY_METRICS))],
        "attributes": [None, str, "array-like"],
        "types": [None, Options(str, {"auto"}), dict],
        "n_jobs": [None, Interval(numbers.Integral, 1, None), Interval(numbers.Integral, None, -1, closed="right")],
    }

    def __init__(
        self,
        metrics: Sequence[str] | None = None,
        attributes: Sequence[str] | None = None,
        types: str | dict | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.metrics = metrics
        self.attributes = attributes
        self.types = types
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ input handling
    @staticmethod
    def _boundary(X: object) -> object:
        """PairDataset -> its pair frame; anything else unchanged (validated by validate_data)."""
        if isinstance(X, PairDataset):
            return X.to_frame()
        return X

    def _columns(self, X: object, n_cols: int) -> tuple[list[str], list[int], list[int]]:
        """Attribute names and the column positions of their left and right values."""
        names = None
        if isinstance(X, pd.DataFrame) and all(isinstance(c, str) for c in X.columns):
            names = [str(c) for c in X.columns]
        if names is not None and any(c.startswith(("left_", "right_")) for c in names):
            pos = {c: i for i, c in enumerate(names)}
            attrs = [c[len("left_"):] for c in names if c.startswith("left_")]
            unpaired = [c for c in names if not c.startswith(("left_", "right_"))]
            unpaired += [f"left_{a}" for a in attrs if f"right_{a}" not in pos]
            unpaired += [
                c for c in names if c.startswith("right_") and f"left_{c[len('right_'):]}" not in pos
            ]
            if unpaired:
                raise ValueError(
                    f"Columns {unpaired} of the pair frame have no partner: every attribute needs "
                    "a 'left_<a>' and a 'right_<a>' column. Build the input with "
                    "PairDataset.to_frame(), or drop those columns."
                )
            return attrs, [pos[f"left_{a}"] for a in attrs], [pos[f"right_{a}"] for a in attrs]
        if n_cols % 2:
            raise ValueError(
                f"X has {n_cols} feature(s) (columns), but a pair input needs an even number: the "
                "left values of each attribute, then the right values. Pass "
                "PairDataset.to_frame() or a frame with 'left_<a>'/'right_<a>' columns."
            )
        half = n_cols // 2
        if names is not None:
            attrs = names[:half]
        else:
            attrs = [f"x{i}" for i in range(half)]
        return attrs, list(range(half)), list(range(half, n_cols))

    def _check_params(self) -> list[str]:
        validate_params(self)
        if self.metrics is None:
            return list(SIMILARITY_METRICS)
        return [m for m in SIMILARITY_METRICS if m in self.metrics]

    def _workers(self, n_jobs: object = None) -> int:
        return n_threads(self.n_jobs if n_jobs is None else n_jobs)

    def _typed_state(self) -> None:
        """Fill the typed state of a transformer fitted by a version without ``types`` (every
        attribute text, the generic metrics), so that its saved models keep scoring as before."""
        if hasattr(self, "attribute_metrics_"):
            return
        self.column_types_ = {a: {"type": "text", "missing": []} for a in self.attributes_}
        self.attribute_metrics_ = {a: tuple(m for m in self._metrics if m != "num_delta" or a in self.numeric_attributes_)
                              for a in self.attributes_}
        self._swap = None

    # ------------------------------------------------------------------ fit / transform
    def fit(self, X: object, y: object = None) -> "SimilarityFeatures":
        """Detect numeric attributes and fit one TF-IDF model per attribute.

        Parameters
        ----------
        X : pandas.DataFrame, PairDataset or array-like of shape (n_pairs, 2 * n_attributes)
            The pairs (see Notes of the class).
        y : None
            Ignored.

        Returns
        -------
        self : SimilarityFeatures
            The fitted transformer.
        """
        metrics = self._check_params()
        self._workers()
        X = self._boundary(X)
        arr = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=True)
        attrs, lpos, rpos = self._columns(X, arr.shape[1])
        if self.attributes is not None:
            wanted = [self.attributes] if isinstance(self.attributes, str) else list(self.attributes)
            missing = [a for a in wanted if a not in attrs]
            if missing:
                raise ValueError(
                    f"attributes {missing} are not in the input, whose attributes are {attrs}."
                )
            keep = [attrs.index(a) for a in wanted]
            attrs = [attrs[i] for i in keep]
            lpos = [lpos[i] for i in keep]
            rpos = [rpos[i] for i in keep]
        self.attributes_ = attrs
        self._lpos, self._rpos = lpos, rpos
        self._metrics = metrics
        self.numeric_attributes_ = []
        self.tfidf_ = {}
        distinct = {}
        for a, lc, rc in zip(attrs, lpos, rpos):
            values = np.unique(np.concatenate([self._codes(arr[:, lc], a)[1], self._codes(arr[:, rc], a)[1]]))
            distinct[a] = values[values != ""]
        if self.types is None:
            self.column_types_ = {a: {"type": "text", "missing": []} for a in attrs}
        else:
            self.column_types_ = resolve_types(self.types, attrs, distinct, where="SimilarityFeatures(types=...)")
        self.attribute_metrics_ = {}
        for a in attrs:
            kind = self.column_types_[a]["type"]
            values = distinct[a]
            if kind in TYPED_METRICS:
                self.attribute_metrics_[a] = TYPED_METRICS[kind]
                continue
            if kind != "text":  # number: its missing-value tokens are not numbers
                values = standardise(values, self.column_types_[a])
                values = values[values != ""]
            numeric = "num_delta" in metrics and _looks_numeric(values)
            if numeric:
                self.numeric_attributes_.append(a)
            self.attribute_metrics_[a] = tuple(m for m in metrics if m != "num_delta" or numeric)
            if "tfidf_cosine" in metrics:
                vec = TfidfVectorizer(
                    token_pattern=_WORD_PATTERN, lowercase=False, sublinear_tf=True, dtype=np.float32
                )
                try:
                    vec.fit(values)
                except ValueError:  # empty vocabulary: no token in any value
                    vec = None
                self.tfidf_[a] = vec
        names = [f"{a}_{m}" for a in attrs for m in self.attribute_metrics_[a]]
        given = [a for a in attrs if self.column_types_[a]["type"] == "given_name"]
        family = [a for a in attrs if self.column_types_[a]["type"] == "family_name"]
        self._swap = (given[0], family[0]) if given and family else None
        if self._swap is not None:
            names.append(f"{self._swap[1]}_name_swap")
        self._feature_names = np.asarray(names, dtype=object)
        return self

    def fit_transform(self, X: object, y: object = None, **fit_params: Any) -> npt.NDArray[np.float32]:
        """Fit, then compute the features of each pair (:meth:`fit` and :meth:`transform`).

        A :class:`PairDataset` is fitted on the distinct values of its records in pairs (the
        values its pair frame holds) and transformed from its tables encoded once
        (:meth:`encode`, :meth:`transform_encoded`): the same features as through its pair frame,
        without building a text frame of every pair (a labelling session's 1.5 million
        candidates).

        Parameters
        ----------
        X : pandas.DataFrame, PairDataset or array-like of shape (n_pairs, 2 * n_attributes)
            The pairs (see Notes of the class).
        y : None
            Ignored.
        **fit_params : dict
            Ignored (scikit-learn's signature).

        Returns
        -------
        ndarray of shape (n_pairs, n_features_out), dtype float32
        """
        if not isinstance(X, PairDataset):
            return self.fit(X).transform(X)
        positions = _pair_positions(X)
        if positions is None:  # ids that do not index the tables plainly: the pair frame
            return self.fit(X).transform(X)
        lpos, rpos = positions
        self.fit(_values_frame(X, lpos, rpos))
        enc_l = self.encode(X.left)
        enc_r = enc_l if X.right is X.left else self.encode(X.right)
        return self.transform_encoded(enc_l, enc_r, lpos, rpos)

    def transform(self, X: object) -> npt.NDArray[np.float32]:
        """Compute the features of each pair.

        Parameters
        ----------
        X : pandas.DataFrame, PairDataset or array-like of shape (n_pairs, 2 * n_attributes)
            The pairs, with the columns seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_pairs, n_features_out), dtype float32
            Columns in the order of :meth:`get_feature_names_out`.
        """
        check_is_fitted(self)
        self._typed_state()
        workers = self._workers()
        X = self._boundary(X)
        arr = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=False)
        out = np.empty((arr.shape[0], len(self._feature_names)), dtype=np.float32)
        j = 0
        codes, encs = {}, {}
        for a, lc, rc in zip(self.attributes_, self._lpos, self._rpos):
            li, lu = self._codes(arr[:, lc], a)
            ri, ru = self._codes(arr[:, rc], a)
            L = self._encode(a, lu, np.bincount(li, minlength=len(lu)))
            R = self._encode(a, ru, np.bincount(ri, minlength=len(ru)))
            codes[a], encs[a] = (li, ri), (L, R)
            block = self._pair_block(a, L, R, li, ri, workers)
            out[:, j:j + block.shape[1]] = block
            j += block.shape[1]
        if self._swap is not None:
            g, f = self._swap
            out[:, j] = _name_swap(encs[g][0], encs[g][1], encs[f][0], encs[f][1], *codes[g], *codes[f], workers)
        return out

    def value_counts(self, table: pd.DataFrame) -> dict[str, pd.Series]:
        """How many records of ``table`` hold each standardised value, per attribute compared by
        ``exact_tf`` (missing values left out).

        The counts of the parts of a table add up (``a.add(b, fill_value=0)``) to those of the
        whole; :meth:`encode` given them weighs agreement by the whole table's frequencies, as if
        it had read every record.

        Parameters
        ----------
        table : pandas.DataFrame
            One row per record, one column per attribute.

        Returns
        -------
        dict of str to pandas.Series
            Per attribute, the counts (int64) indexed by standardised value.

        Examples
        --------
        >>> import pandas as pd
        >>> from skrisk.data import SimilarityFeatures
        >>> pairs = pd.DataFrame({"left_surname": ["smith", "jones"], "right_surname": ["smith", "jonas"],
        ...                       "left_postcode": ["2000", "2600"], "right_postcode": ["2000", "2601"]})
        >>> sf = SimilarityFeatures(types={"surname": "family_name", "postcode": "postcode"}).fit(pairs)
        >>> sf.value_counts(pd.DataFrame({"surname": ["Smith", "smith ", "Jones", None],
        ...                               "postcode": ["2000"] * 4}))["surname"].to_dict()
        {'jones': 1, 'smith': 2}
        """
        check_is_fitted(self)
        self._typed_state()
        out = {}
        for a in self.attributes_:
            if "exact_tf" not in self.attribute_metrics_[a]:
                continue
            codes, uniq = self._codes(table[a].to_numpy(dtype=object), a)
            texts = uniq if self.column_types_[a]["type"] == "text" else standardise(uniq, self.column_types_[a])
            counts = pd.Series(np.bincount(codes, minlength=len(uniq)).astype(np.int64)).groupby(
                pd.Series(texts, dtype=object).to_numpy(), sort=True).sum()
            out[a] = counts[counts.index != ""].astype(np.int64)
        return out

    def encode(self, table: pd.DataFrame, value_counts: Mapping[str, pd.Series] | None = None) -> "EncodedRecords":
        """Encode the records of one table once, for :meth:`transform_encoded`.

        Every distinct value of each attribute is normalised, tokenised and hashed once; the
        features of any number of pairs then cost only the pairwise comparisons (rapidfuzz's
        multi-threaded native code over the pairs), however the pairs are chunked.

        Parameters
        ----------
        table : pandas.DataFrame
            One row per record, one column per attribute (named as ``attributes_``; other
            columns are ignored).
        value_counts : dict of str to pandas.Series, optional
            The :meth:`value_counts` of the whole table ``table`` is part of: the ``exact_tf``
            features then use the whole table's frequencies (a value they do not hold, its count
            in ``table``). None: those of ``table``.

        Returns
        -------
        EncodedRecords
        """
        check_is_fitted(self)
        self._typed_state()
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"encode needs a pandas DataFrame of records, got {type(table).__name__}.")
        cols = {str(c): c for c in table.columns}
        missing = [a for a in self.attributes_ if a not in cols]
        if missing:
            raise ValueError(
                f"The table lacks the attribute column(s) {missing} the features were fitted on "
                f"(its columns: {list(cols)}): give a table with those columns."
            )
        codes, values = {}, {}
        for a in self.attributes_:
            codes[a], uniq = self._codes(table[cols[a]].to_numpy(dtype=object), a)
            values[a] = self._encode(a, uniq, np.bincount(codes[a], minlength=len(uniq)),
                                     None if value_counts is None else value_counts.get(a))
        return EncodedRecords(n_records=len(table), codes=codes, values=values)

    def transform_encoded(
        self,
        left: "EncodedRecords",
        right: "EncodedRecords",
        left_pos: npt.ArrayLike,
        right_pos: npt.ArrayLike,
        *,
        n_jobs: int | None = None,
    ) -> npt.NDArray[np.float32]:
        """Features of the pairs ``(left record left_pos[i], right record right_pos[i])``.

        The same values as :meth:`transform` of the pair frame of those records.

        Parameters
        ----------
        left, right : EncodedRecords
            :meth:`encode` of the two tables (the same object twice for one table).
        left_pos, right_pos : array-like of int, shape (n_pairs,)
            Row positions of each pair's records in the two tables.
        n_jobs : int or None, default=None
            Threads for this call (None: the ``n_jobs`` parameter): blocks of pairs are scored
            on that many threads, every step of the features in each (the values do not depend
            on it).

        Returns
        -------
        ndarray of shape (n_pairs, n_features_out), dtype float32

        Examples
        --------
        >>> import pandas as pd
        >>> from skrisk.data import SimilarityFeatures
        >>> table = pd.DataFrame({"name": ["acme corp", "acme co", "globex"]})
        >>> X = pd.DataFrame({"left_name": ["acme corp"], "right_name": ["acme co"]})
        >>> sf = SimilarityFeatures(metrics=["jaccard", "levenshtein"]).fit(X)
        >>> enc = sf.encode(table)
        >>> sf.transform_encoded(enc, enc, [0, 0], [1, 2]).round(3)
        array([[0.333, 0.778],
               [0.   , 0.   ]], dtype=float32)
        """
        check_is_fitted(self)
        self._typed_state()
        workers = self._workers(n_jobs)
        lp = np.asarray(left_pos, dtype=np.intp).ravel()
        rp = np.asarray(right_pos, dtype=np.intp).ravel()
        if lp.shape != rp.shape:
            raise ValueError(f"left_pos and right_pos differ in length ({len(lp)} and {len(rp)}).")
        for side, enc, pos in (("left", left, lp), ("right", right, rp)):
            if not isinstance(enc, EncodedRecords):
                raise TypeError(f"{side} must be SimilarityFeatures.encode(table) output.")
            if len(pos) and (pos.min() < 0 or pos.max() >= enc.n_records):
                raise IndexError(f"{side}_pos holds positions outside 0..{enc.n_records - 1}.")
        out = np.empty((len(lp), len(self._feature_names)), dtype=np.float32)
        threads = workers
        if threads > 1 and len(lp) >= 2 * _THREAD_BLOCK:
            # blocks of pairs on threads (the native work releases the GIL), rapidfuzz on one
            # thread each: the whole computation uses the cores, not only the comparisons
            edges = np.linspace(0, len(lp), min(threads, len(lp) // _THREAD_BLOCK) + 1).astype(np.intp)

            def fill(bounds: tuple[int, int]) -> None:
                s, e = bounds
                out[s:e] = self._encoded_block(left, right, lp[s:e], rp[s:e], 1)

            for _ in map_in_order(fill, list(zip(edges[:-1], edges[1:])), threads):
                pass
            return out
        out[:] = self._encoded_block(left, right, lp, rp, workers)
        return out

    def _encoded_block(
        self, left: "EncodedRecords", right: "EncodedRecords", lp: np.ndarray, rp: np.ndarray, workers: int
    ) -> np.ndarray:
        """:meth:`transform_encoded` of one block of pairs."""
        out = np.empty((len(lp), len(self._feature_names)), dtype=np.float32)
        j = 0
        for a in self.attributes_:
            block = self._pair_block(a, left.values[a], right.values[a], left.codes[a][lp],
                                     right.codes[a][rp], workers)
            out[:, j:j + block.shape[1]] = block
            j += block.shape[1]
        if self._swap is not None:
            g, f = self._swap
            out[:, j] = _name_swap(left.values[g], right.values[g], left.values[f], right.values[f],
                                   left.codes[g][lp], right.codes[g][rp], left.codes[f][lp], right.codes[f][rp],
                                   workers)
        return out

    @staticmethod
    def _codes(values: np.ndarray, attr: str) -> tuple[np.ndarray, np.ndarray]:
        """Distinct normalised texts of a column and each row's code into them.

        Raises ValueError for a text holding a lone surrogate (half of a UTF-16 pair; only the
        Python API gives one, no CSV reader does): pandas' hashing of such strings can merge
        distinct values silently (pandas GH 34550), and no tokenizer can hash it; and for a text
        holding a NUL character, which pandas' hashing cuts off (``"a"`` and ``"a\\x00b"`` merge).
        """
        try:
            try:
                joined = "".join(values)  # every cell a str: one pass in C
            except TypeError:  # missing values (NaN, None) or numbers among them
                joined = "".join(v for v in values if type(v) is str)
            joined.encode("utf-8")
        except UnicodeEncodeError:
            bad = next(v for v in values if type(v) is str and _has_lone_surrogate(v))
            raise ValueError(
                f"Attribute {attr!r} holds a text with a lone surrogate (half of a UTF-16 pair): "
                f"{visible_short(repr(bad))}. Such text cannot be compared reliably; decode the source properly, or "
                "replace the surrogates, e.g. text.encode('utf-8', 'replace').decode('utf-8')."
            ) from None
        if "\x00" in joined:  # pandas' hashing stops at a NUL: "a" and "a\x00b" would be one value
            bad = next(v for v in values if type(v) is str and "\x00" in v)
            raise ValueError(
                f"Attribute {attr!r} holds a text with a NUL character (\\x00): {visible_short(repr(bad))}. "
                "Such text cannot be told apart from the text before the NUL; remove the NUL characters first, "
                "e.g. column.str.replace('\\x00', '')."
            )
        inv, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
        text = np.empty(len(uniq), dtype=object)
        # a value already in normal form is kept, not held twice (lower() always makes a copy)
        text[:] = [v if type(v) is str and t == v else t for v, t in zip(uniq, map(normalise_text, uniq))]
        # int32 codes: half the memory of every record's code (a million records, six attributes)
        return inv.astype(np.int32 if len(uniq) < 2**31 else np.intp, copy=False), text

    def _encode(self, attr: str, texts: np.ndarray, counts: np.ndarray | None = None,
                whole: pd.Series | None = None) -> "_Encoded":
        """What the metrics need of each distinct text of one attribute.

        The cyclic garbage collector is paused meanwhile: the token lists are millions of small
        containers without cycles, and its passes over them would cost more than the work.
        """
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._encode_values(attr, texts, counts, whole)
        finally:
            if paused:
                gc.enable()

    def _encode_values(self, attr: str, texts: np.ndarray, counts: np.ndarray | None = None,
                       whole: pd.Series | None = None) -> "_Encoded":
        metrics = self.attribute_metrics_[attr]
        ctype = self.column_types_[attr]
        if ctype["type"] != "text":
            texts = standardise(texts, ctype)
        enc = _Encoded(text=texts, missing=texts == "")
        if "phonetic" in metrics:
            enc.phonetic = phonetic_codes(texts)
        for m in _PART_METRICS:
            if m in metrics:
                enc.parts[m] = _value_parts(m, texts)
        if {"date_fields", "day_month_swap", "years_apart"} & set(metrics):
            enc.ymd = parse_dates(texts, "ymd")  # standardised: ISO where readable
        if "exact_tf" in metrics:
            counts = np.ones(len(texts)) if counts is None else np.asarray(counts, dtype=np.float64)
            inv, _ = pd.factorize(pd.Series(texts, dtype=object))
            per_value = np.bincount(inv, weights=counts)
            present = float(counts[~enc.missing].sum()) or 1.0
            per_text = per_value[inv]
            if whole is not None:  # the whole table's counts (a value they lack: its count here)
                at = whole.index.get_indexer(pd.Series(texts, dtype=object))
                per_text[at >= 0] = whole.to_numpy(dtype=np.float64)[at[at >= 0]]
                present = float(whole.sum()) or 1.0
            enc.rarity = -np.log10(np.maximum(per_text / present, 1e-12))
        vec = self.tfidf_.get(attr) if "tfidf_cosine" in metrics else None
        if {"jaccard", "monge_elkan"} & set(metrics) or vec is not None:
            words = [_WORD_RE.findall(t) for t in texts]
            inc, vocab = _incidence(words)
            if "jaccard" in metrics:
                enc.sets["jaccard"] = _chunked_sets(words, None)
            if vec is not None:
                enc.tfidf = _tfidf_rows(inc, vocab, vec)
            if "monge_elkan" in metrics:
                lens = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
                ids, tok_vocab = pd.factorize(pd.Series([t for ws in words for t in ws] or [""], dtype=object))
                tok_vocab = np.asarray(tok_vocab, dtype=object)
                enc.tokens = (ids.astype(np.int64), lens, np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64),
                              tok_vocab, _char_masks(tok_vocab))
                # values that are one token and nothing else: their Monge-Elkan with another such
                # value is the Jaro-Winkler of the two texts, which the features compute anyway
                enc.whole_token = np.array([len(w) == 1 and w[0] == t for w, t in zip(words, texts)], dtype=bool)
        if "jaccard_3gram" in metrics:
            enc.sets["jaccard_3gram"] = _chunked_sets(texts, str.split, _char3)
        if "num_diff" in metrics:
            enc.sets["num_diff"] = _chunked_sets(texts, _number_tokens)
        if "num_delta" in metrics and attr in self.numeric_attributes_:
            enc.numbers = _parse_numbers(texts)
        return enc

    def _pair_block(
        self, attr: str, L: "_Encoded", R: "_Encoded", li: np.ndarray, ri: np.ndarray, workers: int
    ) -> np.ndarray:
        """The features of one attribute for pairs of distinct values ``(L[li[i]], R[ri[i]])``.

        Each distinct pair of values is compared once (cities, years, venues and the values of
        blocking keys repeat across pairs); the rows are then gathered back.
        """
        inv, uniq = pd.factorize(li.astype(np.int64) * len(R.text) + ri)
        if len(uniq) < 0.8 * len(li):
            return self._value_pairs(attr, L, R, uniq // len(R.text), uniq % len(R.text), workers)[inv]
        return self._value_pairs(attr, L, R, li, ri, workers)

    def _value_pairs(
        self, attr: str, L: "_Encoded", R: "_Encoded", li: np.ndarray, ri: np.ndarray, workers: int
    ) -> np.ndarray:
        n = len(li)
        lmiss, rmiss = L.missing[li], R.missing[ri]
        miss = lmiss | rmiss
        cols: list[np.ndarray] = []
        jw_col = None  # the texts' Jaro-Winkler, reused by Monge-Elkan for one-token values
        texts: tuple[np.ndarray, np.ndarray] | None = None  # the pairs' texts, gathered once
        for m in self.attribute_metrics_[attr]:
            if m in _TYPED_ONLY:
                col = _typed_metric(m, L, R, li, ri)
            elif m in ("jaccard", "jaccard_3gram"):
                ls, rs = L.sets[m], R.sets[m]
                inter = _set_overlap(ls, rs, li, ri, workers)
                union = ls.sizes[li] + rs.sizes[ri] - inter
                col = np.divide(inter, union, out=np.zeros(n), where=union > 0)
                empty = np.flatnonzero(union <= 0)  # both sets empty: 1 when the texts are equal
                col[empty] = (L.text[li[empty]] == R.text[ri[empty]]).astype(np.float64)
            elif m == "levenshtein":
                texts = texts or (L.text[li], R.text[ri])
                col = process.cpdist(*texts, scorer=Levenshtein.normalized_similarity, workers=workers)
            elif m == "jaro_winkler":
                texts = texts or (L.text[li], R.text[ri])
                col = process.cpdist(*texts, scorer=JaroWinkler.normalized_similarity, workers=workers)
                jw_col = col
            elif m == "tfidf_cosine":
                col = np.zeros(n) if L.tfidf is None else _row_dot(L.tfidf[li], R.tfidf[ri])
            elif m == "monge_elkan":
                known = None
                if jw_col is not None and L.whole_token is not None and R.whole_token is not None:
                    both = np.flatnonzero(L.whole_token[li] & R.whole_token[ri])
                    known = (both, jw_col[both])
                col = _monge_elkan(L.tokens, R.tokens, li, ri, workers, known)
            elif m == "num_delta":
                if attr not in self.numeric_attributes_:
                    continue
                col = _num_delta(L.numbers[li], R.numbers[ri])
            elif m == "num_diff":
                ls, rs = L.sets[m], R.sets[m]
                nl, nr = ls.sizes[li], rs.sizes[ri]
                both = (nl > 0) & (nr > 0)
                at = np.flatnonzero(both)  # the overlap matters only where both hold numbers
                inter = np.zeros(n)
                if len(at):
                    inter[at] = _set_overlap(ls, rs, li[at], ri[at], workers)
                # conflict: both hold numbers and neither set contains the other
                cols.append((both & (inter < nl) & (inter < nr)).astype(np.float64))
                continue
            else:  # missing_diff
                cols.append((lmiss ^ rmiss).astype(np.float64))
                continue
            col = np.asarray(col, dtype=np.float64)
            col[miss] = MISSING
            cols.append(col)
        return np.column_stack(cols) if cols else np.zeros((n, 0))

    def get_feature_names_out(self, input_features: object = None) -> npt.NDArray[np.object_]:
        """Names of the output features, ``<attribute>_<metric>``.

        Parameters
        ----------
        input_features : None
            Ignored (the names come from the attributes seen in ``fit``).

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self)
        return self._feature_names.copy()

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        # the input is a pair frame (the left and the right value of each attribute, text), the
        # same declaration as PairEncoder's: not a generic 2-D numeric array, so scikit-learn's
        # common checks skip it, as they skip its own text vectorizers
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        tags.requires_fit = True
        return tags
