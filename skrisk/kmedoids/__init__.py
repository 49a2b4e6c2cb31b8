"""Weighted k-medoids with fixed medoids (the paper's weighted fastPAM, section 4).

:func:`weighted_fastpam` is the torch kernel (CPU or CUDA, distances computed on the fly in
blocks, never an ``n x n`` matrix); :class:`WeightedKMedoids` wraps it as a scikit-learn
estimator; :class:`KMedoidsResult` is the kernel's result.
"""

from ._estimator import WeightedKMedoids
from ._fastpam import KMedoidsResult, weighted_fastpam

__all__ = ["KMedoidsResult", "weighted_fastpam", "WeightedKMedoids"]
