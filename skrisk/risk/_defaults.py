"""Defaults shared by LearnRisk, risk sampling, the experiments and the command line (no imports,
so the command line can read them without loading torch)."""

#: Ranking epochs of LearnRisk, the one default of :class:`LearnRiskEstimator`,
#: :class:`~skrisk.LearnRisk` and :class:`~skrisk.RiskSampler`, chosen by the risk's quality
#: measured in ``benchmarks/bench_query.py`` (``benchmarks/RESULTS.md``, "Query time").
DEFAULT_EPOCHS: int = 200
