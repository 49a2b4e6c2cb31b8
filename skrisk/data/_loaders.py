"""Loaders for pair datasets in the DeepMatcher layout."""

from __future__ import annotations

import codecs
import csv
import io
import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import DataError
from ._pairs import PairDataset

__all__ = ["get_data_home", "load_deepmatcher", "read_table", "read_pairs", "DEEPMATCHER_DATASETS", "DEEPMATCHER_LEAKS"]

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

#: Attributes of a known dataset that give the label away, dropped by :func:`load_deepmatcher`
#: unless ``drop_leaked=False``. Fodors-Zagats' ``class`` is the entity id of the original
#: restaurant data, present in both tables: equal in every match and in no non-match of all
#: three splits, so a matcher comparing it reads the answer.
DEEPMATCHER_LEAKS: dict[str, tuple[str, ...]] = {"fodors_zagats": ("class",)}

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


#: Guards the csv module's process-wide field size limit while a file is parsed.
_CSV_LOCK = threading.Lock()


_UTF_CODECS = ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be")


def _check_mojibake(path: Path, data: bytes, codec: str, encoding: str) -> None:
    """Refuse valid UTF-8 with non-ASCII bytes read with an ASCII-compatible non-UTF encoding.

    Such a file decodes without error as Latin-1 or cp1252, but every accented letter becomes two
    or three wrong ones (``café`` -> ``cafÃ©``): real Latin-1 text is practically never valid UTF-8.
    """
    if codec in _UTF_CODECS or data.isascii():
        return
    try:
        if b"id,abc".decode(codec) != "id,abc":  # not ASCII-compatible (e.g. EBCDIC): no such confusion
            return
        data.decode("utf-8")
    except UnicodeDecodeError:
        return  # not UTF-8: the encoding given is plausible
    import re

    m = re.search(rb'[^\s,;"]*[^\x00-\x7f]+[^\s,;"]*', data)
    word = m.group() if m else b""
    line = data[: m.start()].count(b"\n") + 1 if m else 1
    raise DataError(
        f"{path} is valid UTF-8, but it was read as {encoding}: line {line} would read "
        f"{word.decode(codec, 'replace')!r} instead of {word.decode('utf-8')!r}. Pass utf-8 for this file "
        f"(skrisk: --encoding utf-8; one encoding per table: --encoding LEFT,RIGHT, e.g. --encoding "
        f"utf-8,{encoding} when this is the left table and only the other one is {encoding})."
    )


def _decode(path: Path, data: bytes, encoding: str) -> str:
    """Bytes -> text, strictly; a UTF-8 byte-order mark is dropped ("utf-8-sig" behaviour)."""
    try:
        codec = codecs.lookup(encoding)
    except (LookupError, TypeError) as exc:
        raise ValueError(
            f"encoding={encoding!r} is not a known text encoding: pass e.g. encoding='utf-8', "
            "'utf-8-sig', 'latin-1', 'cp1252' or 'utf-16'."
        ) from exc
    skip = 3 if codec.name == "utf-8" and data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode(codec.name)
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        line = data[:offset].count(b"\n") + 1
        byte = data[offset : offset + 1].hex()
        utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        try:
            data.decode("utf-8")
            is_utf8 = codec.name not in _UTF_CODECS
        except UnicodeDecodeError:
            is_utf8 = False
        hint = (
            "encoding='utf-16'" if utf16
            else "encoding='utf-8' (the file is valid UTF-8)" if is_utf8
            else "encoding='latin-1' (or 'cp1252', or the file's real encoding)"
        )
        raise DataError(
            f"{path} is not valid {encoding} text: byte 0x{byte} at byte offset {offset} (line {line}) "
            f"cannot be decoded. Pass {hint} (`skrisk label` and `skrisk match`: --encoding NAME), or re-save the file as "
            "UTF-8."
        ) from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    _check_mojibake(path, data, codec.name, encoding)
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise DataError(
            f"{path} holds a NUL character on line {line}: it is a binary file, or UTF-16 text read "
            f"as {encoding}. Pass encoding='utf-16' if it is UTF-16, else remove the NUL characters "
            "(or re-save the file as UTF-8 CSV)."
        )
    return text


