"""The records of a blocking index as one file: ``index_records.npz``.

An uncompressed NumPy archive (``numpy.load(..., allow_pickle=False)`` reads it; no object
arrays, nothing in it runs code) of plain arrays:

- ``ids_text`` (uint8, the UTF-8 bytes of every record id, one after the other) and
  ``ids_len`` (int64, each id's length in characters);
- per attribute ``k`` (in the order of the manifest's ``attributes``): ``a{k}_text`` and
  ``a{k}_len`` for its distinct values, ``a{k}_codes`` (int32: each record's value, ``-1``
  missing).

Written and read in one pass per column (no row is visited in Python), so a full run's index
costs a fraction of a second at 200,000 records. The members are stored with a fixed date, so
that the same records give the same bytes. Reading checks the archive before loading it: stored
members only, of sizes the file can hold, the expected names, dtypes and shapes, codes within
their values.
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


def texts_to_arrays(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of the texts one after the other, and each text's length in characters."""
    texts = list(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    blob = np.frombuffer("".join(texts).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    return blob, lengths


def _arrays_to_texts(blob: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    whole = blob.tobytes().decode("utf-8", "surrogatepass")
    ends = np.cumsum(lengths)
    if len(ends) and ends[-1] != len(whole):
        raise ValueError("the lengths do not add up to the text")
    starts = (ends - lengths).tolist()
    out = np.empty(len(lengths), dtype=object)
    out[:] = [whole[a:b] for a, b in zip(starts, ends.tolist())]
    return out


def records_bytes(records: pd.DataFrame, attributes: list[str]) -> bytes:
    """The archive of ``records`` (indexed by str id; text values, missing as ``""`` or NaN/None)."""
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
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=_DATE)
            info.compress_type = zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def read_records(path: Path, attributes: list[str], fix: str) -> pd.DataFrame:
    """The records of an index archive (missing values as None), or a DataError naming ``path`` and ``fix``."""
    def bad(why: str) -> DataError:
        return DataError(f"{path} is not a readable index of records ({why}): the file was changed; {fix}.")

    size = path.stat().st_size
    names = {"ids_text", "ids_len"} | {f"a{k}_{p}" for k in range(len(attributes)) for p in ("text", "len", "codes")}
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if sorted(i.filename for i in infos) != sorted(n + ".npy" for n in names):
                raise bad("not the members of an index of these attributes")
            if any(i.compress_type != zipfile.ZIP_STORED or i.file_size > size for i in infos):
                raise bad("a member is compressed, or larger than the file")
        with np.load(path, allow_pickle=False) as z:
            arrays = {n: z[n] for n in names}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise bad(str(exc)) from None
    want = {"text": np.dtype(np.uint8), "len": np.dtype(np.int64), "codes": np.dtype(np.int32)}
    for n, arr in arrays.items():
        dtype = want[n.rsplit("_", 1)[1]]
        if arr.ndim != 1 or arr.dtype != dtype:
            raise bad(f"{n} is not a one-dimensional {dtype} array")
        if n.endswith("_len") and len(arr) and arr.min() < 0:
            raise bad(f"{n} holds a negative length")
    try:
        ids = _arrays_to_texts(arrays["ids_text"], arrays["ids_len"])
        columns = {}
        for k, a in enumerate(attributes):
            uniq = _arrays_to_texts(arrays[f"a{k}_text"], arrays[f"a{k}_len"])
            codes = arrays[f"a{k}_codes"]
            if len(codes) != len(ids) or (len(codes) and (codes.min() < -1 or codes.max() >= len(uniq))):
                raise ValueError(f"the codes of {a!r} do not fit its values or the records")
            col = np.empty(len(codes), dtype=object)
            col[:] = None
            at = codes >= 0
            col[at] = uniq[codes[at]]
            columns[a] = col
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(str(exc)) from None
    return pd.DataFrame(columns, index=pd.Index(ids, dtype=object), columns=attributes)
