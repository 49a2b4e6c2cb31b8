"""skrisk: risk sampling for active deep learning on entity resolution.

A scikit-learn / modAL compatible implementation of "Active Deep Learning on Entity Resolution by
Risk Sampling" (Nafa, Chen et al., KBS 2022) and of LearnRisk (Chen et al., SIGMOD 2020).

The public names are imported on first use, so ``import skrisk`` does not import torch or
scikit-learn (measure with ``python -X importtime -c "import skrisk"``).
"""

from __future__ import annotations

from ._lazy import lazy_attributes

__version__ = "0.2.0.dev0"

__all__ = ["ActiveLearner", "LearnRisk", "RiskSampler", "__version__"]

_LAZY = {
    "ActiveLearner": ".active",
    "LearnRisk": ".risk",
    "RiskSampler": ".strategies",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
del lazy_attributes
