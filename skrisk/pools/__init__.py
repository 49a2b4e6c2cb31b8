"""Large pools: score candidate pairs chunk by chunk, stream them, or spread them over Dask.

- :class:`ChunkScorer`: features -> matcher probabilities -> risk
  (-> representation) of one chunk of ``(left_id, right_id)`` pairs, vectorised (the one
  per-chunk scoring of the package).
- :class:`PairSource`: a pool read chunk by chunk (a DataFrame, a Parquet file or dataset, an
  iterable of DataFrame chunks), every chunk's columns checked.
- :func:`stream_query` -> :class:`PoolQuery`: risk sampling over a streamed pool in memory bounded
  by the chunk and batch sizes (a running top-k of the riskiest pairs, then the kernel).
- :func:`dask_query`: the same query over a Dask DataFrame (partitions scored on the workers,
  the riskiest pairs gathered, the kernel on the client); :func:`dask_block`: token or exact-key
  blocking of large tables on Dask. Both need the extra ``skrisk[dask]``.

Names are imported on first use, so ``import skrisk.pools`` is light.
"""

from __future__ import annotations

from .._lazy import lazy_attributes

__all__ = ["ChunkScorer", "dask_block", "dask_query", "PairSource", "PoolQuery", "stream_query"]

_LAZY = {
    "ChunkScorer": "._scorer",
    "dask_block": "._dask",
    "dask_query": "._dask",
    "PairSource": "._source",
    "PoolQuery": "._select",
    "stream_query": "._stream",
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
del lazy_attributes
