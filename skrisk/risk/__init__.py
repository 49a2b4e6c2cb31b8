"""LearnRisk: interpretable misprediction risk of a matcher's labels (paper section 3.2).

* :func:`generate_rules` -- one-sided decision-tree rules (risk features) over similarity features;
* :class:`LearnRiskEstimator` -- the risk model (truncated-normal VaR, RankNet training) as a
  scikit-learn estimator, with :meth:`~LearnRiskEstimator.explain`.
"""

from ._estimator import LearnRiskEstimator, RiskDistribution, RiskExplanation, mispredicted
from ._rules import Condition, Rule, clean_rules, generate_rules, rule_activations

__all__ = [
    "Condition",
    "LearnRiskEstimator",
    "RiskDistribution",
    "RiskExplanation",
    "Rule",
    "clean_rules",
    "generate_rules",
    "mispredicted",
    "rule_activations",
]
