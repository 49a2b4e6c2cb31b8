"""skrisk: risk sampling for active deep learning on entity resolution.

A scikit-learn / modAL compatible implementation of "Active Deep Learning on Entity Resolution by
Risk Sampling" (Nafa, Chen et al., KBS 2022) and of LearnRisk (Chen et al., SIGMOD 2020).

The public names are imported on first use, so ``import skrisk`` does not import torch or
scikit-learn (measure with ``python -X importtime -c "import skrisk"``).
"""

from __future__ import annotations

from ._lazy import lazy_attributes

__version__ = "0.1.0"

__all__ = [
    "ActiveLearner",
    "LearnRisk",
    "MATCH_THRESHOLD",
    "RiskQuery",
    "RiskSampler",
    "__version__",
    "badge_sampling",
    "bald_sampling",
    "coreset_sampling",
    "egl_sampling",
    "entropy_sampling",
    "match_labels",
    "oof_proba",
    "random_sampling",
    "risk_sampling",
]

_LAZY = {
    "ActiveLearner": ".active",
    "LearnRisk": ".risk",
    "oof_proba": ".risk",
    "MATCH_THRESHOLD": ".matchers._base",
    "match_labels": ".matchers._base",
    "RiskQuery": ".strategies",
    "RiskSampler": ".strategies",
    "badge_sampling": ".strategies",
    "bald_sampling": ".strategies",
    "coreset_sampling": ".strategies",
    "egl_sampling": ".strategies",
    "entropy_sampling": ".strategies",
    "random_sampling": ".strategies",
    "risk_sampling": ".strategies",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
