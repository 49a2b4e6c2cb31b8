"""The pair dataset: two tables of records plus candidate pairs, labels and named splits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..exceptions import DataError

__all__ = ["PairDataset", "UNLABELLED"]

#: Label value of a candidate pair whose match status is unknown.
UNLABELLED = -1


def unknown_ids(ids: pd.Series, table: pd.DataFrame) -> tuple[int, int] | None:
    """``(first row, count)`` of the ``ids`` that are not record ids of ``table``, or None.

    The one check that pairs refer to existing records (pair files and pair frames alike).
    """
    known = ids.isin(table.index).to_numpy()
    if known.all():
        return None
    return int(np.flatnonzero(~known)[0]), int((~known).sum())


def _check_table(table: pd.DataFrame, side: str, source: str) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{side} table from {source} must be a pandas DataFrame, got {type(table).__name__}.")
    if len(table) == 0:
        raise DataError(f"{side} table from {source} is empty: it needs at least one record.")
    missing = np.flatnonzero(pd.isna(table.index))
    if len(missing):
        raise DataError(
            f"{side} table from {source} has a missing record id (NaN/None) at position "
            f"{int(missing[0])} ({len(missing)} in all): give every record an id (ids are strings; "
            "the text 'NA' is an id like any other)."
        )
    index = table.index.astype(str)
    dup = index[index.duplicated()]
    if len(dup):
        raise DataError(
            f"{side} table from {source} has duplicate record ids, e.g. {list(dup[:3])}: "
            "make the id column unique (one row per record)."
        )
    out = table.copy()
    out.index = pd.Index(index, name="id")
    return out


@dataclass
class PairDataset:
    """Two tables of records, candidate pairs between them, labels where known, and named splits.

    This is the one representation every skrisk component starts from: the tokeniser, the
    similarity features, the matchers, LearnRisk and the query strategies all take pairs as
    integer positions into :attr:`pairs`.

    Parameters
    ----------
    left, right : pandas.DataFrame
        The two tables, indexed by record id (cast to ``str``). Both carry the same attribute
        columns, in the same order (the aligned schema).
    pairs : pandas.DataFrame
        One row per candidate pair with columns ``left_id``, ``right_id`` (``str``), ``label``
        (``int8``: 1 match, 0 non-match, :data:`UNLABELLED` = -1 unknown) and ``split``
        (``str``: e.g. ``"train"``, ``"valid"``, ``"test"``, or ``"pool"``). Its index is a plain
        ``RangeIndex``: pairs are addressed by position.
    name : str, default="pairs"
        A short name used in reports.

    Attributes
    ----------
    attributes : list of str
        The aligned attribute names.
    y : ndarray of int64
        Labels of all pairs; raises :class:`~skrisk.exceptions.DataError` if any is unknown.
    labels : ndarray of int64
        Labels of all pairs, -1 (:data:`UNLABELLED`) where unknown.
    has_labels : bool
        Whether every pair has a known label.
    split_names : list of str
        Split names in order of first appearance.
    split_sizes : dict of str to int
        Number of pairs per split.
    positive_rate : float
        Share of matches among the labelled pairs.

    Notes
    -----
    Views that take no argument are properties (``ds.y``, ``ds.labels``, ``ds.split_sizes``);
    views that take one are methods (``ds.split_positions("train")``, ``ds.records("left")``),
    and so are the conversions that build a new frame (``ds.to_frame()``, ``ds.describe()``).

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.data import PairDataset
    >>> left = pd.DataFrame({"name": ["acme corp", "globex"]}, index=["a1", "a2"])
    >>> right = pd.DataFrame({"name": ["acme corporation", "initech"]}, index=["b1", "b2"])
    >>> ds = PairDataset.from_frames(left, right, [("a1", "b1", 1), ("a2", "b2", 0)])
    >>> len(ds), ds.attributes
    (2, ['name'])
    >>> ds.y, ds.split_sizes
    (array([1, 0]), {'pool': 2})
    """

    left: pd.DataFrame
    right: pd.DataFrame
    pairs: pd.DataFrame
    name: str = "pairs"
    attributes: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.left = _check_table(self.left, "left", self.name)
        self.right = _check_table(self.right, "right", self.name)
        if list(self.left.columns) != list(self.right.columns):
            lcols, rcols = list(self.left.columns), list(self.right.columns)
            if set(lcols) == set(rcols):
                self.right = self.right[lcols]
            else:
                raise DataError(
                    f"The tables of {self.name} do not have aligned attributes: left has "
                    f"{sorted(set(lcols) - set(rcols))} that right lacks, right has "
                    f"{sorted(set(rcols) - set(lcols))} that left lacks. Rename or drop columns "
                    "so both tables share one schema."
                )
        self.attributes = [str(c) for c in self.left.columns]
        self.pairs = self._check_pairs(self.pairs)

    def _check_pairs(self, pairs: pd.DataFrame) -> pd.DataFrame:
        missing = {"left_id", "right_id"} - set(pairs.columns)
        if missing:
            raise DataError(f"Pairs of {self.name} lack the column(s) {sorted(missing)}.")
        for col in ("left_id", "right_id"):
            missing = np.flatnonzero(pd.isna(pairs[col].to_numpy()))
            if len(missing):
                raise DataError(
                    f"Pairs of {self.name}: {col} is missing (NaN/None) at row {int(missing[0])} "
                    f"({len(missing)} in all): every pair needs both record ids."
                )
        out = pd.DataFrame(
            {
                "left_id": pairs["left_id"].astype(str).to_numpy(),
                "right_id": pairs["right_id"].astype(str).to_numpy(),
            }
        )
        if "label" in pairs.columns:
            lab = pd.to_numeric(pairs["label"], errors="coerce")
            lab = lab.fillna(UNLABELLED).to_numpy()
            bad = ~np.isin(lab, (0, 1, UNLABELLED))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"Pairs of {self.name}: label {pairs['label'].iloc[row]!r} at row {row} is "
                    "not 0 or 1 (1 = same entity, 0 = different; leave it empty if unknown)."
                )
            out["label"] = lab.astype(np.int8)
        else:
            out["label"] = np.full(len(out), UNLABELLED, dtype=np.int8)
        out["split"] = (
            pairs["split"].astype(str).to_numpy() if "split" in pairs.columns else "pool"
        )
        for side, table in (("left", self.left), ("right", self.right)):
            bad = unknown_ids(out[f"{side}_id"], table)
            if bad is not None:
                row, count = bad
                raise DataError(
                    f"Pairs of {self.name}: {side}_id {out[f'{side}_id'].iloc[row]!r} at row {row} "
                    f"is not an id of the {side} table ({count} such pairs). Fix the id "
                    "or add the record to the table."
                )
        return out

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_frames(
        cls,
        left: pd.DataFrame,
        right: pd.DataFrame,
        pairs: pd.DataFrame | Iterable[Sequence],
        *,
        split: str | None = None,
        name: str = "pairs",
    ) -> "PairDataset":
        """Build a dataset from two tables and pairs given as a frame or ``(left, right[, label])`` rows."""
        if not isinstance(pairs, pd.DataFrame):
            rows = list(pairs)
            width = len(rows[0]) if rows else 2
            cols = ["left_id", "right_id", "label", "split"][:width]
            pairs = pd.DataFrame(rows, columns=cols)
        else:
            pairs = pairs.copy()
        if split is not None:
            pairs["split"] = split
        return cls(left=left, right=right, pairs=pairs, name=name)

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.pairs)

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in self.split_sizes.items())
        return (
            f"PairDataset(name={self.name!r}, left={len(self.left)}, right={len(self.right)}, "
            f"pairs={len(self)} [{parts}], attributes={self.attributes})"
        )

    @property
    def labels(self) -> np.ndarray:
        """Labels of all pairs as ``int64`` (-1 where unknown)."""
        return self.pairs["label"].to_numpy(dtype=np.int64)

    @property
    def has_labels(self) -> bool:
        """Whether every pair has a known label."""
        return bool((self.pairs["label"] != UNLABELLED).all())

    @property
    def split_names(self) -> list[str]:
        """Split names in order of first appearance."""
        return list(pd.unique(self.pairs["split"]))

    @property
    def split_sizes(self) -> dict[str, int]:
        """Number of pairs per split."""
        return {s: int((self.pairs["split"] == s).sum()) for s in self.split_names}

    def split_positions(self, split: str) -> np.ndarray:
        """Integer positions of the pairs of one split."""
        if split not in self.split_names:
            raise KeyError(f"{self.name} has no split {split!r}; its splits are {self.split_names}.")
        return np.flatnonzero(self.pairs["split"].to_numpy() == split)

    def subset(self, positions: Sequence[int] | np.ndarray) -> "PairDataset":
        """A dataset over the same tables with the pairs at ``positions`` (in that order)."""
        pos = np.asarray(positions, dtype=np.intp)
        sub = self.pairs.iloc[pos].reset_index(drop=True)
        ds = object.__new__(PairDataset)
        ds.left, ds.right, ds.pairs, ds.name = self.left, self.right, sub, self.name
        ds.attributes = list(self.attributes)
        return ds

    def split(self, split: str) -> "PairDataset":
        """The pairs of one named split, as a dataset over the same tables."""
        return self.subset(self.split_positions(split))

    @property
    def y(self) -> np.ndarray:
        """Labels as ``int64``; raises :class:`~skrisk.exceptions.DataError` if any is unknown."""
        lab = self.labels
        if (lab == UNLABELLED).any():
            raise DataError(
                f"{self.name} has {(lab == UNLABELLED).sum()} unlabelled pairs: take a labelled "
                "split, or label them first."
            )
        return lab

    @property
    def positive_rate(self) -> float:
        """Share of matches among the labelled pairs."""
        lab = self.labels
        known = lab != UNLABELLED
        return float(lab[known].mean()) if known.any() else float("nan")

    def records(self, side: str) -> pd.DataFrame:
        """Attribute values of the ``"left"`` or ``"right"`` record of every pair, in pair order."""
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {side!r}.")
        table = self.left if side == "left" else self.right
        return table.loc[self.pairs[f"{side}_id"].to_numpy()].reset_index(drop=True)

    def texts(self, side: str) -> pd.DataFrame:
        """Like :meth:`records`, with values as strings ('' for missing), lower-cased and stripped."""
        rec = self.records(side)
        return rec.apply(lambda col: col.map(_to_text))

    def to_frame(self) -> pd.DataFrame:
        """One row per pair: ``left_<attr>`` and ``right_<attr>`` text columns, in pair order.

        This is the array-like input of the pair transformers (:class:`SimilarityFeatures`,
        :class:`PairEncoder`): sklearn can slice it by position, so pipelines over it work in
        cross-validation and in modAL.
        """
        lt, rt = self.texts("left"), self.texts("right")
        cols = {}
        for a in self.attributes:
            cols[f"left_{a}"] = lt[a].to_numpy()
        for a in self.attributes:
            cols[f"right_{a}"] = rt[a].to_numpy()
        return pd.DataFrame(cols)

    def describe(self) -> pd.DataFrame:
        """Pairs and positive rate per split."""
        rows = []
        for s in self.split_names:
            lab = self.pairs.loc[self.pairs["split"] == s, "label"].to_numpy()
            known = lab != UNLABELLED
            rows.append(
                {
                    "split": s,
                    "pairs": int(len(lab)),
                    "labelled": int(known.sum()),
                    "positives": int((lab == 1).sum()),
                    "positive_rate": float((lab[known] == 1).mean()) if known.any() else float("nan"),
                }
            )
        return pd.DataFrame(rows).set_index("split")


def _to_text(value: object) -> str:
    """A cell as lower-cased, stripped text; a missing value (None, NaN, pd.NA) is ``""``.

    Only real missing values become ``""``: the *text* ``"None"``, ``"NaN"`` or ``"NA"`` is data
    (a product may be called "NA"), as the table readers keep it.
    """
    if isinstance(value, str):
        return value.strip().lower()
    if value is None or (np.ndim(value) == 0 and pd.isna(value)):  # type: ignore[arg-type]
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip().lower()
