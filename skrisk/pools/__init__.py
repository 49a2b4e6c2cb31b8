"""Large pools: score candidate pairs chunk by chunk, stream them, or spread them over Dask.

- :class:`ChunkScorer` / :class:`ScoredChunk`: features -> matcher probabilities -> risk
  (-> representation) of one chunk of ``(left_id, right_id)`` pairs, vectorised (the one
  per-chunk scoring of the package).

Names are imported on first use, so ``import skrisk.pools`` is light.
"""

from __future__ import annotations

from .._lazy import lazy_attributes

__all__ = [
    "ChunkScorer",
    "PAIR_COLUMNS",
    "ScoredChunk",
]

_LAZY = {
    "ChunkScorer": "._scorer",
    "PAIR_COLUMNS": "._scorer",
    "ScoredChunk": "._scorer",
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
