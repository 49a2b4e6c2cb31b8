"""A user's own two CSV tables as a PairDataset: given pairs or blocking, with or without matches."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from .._safetext import map_text
from .._typing import RandomStateLike
from ..exceptions import DataError
from ._blocking import BlockingResult, BlockingRule, block
from ._loaders import _duplicate_pairs, _ids, _parse_labels, _read_csv, read_table
from ._pairs import UNLABELLED, PairDataset, unknown_ids

__all__ = ["load_csv_tables"]

_SPLIT_NAMES = ("train", "valid", "test")
_ID_COLUMNS = (("left_id", "right_id"), ("ltable_id", "rtable_id"))


def _check_fractions(split: object) -> tuple[float, float, float]:
    try:
        fr = tuple(float(f) for f in split)  # type: ignore[union-attr]
    except TypeError:
        fr = ()
    if len(fr) != 3 or any(not np.isfinite(f) or f < 0 for f in fr) or abs(sum(fr) - 1) > 1e-6:
        raise ValueError(
            f"split must be three non-negative fractions (train, valid, test) summing to 1, e.g. "
            f"(0.6, 0.2, 0.2), or None; got {split!r}."
        )
    return fr  # type: ignore[return-value]


def _assign_splits(labels: np.ndarray, fractions: Sequence[float], random_state: RandomStateLike) -> np.ndarray:
    """Stratified train/valid/test names for labelled pairs; ``"pool"`` for unlabelled ones."""
    rng = check_random_state(random_state)
    out = np.full(len(labels), "pool", dtype=object)
    bounds = np.cumsum(fractions)[:-1]
    for cls in (0, 1):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        cuts = np.round(bounds * len(idx)).astype(int)
        for name, part in zip(_SPLIT_NAMES, np.split(idx, cuts)):
            out[part] = name
    return out


def _order_by_split(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs grouped by split in the order train, valid, test, pool, then others (stable)."""
    order = {s: i for i, s in enumerate((*_SPLIT_NAMES, "pool"))}
    codes, names = pd.factorize(pairs["split"], use_na_sentinel=False)
    key = np.array([order.get(s, len(order)) for s in names], dtype=np.int64)[codes]
    return pairs.iloc[np.argsort(key, kind="stable")].reset_index(drop=True)


def _make_dataset(
    left: pd.DataFrame,
    right: pd.DataFrame,
    pairs: pd.DataFrame,
    split: Sequence[float] | None,
    random_state: RandomStateLike,
    name: str,
) -> PairDataset:
    """Pairs with ``left_id, right_id, label`` (-1 unknown) [and ``split``] -> PairDataset."""
    pairs = pairs.reset_index(drop=True).copy()
    labels = pairs["label"].to_numpy(dtype=np.int64)
    if "split" not in pairs.columns:
        if split is None:
            pairs["split"] = np.where(labels == UNLABELLED, "pool", "train")
        else:
            pairs["split"] = _assign_splits(labels, split, random_state)
    pairs["label"] = labels.astype(np.int8)
    return PairDataset(left=left, right=right, pairs=_order_by_split(pairs), name=name)


def _id_columns(frame: pd.DataFrame, path: Path) -> tuple[str, str]:
    for lc, rc in _ID_COLUMNS:
        if lc in frame.columns and rc in frame.columns:
            return lc, rc
    raise DataError(
        f"{path} lacks the pair id columns: it needs 'left_id' and 'right_id' (or 'ltable_id' and "
        f"'rtable_id'); its columns are {list(frame.columns)}. Rename the columns."
    )


