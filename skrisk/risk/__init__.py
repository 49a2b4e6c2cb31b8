"""LearnRisk: interpretable misprediction risk of a matcher's labels (paper section 3.2).

* :class:`LearnRisk` -- the risk model as a meta-estimator around the matcher (``X`` is the
  matcher's input; out-of-fold probabilities are computed inside ``fit``), with ``explain``;
* :func:`oof_proba` -- out-of-fold probabilities of labelled pairs, skrisk's one implementation;
* :func:`matcher_uncertainty` -- ``min(p, 1 - p)``, the risk wherever there is no risk model;
* :func:`risk_roc_auc` -- the scorer of the risk's ranking, for ``GridSearchCV``;
* :func:`generate_rules` -- one-sided decision-tree rules (risk features) over similarity features.

The research core that LearnRisk is built on (the risk model, truncated-normal VaR with RankNet
training, on similarity features plus the matcher's probability as a column of ``X``) is
``skrisk.risk.research.LearnRiskEstimator``: for research on given probabilities, and not one of
the scikit-learn estimators of this package (its ``X`` has a domain, a probability column in
[0, 1], that sklearn's generic checks do not respect).

Names are imported on first use, so ``import skrisk.risk`` is light; torch is imported only to
train the risk model (or to score on a GPU): on the CPU its risks are computed in numpy.
"""

from __future__ import annotations

from .._lazy import lazy_attributes

__all__ = ["LearnRisk", "oof_proba", "Reason", "risk_features", "risk_roc_auc", "RiskExplanation", "Rule"]

_LAZY = {
    "LearnRisk": "._learnrisk",
    "oof_proba": "._learnrisk",
    "Reason": "._explain",
    "risk_features": "._learnrisk",
    "risk_roc_auc": "._learnrisk",
    "RiskExplanation": "._explain",
    "Rule": "._rules",
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
del lazy_attributes
