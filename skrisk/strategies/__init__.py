"""Query strategies: risk sampling and the paper's six baselines, under one modAL contract.

``strategy(learner, X_pool, n_instances=1, *, random_state=None, **kw) -> (positions, scores)``

Every baseline is a plain function that keeps nothing between calls. :class:`RiskSampler` is the
callable object to make (and keep) for risk sampling with validation pairs and diagnostics
(``last_query_``, a :class:`RiskQuery`). Scoring and selection are apart, as in modAL: the sampler
scores (the matcher's probabilities, LearnRisk's risk) and a selector chooses the batch from the
arrays (:class:`KMedoidsSelector`, the paper's eq. 6-7; :class:`BadgeSelector`;
:class:`TopKSelector`), the same selector for the pool queries of :mod:`skrisk.pools`. Names are
imported on first use (the strategies need torch), so ``import skrisk.strategies`` is light.
"""

from __future__ import annotations

from .._lazy import lazy_attributes

__all__ = ["badge_sampling", "BadgeSelector", "bald_sampling", "BatchSelection", "coreset_sampling",
           "egl_sampling", "entropy_sampling", "KMedoidsSelector", "random_sampling", "risk_sampling",
           "RiskQuery", "RiskSampler", "TopKSelector"]

_LAZY = {
    "badge_sampling": "._baselines",
    "BadgeSelector": "._batch",
    "bald_sampling": "._baselines",
    "BatchSelection": "._batch",
    "coreset_sampling": "._baselines",
    "egl_sampling": "._baselines",
    "entropy_sampling": "._baselines",
    "KMedoidsSelector": "._batch",
    "random_sampling": "._baselines",
    "risk_sampling": "._risk",
    "RiskQuery": "._risk",
    "RiskSampler": "._risk",
    "TopKSelector": "._batch",
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
del lazy_attributes