def _read_pair_file(
    path: Path, left: pd.DataFrame, right: pd.DataFrame, files: tuple[Path, Path], encoding: str, what: str,
    exported: bool = False,
) -> pd.DataFrame:
    """Read a pair or match file into ``left_id, right_id[, label][, split]`` and check its ids."""
    _require_file(path, what)
    df, lines = _read_csv(path, encoding)
    if exported:  # written by skrisk.utils.write_csv_export: one leading quote was added
        for c in df.columns:  # each distinct text once (1.5 million candidates hold 200,000 ids)
            df[c] = map_text(df[c], lambda v: v[1:] if v.startswith("'") else v)
    if len(df) == 0:
        raise DataError(f"{path} ({what}) holds no rows: add pairs, or leave the argument out.")
    lc, rc = _id_columns(df, path)
    out = pd.DataFrame(
        {
            "left_id": _ids(path, df[lc], lines, lc).to_numpy(dtype=object),
            "right_id": _ids(path, df[rc], lines, rc).to_numpy(dtype=object),
        }
    )
    for side, col, table, tfile in (("left", lc, left, files[0]), ("right", rc, right, files[1])):
        bad = unknown_ids(out[f"{side}_id"], table)
        if bad is not None:
            row, count = bad
            raise DataError(
                f"{path}: {col} {out[f'{side}_id'].iloc[row]!r} at row {row} (line {int(lines[row])}) "
                f"is not an id of {tfile} ({count} rows refer to missing records). Fix the "
                "id, or add the record to the table."
            )
    if "label" in df.columns:
        lab = _parse_labels(path, df["label"], lines, "label")
        out["label"] = lab.fillna(UNLABELLED).astype(np.int64).to_numpy()
    if left is right:  # one table: (a, b) and (b, a) are one pair, (a, a) is none
        lid, rid = out["left_id"].to_numpy(dtype=object), out["right_id"].to_numpy(dtype=object)
        same = np.flatnonzero(lid == rid)
        if len(same):
            raise DataError(
                f"{path}: row {int(same[0])} (line {int(lines[same[0]])}) pairs record {lid[same[0]]!r} with "
                f"itself ({len(same)} such rows): a record is always the same entity as itself. Remove "
                "those rows."
            )
        swap = lid > rid
        out["left_id"], out["right_id"] = np.where(swap, rid, lid), np.where(swap, lid, rid)
    _duplicate_pairs(path, out, lines)
    if "split" in df.columns:
        split = df["split"].astype(str).str.strip()
        out["split"] = split.where(split != "", "pool").to_numpy()
    return out


def _require_file(path: Path, what: str) -> None:
    if path.is_dir():
        raise DataError(
            f"{what} file {path} is a folder, not a CSV file: pass the path of the file inside it."
        )
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {path} does not exist: check the path.")


def _table_encodings(encoding: str) -> tuple[str, str]:
    """``"utf-8"`` -> both tables; ``"utf-8,latin-1"`` -> (left, right)."""
    parts = [p.strip() for p in str(encoding).split(",")]
    if len(parts) == 1:
        return parts[0], parts[0]
    if len(parts) != 2 or not all(parts):
        raise ValueError(
            f"encoding={encoding!r}: give one text encoding for every table (e.g. 'utf-8'), or two separated by "
            "a comma, the left table's and the right table's (e.g. 'utf-8,latin-1')."
        )
    return parts[0], parts[1]


