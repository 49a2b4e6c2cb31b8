"""The pair dataset: two tables of records (or one, for deduplication), candidate pairs, labels, splits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..exceptions import DataError
from ._text import normalise_text

__all__ = ["PairDataset", "UNLABELLED", "TASKS", "stack_tables"]

#: Label value of a candidate pair whose match status is unknown.
UNLABELLED = -1

#: The two entity-resolution tasks: ``"link"`` (records of two tables) and ``"dedup"`` (records
#: of one table against each other).
TASKS: tuple[str, ...] = ("link", "dedup")


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
    """Two tables of records (or one), candidate pairs, labels where known, and named splits.

    This is the one representation every skrisk component starts from: the tokeniser, the
    similarity features, the matchers, LearnRisk and the query strategies all take pairs as
    integer positions into :attr:`pairs`.

    A dataset is a *linkage* task (:attr:`task` ``"link"``: pairs join a record of ``left`` to
    one of ``right``) or a *deduplication* task (``"dedup"``: pairs join two records of one
    table). A dedup dataset has ``left is right`` (the same frame object); its pairs are stored
    once each, in canonical order ``left_id < right_id`` (string order), and never pair a
    record with itself. Build one with :meth:`from_table`, or pass the same frame as ``left``
    and ``right``. Everything downstream (features, matchers, risk, strategies, exports) works on
    both unchanged: a dedup pair is just a pair whose two records come from the same table.

    Parameters
    ----------
    left, right : pandas.DataFrame
        The two tables, indexed by record id (cast to ``str``). Both carry the same attribute
        columns, in the same order (the aligned schema). Passing the *same* object twice makes
        a dedup dataset.
    pairs : pandas.DataFrame
        One row per candidate pair with columns ``left_id``, ``right_id`` (``str``), ``label``
        (``int8``: 1 match, 0 non-match, ``UNLABELLED`` = -1 unknown) and ``split``
        (``str``: e.g. ``"train"``, ``"valid"``, ``"test"``, or ``"pool"``). Its index is a plain
        ``RangeIndex``: pairs are addressed by position.
    name : str, default="pairs"
        A short name used in reports.

    Attributes
    ----------
    attributes : list of str
        The aligned attribute names.
    task : {"link", "dedup"}
        Linkage of two tables, or deduplication of one.
    y : ndarray of int64
        Labels of all pairs; raises :class:`~skrisk.exceptions.DataError` if any is unknown.
    labels : ndarray of int64
        Labels of all pairs, -1 (``UNLABELLED``) where unknown.
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
        if self.left is self.right:  # deduplication of one table
            self.left = self.right = _check_table(self.left, "table", self.name)
            self.attributes = [str(c) for c in self.left.columns]
            self.pairs = self._check_pairs(self.pairs)
            return
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
        dedup = self.left is self.right
        for side, table in (("left", self.left), ("right", self.right)):
            bad = unknown_ids(out[f"{side}_id"], table)
            if bad is not None:
                row, count = bad
                where = "the table" if dedup else f"the {side} table"
                raise DataError(
                    f"Pairs of {self.name}: {side}_id {out[f'{side}_id'].iloc[row]!r} at row {row} "
                    f"is not an id of {where} ({count} such pairs). Fix the id "
                    "or add the record to the table."
                )
        if dedup:
            out = canonical_pairs(out, f"Pairs of {self.name}")
        return out

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_table(
        cls,
        table: pd.DataFrame,
        pairs: pd.DataFrame | Iterable[Sequence] | None = None,
        *,
        blocking: object = None,
        split: str | None = None,
        name: str = "table",
    ) -> "PairDataset":
        """Build a deduplication dataset: one table and pairs of its records.

        Parameters
        ----------
        table : pandas.DataFrame
            The records, indexed by unique record id (cast to ``str``).
        pairs : DataFrame or iterable of ``(id_a, id_b[, label[, split]])`` rows, optional
            Candidate pairs, each given in either order: ``(a, b)`` and ``(b, a)`` are the same
            pair and are stored once as ``(min, max)`` (string order). A pair of a record with
            itself, or a pair given twice (in the same or the mirrored order), is a
            :class:`~skrisk.exceptions.DataError` naming both rows: a duplicated question could
            carry two different answers, and skrisk never drops an answer silently. ``None``:
            the candidates of ``block(table, None, blocking)``, unlabelled.
        blocking : rule or list of rules, optional
            Blocking rules for :func:`~skrisk.data.block` when ``pairs`` is ``None``
            (``None``: a ``tokens`` rule over all attributes).
        split : str, optional
            Put every pair into this split (default: the ``split`` column of ``pairs``, else
            ``"pool"``).
        name : str, default="table"
            A short name used in reports.

        Returns
        -------
        PairDataset
            With ``task == "dedup"`` and ``left is right``.

        Examples
        --------
        >>> import pandas as pd
        >>> from skrisk.data import PairDataset
        >>> people = pd.DataFrame({"name": ["ann lee", "anne lee", "bob ray"]}, index=["p1", "p2", "p3"])
        >>> ds = PairDataset.from_table(people, [("p2", "p1", 1), ("p3", "p1", 0)])
        >>> ds.task, ds.pairs[["left_id", "right_id", "label"]].values.tolist()
        ('dedup', [['p1', 'p2', 1], ['p1', 'p3', 0]])
        """
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"table must be a pandas DataFrame indexed by record id, got {type(table).__name__}.")
        table = _check_table(table, "table", name)
        if pairs is None:
            from ._blocking import block

            pairs = block(table, None, blocking).pairs
            pairs["label"] = UNLABELLED
        elif not isinstance(pairs, pd.DataFrame):
            pairs = _rows_to_frame(pairs)
        else:
            pairs = pairs.copy()
        if split is not None:
            pairs["split"] = split
        return cls(left=table, right=table, pairs=pairs, name=name)

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
        """Build a linkage dataset from two tables and pairs given as a frame or ``(left, right[, label])`` rows.

        Always a linkage task (``task == "link"``), even when ``left`` and ``right`` are the same
        frame (then every record may also pair with itself); use :meth:`from_table` to
        deduplicate one table.
        """
        if not isinstance(pairs, pd.DataFrame):
            pairs = _rows_to_frame(pairs)
        else:
            pairs = pairs.copy()
        if split is not None:
            pairs["split"] = split
        if right is left:
            right = right.copy()
        return cls(left=left, right=right, pairs=pairs, name=name)

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def task(self) -> str:
        """``"dedup"`` when the pairs join records of one table (``left is right``), else ``"link"``."""
        return "dedup" if self.left is self.right else "link"

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in self.split_sizes.items())
        if self.task == "dedup":
            return (
                f"PairDataset(name={self.name!r}, task='dedup', table={len(self.left)}, "
                f"pairs={len(self)} [{parts}], attributes={self.attributes})"
            )
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
        return rec.apply(lambda col: col.map(normalise_text))

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


