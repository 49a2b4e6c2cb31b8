"""PairSource: a pool of candidate pairs read chunk by chunk (a DataFrame, Parquet, or chunks)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DataError
from ._scorer import PAIR_COLUMNS

__all__ = ["PairSource", "SourceChunk"]


@dataclass(frozen=True)
class SourceChunk:
    """One piece of a pair source, as :meth:`PairSource.chunks` yields it.

    Attributes
    ----------
    number : int
        The source's own chunk number, counting from 0 (the DataFrame slice, the Parquet record
        batch, or the item of the iterable).
    start : int
        Position in the whole source of the piece's first pair (pool row).
    pairs : pandas.DataFrame
        The pairs (at most ``chunk_size`` rows), with a ``RangeIndex``.
    where : str
        Names the chunk in messages (with the Parquet file when there is one).
    """

    number: int
    start: int
    pairs: pd.DataFrame
    where: str


def _columns_text(cols: list[str]) -> str:
    return "[" + ", ".join(repr(c) for c in cols) + "]"


class PairSource:
    """Candidate pairs read in chunks, so that a pool never has to be in memory at once.

    Parameters
    ----------
    data : DataFrame, str or path-like, iterable of DataFrames, or callable
        - a :class:`pandas.DataFrame` of pairs (sliced into chunks);
        - the path of a Parquet file or of a directory of Parquet files (a dataset, read with
          pyarrow record batch by record batch: ``pip install skrisk[parquet]``);
        - an iterable (e.g. a generator) of DataFrame chunks: read once, like any generator;
        - a callable with no argument that returns such an iterable: it is called for every
          reading, so the source can be read again (e.g. a retried query).

        Every chunk needs the columns ``left_id`` and ``right_id`` (record ids); other columns
        are allowed but every chunk must have the same columns as the first.
    name : str, optional
        Names the source in messages (default: the path, or the kind of source).

    Attributes
    ----------
    kind : {"frame", "parquet", "chunks"}
        The kind of source.
    n_pairs : int or None
        The number of pairs when known without reading them (DataFrame, Parquet metadata).

    Raises
    ------
    DataError
        When a chunk lacks the id columns or disagrees in columns with the first chunk (the
        message names the chunk number, the file and the columns), when a chunk is not a
        DataFrame, or when a file is not Parquet. Raised while reading, before the chunk is
        used.

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.pools import PairSource
    >>> pairs = pd.DataFrame({"left_id": ["a1", "a2", "a3"], "right_id": ["b1", "b2", "b3"]})
    >>> src = PairSource(pairs)
    >>> [(c.number, c.start, len(c.pairs)) for c in src.chunks(2)]
    [(0, 0, 2), (1, 2, 1)]
    >>> bad = PairSource([pairs, pairs.rename(columns={"right_id": "rid"})])
    >>> list(bad.chunks(10))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    skrisk.exceptions.DataError: pair source (chunks): chunk 1 has the columns ['left_id', 'rid'] ...
    """

    def __init__(self, data: Any, *, name: str | None = None) -> None:
        self._data = data
        self._used = False
        if isinstance(data, PairSource):
            self._data, self.kind, self.name = data._data, data.kind, name or data.name
            self.n_pairs = data.n_pairs
            return
        if isinstance(data, pd.DataFrame):
            self.kind, self.n_pairs = "frame", len(data)
            self.name = name or "pair source (DataFrame)"
        elif isinstance(data, (str, os.PathLike)):
            self.kind = "parquet"
            self.name = name or str(data)
            self._dataset = self._open_parquet(Path(data))
            self.n_pairs = int(self._dataset.count_rows())
        elif type(data).__module__.split(".")[0] == "dask":
            raise TypeError(
                "PairSource reads one machine's chunks; for a dask DataFrame use "
                "skrisk.pools.dask_query(scorer, ddf, ...)."
            )
        elif callable(data) or isinstance(data, Iterable):
            self.kind, self.n_pairs = "chunks", None
            self.name = name or "pair source (chunks)"
        else:
            raise TypeError(
                "PairSource takes a DataFrame of pairs, the path of a Parquet file or directory, an "
                f"iterable of DataFrame chunks or a function returning one; got {type(data).__name__}."
            )

    def __repr__(self) -> str:
        n = "?" if self.n_pairs is None else self.n_pairs
        return f"PairSource(kind={self.kind!r}, name={self.name!r}, n_pairs={n})"

    # ------------------------------------------------------------------ reading
    def _open_parquet(self, path: Path) -> Any:
        try:
            import pyarrow.dataset as pads
        except ImportError as exc:  # pragma: no cover - pyarrow is in skrisk[parquet] / [dev]
            raise ImportError(
                "Reading Parquet pair sources needs pyarrow: pip install 'skrisk[parquet]'."
            ) from exc
        if not path.exists():
            raise FileNotFoundError(f"pair source {str(path)!r} does not exist: give a Parquet file or a "
                                    "directory of Parquet files.")
        try:
            dataset = pads.dataset(str(path), format="parquet")
        except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for a non-Parquet file
            raise DataError(
                f"pair source {str(path)!r} cannot be read as Parquet ({exc}): give a Parquet file, or "
                "a directory that holds only Parquet files."
            ) from exc
        if not dataset.files:
            raise DataError(f"pair source {str(path)!r} holds no Parquet file.")
        return dataset

    def _pieces(self, chunk_size: int) -> Iterator[tuple[int, pd.DataFrame, str, list[str]]]:
        """``(chunk number, frame, where, column names)`` of the source's own chunks, unchecked
        (a Parquet chunk is read with only the id columns; its names are the file's)."""
        if self.kind == "frame":
            frame = self._data
            cols = [str(c) for c in frame.columns]
            for number, start in enumerate(range(0, max(len(frame), 1), chunk_size)):
                yield number, frame.iloc[start:start + chunk_size], f"chunk {number}", cols
            return
        if self.kind == "parquet":
            number = 0
            for fragment in self._dataset.get_fragments():
                path = fragment.path
                names = list(fragment.physical_schema.names)
                want = [c for c in PAIR_COLUMNS if c in names]
                empty = True
                try:
                    batches = fragment.to_batches(columns=want, batch_size=chunk_size)
                    for batch in batches:
                        yield number, batch.to_pandas(), f"chunk {number} (file {path!r})", names
                        number += 1
                        empty = False
                except DataError:
                    raise
                except Exception as exc:  # a corrupt file: name it
                    raise DataError(
                        f"{self.name}: file {path!r} cannot be read as Parquet ({exc}). Rewrite or "
                        "remove it."
                    ) from exc
                if empty:  # a file without rows still has columns to check
                    empty_frame = pd.DataFrame({c: [] for c in want})
                    yield number, empty_frame, f"chunk {number} (file {path!r})", names
                    number += 1
            return
        data = self._data
        if callable(data):
            data = data()
            if not isinstance(data, Iterable) or isinstance(data, (pd.DataFrame, str, bytes)):
                raise TypeError(
                    f"{self.name}: the function given as the pair source returned "
                    f"{type(data).__name__}, not an iterable of DataFrame chunks."
                )
        elif iter(data) is data:  # a generator or iterator: one reading only
            if self._used:
                raise RuntimeError(
                    f"{self.name} is an iterator (e.g. a generator) that was read already: give a "
                    "function that returns a new iterator, PairSource(lambda: make_chunks()), to "
                    "read the source again."
                )
            self._used = True
        for number, frame in enumerate(data):
            if not isinstance(frame, pd.DataFrame):
                raise DataError(
                    f"{self.name}: chunk {number} is a {type(frame).__name__}, not a pandas DataFrame "
                    f"with columns {list(PAIR_COLUMNS)}."
                )
            yield number, frame, f"chunk {number}", [str(c) for c in frame.columns]

    def chunks(self, chunk_size: int = 100_000) -> Iterator[SourceChunk]:
        """The pairs in pieces of at most ``chunk_size`` rows, every chunk's columns checked.

        Parameters
        ----------
        chunk_size : int, default=100_000
            Largest piece yielded (a source chunk larger than this is cut into pieces).

        Yields
        ------
        SourceChunk
        """
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}.")
        chunk_size = int(chunk_size)
        first: list[str] | None = None
        start = 0
        for number, frame, where, cols in self._pieces(chunk_size):
            if first is None:
                missing = [c for c in PAIR_COLUMNS if c not in cols]
                if missing:
                    raise DataError(
                        f"{self.name}: {where} has the columns {_columns_text(cols)}, without "
                        f"{_columns_text(missing)}: candidate pairs need the record ids "
                        f"{list(PAIR_COLUMNS)}."
                    )
                first = cols
            elif set(cols) != set(first):
                missing = [c for c in first if c not in cols]
                extra = [c for c in cols if c not in first]
                raise DataError(
                    f"{self.name}: {where} has the columns {_columns_text(cols)} but chunk 0 had "
                    f"{_columns_text(first)} (missing {_columns_text(missing)}, extra "
                    f"{_columns_text(extra)}): every chunk needs the same columns, with 'left_id' "
                    "and 'right_id'."
                )
            pairs = frame[list(PAIR_COLUMNS)].reset_index(drop=True)
            for offset in range(0, len(pairs), chunk_size):
                piece = pairs.iloc[offset:offset + chunk_size].reset_index(drop=True)
                yield SourceChunk(number, start + offset, piece, where)
            start += len(pairs)


def as_source(source: Any) -> PairSource:
    """``source`` as a :class:`PairSource` (itself when it is one)."""
    return source if isinstance(source, PairSource) else PairSource(source)

