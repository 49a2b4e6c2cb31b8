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

Names are imported on first use (the risk model needs torch), so ``import skrisk.risk`` is light.
"""

from __future__ import annotations

from .._lazy import lazy_attributes

__all__ = [
    "Condition",
    "DEFAULT_EPOCHS",
    "LearnRisk",
    "Reason",
    "RiskDistribution",
    "RiskExplanation",
    "Rule",
    "clean_rules",
    "generate_rules",
    "holds_risk_features",
    "matcher_uncertainty",
    "mispredicted",
    "oof_proba",
    "risk_features",
    "risk_roc_auc",
    "rule_activations",
]

_LAZY = {
    "Condition": "._rules",
    "Rule": "._rules",
    "clean_rules": "._rules",
    "generate_rules": "._rules",
    "rule_activations": "._rules",
    "DEFAULT_EPOCHS": "._estimator",
    "RiskDistribution": "._estimator",
    "RiskExplanation": "._explain",
    "Reason": "._explain",
    "mispredicted": "._estimator",
    "LearnRisk": "._learnrisk",
    "matcher_uncertainty": "._uncertainty",
    "holds_risk_features": "._learnrisk",
    "oof_proba": "._learnrisk",
    "risk_features": "._learnrisk",
    "risk_roc_auc": "._learnrisk",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