def stack_tables(
    dataset: PairDataset,
    *,
    blocking: object = None,
    prefixes: tuple[str, str] = ("a:", "b:"),
    return_blocking: bool = False,
) -> "PairDataset | tuple[PairDataset, object]":
    """A linkage dataset turned into a deduplication task: its two tables stacked into one.

    Record ids get a prefix per side (``"a:"`` for the left table, ``"b:"`` for the right) so
    they stay unique. The true links of the dedup task are the linkage dataset's labelled
    matches; every other pair of records counts as a non-match (pairs inside one table
    included: the benchmark tables are assumed free of duplicates within each side).

    Parameters
    ----------
    dataset : PairDataset
        A linkage dataset (``task == "link"``) with labels on at least some pairs.
    blocking : rule or list of rules, optional
        ``None`` keeps the dataset's own pairs (renamed, canonicalised, with their labels and
        splits). Rules block the stacked table against itself with :func:`~skrisk.data.block`
        (pairs across and within the sides); those candidates are labelled 1 when they are a
        labelled match of ``dataset``, else 0, all in split ``"pool"``.
    prefixes : tuple of 2 str, default=("a:", "b:")
        Id prefixes of the left and right records; they must differ.
    return_blocking : bool, default=False
        Also return the :class:`~skrisk.data.BlockingResult` (``None`` when ``blocking`` is
        ``None``).

    Returns
    -------
    PairDataset or (PairDataset, BlockingResult or None)
        With ``task == "dedup"``, named ``"<name>-stacked"``; the stacked table holds a column
        ``source`` only implicitly, through the id prefix.

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.data import PairDataset
    >>> from skrisk.data._pairs import stack_tables
    >>> left = pd.DataFrame({"name": ["acme corp", "globex"]}, index=["1", "2"])
    >>> right = pd.DataFrame({"name": ["acme corporation", "initech"]}, index=["1", "2"])
    >>> ds = stack_tables(PairDataset.from_frames(left, right, [("1", "1", 1), ("2", "2", 0)]))
    >>> ds.task, ds.pairs[["left_id", "right_id", "label"]].values.tolist()
    ('dedup', [['a:1', 'b:1', 1], ['a:2', 'b:2', 0]])
    """
    if not isinstance(dataset, PairDataset) or dataset.task != "link":
        raise TypeError("stack_tables needs a linkage PairDataset (two tables), e.g. load_deepmatcher(...).")
    if len(prefixes) != 2 or prefixes[0] == prefixes[1]:
        raise ValueError(f"prefixes must be two different strings, got {prefixes!r}.")
    pl, pr = (str(p) for p in prefixes)
    table = pd.concat(
        [dataset.left.rename(index=lambda i: f"{pl}{i}"), dataset.right.rename(index=lambda i: f"{pr}{i}")]
    )
    table.index.name = "id"
    pairs = dataset.pairs.copy()
    pairs["left_id"] = pl + pairs["left_id"]
    pairs["right_id"] = pr + pairs["right_id"]
    name = f"{dataset.name}-stacked"
    result = None
    if blocking is not None:
        from ._blocking import block

        matches = pairs.loc[pairs["label"] == 1, ["left_id", "right_id"]]
        result = block(table, None, blocking, true_links=matches)
        pairs = result.pairs.copy()
        pairs["split"] = "pool"
    out = PairDataset(left=table, right=table, pairs=pairs, name=name)
    return (out, result) if return_blocking else out


