"""ChunkScorer: similarity features -> matcher probabilities -> risk (-> representation) of a
chunk of candidate pairs, vectorised. The one per-chunk scoring of the package (streaming pools,
the Dask path and :func:`skrisk.matching.match` use it)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.pipeline import Pipeline

from .._threads import n_threads
from ..data._text import normalise_text
from ..exceptions import DataError, NotFittedError
from ..matchers._base import MATCH_THRESHOLD, match_labels

__all__ = ["ChunkScorer", "ScoredChunk", "PAIR_COLUMNS"]

#: The two columns every chunk of candidate pairs must have (record ids of the two tables).
PAIR_COLUMNS: tuple[str, str] = ("left_id", "right_id")

_MATCHER_INPUTS = ("auto", "features", "pairs")


@dataclass(frozen=True)
class ScoredChunk:
    """What :meth:`ChunkScorer.score` computed for one chunk of pairs, in the chunk's row order.

    Attributes
    ----------
    pairs : pandas.DataFrame
        ``left_id``, ``right_id`` (``str``) of the scored pairs, with a ``RangeIndex``.
    proba : ndarray of float64, shape (n_pairs,)
        The matcher's match probability of every pair.
    risk : ndarray of float64, shape (n_pairs,) or None
        LearnRisk's risk (VaR) of every pair; None when the scorer has no risk model; NaN for
        the pairs that are not predicted matches when :meth:`ChunkScorer.score` was asked for
        ``risk_of="matches"``.
    representation : ndarray of float32, shape (n_pairs, h) or None
        The pairs' representations (the matcher's ``represent``, else the similarity features);
        None unless asked for.
    labels : ndarray of int64, shape (n_pairs,)
        1 where ``proba > threshold`` (the scorer's threshold), else 0.
    """

    pairs: pd.DataFrame
    proba: npt.NDArray[np.float64]
    risk: npt.NDArray[np.float64] | None
    representation: npt.NDArray[np.float32] | None
    labels: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.proba)

    def __repr__(self) -> str:
        rep = "None" if self.representation is None else f"<{self.representation.shape}>"
        return (
            f"ScoredChunk(n_pairs={len(self)}, matches={int(self.labels.sum())}, "
            f"risk={'None' if self.risk is None else 'yes'}, representation={rep})"
        )


def _texts(table: pd.DataFrame, column: Any) -> np.ndarray:
    """One column as normalised text (``PairDataset.texts``' rule), each distinct value once."""
    codes, uniq = pd.factorize(table[column].astype(object), use_na_sentinel=False)
    text = np.array([normalise_text(v) for v in uniq], dtype=object)
    return text[codes] if len(text) else np.array([], dtype=object)


def _record_index(table: pd.DataFrame, side: str) -> pd.Index:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(
            f"ChunkScorer: the {side} table must be a pandas DataFrame indexed by record id, got "
            f"{type(table).__name__}."
        )
    if len(table) == 0:
        raise DataError(f"ChunkScorer: the {side} table is empty: it needs at least one record.")
    if pd.isna(table.index).any():
        row = int(np.flatnonzero(pd.isna(table.index))[0])
        raise DataError(
            f"ChunkScorer: the {side} table has a missing record id at position {row}: give every "
            "record an id (the table's index)."
        )
    index = pd.Index(table.index.astype(str))
    if not index.is_unique:
        dup = index[index.duplicated()][:3].tolist()
        raise DataError(
            f"ChunkScorer: the {side} table has duplicate record ids, e.g. {dup}: make the ids "
            "(the table's index) unique, one row per record."
        )
    return index


def _input_names(est: Any) -> list[str] | None:
    """The column names an estimator (or a pipeline's first step) was fitted on, if any."""
    names = getattr(est, "feature_names_in_", None)
    if names is None and isinstance(est, Pipeline) and len(est.steps):
        names = getattr(est.steps[0][1], "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


class ChunkScorer:
    """Score chunks of candidate pairs with fitted models: features, probabilities, risks.

    One object holds the two tables (each attribute normalised to text once) and the fitted
    models; :meth:`score` turns a chunk of ``(left_id, right_id)`` pairs into similarity features,
    the matcher's match probabilities, LearnRisk's risks and, on request, the representations
    risk sampling measures distances in. Every step is vectorised over the chunk, and the result
    of a pair does not depend on which chunk it came in.

    Parameters
    ----------
    left : pandas.DataFrame
        The left table, indexed by record id (ids are compared as ``str``), one column per
        attribute (as ``PairDataset.left``).
    right : pandas.DataFrame or None
        The right table (linkage), or the left table itself / None (deduplication: both records
        of a pair come from the one table).
    features : SimilarityFeatures
        Fitted on pair frames (``left_<a>``/``right_<a>`` columns, :meth:`PairDataset.to_frame`):
        the attributes it was fitted on are read from the tables by those names.
    matcher : classifier
        Fitted, with ``predict_proba``: a :class:`~skrisk.matchers.FeatureMatcher` (on the
        similarity features or on pair frames), any scikit-learn classifier or ``Pipeline`` on the
        similarity features, or a pipeline on pair frames such as
        ``make_rnn_pipeline``'s ``PairEncoder`` + ``RNNMatcher``.
    risk_model : LearnRisk or None, default=None
        A fitted :class:`~skrisk.LearnRisk`; its risk of every pair is computed from the
        matcher's probabilities (LearnRisk reads the similarity features from the matcher's
        input, or through its own ``features`` callable). None: no risk (``ScoredChunk.risk`` is
        None).
    threshold : float, default=MATCH_THRESHOLD
        A pair is predicted a match when its probability exceeds it (``ScoredChunk.labels``).
    n_jobs : int or None, default=-1
        Threads of the similarity features' pairwise comparisons (rapidfuzz); -1 all cores, None
        the features' own ``n_jobs``. The values do not depend on it.
    matcher_input : {"auto", "features", "pairs"}, default="auto"
        What the matcher is given: the similarity-feature matrix, or the pair frame. ``"auto"``:
        the pair frame when the matcher was fitted on one (a FeatureMatcher whose
        ``input_kind_`` is ``"frame"``, or an estimator / pipeline that recorded at fit time
        (``feature_names_in_``) exactly the pair-frame columns ``features`` was fitted on), else
        the features. Nothing is guessed from column-name prefixes.
    value_counts : dict or (dict, dict), optional
        The :meth:`~skrisk.data.SimilarityFeatures.value_counts` of the whole table(s) the two
        tables are parts of (a pair: left's and right's), so that a scorer of some of the records
        computes the frequency-weighted features of the whole (how matching on a cluster scores a
        partition). None: the frequencies of ``left`` and ``right``.

    Attributes
    ----------
    task : {"link", "dedup"}
        ``"dedup"`` when ``right`` is ``left`` (or None).
    attributes : list of str
        The attributes the features read, in the features' input order.

    Notes
    -----
    Memory of one :meth:`score` call is linear in the chunk: the pair frame (two text references
    per attribute and pair), the feature matrix (``n_features`` floats per pair), the
    representation (``h`` float32 per pair) and the models' own per-row temporaries. The tables
    are held once as normalised text.

    Not supported yet: a bare RNNMatcher on already-encoded input (give the matcher as
    ``make_rnn_pipeline``'s pipeline, whose encoder turns pair frames into its input).

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.data import PairDataset, SimilarityFeatures
    >>> from skrisk.matchers import FeatureMatcher
    >>> from skrisk.pools import ChunkScorer
    >>> left = pd.DataFrame({"name": ["acme corp", "globex", "initech"]}, index=["a1", "a2", "a3"])
    >>> right = pd.DataFrame({"name": ["acme corporation", "globex", "umbrella"]},
    ...                      index=["b1", "b2", "b3"])
    >>> ds = PairDataset.from_frames(left, right, [("a1", "b1", 1), ("a2", "b2", 1),
    ...                                            ("a1", "b3", 0), ("a3", "b2", 0)])
    >>> sf = SimilarityFeatures(metrics=["jaccard", "jaro_winkler"]).fit(ds.to_frame())
    >>> m = FeatureMatcher(random_state=0).fit(sf.transform(ds.to_frame()), ds.y)
    >>> scorer = ChunkScorer(left, right, features=sf, matcher=m)
    >>> out = scorer.score(pd.DataFrame({"left_id": ["a2", "a3"], "right_id": ["b2", "b3"]}))
    >>> out.labels.tolist(), out.risk is None
    ([1, 0], True)
    """

    def __init__(
        self,
        left: pd.DataFrame,
        right: pd.DataFrame | None = None,
        *,
        features: Any,
        matcher: Any,
        risk_model: Any = None,
        threshold: float = MATCH_THRESHOLD,
        matcher_input: str = "auto",
        n_jobs: int | None = -1,
        value_counts: Any = None,
    ) -> None:
        self.task = "dedup" if right is None or right is left else "link"
        right = left if right is None else right
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) \
                or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}.")
        if matcher_input not in _MATCHER_INPUTS:
            raise ValueError(
                f"matcher_input must be one of {list(_MATCHER_INPUTS)}, got {matcher_input!r}."
            )
        if not hasattr(features, "transform") or not hasattr(features, "n_features_in_"):
            raise NotFittedError(
                "ChunkScorer needs fitted similarity features (SimilarityFeatures().fit(pair_frame)), "
                f"got {type(features).__name__}"
                f"{'' if hasattr(features, 'transform') else ' (no transform)'}."
            )
        if not callable(getattr(matcher, "predict_proba", None)):
            raise TypeError(
                f"ChunkScorer needs a matcher with predict_proba; {type(matcher).__name__} has none."
            )
        if risk_model is not None and not hasattr(risk_model, "risk_model_"):
            raise NotFittedError(
                f"risk_model must be a fitted skrisk.LearnRisk (or None), got {type(risk_model).__name__}"
                " without risk_model_: fit it first."
            )
        self.left, self.right = left, right
        self.features, self.matcher, self.risk_model = features, matcher, risk_model
        self.threshold = float(threshold)
        self._left_index = _record_index(left, "left")
        self._right_index = self._left_index if right is left else _record_index(right, "right")
        self._columns = self._frame_columns()
        self.attributes = [c[len("left_"):] for c in self._columns if c.startswith("left_")]
        side_attrs = {"left": set(), "right": set()}
        for c in self._columns:
            side, attr = c.split("_", 1)
            side_attrs[side].add(attr)
        for side, table in (("left", left), ("right", right)):
            missing = sorted(side_attrs[side] - {str(c) for c in table.columns})
            if missing:
                raise DataError(
                    f"ChunkScorer: the {side} table lacks the attribute column(s) {missing} that the "
                    f"similarity features were fitted on (its columns: {[str(c) for c in table.columns]}). "
                    "Give tables with the training schema."
                )
        self._side_attrs = side_attrs
        # each attribute as normalised text, built on the first pair frame (the encoded path and a
        # matcher on features never need one)
        self._text: dict[str, dict[str, np.ndarray]] | None = None
        self._matcher_input = self._resolve_matcher_input(matcher_input)
        n_threads(n_jobs)  # checks it: a non-zero int or None
        self.n_jobs = n_jobs
        # features that encode each table once (SimilarityFeatures) score a chunk by the pairwise
        # comparisons alone; the attributes must be named like the tables' columns
        self._encoded: tuple[Any, Any] | None = None
        if callable(getattr(features, "encode", None)) and callable(
                getattr(features, "transform_encoded", None)) and _input_names(features) is not None:
            counts = value_counts if isinstance(value_counts, tuple) else (value_counts, value_counts)
            enc_left = features.encode(left) if counts[0] is None else features.encode(left, counts[0])
            enc_right = enc_left if right is left else (
                features.encode(right) if counts[1] is None else features.encode(right, counts[1]))
            self._encoded = (enc_left, enc_right)

    # ------------------------------------------------------------------ set-up
    def _frame_columns(self) -> list[str]:
        names = _input_names(self.features)
        if names is not None:
            bad = [n for n in names if not n.startswith(("left_", "right_"))]
            if bad:
                raise DataError(
                    f"ChunkScorer: the similarity features were fitted on columns {bad} that are not "
                    "'left_<a>'/'right_<a>': fit them on PairDataset.to_frame() output."
                )
            return names
        n_in = int(self.features.n_features_in_)
        cols = [str(c) for c in self.left.columns]
        if n_in != 2 * len(cols):
            raise DataError(
                f"ChunkScorer: the similarity features were fitted on an array of {n_in} columns "
                f"without names, but the tables have {len(cols)} attributes ({2 * len(cols)} pair "
                "columns): fit them on PairDataset.to_frame() output."
            )
        return [f"left_{c}" for c in cols] + [f"right_{c}" for c in cols]

    def _resolve_matcher_input(self, how: str) -> str:
        if how != "auto":
            return how
        kind = getattr(self.matcher, "input_kind_", None)
        if kind == "frame":
            return "pairs"
        if kind == "mapping":
            raise TypeError(
                "ChunkScorer: the FeatureMatcher was fitted on a mapping (PairEncoder output); give "
                "it fitted on the similarity features, or give the encoder and matcher as one "
                "Pipeline on pair frames."
            )
        # declared at fit time, never guessed: the matcher (or its pipeline's first step) recorded
        # exactly the pair-frame columns the similarity features were fitted on
        names = _input_names(self.matcher)
        if names is not None and names == _input_names(self.features):
            return "pairs"
        return "features"

    # ------------------------------------------------------------------ scoring
    def _positions(
        self, chunk: Any, where: str, rows: np.ndarray | None = None, row_word: str = "pool row"
    ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        if not isinstance(chunk, pd.DataFrame):
            raise TypeError(
                f"{where} must be a pandas DataFrame with columns {list(PAIR_COLUMNS)}, got "
                f"{type(chunk).__name__}."
            )
        missing = [c for c in PAIR_COLUMNS if c not in chunk.columns]
        if missing:
            raise DataError(
                f"{where} lacks the column(s) {missing} (its columns: "
                f"{[str(c) for c in chunk.columns][:10]}): candidate pairs need the record ids "
                f"{list(PAIR_COLUMNS)}."
            )
        out = []
        pos = []
        for col, index, side in (("left_id", self._left_index, "left"),
                                 ("right_id", self._right_index, "right")):
            raw = chunk[col]
            na = pd.isna(raw.to_numpy())
            ids = raw.astype(str).to_numpy()
            p = index.get_indexer(ids)
            bad = na | (p < 0)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                table = "table" if self.task == "dedup" else f"{side} table"
                what = "is missing" if na[row] else f"{ids[row]!r} is not an id of the {table}"
                at = f"row {row}" if rows is None else f"{row_word} {int(rows[row])}"
                raise DataError(
                    f"{where}: {col} {what} at {at} ({int(bad.sum())} such pairs). Fix the id, "
                    "or add the record to the table."
                )
            out.append(ids)
            pos.append(p)
        pairs = pd.DataFrame({"left_id": out[0], "right_id": out[1]})
        return pairs, pos[0], pos[1]

    def _pair_frame(self, lpos: np.ndarray, rpos: np.ndarray) -> pd.DataFrame:
        if self._text is None:
            self._text = {}
            for side, table in (("left", self.left), ("right", self.right)):
                if side == "right" and self.right is self.left:
                    self._text["right"] = self._text["left"]
                    continue
                cols = {str(c): c for c in table.columns}
                self._text[side] = {a: _texts(table, cols[a]) for a in sorted(self._side_attrs[side])}
        cols = {}
        for c in self._columns:
            side, attr = c.split("_", 1)
            cols[c] = self._text[side][attr][lpos if side == "left" else rpos]
        return pd.DataFrame(cols)

    def pair_frame(self, chunk: pd.DataFrame) -> pd.DataFrame:
        """The records' attributes of a chunk of pairs, as the similarity features read them.

        Parameters
        ----------
        chunk : pandas.DataFrame
            Pairs, columns ``left_id`` and ``right_id`` (other columns are ignored).

        Returns
        -------
        pandas.DataFrame
            One row per pair, columns ``left_<a>`` / ``right_<a>`` (normalised text,
            ``normalise_text``), in the order the features were fitted on.

        Raises
        ------
        DataError
            A missing id column, or an id not in its table (the message names the row).
        """
        _, lpos, rpos = self._positions(chunk, "ChunkScorer.pair_frame: the pairs")
        return self._pair_frame(lpos, rpos)

    def feature_matrix(self, chunk: pd.DataFrame) -> npt.NDArray[np.float64]:
        """The similarity features of a chunk of pairs, as :meth:`score` computes them (from the
        encoded tables when the features encode them).

        Parameters
        ----------
        chunk : pandas.DataFrame
            ``left_id``, ``right_id`` of the pairs.

        Returns
        -------
        ndarray of float64, shape (n_pairs, n_features)
        """
        _, lpos, rpos = self._positions(chunk, "ChunkScorer.feature_matrix: the chunk", None, "pool row")
        return self._features_of(lpos, rpos, None)

    def _features_of(self, lpos: np.ndarray, rpos: np.ndarray, frame: pd.DataFrame | None) -> npt.NDArray[np.float64]:
        """The features of the pairs at these positions (from the encoded tables when there are
        some, else from ``frame``, the pair frame, made when None)."""
        if not len(lpos):
            return np.zeros((0, 0))
        if self._encoded is not None:
            return np.asarray(self.features.transform_encoded(*self._encoded, lpos, rpos, n_jobs=self.n_jobs),
                              dtype=np.float64)
        return np.asarray(self.features.transform(self._pair_frame(lpos, rpos) if frame is None else frame),
                          dtype=np.float64)

    def score(self, chunk: pd.DataFrame, *, representation: bool = False, risk_of: str = "all") -> ScoredChunk:
        """Features, probabilities, risks (and representations) of one chunk of pairs.

        Parameters
        ----------
        chunk : pandas.DataFrame
            Candidate pairs, columns ``left_id`` and ``right_id`` (record ids of the tables);
            other columns are ignored.
        representation : bool, default=False
            Also compute the representations (the matcher's ``represent``, for a pipeline its
            last step's ``represent`` of the transformed pairs, else the similarity features).
        risk_of : {"all", "matches"}, default="all"
            The pairs whose risk is computed: every pair, or only those predicted matches
            (``proba > threshold``; the others get NaN). A pair's risk does not depend on which
            pairs are computed with it; ``"matches"`` saves the risk model's per-pair work and
            memory when only the matches are kept (as :func:`skrisk.matching.match` does).

        Returns
        -------
        ScoredChunk

        Raises
        ------
        DataError
            A missing id column, an id not in its table (the message names the row), or a
            matcher that returns invalid probabilities.
        """
        if risk_of not in ("all", "matches"):
            raise ValueError(f"risk_of must be 'all' or 'matches', got {risk_of!r}.")
        return self._score(chunk, representation=representation, where="ChunkScorer.score: the chunk",
                           risk_of=risk_of)

    def _score(
        self, chunk: Any, *, representation: bool, where: str, rows: np.ndarray | None = None,
        row_word: str = "pool row", risk_of: str = "all",
    ) -> ScoredChunk:
        """:meth:`score`; ``where`` names the chunk and ``rows`` its rows' numbers (``row_word``
        says what they count) in messages."""
        pairs, lpos, rpos = self._positions(chunk, where, rows, row_word)
        n = len(pairs)
        frame = None
        if self._encoded is None or self._matcher_input == "pairs":
            frame = self._pair_frame(lpos, rpos)
        F = self._features_of(lpos, rpos, frame)
        X = frame if self._matcher_input == "pairs" else F
        rep = None
        if n == 0:
            P = np.zeros((0, 2))
            if representation:
                rep = np.zeros((0, 0), dtype=np.float32)
        else:
            P, rep = self._proba_repr(X, F, representation)
        p = self._checked(P, n, where)
        risk = None
        if self.risk_model is not None:
            if risk_of == "all" or not n:
                risk = self._risk(X, F, p) if n else np.zeros(0)
            else:
                risk = np.full(n, np.nan)
                at = np.flatnonzero(p > self.threshold)
                if len(at):
                    Xm = X.iloc[at].reset_index(drop=True) if isinstance(X, pd.DataFrame) else X[at]
                    risk[at] = self._risk(Xm, F[at], p[at])
        return ScoredChunk(
            pairs=pairs, proba=p, risk=risk, representation=rep,
            labels=match_labels(p, self.threshold),
        )

    def _proba_repr(self, X: Any, F: np.ndarray, representation: bool) -> tuple[Any, Any]:
        m = self.matcher
        if not representation:
            return m.predict_proba(X), None
        represent = getattr(m, "represent", None)
        both = getattr(m, "predict_proba_and_represent", None)
        if callable(both):
            P, H = both(X)
        elif callable(represent):
            P, H = m.predict_proba(X), represent(X)
        elif isinstance(m, Pipeline) and len(m.steps) > 1 and (
            callable(getattr(m.steps[-1][1], "predict_proba_and_represent", None))
            or callable(getattr(m.steps[-1][1], "represent", None))
        ):
            last, Z = m.steps[-1][1], m[:-1].transform(X)
            if callable(getattr(last, "predict_proba_and_represent", None)):
                P, H = last.predict_proba_and_represent(Z)
            else:
                P, H = last.predict_proba(Z), last.represent(Z)
        else:
            P, H = m.predict_proba(X), F
        H = np.asarray(H, dtype=np.float32)
        if H.ndim != 2 or H.shape[0] != F.shape[0] or not np.isfinite(H).all():
            raise DataError(
                f"ChunkScorer: the representation of {type(m).__name__} has shape {H.shape} or "
                f"non-finite values for {F.shape[0]} pairs: it must be finite, one row per pair."
            )
        return P, H

    def _checked(self, P: Any, n: int, where: str) -> npt.NDArray[np.float64]:
        from ..strategies._selection import checked_proba

        P = checked_proba(P, self.matcher, "ChunkScorer", n_rows=n, what=where.split(": ", 1)[-1])
        return np.ascontiguousarray(P[:, 1], dtype=np.float64)

    def _risk(self, X: Any, F: np.ndarray, p: np.ndarray) -> npt.NDArray[np.float64]:
        rm = self.risk_model
        own_features = rm.features is not None or isinstance(getattr(rm, "estimator_", None), Pipeline)
        risk_X = X if own_features or self._matcher_input == "features" else F
        if isinstance(risk_X, Mapping):  # pragma: no cover - mappings are refused in __init__
            risk_X = dict(risk_X)
        risk = np.asarray(rm.predict_risk(risk_X, proba=p), dtype=np.float64)
        if risk.shape != p.shape or not np.isfinite(risk).all():
            raise DataError(
                f"ChunkScorer: the risk model returned risks of shape {risk.shape} (or non-finite) "
                f"for {p.shape[0]} pairs."
            )
        return risk

    def __repr__(self) -> str:
        return (
            f"ChunkScorer(task={self.task!r}, left={len(self.left)}, right={len(self.right)}, "
            f"attributes={self.attributes}, matcher={type(self.matcher).__name__}, "
            f"risk_model={'None' if self.risk_model is None else type(self.risk_model).__name__}, "
            f"threshold={self.threshold})"
        )
