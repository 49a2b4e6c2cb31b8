"""Query strategies: risk sampling and the paper's six baselines, under one modAL contract.

``strategy(learner, X_pool, n_instances=1, *, random_state=None, **kw) -> (positions, scores)``
"""

from ._baselines import (
    badge_sampling,
    bald_sampling,
    coreset_sampling,
    egl_sampling,
    entropy,
    entropy_sampling,
    random_sampling,
)
from ._risk import RiskSampler, risk_features, risk_sampling
from ._selection import top_k

STRATEGIES = {
    "risk": risk_sampling,
    "random": random_sampling,
    "entropy": entropy_sampling,
    "bald": bald_sampling,
    "coreset": coreset_sampling,
    "egl": egl_sampling,
    "badge": badge_sampling,
}

__all__ = [
    "STRATEGIES",
    "RiskSampler",
    "badge_sampling",
    "bald_sampling",
    "coreset_sampling",
    "egl_sampling",
    "entropy",
    "entropy_sampling",
    "random_sampling",
    "risk_features",
    "risk_sampling",
    "top_k",
]
