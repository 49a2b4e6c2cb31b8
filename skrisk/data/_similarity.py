"""Per-attribute similarity features for record pairs (a scikit-learn transformer).

The features feed LearnRisk's rules and the fast sklearn baseline matcher. Every computation is
vectorised: string similarities run element-wise over the pairs in rapidfuzz's C code
(:func:`rapidfuzz.process.cpdist`), set similarities are sparse-matrix products over hashed
token sets, and text is tokenised once per distinct value, not once per pair.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler, Levenshtein
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import HashingVectorizer, TfidfVectorizer
from sklearn.utils.validation import check_is_fitted, validate_data

from ._pairs import PairDataset, _to_text

__all__ = ["SimilarityFeatures", "SIMILARITY_METRICS"]

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

#: Value of a similarity feature when either side of the pair is missing.
MISSING = -1.0

_WORD_PATTERN = r"(?u)\b\w+\b"
_WORD_RE = re.compile(_WORD_PATTERN)
# Number tokens: digit runs with an optional decimal part (the digits of model codes such as
# dsc-w120 count too, so formatting variants like "310/246-1501" and "310-246-1501" agree).
_NUMBER_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL_RE = re.compile(r"^\d+\.\d+$")
# A numeric-looking value: optional currency, a number, optional unit/percent.
_NUMERIC_VALUE_RE = r"^\s*[$€£]?\s*[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)\s*(?:%|[a-z]{0,3}\.?)\s*$"
_NUMBER_RE = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+))"
#: Share of non-missing values that must look numeric for ``num_delta`` to be produced.
_NUMERIC_SHARE = 0.9
# Token pairs scored per Monge-Elkan chunk: bounds memory at a few tens of MB.
_ME_CHUNK = 1_000_000


def _number_tokens(text: str) -> list[str]:
    """Number tokens of a text, canonicalised ("1,299.00" -> "1299", "5.50" -> "5.5", "07" -> "07")."""
    text = _THOUSANDS_RE.sub("", text)
    out = []
    for tok in _NUMBER_TOKEN_RE.findall(text):
        if _DECIMAL_RE.match(tok):
            tok = tok.rstrip("0").rstrip(".")
        out.append(tok)
    return out


def _hashing(analyzer: str | object, **kw: object) -> HashingVectorizer:
    return HashingVectorizer(
        analyzer=analyzer,  # type: ignore[arg-type]
        n_features=2**20,
        binary=True,
        norm=None,
        alternate_sign=False,
        lowercase=False,
        dtype=np.float32,
        **kw,  # type: ignore[arg-type]
    )


def _row_dot(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    """Row-wise dot products of two sparse matrices of the same shape."""
    return np.asarray(a.multiply(b).sum(axis=1), dtype=np.float64).ravel()


def _set_jaccard(
    lm: sp.csr_matrix, rm: sp.csr_matrix, li: np.ndarray, ri: np.ndarray, same: np.ndarray
) -> np.ndarray:
    """Jaccard of binary sets: rows ``li`` of ``lm`` against rows ``ri`` of ``rm``."""
    a, b = lm[li], rm[ri]
    inter = _row_dot(a, b)
    na = np.asarray(a.sum(axis=1)).ravel()
    nb = np.asarray(b.sum(axis=1)).ravel()
    union = na + nb - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(union > 0, inter / np.maximum(union, 1), same.astype(np.float64))
    return out


def _monge_elkan(
    ltoks: list[list[str]],
    rtoks: list[list[str]],
    li: np.ndarray,
    ri: np.ndarray,
    workers: int,
) -> np.ndarray:
    """Symmetric Monge-Elkan similarity with Jaro-Winkler as the inner similarity.

    ``ME(A, B) = mean_{a in A} max_{b in B} jw(a, b)``; the result is the mean of ``ME(A, B)`` and
    ``ME(B, A)``. All token pairs of a chunk of record pairs are scored in one ``cpdist`` call;
    the per-token maxima and per-pair means are ``reduceat``/``bincount`` reductions.
    0 where either side has no token.
    """
    n = len(li)
    out = np.zeros(n, dtype=np.float64)
    lflat = np.array([t for toks in ltoks for t in toks] or [""], dtype=object)
    rflat = np.array([t for toks in rtoks for t in toks] or [""], dtype=object)
    llen_u = np.fromiter((len(t) for t in ltoks), dtype=np.int64, count=len(ltoks))
    rlen_u = np.fromiter((len(t) for t in rtoks), dtype=np.int64, count=len(rtoks))
    loff_u = np.concatenate(([0], np.cumsum(llen_u)[:-1]))
    roff_u = np.concatenate(([0], np.cumsum(rlen_u)[:-1]))
    nl, nr = llen_u[li], rlen_u[ri]
    cost = nl * nr
    valid = np.flatnonzero(cost > 0)
    if len(valid) == 0:
        return out
    # chunk boundaries over the valid pairs, each holding about _ME_CHUNK token pairs
    csum = np.cumsum(cost[valid])
    bounds = np.searchsorted(csum, np.arange(_ME_CHUNK, csum[-1], _ME_CHUNK), side="right")
    for chunk in np.split(valid, np.unique(bounds)):
        if len(chunk) == 0:
            continue
        cl, cr, cc = nl[chunk], nr[chunk], cost[chunk]
        m = len(chunk)
        total = int(cc.sum())
        start = np.concatenate(([0], np.cumsum(cc)[:-1]))
        pair = np.repeat(np.arange(m), cc)
        t = np.arange(total) - start[pair]
        k = t // cr[pair]  # left token within the pair
        j = t - k * cr[pair]  # right token within the pair
        lidx = loff_u[li[chunk]][pair] + k
        ridx = roff_u[ri[chunk]][pair] + j
        scores = process.cpdist(
            lflat[lidx], rflat[ridx], scorer=JaroWinkler.normalized_similarity, workers=workers
        ).astype(np.float64)
        # left -> right: max over j within each (pair, k) row (contiguous runs of length cr)
        lrows = np.repeat(np.arange(m), cl)
        krow = np.arange(len(lrows)) - np.repeat(np.cumsum(cl) - cl, cl)
        lrow_start = start[lrows] + krow * cr[lrows]
        lmax = np.maximum.reduceat(scores, lrow_start)
        me_lr = np.bincount(lrows, weights=lmax, minlength=m) / cl
        # right -> left: max over k for each (pair, j)
        col_off = np.concatenate(([0], np.cumsum(cr)[:-1]))
        col_key = col_off[pair] + j
        rmax = np.zeros(int(cr.sum()), dtype=np.float64)
        np.maximum.at(rmax, col_key, scores)
        rcols = np.repeat(np.arange(m), cr)
        me_rl = np.bincount(rcols, weights=rmax, minlength=m) / cr
        out[chunk] = 0.5 * (me_lr + me_rl)
    return out


def _parse_numbers(values: np.ndarray) -> np.ndarray:
    """First number in each string (thousands separators removed); NaN where there is none."""
    s = pd.Series(values, dtype=object).str.replace(_THOUSANDS_RE, "", regex=True)
    return pd.to_numeric(s.str.extract(_NUMBER_RE, expand=False), errors="coerce").to_numpy(
        dtype=np.float64
    )


def _looks_numeric(values: np.ndarray) -> bool:
    vals = pd.Series(values, dtype=object)
    vals = vals[vals != ""]
    if len(vals) == 0:
        return False
    return bool(vals.str.match(_NUMERIC_VALUE_RE).mean() >= _NUMERIC_SHARE)


class SimilarityFeatures(TransformerMixin, BaseEstimator):
    """Per-attribute similarity features of record pairs.

    For every aligned attribute ``<a>`` of the two records of a pair it computes (in this order,
    restricted to ``metrics``):

    ================  ===========================================================================
    ``<a>_jaccard``        Jaccard of the word-token sets.
    ``<a>_jaccard_3gram``  Jaccard of the character 3-gram sets (words padded with a space).
    ``<a>_levenshtein``    Normalised Levenshtein similarity, ``1 - dist / max(len)``.
    ``<a>_jaro_winkler``   Jaro-Winkler similarity.
    ``<a>_tfidf_cosine``   Cosine of word TF-IDF vectors; the TF-IDF model is fitted in ``fit`` on
                           the distinct values of the attribute on both sides.
    ``<a>_monge_elkan``    Symmetric Monge-Elkan over word tokens, Jaro-Winkler inside.
    ``<a>_num_delta``      Relative difference ``|x - y| / max(|x|, |y|)`` (0 when both are 0) of
                           the numbers in the two values; only for attributes whose values look
                           numeric in ``fit`` (at least 90 % of the non-missing values).
    ``<a>_num_diff``       Binary: both values hold numbers (digit runs, also inside model codes:
                           ``1996``, ``5.5``, the ``120`` of ``dsc-w120``) and the two sets
                           conflict, i.e. neither contains the other (``{24, 4821}`` vs
                           ``{4821}`` is not a conflict; ``{1994}`` vs ``{1995}`` is).
    ``<a>_missing_diff``   Binary: exactly one of the two values is missing.
    ================  ===========================================================================

    Similarities lie in [0, 1] and are ``-1`` when either value is missing (empty). The binary
    flags are always 0 or 1 and are the only features whose name contains ``diff``; LearnRisk may
    rely on that.

    Parameters
    ----------
    metrics : sequence of str, default=None
        Which metrics to compute, a subset of :data:`SIMILARITY_METRICS`; ``None`` means all.
    attributes : sequence of str, default=None
        Which attributes to use; ``None`` means all attributes of the input.
    n_jobs : int, default=None
        Threads for rapidfuzz's element-wise scoring. ``None`` means 1, ``-1`` all cores.

    Attributes
    ----------
    attributes_ : list of str
        The attributes used, in input order.
    numeric_attributes_ : list of str
        Attributes detected as numeric (they get a ``num_delta`` feature).
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

    Cost is linear in the number of pairs, except Monge-Elkan, which scores
    ``n_tokens_left * n_tokens_right`` token pairs per record pair (in bounded-memory chunks);
    leave it out of ``metrics`` for long free-text attributes if time matters.

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

    def __init__(
        self,
        metrics: Sequence[str] | None = None,
        attributes: Sequence[str] | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.metrics = metrics
        self.attributes = attributes
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

    def _texts(self, arr: np.ndarray, col: int) -> np.ndarray:
        col_values = arr[:, col]
        inv, uniq = pd.factorize(pd.Series(col_values, dtype=object), use_na_sentinel=False)
        text = np.array([_to_text(v) for v in uniq], dtype=object)
        return text[inv] if len(text) else np.array([], dtype=object)

    def _check_params(self) -> list[str]:
        if self.metrics is None:
            return list(SIMILARITY_METRICS)
        if isinstance(self.metrics, str):
            raise TypeError(
                f"metrics must be a list of metric names, got the string {self.metrics!r}; "
                f"write metrics=[{self.metrics!r}]."
            )
        metrics = list(self.metrics)
        unknown = [m for m in metrics if m not in SIMILARITY_METRICS]
        if unknown or not metrics:
            raise ValueError(
                f"Unknown or no metrics {unknown}: choose from {list(SIMILARITY_METRICS)} "
                "(or metrics=None for all)."
            )
        return [m for m in SIMILARITY_METRICS if m in metrics]

    def _workers(self) -> int:
        if self.n_jobs is None:
            return 1
        if not isinstance(self.n_jobs, (int, np.integer)) or self.n_jobs == 0:
            raise ValueError(f"n_jobs must be a non-zero int or None, got {self.n_jobs!r}.")
        return int(self.n_jobs)

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
        for a, lc, rc in zip(attrs, lpos, rpos):
            values = np.unique(np.concatenate([self._texts(arr, lc), self._texts(arr, rc)]))
            values = values[values != ""]
            if "num_delta" in metrics and _looks_numeric(values):
                self.numeric_attributes_.append(a)
            if "tfidf_cosine" in metrics:
                vec = TfidfVectorizer(
                    token_pattern=_WORD_PATTERN, lowercase=False, sublinear_tf=True, dtype=np.float32
                )
                try:
                    vec.fit(values)
                except ValueError:  # empty vocabulary: no token in any value
                    vec = None
                self.tfidf_[a] = vec
        names = []
        for a in attrs:
            for m in metrics:
                if m == "num_delta" and a not in self.numeric_attributes_:
                    continue
                names.append(f"{a}_{m}")
        self._feature_names = np.asarray(names, dtype=object)
        return self

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
        workers = self._workers()
        X = self._boundary(X)
        arr = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=False)
        blocks = []
        for a, lc, rc in zip(self.attributes_, self._lpos, self._rpos):
            blocks.append(self._attribute_features(a, self._texts(arr, lc), self._texts(arr, rc), workers))
        if not blocks:
            return np.zeros((arr.shape[0], 0), dtype=np.float32)
        return np.column_stack(blocks).astype(np.float32, copy=False)

    def _attribute_features(self, attr: str, left: np.ndarray, right: np.ndarray, workers: int) -> np.ndarray:
        metrics = self._metrics
        n = len(left)
        lu, li = np.unique(left, return_inverse=True)
        ru, ri = np.unique(right, return_inverse=True)
        li, ri = li.ravel(), ri.ravel()
        lmiss, rmiss = left == "", right == ""
        miss = lmiss | rmiss
        same = left == right
        cols: list[np.ndarray] = []
        for m in metrics:
            if m == "jaccard":
                v = _hashing("word", token_pattern=_WORD_PATTERN)
                col = _set_jaccard(v.transform(lu), v.transform(ru), li, ri, same)
            elif m == "jaccard_3gram":
                v = _hashing("char_wb", ngram_range=(3, 3))
                col = _set_jaccard(v.transform(lu), v.transform(ru), li, ri, same)
            elif m == "levenshtein":
                col = process.cpdist(left, right, scorer=Levenshtein.normalized_similarity, workers=workers)
            elif m == "jaro_winkler":
                col = process.cpdist(left, right, scorer=JaroWinkler.normalized_similarity, workers=workers)
            elif m == "tfidf_cosine":
                vec = self.tfidf_.get(attr)
                if vec is None:
                    col = np.zeros(n)
                else:
                    col = _row_dot(vec.transform(lu)[li], vec.transform(ru)[ri])
            elif m == "monge_elkan":
                ltoks = [_WORD_RE.findall(s) for s in lu]
                rtoks = [_WORD_RE.findall(s) for s in ru]
                col = _monge_elkan(ltoks, rtoks, li, ri, workers)
            elif m == "num_delta":
                if attr not in self.numeric_attributes_:
                    continue
                x, y = _parse_numbers(lu)[li], _parse_numbers(ru)[ri]
                denom = np.maximum(np.abs(x), np.abs(y))
                with np.errstate(invalid="ignore", divide="ignore"):
                    col = np.where(denom > 0, np.abs(x - y) / denom, 0.0)
                col = np.where(np.isnan(col), MISSING, col)
            elif m == "num_diff":
                v = _hashing(_number_tokens)
                lc, rc = v.transform(lu)[li], v.transform(ru)[ri]
                nl, nr = lc.getnnz(axis=1), rc.getnnz(axis=1)
                inter = _row_dot(lc, rc)
                # conflict: both hold numbers and neither set contains the other
                col = ((nl > 0) & (nr > 0) & (inter < nl) & (inter < nr)).astype(np.float64)
                cols.append(col)
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