def _read_tables(
    left_csv: Path, right_csv: Path | None, id_column: str, encoding: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    enc_left, enc_right = _table_encodings(encoding)
    if right_csv is None:  # one table (deduplication): the same frame on both sides
        _require_file(left_csv, "Table")
        table = read_table(left_csv, id_column=id_column, encoding=enc_left)
        if not list(table.columns):
            raise DataError(f"{left_csv} has an id column but no attribute: add at least one attribute column.")
        if len(table) < 2:
            raise DataError(f"{left_csv} holds a single record: deduplication needs at least two records.")
        return table, table
    _require_file(left_csv, "Left table")
    _require_file(right_csv, "Right table")
    left = read_table(left_csv, id_column=id_column, encoding=enc_left)
    right = read_table(right_csv, id_column=id_column, encoding=enc_right)
    lcols, rcols = list(left.columns), list(right.columns)
    if set(lcols) != set(rcols):
        raise DataError(
            f"{left_csv} and {right_csv} do not share one set of attributes: only in the left "
            f"table {sorted(set(lcols) - set(rcols))}, only in the right table "
            f"{sorted(set(rcols) - set(lcols))}. Rename or drop columns so both headers list the "
            "same attributes (their order may differ)."
        )
    if not lcols:
        raise DataError(f"{left_csv} has an id column but no attribute: add at least one attribute column.")
    return left, right[lcols]


def load_csv_tables(
    left_csv: str | os.PathLike,
    right_csv: str | os.PathLike | None,
    *,
    pairs_csv: str | os.PathLike | None = None,
    matches_csv: str | os.PathLike | None = None,
    id_column: str = "id",
    blocking: BlockingRule | Iterable[BlockingRule] | None = None,
    split: Sequence[float] | None = (0.6, 0.2, 0.2),
    random_state: RandomStateLike = 0,
    encoding: str = "utf-8",
    pairs_encoding: str | None = None,
    name: str | None = None,
    return_blocking: bool = False,
    pairs_exported: bool = False,
) -> PairDataset | tuple[PairDataset, BlockingResult | None]:
    """Build a pair dataset from two CSV tables of records.

    The candidate pairs come from ``pairs_csv`` when given, else from :func:`block` with
    ``blocking`` rules. Labels come from a ``label`` column of ``pairs_csv`` or from
    ``matches_csv`` (every listed pair is a match, every other candidate a non-match). Without
    either, all candidates are unlabelled (label -1, split ``"pool"``): the input of a labelling
    session.

    Parameters
    ----------
    left_csv, right_csv : path-like
        The two tables: one record per row, a unique id column and the same attribute columns
        (in any order; the right table is reordered to the left's). ``right_csv=None`` reads
        one table to deduplicate: the result has ``task == "dedup"`` (see
        :meth:`PairDataset.from_table`); pairs in ``pairs_csv``/``matches_csv`` may then be
        given in either order (a pair given in both orders, or a record paired with itself,
        is an error naming the line).
    pairs_csv : path-like, optional
        Candidate pairs: columns ``left_id``/``right_id`` (or ``ltable_id``/``rtable_id``), an
        optional ``label`` (0, 1, or empty for unknown) and an optional ``split`` (kept as is;
        ``split`` is then not used).
    matches_csv : path-like, optional
        Known matching pairs, same id columns. Cannot be combined with a ``label`` column in
        ``pairs_csv``.
    id_column : str, default="id"
        Name of the id column of both tables.
    blocking : rule or list of rules, optional
        Blocking rules for :func:`block` when there is no ``pairs_csv``; ``None`` means a
        ``tokens`` rule over all attributes.
    split : tuple of 3 floats or None, default=(0.6, 0.2, 0.2)
        Train/valid/test fractions of the labelled pairs, stratified by label. ``None`` puts all
        labelled pairs in ``"train"``. Unlabelled pairs are always in ``"pool"``.
    random_state : int, RandomState instance or None, default=0
        Seed of the split.
    encoding : str, default="utf-8"
        Text encoding of all the CSV files, or two separated by a comma: the left table's and
        the right table's (``"utf-8,latin-1"``; the pair files then use the left one). A UTF-8
        byte-order mark is dropped (``"utf-8"`` behaves like ``"utf-8-sig"``); bytes that do not
        decode raise :class:`DataError` naming the file, the byte offset and the line, and saying
        which ``encoding=`` to pass; so does a file that is valid UTF-8 read with another
        encoding (it would turn ``café`` into ``cafÃ©``).
    pairs_encoding : str, optional
        Text encoding of ``pairs_csv`` and ``matches_csv`` when it differs from the tables'
        (e.g. Latin-1 tables with a UTF-8 candidate file written by skrisk); defaults to
        ``encoding``.
    name : str, optional
        Dataset name; defaults to ``"<left stem>-<right stem>"``.
    return_blocking : bool, default=False
        Also return the :class:`BlockingResult` (``None`` when ``pairs_csv`` was given).
    pairs_exported : bool, default=False
        ``pairs_csv`` was written by ``skrisk.utils.write_csv_export`` (as a labelling
        session's ``candidates.csv``): one leading ``'``, its mark against spreadsheet formulas,
        is removed from every cell that has one, as :func:`skrisk.utils.read_csv_export` does.

    Returns
    -------
    PairDataset or (PairDataset, BlockingResult or None)
        Pairs grouped by split: ``train``, ``valid``, ``test``, then ``pool``.

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    DataError
        Missing id or pair columns, empty or duplicate ids, a pair listed twice (whether its
        labels agree or conflict), ids absent from the tables, attributes that do not align,
        labels outside {0, 1}, empty tables or files, a folder given as a file, undecodable
        bytes, NUL characters, broken quoting, lines with more or fewer fields than the header,
        unnamed or repeated columns, or blocking that yields no candidate; the message names the
        file, the line (or row, column) and the fix.

    Notes
    -----
    All files are read by the rules of :func:`~skrisk.data.read_table`:

    * Ids (record ids and the pair files' ``left_id``/``right_id``) are strings exactly as
      written, stripped of surrounding spaces: ``007`` stays ``"007"``, and ``NA``, ``null`` or
      ``None`` are ids like any other. An empty id is an error naming the line.
    * In attribute columns only the empty cell is a missing value; ``NA``, ``None``, ``NULL``
      or ``n/a`` are data. In a ``label`` column the empty cell means "unknown"; in a
      ``split`` column it means ``"pool"``.
    * Every line has as many fields as the header. A file whose data lines *all* end with one
      extra empty field (a trailing comma, with or without one on the header) is read
      correctly; any other line with too many or too few fields is an error naming the line.

    Examples
    --------
    >>> from skrisk.data import load_csv_tables
    >>> ds = load_csv_tables("shops_a.csv", "shops_b.csv",
    ...                      blocking=[("standard", "postcode"), ("tokens", "name")],
    ...                      matches_csv="known_matches.csv")  # doctest: +SKIP
    >>> ds.describe()  # doctest: +SKIP
    """
    left_csv = Path(left_csv)
    right_csv = None if right_csv is None else Path(right_csv)
    fractions = None if split is None else _check_fractions(split)
    if not isinstance(return_blocking, bool):
        raise TypeError(f"return_blocking must be True or False, got {return_blocking!r}.")
    left, right = _read_tables(left_csv, right_csv, id_column, encoding)
    pair_enc = _table_encodings(encoding)[0] if pairs_encoding is None else pairs_encoding
    files = (left_csv, left_csv if right_csv is None else right_csv)
    matches = None
    if matches_csv is not None:
        m = _read_pair_file(Path(matches_csv), left, right, files, pair_enc, "Matches")
        if "label" in m.columns:
            m = m[m["label"] == 1]
        matches = m[["left_id", "right_id"]]
    result: BlockingResult | None = None
    if pairs_csv is not None:
        pairs = _read_pair_file(Path(pairs_csv), left, right, files, pair_enc, "Pairs", exported=pairs_exported)
        if matches is not None:
            if "label" in pairs.columns:
                raise DataError(
                    f"{pairs_csv} has a label column and matches_csv was given too: give the labels "
                    "one way (drop the label column, or leave out matches_csv)."
                )
            key = pd.MultiIndex.from_frame(pairs[["left_id", "right_id"]])
            pairs["label"] = key.isin(pd.MultiIndex.from_frame(matches)).astype(np.int64)
        elif "label" not in pairs.columns:
            pairs["label"] = UNLABELLED
    else:
        result = block(left, right, blocking, true_links=matches)
        if len(result.pairs) == 0:
            what = f"{left_csv} against itself" if right_csv is None else f"{left_csv} against {right_csv}"
            raise DataError(
                f"Blocking {what} produced no candidate pair: loosen the "
                "rules (other key columns, a larger top_k or window), or give pairs_csv."
            )
        pairs = result.pairs.copy()
        if "label" not in pairs.columns:
            pairs["label"] = UNLABELLED
    ds = _make_dataset(
        left, right, pairs, fractions, random_state,
        name or (left_csv.stem if right_csv is None else f"{left_csv.stem}-{right_csv.stem}"),
    )
    return (ds, result) if return_blocking else ds
