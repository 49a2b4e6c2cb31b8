"""ER pair data: tables (two for linkage, one for dedup), candidate pairs, blocking, tokens, vectors, features.

The loaders and generators of data sets live in :mod:`skrisk.datasets`.
The transformers are imported on first use, so reading and blocking tables does not import
scikit-learn.
"""

from .._lazy import lazy_attributes
from ._blocking import BlockingResult, block
from ._loaders import read_table
from ._pairs import PairDataset

__all__ = ["block", "BlockingResult", "PairDataset", "PairEncoder", "read_table", "SimilarityFeatures"]

_LAZY = {"PairEncoder": "._tokenize", "SimilarityFeatures": "._similarity"}
_lazy_getattr, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
del lazy_attributes

#: Loaders once exported here too; :mod:`skrisk.datasets` is their one public home.
_MOVED = ("fetch_deepmatcher", "load_csv_tables", "load_deepmatcher", "load_febrl")


def __getattr__(name: str):
    if name in _MOVED:
        import warnings

        from .. import datasets

        warnings.warn(f"skrisk.data.{name} moved to skrisk.datasets.{name}: import it from skrisk.datasets "
                      "(the name here goes in the next release).", FutureWarning, stacklevel=2)
        return getattr(datasets, name)
    return _lazy_getattr(name)

