"""Loaders for pair datasets in the DeepMatcher layout."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..exceptions import DataError
from ._pairs import PairDataset

__all__ = ["get_data_home", "load_deepmatcher", "read_table", "read_pairs", "DEEPMATCHER_DATASETS"]

#: Known datasets: folder name -> (DeepMatcher name, aliases).
DEEPMATCHER_DATASETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "dblp_scholar": ("Structured/DBLP-GoogleScholar", ("dblp-scholar", "dblp_googlescholar", "dblp-googlescholar")),
    "dblp_acm": ("Structured/DBLP-ACM", ("dblp-acm",)),
    "abt_buy": ("Textual/Abt-Buy", ("abt-buy",)),
    "amazon_google": ("Structured/Amazon-Google", ("amazon-google",)),
    "walmart_amazon": ("Structured/Walmart-Amazon", ("walmart-amazon",)),
    "itunes_amazon": ("Structured/iTunes-Amazon", ("itunes-amazon",)),
    "beer": ("Structured/Beer", ()),
    "fodors_zagats": ("Structured/Fodors-Zagats", ("fodors-zagats", "fodors_zagat")),
}

_SPLITS = ("train", "valid", "test")


def get_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Folder holding the datasets.

    ``data_home`` if given, else the ``SKRISK_DATA`` environment variable, else ``~/skrisk_data``.
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get("SKRISK_DATA")
    if env:
        return Path(env).expanduser()
    return Path.home() / "skrisk_data"


def _canonical_name(name: str) -> str | None:
    key = name.strip().lower().replace(" ", "_")
    for folder, (dm_name, aliases) in DEEPMATCHER_DATASETS.items():
        if key in (folder, dm_name.lower(), dm_name.split("/")[-1].lower(), *aliases):
            return folder
    return None


def _read_csv(path: Path, encoding: str) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist. A DeepMatcher dataset folder holds tableA.csv, tableB.csv, "
            "train.csv, valid.csv and test.csv; point data_home / SKRISK_DATA at the folder that "
            "contains it, or use fetch_deepmatcher(name) to download it."
        )
    try:
        return pd.read_csv(path, encoding=encoding, dtype=str, keep_default_na=True)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path} is not readable as {encoding}: {exc}. Pass encoding='latin-1' (or the file's "
            "real encoding), or re-save the file as UTF-8."
        ) from exc
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{path} is empty: it needs a header row and at least one record.") from exc
    except pd.errors.ParserError as exc:
        raise DataError(f"{path} is not a well-formed CSV file: {exc}") from exc


def read_table(path: str | os.PathLike, *, id_column: str = "id", encoding: str = "utf-8") -> pd.DataFrame:
    """Read one table of records, indexed by its id column (as ``str``).

    Values stay as strings (missing cells are NaN), so numbers such as ``1996.0`` keep their form.
    """
    path = Path(path)
    df = _read_csv(path, encoding)
    if id_column not in df.columns:
        raise DataError(
            f"{path} has no {id_column!r} column (columns: {list(df.columns)}). Name the record "
            "id column 'id', or pass id_column=..."
        )
    if len(df) == 0:
        raise DataError(f"{path} holds no records: a table needs at least one row.")
    ids = df[id_column].astype(str)
    dup = ids[ids.duplicated()]
    if len(dup):
        raise DataError(
            f"{path}: id {dup.iloc[0]!r} appears more than once (row {int(dup.index[0])}, "
            f"{len(dup)} duplicates in all). Ids must be unique: deduplicate the table."
        )
    df = df.drop(columns=[id_column])
    df.index = pd.Index(ids.to_numpy(), name="id")
    return df


def read_pairs(
    path: str | os.PathLike,
    *,
    left_column: str = "ltable_id",
    right_column: str = "rtable_id",
    label_column: str | None = "label",
    encoding: str = "utf-8",
) -> pd.DataFrame:
    """Read a pair file (``ltable_id, rtable_id[, label]``) into ``left_id, right_id[, label]``."""
    path = Path(path)
    df = _read_csv(path, encoding)
    needed = [left_column, right_column]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise DataError(
            f"{path} lacks the column(s) {missing} (columns: {list(df.columns)}). A pair file has "
            f"{left_column!r}, {right_column!r} and optionally {label_column!r}."
        )
    out = pd.DataFrame({"left_id": df[left_column].astype(str), "right_id": df[right_column].astype(str)})
    if label_column is not None and label_column in df.columns:
        lab = pd.to_numeric(df[label_column], errors="coerce")
        bad = lab.notna() & ~lab.isin([0, 1])
        bad |= lab.isna() & df[label_column].notna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise DataError(
                f"{path}: label {df[label_column].iloc[row]!r} at row {row} is not 0 or 1 "
                "(1 = same entity, 0 = different; leave the cell empty if unknown)."
            )
        out["label"] = lab
    return out


def _check_ids(pairs: pd.DataFrame, table: pd.DataFrame, side: str, pair_file: Path, table_file: Path) -> None:
    known = pairs[f"{side}_id"].isin(table.index)
    if not known.all():
        row = int((~known).to_numpy().nonzero()[0][0])
        raise DataError(
            f"{pair_file}: {side} id {pairs[f'{side}_id'].iloc[row]!r} at row {row} is not in "
            f"{table_file} ({int((~known).sum())} pairs refer to missing records). Fix the pair "
            "file or add the records to the table."
        )


def load_deepmatcher(
    name_or_path: str | os.PathLike,
    data_home: str | os.PathLike | None = None,
    *,
    encoding: str = "utf-8",
) -> PairDataset:
    """Load a dataset in the DeepMatcher layout.

    Parameters
    ----------
    name_or_path : str or path-like
        A dataset name (``"dblp_scholar"``, ``"abt_buy"``, ``"beer"``, ``"fodors_zagats"``, ... or
        DeepMatcher's ``"Structured/DBLP-GoogleScholar"``), looked up under ``data_home``, or the
        path of a folder holding ``tableA.csv``, ``tableB.csv``, ``train.csv``, ``valid.csv`` and
        ``test.csv``.
    data_home : path-like, optional
        Where named datasets live; defaults to ``$SKRISK_DATA``, then ``~/skrisk_data``.
    encoding : str, default="utf-8"
        Encoding of the CSV files.

    Returns
    -------
    PairDataset
        Splits ``"train"``, ``"valid"`` and ``"test"``, in that order.

    Examples
    --------
    >>> from skrisk.datasets import load_deepmatcher
    >>> ds = load_deepmatcher("beer")  # doctest: +SKIP
    >>> ds.split_sizes()  # doctest: +SKIP
    {'train': 268, 'valid': 91, 'test': 91}
    """
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        folder, name = path, path.name
    else:
        canon = _canonical_name(str(name_or_path))
        home = get_data_home(data_home)
        folder = home / (canon or str(name_or_path))
        name = canon or str(name_or_path)
        if not folder.is_dir():
            known = ", ".join(sorted(DEEPMATCHER_DATASETS))
            raise FileNotFoundError(
                f"No dataset folder {folder}. Set SKRISK_DATA (or data_home=) to the folder holding "
                f"the datasets, pass the path of a dataset folder, or download one with "
                f"fetch_deepmatcher(name). Known names: {known}."
            )
    left_file, right_file = folder / "tableA.csv", folder / "tableB.csv"
    left = read_table(left_file, encoding=encoding)
    right = read_table(right_file, encoding=encoding)
    if list(left.columns) != list(right.columns):
        if set(left.columns) != set(right.columns):
            raise DataError(
                f"{left_file} and {right_file} do not share one schema: only in A "
                f"{sorted(set(left.columns) - set(right.columns))}, only in B "
                f"{sorted(set(right.columns) - set(left.columns))}. Rename or drop columns so they align."
            )
        right = right[list(left.columns)]
    frames = []
    for split in _SPLITS:
        pfile = folder / f"{split}.csv"
        pairs = read_pairs(pfile, encoding=encoding)
        if "label" not in pairs.columns or pairs["label"].isna().any():
            raise DataError(f"{pfile}: every pair of a DeepMatcher split needs a 0/1 'label'.")
        _check_ids(pairs, left, "left", pfile, left_file)
        _check_ids(pairs, right, "right", pfile, right_file)
        pairs["split"] = split
        frames.append(pairs)
    pairs = pd.concat(frames, ignore_index=True)
    return PairDataset(left=left, right=right, pairs=pairs, name=name)
