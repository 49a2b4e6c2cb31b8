"""Query strategies: risk sampling and the paper's six baselines, under one modAL contract.

``strategy(learner, X_pool, n_instances=1, *, random_state=None, **kw) -> (positions, scores)``

Every strategy is a plain function that keeps nothing between calls. :class:`RiskSampler` is the
callable object to make (and keep) for risk sampling with validation pairs and diagnostics
(``last_query_``, a :class:`RiskQuery`). Scoring and selection are apart, as in modAL:
:func:`select_batch` is risk sampling's one selection step over arrays (eq. 6 weights and the eq. 7
kernel), which ``RiskSampler`` and the pool queries of :mod:`skrisk.pools` share through
:meth:`RiskSampler.select`. Names are imported on first use (the strategies need
torch), so ``import skrisk.strategies`` is light. The names of strategies (for experiments, the
CLI and the benchmarks) are registered in one place, :data:`skrisk.experiments.STRATEGIES`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "BatchSelection",
    "RiskQuery",
    "RiskSampler",
    "badge_sampling",
    "bald_sampling",
    "coreset_sampling",
    "egl_sampling",
    "entropy",
    "entropy_sampling",
    "lipschitz_weights",
    "min_distances",
    "random_sampling",
    "risk_features",
    "risk_sampling",
    "select_batch",
    "top_k",
]

_LAZY = {
    "BatchSelection": "._batch",
    "select_batch": "._batch",
    "badge_sampling": "._baselines",
    "bald_sampling": "._baselines",
    "coreset_sampling": "._baselines",
    "egl_sampling": "._baselines",
    "entropy": "._baselines",
    "entropy_sampling": "._baselines",
    "random_sampling": "._baselines",
    "lipschitz_weights": "._selection",
    "min_distances": "._selection",
    "RiskQuery": "._risk",
    "RiskSampler": "._risk",
    "risk_features": "._risk",
    "risk_sampling": "._risk",
    "top_k": "._selection",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value: Any = getattr(import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
