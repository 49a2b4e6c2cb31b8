"""How good is the matcher, where should the threshold be, and is another batch worth it?

:func:`audit_sample` draws audit pairs by importance sampling (aimed with LearnRisk's risk or
with the matcher's score, or uniform, always with a uniform floor that bounds the weights);
:func:`estimate_quality` turns their answers into estimated precision, recall and F1 of the
matcher on the whole candidate set, with intervals (model-assisted when given the matcher's
probability of every candidate); :func:`choose_threshold` picks the match threshold for a target
(F1: 0.5 unless the audit shows another is better; a precision or a recall); :func:`compare_f1`
estimates the F1 difference of two decisions on the same audit draws (two thresholds, or two
rounds' matchers); :func:`confirm_stop` lets a stopping rule's advice through only when the audit
shows that the last labels gained little F1.

Examples
--------
>>> import numpy as np
>>> from skrisk.quality import audit_sample, estimate_quality
>>> rng = np.random.RandomState(0)
>>> proba = rng.uniform(size=2000)
>>> truth = (rng.uniform(size=2000) < proba).astype(int)
>>> s = audit_sample(proba, n=200, method="score", random_state=0)
>>> est = estimate_quality(truth[s.positions], proba[s.positions], s.weights)
>>> lo, hi = est.f1_interval
>>> bool(lo < est.f1 < hi)
True
"""

from ._compare import choose_threshold, compare_f1
from ._estimate import QualityEstimate, audit_sample, estimate_quality
from ._stopping import confirm_stop

__all__ = ["audit_sample", "choose_threshold", "compare_f1", "confirm_stop", "estimate_quality",
           "QualityEstimate"]