def _parse(path: Path, text: str) -> tuple[list[list[str]], list[int]]:
    """CSV text -> rows of fields and the (1-based) line where each row starts."""
    rows: list[list[str]] = []
    lines: list[int] = []
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    with _CSV_LOCK:  # the csv module's field size limit is global: raise it for this read only
        old = csv.field_size_limit()
        csv.field_size_limit(max(old, len(text) + 1))
        try:
            start = 1
            for row in reader:
                rows.append(row)
                lines.append(start)
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(
                f"{path}, line {start}: not a well-formed CSV file, the quoting is broken ({exc}): a "
                "value that opens a double quote must end with one, and a quote inside a quoted value "
                "is written twice (\"\"). Fix the quotes (values that hold commas or line breaks go in "
                "double quotes)."
            ) from None
        finally:
            csv.field_size_limit(old)
    return rows, lines


def _fit_header(
    path: Path, rows: list[list[str]], lines: list[int]
) -> tuple[list[str], list[list[str]], list[int]]:
    """Header names (stripped) and data rows of the header's width, or a DataError naming the line."""
    names = [h.strip() for h in rows[0]]
    body, body_lines = rows[1:], lines[1:]
    if not all(map(any, body)):  # skip blank lines and lines of empty fields only
        keep = [k for k, r in enumerate(body) if any(r)]
        body, body_lines = [body[k] for k in keep], [body_lines[k] for k in keep]
    width = len(names)
    widths = set(map(len, body))
    if widths - {width}:
        last_empty = all(not r[-1] for r in body)
        if width > 1 and names[-1] == "" and widths <= {width, width - 1} and all(
            not r[-1] for r in body if len(r) == width
        ):
            # a trailing comma on the header (and on some or all lines): an unnamed, empty last column
            names, width = names[:-1], width - 1
            body = [r[:width] for r in body]
        elif widths == {width + 1} and last_empty:
            body = [r[:width] for r in body]  # a trailing comma on every data line
    elif width > 1 and names[-1] == "" and all(not r[-1] for r in body):
        names, width = names[:-1], width - 1  # header and every line end with a trailing comma
        body = [r[:width] for r in body]
    for r, line in zip(body, body_lines):
        if len(r) == width:
            continue
        # the first line whose width differs from the header's: say why, and how to fix it
        if len(r) > width and all(f == "" for f in r[width:]):
            why = (
                "the extra field(s) at the end are empty: a trailing comma. Remove the trailing comma "
                "(or end every line, the header included, with one)"
            )
        elif len(r) > width:
            why = (
                "a value holds an unquoted comma, or the header lacks a column. Put values that contain "
                'commas in double quotes ("acme, inc"), or add the column to the header'
            )
        else:
            why = (
                "the line is cut short. Add the missing fields (an empty value still needs its comma), "
                "or quote a value that holds a line break"
            )
        raise DataError(
            f"{path}, line {line}: {len(r)} field(s), but the header has {width} column(s) {names}: {why}."
        )
    for k, nm in enumerate(names):
        if nm == "":
            raise DataError(
                f"{path}: column {k + 1} of the header has no name (header: {rows[0]}). Name the column, "
                "or delete it."
            )
    seen: dict[str, str] = {}
    for nm in names:
        key = nm.casefold()
        if key in seen:
            same = (
                f"column {nm!r} appears twice" if seen[key] == nm
                else f"columns {seen[key]!r} and {nm!r} differ only in case"
            )
            raise DataError(
                f"{path}: {same} in the header {names}. Column names must be unique (ignoring case): "
                "rename or delete one of them."
            )
        seen[key] = nm
    return names, body, body_lines


