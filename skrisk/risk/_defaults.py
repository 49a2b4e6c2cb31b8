"""Defaults shared by LearnRisk, risk sampling, the experiments and the command line (no imports,
so the command line can read them without loading torch)."""

#: Ranking epochs of LearnRisk, the one default of :class:`LearnRiskEstimator`,
#: :class:`~skrisk.LearnRisk` and :class:`~skrisk.RiskSampler`: with Adam, enough for the ranking
#: to settle while keeping each query short (see the benchmarks in the documentation).
DEFAULT_EPOCHS: int = 200
