"""Defaults shared by LearnRisk, risk sampling, the experiments and the command line (no imports,
so the command line can read them without loading torch)."""

#: Ranking epochs of LearnRisk, the one default of :class:`LearnRiskEstimator`,
#: :class:`~skrisk.LearnRisk` and :class:`~skrisk.RiskSampler`. On DBLP-Scholar (|L| = 100, 5,742
#: validation pairs, random forest matcher) the risk's ROC AUC for the matcher's mistakes on the
#: pool was 0.955 at 200 epochs, 0.949 with the research code's settings at 200 or 1,000 epochs
#: (``benchmarks/results/query``).
DEFAULT_EPOCHS: int = 200
