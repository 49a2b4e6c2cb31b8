"""The records of a blocking index as one file: ``index_records.npz``.

An uncompressed NumPy archive (``numpy.load(..., allow_pickle=False)`` reads it; no object
arrays, nothing in it runs code) of plain arrays:

- ``ids_text`` (uint8, the UTF-8 bytes of every record id, one after the other) and
  ``ids_len`` (int64, each id's length in characters);
- per attribute ``k`` (in the order of the manifest's ``attributes``): ``a{k}_text`` and
  ``a{k}_len`` for its distinct values, ``a{k}_codes`` (int32: each record's value, ``-1``
  missing);
- ``r_entity`` (int64: each record's entity id, as ``entities.csv`` holds it) and ``r_ident``
  (uint64: each record's identical key, ``skrisk.data._known_blocking.identical_keys`` over the
  model's attributes);
- ``s_entity`` (int64), ``s_text`` and ``s_len``: the entities that ``entities.csv`` marks
  suspicious, and their ``suspicious`` text;
- for a model whose features weigh agreement by a value's frequency (``exact_tf``), per group
  ``g`` (``t``: the table; linkage ``l`` and ``r``: each table) and attribute ``k`` listed in the
  manifest's ``value_counts``: ``v{g}{k}_text`` and ``v{g}{k}_len`` (the standardised values) and
  ``v{g}{k}_count`` (int64: how many records hold each);
- for a model whose blocking has a ``typed`` rule (without an ``:id`` key), ``k_hash`` (uint64,
  the manifest's ``typed_passes`` x records, pass by pass): each record's key of each pass
  (``skrisk.data._known_blocking.typed_keys``; 0: the record takes no part in the pass);
- for a model whose blocking has a ``tokens`` rule, the word counts of its columns
  (``TokenCounts``, over the columns of the manifest's ``tokens_columns``):
  ``t_vocab_text`` and ``t_vocab_len`` (the words, sorted), and the records x words counts in
  CSR form, ``t_indptr`` (int64), ``t_indices`` (int32) and ``t_counts`` (float32).

Written and read in one pass per column (no row is visited in Python), so a full run's index
costs a fraction of a second at 200,000 records; the archive is written straight to its file,
member by member. The members are stored with a fixed date, so that the same arrays give the
same bytes. Reading checks the archive before loading it: stored members only, of sizes the file
can hold, the expected names, dtypes and shapes, codes within their values. An attribute's values
need not be distinct (an incremental run appends the values of its new records): the reader
decodes each attribute's texts once and gives the values of the rows asked for
(:class:`IndexArchive`), so that the known records are never all turned into Python strings.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DataError

INDEX_RECORDS = "index_records.npz"
_DATE = (1980, 1, 1, 0, 0, 0)
_TOKEN_MEMBERS = ("t_vocab_text", "t_vocab_len", "t_indptr", "t_indices", "t_counts")


def texts_to_arrays(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of the texts one after the other, and each text's length in characters."""
    texts = list(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    blob = np.frombuffer("".join(texts).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    return blob, lengths


def record_arrays(records: pd.DataFrame, attributes: list[str]) -> dict[str, np.ndarray]:
    """The members ``ids_*`` and ``a{k}_*`` of ``records`` (indexed by str id; text values,
    missing as ``""`` or NaN/None), each attribute's distinct values once."""
    arrays: dict[str, np.ndarray] = {}
    arrays["ids_text"], arrays["ids_len"] = texts_to_arrays(records.index.astype(str))
    for k, a in enumerate(attributes):
        values = pd.Series(records[a].to_numpy(dtype=object), dtype=object)
        codes, uniq = pd.factorize(values.mask(values.eq("")), use_na_sentinel=True)  # "" is missing, as NaN is
        uniq = np.asarray(uniq, dtype=object)
        if len(uniq) and pd.api.types.infer_dtype(uniq, skipna=False) != "string":
            uniq = np.array([str(v) for v in uniq], dtype=object)
        arrays[f"a{k}_text"], arrays[f"a{k}_len"] = texts_to_arrays(uniq)
        arrays[f"a{k}_codes"] = codes.astype(np.int32)
    return arrays


def token_arrays(tokens: Any) -> dict[str, np.ndarray]:
    """The members ``t_*`` of word counts (a ``TokenCounts``)."""
    m = tokens.counts
    arrays = {}
    arrays["t_vocab_text"], arrays["t_vocab_len"] = texts_to_arrays(tokens.vocab)
    arrays["t_indptr"] = m.indptr.astype(np.int64, copy=False)
    arrays["t_indices"] = m.indices.astype(np.int32, copy=False)
    arrays["t_counts"] = m.data.astype(np.float32, copy=False)
    return arrays


def entity_arrays(entity: np.ndarray, ident: np.ndarray, suspicious: dict[int, str]) -> dict[str, np.ndarray]:
    """The members ``r_entity``, ``r_ident`` and ``s_*`` (``suspicious``: entity id -> text)."""
    flagged = sorted(suspicious)
    arrays = {"r_entity": np.asarray(entity, dtype=np.int64), "r_ident": np.asarray(ident, dtype=np.uint64),
              "s_entity": np.array(flagged, dtype=np.int64)}
    arrays["s_text"], arrays["s_len"] = texts_to_arrays([suspicious[e] for e in flagged])
    return arrays


def count_arrays(counts: dict[str, dict[str, pd.Series]], attributes: list[str]) -> dict[str, np.ndarray]:
    """The members ``v{g}{k}_*`` of value counts: per group (``t``, ``l``, ``r``) the counts of
    attributes (standardised value -> records holding it)."""
    arrays = {}
    for g, per_attr in counts.items():
        for a, series in per_attr.items():
            k = attributes.index(a)
            arrays[f"v{g}{k}_text"], arrays[f"v{g}{k}_len"] = texts_to_arrays([str(v) for v in series.index])
            arrays[f"v{g}{k}_count"] = series.to_numpy(dtype=np.int64)
    return arrays


def _write_members(f: Any, arrays: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=_DATE)
            info.compress_type = zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(arr), allow_pickle=False)


def write_archive(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write the archive of ``arrays`` at ``path`` (a new file: the staging file of
    ``write_files_together``), member by member, and sync it."""
    import os

    with open(path, "xb") as f:
        _write_members(f, arrays)
        f.flush()
        os.fsync(f.fileno())


def records_bytes(records: pd.DataFrame, attributes: list[str], tokens: Any = None) -> bytes:
    """The archive of ``records`` (each its own entity, no identical key, none suspicious) and
    of their word counts ``tokens`` (a ``TokenCounts`` of these records in this order), as bytes."""
    n = len(records)
    arrays = {**record_arrays(records, attributes),
              **entity_arrays(np.arange(n), np.zeros(n, dtype=np.uint64), {})}
    if tokens is not None:
        arrays.update(token_arrays(tokens))
    buf = io.BytesIO()
    _write_members(buf, arrays)
    return buf.getvalue()


#: The dtype of each kind of member, by the end of its name.
_DTYPES = {"text": np.uint8, "len": np.int64, "codes": np.int32, "indptr": np.int64, "indices": np.int32,
           "counts": np.float32, "entity": np.int64, "ident": np.uint64, "count": np.int64, "hash": np.uint64}


def _check_arrays(arrays: dict[str, np.ndarray], bad: Any) -> None:
    """Every member one-dimensional of its kind's dtype, no negative length (``bad(why)``: the error)."""
    for n, arr in arrays.items():
        dtype = np.dtype(_DTYPES[n.rsplit("_", 1)[1]])
        if arr.ndim != 1 or arr.dtype != dtype:
            raise bad(f"{n} is not a one-dimensional {dtype} array")
        if n.endswith("_len") and len(arr) and arr.min() < 0:
            raise bad(f"{n} holds a negative length")


def _load_checked(path: Path, names: list[str], bad: Any, missing: str) -> dict[str, np.ndarray]:
    """The members ``names`` of an index archive (no pickle), checked by :func:`_check_arrays`;
    ``bad(missing)`` when one is not there."""
    try:
        with np.load(path, allow_pickle=False) as z:
            present = set(z.files) >= set(names)
            arrays = {n: z[n] for n in names} if present else {}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise bad(str(exc)) from None
    if not present:
        raise bad(missing)
    _check_arrays(arrays, bad)
    return arrays


class _Texts:
    """The texts of one ``*_text`` / ``*_len`` pair: checked at once (the UTF-8 decodes, the
    lengths add up), decoded on the first :meth:`take` and kept until :meth:`drop`."""

    def __init__(self, blob: np.ndarray, lengths: np.ndarray) -> None:
        self.blob, self.lengths = blob, lengths
        total = int(lengths.sum())
        ascii_only = not len(blob) or int(blob.max()) < 128
        n_chars = len(blob) if ascii_only else len(blob.tobytes().decode("utf-8", "surrogatepass"))
        if n_chars != total:
            raise ValueError("the lengths do not add up to the text")
        self._whole: str | None = None
        self._ends: np.ndarray | None = None

    def take(self, at: np.ndarray) -> list[str]:
        if self._whole is None:
            self._whole = self.blob.tobytes().decode("utf-8", "surrogatepass")
            self._ends = np.cumsum(self.lengths)
        w, ends = self._whole, self._ends[at]
        return [w[a:b] for a, b in zip((ends - self.lengths[at]).tolist(), ends.tolist())]

    def __len__(self) -> int:
        return len(self.lengths)

    def drop(self) -> None:
        self._whole = self._ends = None


class IndexArchive:
    """The checked members of an index archive: every record's id (``ids``, str), entity and
    identical key; each attribute's values on request (:meth:`values`, :meth:`frame`: an
    attribute's texts are decoded at its first request)."""

    def __init__(self, arrays: dict[str, np.ndarray], attributes: list[str]) -> None:
        self.arrays, self.attributes = arrays, list(attributes)
        ids = _Texts(arrays["ids_text"], arrays["ids_len"])
        self.ids = np.empty(len(ids), dtype=object)
        self.ids[:] = ids.take(np.arange(len(ids)))
        n = len(self.ids)
        self._texts = []
        for k, a in enumerate(self.attributes):
            texts, codes = _Texts(arrays[f"a{k}_text"], arrays[f"a{k}_len"]), arrays[f"a{k}_codes"]
            if len(codes) != n or (n and (codes.min() < -1 or codes.max() >= len(texts))):
                raise ValueError(f"the codes of {a!r} do not fit its values or the records")
            self._texts.append(texts)
        for name in ("r_entity", "r_ident"):
            if len(arrays[name]) != n:
                raise ValueError(f"{name} does not hold one value per record")
        sus = _Texts(arrays["s_text"], arrays["s_len"])
        if len(sus) != len(arrays["s_entity"]):
            raise ValueError("s_entity and s_len differ in length")
        self.suspicious = dict(zip(arrays["s_entity"].tolist(), sus.take(np.arange(len(sus)))))

    def value_counts(self, group: str, attributes: list[str]) -> dict[str, pd.Series]:
        """The kept value counts of ``group`` (``t``, ``l`` or ``r``) for ``attributes``."""
        out = {}
        for a in attributes:
            k = self.attributes.index(a)
            texts = _Texts(self.arrays[f"v{group}{k}_text"], self.arrays[f"v{group}{k}_len"])
            counts = self.arrays[f"v{group}{k}_count"]
            if len(counts) != len(texts) or (len(counts) and counts.min() < 1):
                raise ValueError(f"the value counts of {a!r} do not hold together")
            out[a] = pd.Series(counts, index=pd.Index(texts.take(np.arange(len(texts))), dtype=object))
        return out

    def drop_values(self) -> None:
        """Let the decoded values go (a later :meth:`values` decodes them again; the arrays stay)."""
        for texts in self._texts:
            texts.drop()

    def typed_keys(self, n_passes: int) -> np.ndarray:
        """The kept keys of the typed passes: passes x records (a view)."""
        return self.arrays["k_hash"].reshape(n_passes, len(self.ids))

    @property
    def entity(self) -> np.ndarray:
        return self.arrays["r_entity"]

    @property
    def ident(self) -> np.ndarray:
        return self.arrays["r_ident"]

    def values(self, k: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The values of attribute ``k`` of the records at ``rows`` (all: None), missing as None."""
        codes = self.arrays[f"a{k}_codes"]
        codes = codes if rows is None else codes[rows]
        out = np.empty(len(codes), dtype=object)
        out[:] = None
        at = codes >= 0
        uniq, inverse = np.unique(codes[at], return_inverse=True)
        texts = np.empty(len(uniq), dtype=object)
        texts[:] = self._texts[k].take(uniq)
        out[at] = texts[inverse]
        return out

    def frame(self, rows: np.ndarray | None = None, columns: list[str] | None = None) -> pd.DataFrame:
        """The records at ``rows`` (all: None), their ``columns`` (all the attributes: None)."""
        columns = self.attributes if columns is None else list(columns)
        data = {a: self.values(self.attributes.index(a), rows) for a in columns}
        ids = self.ids if rows is None else self.ids[rows]
        return pd.DataFrame(data, index=pd.Index(ids, dtype=object), columns=columns)


def _members(attributes: list[str], counted: dict[str, list[str]] | None = None, typed: bool = False) -> set[str]:
    return ({"ids_text", "ids_len", "r_entity", "r_ident", "s_entity", "s_text", "s_len"}
            | ({"k_hash"} if typed else set())
            | {f"a{k}_{p}" for k in range(len(attributes)) for p in ("text", "len", "codes")}
            | {f"v{g}{attributes.index(a)}_{p}" for g, attrs in (counted or {}).items() for a in attrs
               for p in ("text", "len", "count")})


def read_archive(path: Path, attributes: list[str], fix: str, counted: dict[str, list[str]] | None = None,
                 n_passes: int = 0) -> IndexArchive:
    """The checked archive of an index (no value of its records decoded but the ids), or a
    DataError naming ``path`` and ``fix``; ``counted``: the groups and attributes of the kept
    value counts (the manifest's ``value_counts``); ``n_passes``: the typed passes whose keys it
    keeps."""
    def bad(why: str) -> DataError:
        return DataError(f"{path} is not a readable index of records ({why}): the file was changed; {fix}.")

    size = path.stat().st_size
    names = _members(attributes, counted, n_passes > 0)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            stored = sorted(i.filename for i in infos)
            if stored not in (sorted(n + ".npy" for n in names),
                              sorted(n + ".npy" for n in names | set(_TOKEN_MEMBERS))):
                raise bad("not the members of an index of these attributes")
            if any(i.compress_type != zipfile.ZIP_STORED or i.file_size > size for i in infos):
                raise bad("a member is compressed, or larger than the file")
    except DataError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise bad(str(exc)) from None
    arrays = _load_checked(path, sorted(names), bad, "a member is missing")
    try:
        archive = IndexArchive(arrays, attributes)
        for g, attrs in (counted or {}).items():
            archive.value_counts(g, attrs)  # checked here, read again where used
        if n_passes and len(arrays["k_hash"]) != n_passes * len(archive.ids):
            raise ValueError("k_hash does not hold a key per pass and record")
        return archive
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(str(exc)) from None


def read_records(path: Path, attributes: list[str], fix: str) -> pd.DataFrame:
    """The records of an index archive (missing values as None), or a DataError naming ``path`` and ``fix``."""
    return read_archive(path, attributes, fix).frame()


def read_tokens(path: Path, columns: list[str], ids: pd.Index, fix: str) -> Any:
    """The word counts of an index archive's records (``ids``, in the archive's order) over
    ``columns``, checked (a CSR matrix whose rows hold distinct words in order, words sorted and
    distinct, counts positive), or a DataError naming ``path`` and ``fix``."""
    import scipy.sparse as sp

    from ..data._token_counts import TokenCounts

    def bad(why: str) -> DataError:
        return DataError(f"{path} holds word counts that cannot be read ({why}): the file was changed; {fix}.")

    a = _load_checked(path, list(_TOKEN_MEMBERS), bad,
                      "the index's manifest lists token columns, the archive holds no word counts")
    try:
        vocab = np.empty(len(a["t_vocab_len"]), dtype=object)
        vocab[:] = _Texts(a["t_vocab_text"], a["t_vocab_len"]).take(np.arange(len(vocab)))
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(str(exc)) from None
    ptr, idx, cnt = a["t_indptr"], a["t_indices"], a["t_counts"]
    if len(ptr) != len(ids) + 1 or ptr[0] != 0 or (np.diff(ptr) < 0).any() or ptr[-1] != len(idx) \
            or len(cnt) != len(idx):
        raise bad("t_indptr does not delimit one row per record")
    if len(idx) and (idx.min() < 0 or idx.max() >= len(vocab)):
        raise bad("a word index is outside the vocabulary")
    first = np.zeros(len(idx), dtype=bool)
    first[ptr[:-1][np.diff(ptr) > 0]] = True
    if len(idx) > 1 and (np.diff(idx)[~first[1:]] <= 0).any():  # int32 differences: the indices are >= 0
        raise bad("a row's words are not distinct and in order")
    if len(cnt) and not (np.isfinite(cnt).all() and cnt.min() > 0):
        raise bad("a count is not a positive number")
    if len(vocab) > 1 and not (vocab[1:] > vocab[:-1]).all():
        raise bad("the words are not sorted and distinct")
    counts = sp.csr_matrix((cnt, idx, ptr), shape=(len(ids), len(vocab)))
    return TokenCounts(list(columns), ids, vocab, counts)
