"""skrisk: risk sampling for active deep learning on entity resolution.

A scikit-learn / modAL compatible implementation of "Active Deep Learning on Entity Resolution by
Risk Sampling" (Nafa, Chen et al., KBS 2022) and of LearnRisk (Chen et al., SIGMOD 2020).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
