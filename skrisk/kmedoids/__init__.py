"""Weighted k-medoids with fixed medoids (the paper's weighted fastPAM, section 4).

:func:`weighted_fastpam` is the torch kernel (CPU or CUDA, distances computed on the fly in
blocks, never an ``n x n`` matrix); :class:`WeightedKMedoids` wraps it as a scikit-learn
estimator; :func:`representative_sample` draws the weight-stratified sample that stands in for a
pool too large for the kernel (CLARA's idea, with Horvitz-Thompson weights).
"""

from skrisk.kmedoids._estimator import WeightedKMedoids
from skrisk.kmedoids._fastpam import KMedoidsResult, weighted_fastpam
from skrisk.kmedoids._sample import RepresentativeSample, representative_sample

__all__ = ["KMedoidsResult", "RepresentativeSample", "WeightedKMedoids", "representative_sample",
           "weighted_fastpam"]