def _read_csv(path: Path, encoding: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Read a CSV file as strings exactly as written, and the line where each data row starts.

    Every cell is a ``str`` (an empty cell is ``""``), equal cells of a column one object: nothing
    is turned into a number or a missing value here. Header names are stripped of surrounding
    spaces; lines that are blank or hold only empty fields are skipped. Raises :class:`DataError`
    (naming the file, the line and the fix) for undecodable bytes, NUL characters, broken quoting, a
    line whose number of fields differs from the header's (except a consistent trailing comma, see
    :func:`read_table`), unnamed or repeated columns, and an empty file.
    """
    if path.is_dir():
        raise DataError(f"{path} is a folder, not a CSV file: pass the path of the file inside it.")
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist. A DeepMatcher dataset folder holds tableA.csv, tableB.csv, "
            "train.csv, valid.csv and test.csv; point data_home / SKRISK_DATA at the folder that "
            "contains it, or use fetch_deepmatcher(name) to download it."
        )
    text = _decode(path, path.read_bytes(), encoding)
    fast = _read_plain(path, text)
    if fast is not None:
        return fast
    rows, lines = _parse(path, text)
    while rows and not any(f.strip() for f in rows[0]):  # blank lines before the header
        rows, lines = rows[1:], lines[1:]
    if not rows:
        raise DataError(f"{path} is empty: it needs a header row and at least one record.")
    names, body, body_lines = _fit_header(path, rows, lines)
    frame = pd.DataFrame(body or None, columns=names, dtype=object)
    # equal cells of a column share one str object, as pandas' parser gives them (a city or a
    # surname repeats across a million records: one object each instead of one per cell)
    frame = pd.DataFrame({c: _shared_values(frame.iloc[:, j]) for j, c in enumerate(names)}, columns=names)
    return frame, np.asarray(body_lines, dtype=np.int64)


def _read_plain(path: Path, text: str) -> tuple[pd.DataFrame, np.ndarray] | None:
    """:func:`_read_csv`'s result for the common file, by pandas' C parser; None for any other.

    The common file holds no double quote and no carriage return outside ``\r\n``, its first
    line is a header of two or more names none of them empty, and every other line is blank,
    holds commas only, or has exactly the header's number of fields. Anything else (quoting,
    trailing commas, ragged lines, blank lines before the header) goes through the csv module,
    which names the line of a fault; the two give the same frame and lines.
    """
    if '"' in text:
        return None
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            return None
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return None
    names = [h.strip() for h in lines[0].split(",")]
    width = len(names)
    if width < 2 or not all(names):
        return None
    commas = np.fromiter((line.count(",") for line in lines), dtype=np.int64, count=len(lines))
    sizes = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
    empty = sizes == commas  # a blank line, or commas only: no field holds anything
    if not (empty[1:] | (commas[1:] == width - 1)).all():
        return None
    kept = np.flatnonzero(~empty[1:]) + 1
    if not len(kept):
        return None  # no record: the csv module's path words the error
    _fit_header(path, [names], [1])  # names unique up to case (raises naming them)
    body = "\n".join(lines[k] for k in kept) if len(kept) < len(lines) - 1 else "\n".join(lines[1:])
    # in one chunk (low_memory=False), the parser makes each distinct text of a column one object
    frame = pd.read_csv(io.StringIO(body), header=None, names=names, dtype=str, na_filter=False,
                        keep_default_na=False, skip_blank_lines=False, quoting=csv.QUOTE_NONE, engine="c",
                        low_memory=False)
    if len(frame) != len(kept):
        return None
    frame = frame.astype(object)
    return frame, (kept + 1).astype(np.int64)


def _ids(path: Path, values: pd.Series, lines: np.ndarray, column: str) -> pd.Series:
    """Ids as written, stripped of surrounding spaces; an empty id is a DataError naming the line."""
    ids = values.astype(str).str.strip()
    empty = (ids == "").to_numpy()
    if empty.any():
        k = int(np.flatnonzero(empty)[0])
        raise DataError(
            f"{path}, line {int(lines[k])}: the {column!r} cell is empty ({int(empty.sum())} such row(s)). "
            "Every row needs an id: fill it in, or delete the row."
        )
    return ids


def read_table(path: str | os.PathLike, *, id_column: str = "id", encoding: str = "utf-8") -> pd.DataFrame:
    """Read one table of records, indexed by its id column (as ``str``).

    Parameters
    ----------
    path : path-like
        A CSV file: a header row naming the columns, then one record per line.
    id_column : str, default="id"
        The column holding the record ids.
    encoding : str, default="utf-8"
        Text encoding of the file. A UTF-8 byte-order mark is dropped (so ``"utf-8"`` also
        reads what Excel saves as "CSV UTF-8"); bytes that do not decode raise
        :class:`~skrisk.exceptions.DataError` naming the byte offset and line.

    Returns
    -------
    pandas.DataFrame
        One row per record, indexed by id (``str``, name ``"id"``); the other columns in file
        order, ``object`` dtype.

    Notes
    -----
    How cells are read:

    * **Ids** are strings exactly as written, stripped of surrounding spaces: ``007`` stays
      ``"007"``, and ``NA``, ``null`` or ``None`` are ids like any other. An empty id, or an id
      that appears twice, is an error naming the lines.
    * **Attribute values** are strings as written. Only the empty cell is a missing value
      (``NaN``): ``NA``, ``None``, ``NULL``, ``n/a`` or ``NaN`` are data (a product may be
      called "NA"). Numbers keep their form (``1996.0``).
    * **Shape**: every line must have as many fields as the header. A *consistent* trailing
      comma is read correctly: when every data line ends with one extra, empty field (with or
      without a trailing comma on the header) that empty column is dropped. Any other line with
      too many or too few fields is an error naming the line and the fix (remove the trailing
      comma, quote a value holding a comma, add the missing fields). Blank lines and lines of
      empty fields only are skipped. Header names are stripped of surrounding spaces; an unnamed
      column, or two names equal up to case, is an error.
    """
    path = Path(path)
    df, lines = _read_csv(path, encoding)
    if id_column not in df.columns:
        near = [c for c in df.columns if c.casefold() == str(id_column).casefold()]
        hint = f" (did you mean id_column={near[0]!r}?)" if near else ""
        raise DataError(
            f"{path} has no {id_column!r} column (columns: {list(df.columns)}){hint}. Name the record "
            "id column 'id', or pass id_column=..."
        )
    if len(df) == 0:
        raise DataError(f"{path} holds no records: a table needs at least one row.")
    ids = _ids(path, df[id_column], lines, id_column)
    dup = ids.duplicated(keep=False).to_numpy()
    if dup.any():
        first = ids[dup].iloc[0]
        rows = np.flatnonzero((ids == first).to_numpy())
        where = [int(n) for n in lines[rows]]
        raise DataError(
            f"{path}: id {first!r} appears more than once (lines {where}; "
            f"{int(ids.duplicated().sum())} duplicate(s) in all; row {int(rows[1])}). "
            "Ids must be unique: give every record its own id (to find records that describe the same "
            "entity, keep them under different ids and deduplicate with skrisk)."
        )
    df = df.drop(columns=[id_column])
    df = pd.DataFrame({c: _missing_if_empty(df[c]) for c in df.columns}, columns=df.columns, index=df.index)
    df.index = pd.Index(ids.to_numpy(), name="id", dtype=object)
    return df


def _shared_values(column: pd.Series) -> np.ndarray:
    """The cells of one column (str) as an object array in which equal cells are one object."""
    codes, uniq = pd.factorize(column.to_numpy(dtype=object), use_na_sentinel=False)
    return np.asarray(uniq, dtype=object)[codes]


def _missing_if_empty(column: pd.Series) -> np.ndarray:
    """The cells of one column (str) as an object array, ``""`` as NaN."""
    values = column.to_numpy(dtype=object, copy=True)
    values[values == ""] = np.nan
    return values


def _parse_labels(path: Path, raw: pd.Series, lines: np.ndarray, column: str) -> pd.Series:
    """0/1 labels; an empty cell is unknown (NaN); anything else is a DataError naming the line."""
    text = raw.astype(str).str.strip()
    lab = pd.to_numeric(text.where(text != "", None), errors="coerce")
    bad = ((text != "") & ~lab.isin([0, 1])).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{path}: {column} {raw.iloc[row]!r} at row {row} (line {int(lines[row])}) is not 0 or 1 "
            "(1 = same entity, 0 = different; leave the cell empty if unknown)."
        )
    return lab


def _duplicate_pairs(path: Path, out: pd.DataFrame, lines: np.ndarray) -> None:
    """Reject a pair listed twice in one file, naming both lines and saying whether the labels conflict."""
    dup = out.duplicated(["left_id", "right_id"], keep=False).to_numpy()
    if not dup.any():
        return
    k = int(np.flatnonzero(dup)[0])
    key = (out["left_id"].iloc[k], out["right_id"].iloc[k])
    same = ((out["left_id"] == key[0]) & (out["right_id"] == key[1])).to_numpy()
    where = [int(n) for n in lines[same]]
    what = "appears more than once"
    if "label" in out.columns:
        values = out["label"].to_numpy()[same]
        labs = sorted({"empty" if np.isnan(v) or v < 0 else str(int(v)) for v in values})
        if len(labs) > 1:
            what = f"is labelled both {' and '.join(repr(v) for v in labs)} (conflicting labels)"
    raise DataError(
        f"{path}: pair {key} at row {k} {what} (lines {where}; "
        f"{int(out.duplicated(['left_id', 'right_id']).sum())} repeat(s) in all). Keep one row per pair"
        + (", with the right label." if "conflicting" in what else ".")
    )


def _read_pairs(
    path: Path, left_column: str, right_column: str, label_column: str | None, encoding: str
) -> tuple[pd.DataFrame, np.ndarray]:
    df, lines = _read_csv(path, encoding)
    needed = [left_column, right_column]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise DataError(
            f"{path} lacks the column(s) {missing} (columns: {list(df.columns)}). A pair file has "
            f"{left_column!r}, {right_column!r} and optionally {label_column!r}."
        )
    out = pd.DataFrame(
        {
            "left_id": _ids(path, df[left_column], lines, left_column).to_numpy(dtype=object),
            "right_id": _ids(path, df[right_column], lines, right_column).to_numpy(dtype=object),
        }
    )
    if label_column is not None and label_column in df.columns:
        out["label"] = _parse_labels(
            path, df[label_column], lines, "label" if label_column == "label" else f"label ({label_column})"
        ).to_numpy()
    _duplicate_pairs(path, out, lines)
    return out, lines


def read_pairs(
    path: str | os.PathLike,
    *,
    left_column: str = "ltable_id",
    right_column: str = "rtable_id",
    label_column: str | None = "label",
    encoding: str = "utf-8",
) -> pd.DataFrame:
    """Read a pair file (``ltable_id, rtable_id[, label]``) into ``left_id, right_id[, label]``.

    Parameters
    ----------
    path : path-like
        A CSV file with one candidate pair per line.
    left_column, right_column : str, default="ltable_id", "rtable_id"
        Columns holding the ids of the left and right record.
    label_column : str or None, default="label"
        Column holding the label (``0``, ``1``, or empty for unknown); ``None`` ignores labels.
    encoding : str, default="utf-8"
        Text encoding of the file (a UTF-8 byte-order mark is dropped).

    Returns
    -------
    pandas.DataFrame
        Columns ``left_id``, ``right_id`` (``str``, as written, stripped of surrounding spaces)
        and, when the file has a label column, ``label`` (0 or 1; a float column with NaN
        where a label is unknown).

    Raises
    ------
    DataError
        Missing columns, an empty id, a label other than 0/1/empty, a pair listed twice (the
        message says whether the labels conflict), and every malformed-CSV case of
        :func:`read_table`; the message names the file, the line and the fix.
    """
    return _read_pairs(Path(path), left_column, right_column, label_column, encoding)[0]


def _check_ids(
    pairs: pd.DataFrame, lines: np.ndarray, table: pd.DataFrame, side: str, pair_file: Path, table_file: Path
) -> None:
    known = pairs[f"{side}_id"].isin(table.index)
    if not known.all():
        row = int((~known).to_numpy().nonzero()[0][0])
        raise DataError(
            f"{pair_file}: {side} id {pairs[f'{side}_id'].iloc[row]!r} at row {row} (line "
            f"{int(lines[row])}) is not in {table_file} ({int((~known).sum())} pairs refer to missing "
            "records). Fix the pair file or add the records to the table."
        )


def _check_leaks(frames: list[tuple[str, Path, pd.DataFrame, np.ndarray]]) -> None:
    """Reject a pair that appears in two splits (a train/test leak), whatever its labels."""
    allp = pd.concat(
        [p[["left_id", "right_id", "label"]].assign(split=s, file=str(f), line=n) for s, f, p, n in frames],
        ignore_index=True,
    )
    dup = allp.duplicated(["left_id", "right_id"], keep=False).to_numpy()
    if not dup.any():
        return
    first = allp.iloc[int(np.flatnonzero(dup)[0])]
    key = (first["left_id"], first["right_id"])
    same = allp[(allp["left_id"] == key[0]) & (allp["right_id"] == key[1])]
    where = ", ".join(f"{r.split} ({r.file}, line {r.line}, label {int(r.label)})" for r in same.itertuples())
    labels = same["label"].unique()
    what = "with conflicting labels" if len(labels) > 1 else "with the same label"
    n_pairs = int(allp[dup].drop_duplicates(["left_id", "right_id"]).shape[0])
    raise DataError(
        f"Pair {key} is in more than one split, {what}: {where}. A pair in two splits leaks the test "
        f"labels into training ({n_pairs} such pair(s) in all). Keep each pair in one split only "
        "(delete it from all files but one)."
    )


def load_deepmatcher(
    name_or_path: str | os.PathLike,
    data_home: str | os.PathLike | None = None,
    *,
    encoding: str = "utf-8",
    drop_leaked: bool = True,
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
        Text encoding of the CSV files. A UTF-8 byte-order mark is dropped (``"utf-8"`` behaves
        like ``"utf-8-sig"``); bytes that do not decode raise :class:`DataError` naming the
        file, the byte offset and the line, and saying which ``encoding=`` to pass.
    drop_leaked : bool, default=True
        Drop the attributes of a known dataset that give the label away
        (``DEEPMATCHER_LEAKS``: Fodors-Zagats' ``class``, an entity id). A folder is a known
        dataset when its name is one. False keeps them, e.g. to reproduce published figures
        that used them.

    Returns
    -------
    PairDataset
        Splits ``"train"``, ``"valid"`` and ``"test"``, in that order.

    Raises
    ------
    FileNotFoundError
        The dataset folder or one of its five files does not exist.
    DataError
        A malformed file (see :func:`read_table`), a split without a 0/1 label on every line,
        a pair id absent from the tables, a pair listed twice in one split (the message says
        whether the labels conflict), or a pair in two splits: that is a train/test leak and an
        error even when both labels agree. The message names the files, the lines and the fix.

    Notes
    -----
    The tables are read by :func:`read_table` and the splits by ``read_pairs``: ids are
    strings as written (``007`` stays ``"007"``; ``NA`` is an id, not a missing value), and in
    attribute columns only the empty cell is missing.

    Examples
    --------
    >>> from skrisk.datasets import load_deepmatcher
    >>> ds = load_deepmatcher("beer")  # doctest: +SKIP
    >>> ds.split_sizes  # doctest: +SKIP
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
            env = os.environ.get("SKRISK_DATA")
            where = (f"data_home={data_home}" if data_home is not None else f"SKRISK_DATA={env}" if env else
                     "the SKRISK_DATA environment variable is not set, so the default ~/skrisk_data is used")
            raise FileNotFoundError(
                f"No dataset folder {folder} ({where}). Datasets are read from the folder named by "
                f"data_home=, else by the SKRISK_DATA environment variable, else ~/skrisk_data: set "
                f"SKRISK_DATA to the folder holding the datasets (e.g. export SKRISK_DATA=/path/to/data), "
                f"pass the path of a dataset folder instead of its name, or download one with "
                f"skrisk.data.fetch_deepmatcher(name). Known names: {known}."
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
    leaked = [c for c in DEEPMATCHER_LEAKS.get(_canonical_name(name) or "", ()) if c in left.columns]
    if drop_leaked and leaked:
        left, right = left.drop(columns=leaked), right.drop(columns=leaked)
    frames = []
    for split in _SPLITS:
        pfile = folder / f"{split}.csv"
        pairs, lines = _read_pairs(pfile, "ltable_id", "rtable_id", "label", encoding)
        if "label" not in pairs.columns:
            raise DataError(
                f"{pfile} has no 'label' column: every pair of a DeepMatcher split needs a 0/1 label."
            )
        unknown = pairs["label"].isna().to_numpy()
        if unknown.any():
            raise DataError(
                f"{pfile}, line {int(lines[np.flatnonzero(unknown)[0]])}: the label is empty "
                f"({int(unknown.sum())} such row(s)); every pair of a DeepMatcher split needs a 0/1 'label'."
            )
        _check_ids(pairs, lines, left, "left", pfile, left_file)
        _check_ids(pairs, lines, right, "right", pfile, right_file)
        frames.append((split, pfile, pairs, lines))
    _check_leaks(frames)
    pairs = pd.concat([p.assign(split=s) for s, _, p, _ in frames], ignore_index=True)
    return PairDataset(left=left, right=right, pairs=pairs, name=name)