def _rows_to_frame(pairs: Iterable[Sequence]) -> pd.DataFrame:
    rows = list(pairs)
    width = len(rows[0]) if rows else 2
    cols = ["left_id", "right_id", "label", "split"][:width]
    return pd.DataFrame(rows, columns=cols)


def canonical_pairs(pairs: pd.DataFrame, what: str) -> pd.DataFrame:
    """Pairs of one table in canonical order (``left_id < right_id``), checked.

    ``pairs`` has string columns ``left_id`` and ``right_id``; rows whose ids are in the wrong
    order are swapped (other columns are kept). A self-pair or a pair listed twice (in either
    order) raises :class:`DataError` naming the row(s) and the fix; ``what`` names the source.
    """
    lid = pairs["left_id"].to_numpy(dtype=object)
    rid = pairs["right_id"].to_numpy(dtype=object)
    same = np.flatnonzero(lid == rid)
    if len(same):
        row = int(same[0])
        raise DataError(
            f"{what}: row {row} pairs record {lid[row]!r} with itself ({len(same)} such rows): "
            "a record is always the same entity as itself. Remove those rows."
        )
    swap = lid > rid
    out = pairs.copy()
    if swap.any():
        out["left_id"] = np.where(swap, rid, lid)
        out["right_id"] = np.where(swap, lid, rid)
    dup = out.duplicated(["left_id", "right_id"], keep=False).to_numpy()
    if dup.any():
        first = int(np.flatnonzero(dup)[0])
        key = (out["left_id"].iloc[first], out["right_id"].iloc[first])
        rows = np.flatnonzero(
            (out["left_id"].to_numpy() == key[0]) & (out["right_id"].to_numpy() == key[1])
        )
        raise DataError(
            f"{what}: rows {rows[0]} and {rows[1]} are the same pair {key} (one table: "
            f"({key[1]!r}, {key[0]!r}) is the same question as ({key[0]!r}, {key[1]!r})); "
            f"{int(dup.sum()) - len(set(zip(out['left_id'][dup], out['right_id'][dup])))} such "
            "repeats in all. Keep each pair once."
        )
    return out


