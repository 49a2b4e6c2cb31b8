"""skrisk: risk sampling for active deep learning on entity resolution.

A scikit-learn / modAL compatible implementation of "Active Deep Learning on Entity Resolution by
Risk Sampling" (Nafa, Chen et al., KBS 2022) and of LearnRisk (Chen et al., SIGMOD 2020).
"""

__version__ = "0.1.0"

from .active import ActiveLearner
from .risk import LearnRiskEstimator
from .strategies import (
    RiskSampler,
    badge_sampling,
    bald_sampling,
    coreset_sampling,
    egl_sampling,
    entropy_sampling,
    random_sampling,
    risk_sampling,
)

__all__ = [
    "ActiveLearner",
    "LearnRiskEstimator",
    "RiskSampler",
    "__version__",
    "badge_sampling",
    "bald_sampling",
    "coreset_sampling",
    "egl_sampling",
    "entropy_sampling",
    "random_sampling",
    "risk_sampling",
]
