"""The research core of LearnRisk, for work on given probabilities (not the practitioner's API).

:class:`LearnRiskEstimator` is the risk model that :class:`skrisk.LearnRisk` is built on: one-sided
rules and the truncated-normal VaR model with RankNet training, on similarity features plus the
matcher's probability as a column of ``X``. It is for research on fixed probabilities (the
benchmarks replay recorded matchers through it); its ``X`` has a domain (a probability column in
[0, 1]) that scikit-learn's generic checks do not respect, so it is kept out of
:mod:`skrisk.risk`'s estimators: its tests run those checks through a harness that maps the data
into that domain. Practitioners use :class:`skrisk.LearnRisk`, which computes the probabilities
itself.

Examples
--------
>>> import numpy as np, pandas as pd
>>> from skrisk.risk.research import LearnRiskEstimator
>>> rng = np.random.RandomState(0)
>>> X = pd.DataFrame({"sim": rng.rand(200), "proba": rng.rand(200)})
>>> y = (X["sim"] > 0.5).astype(int).to_numpy()
>>> est = LearnRiskEstimator(proba_column="proba", epochs=5, random_state=0).fit(X, y)
>>> est.predict_risk(X).shape
(200,)
"""

from ._estimator import LearnRiskEstimator, mispredicted

__all__ = ["LearnRiskEstimator", "mispredicted"]
