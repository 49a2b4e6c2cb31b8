"""
Reading the estimates and choosing a threshold
==============================================

A matcher trained on a few labels is about to be used on every candidate pair: how good is it?
An *audit* answers a small random sample of pairs, drawn more often where a wrong prediction
is likely, and each answer keeps the probability it was drawn with, so the answers estimate
precision, recall and F1 on *all* candidates, with intervals. Here the truth is known, so the
estimates can be checked against it.
"""

# %%
# A matcher trained on 40 labelled pairs of FEBRL4, and its probability for every pair of the pool.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import f1_score, precision_score, recall_score

from skrisk import LearnRisk
from skrisk.data import SimilarityFeatures
from skrisk.datasets import load_febrl
from skrisk.matchers import FeatureMatcher
from skrisk.quality import audit_sample, choose_threshold, estimate_quality

ds = load_febrl(negative_ratio=3)
X = SimilarityFeatures(attributes=["given_name", "surname", "suburb"]).fit_transform(ds)
y = ds.y
rng = np.random.RandomState(0)
labelled = rng.choice(len(y), 40, replace=False)
pool = np.setdiff1d(np.arange(len(y)), labelled)
matcher = FeatureMatcher(random_state=0).fit(X[labelled], y[labelled])
proba = matcher.predict_proba(X[pool])[:, 1]
risk = LearnRisk(FeatureMatcher(random_state=0), cv=3, random_state=0).fit(X[labelled], y[labelled])
pool_risk = risk.predict_risk(X[pool])
truth = y[pool]  # unknown in practice: only the audited pairs' answers are
predicted = proba > 0.5
print(f"pool of {len(pool)} pairs; truth: precision {precision_score(truth, predicted):.3f}, "
      f"recall {recall_score(truth, predicted):.3f}, F1 {f1_score(truth, predicted):.3f}")

# %%
# Draw audits of growing size (aimed by LearnRisk's risk), answer them from the truth, and
# estimate. ``proba_all`` makes the estimate *model-assisted*: the matcher's probabilities of
# every candidate carry the totals, and the audit corrects their bias.
sizes = [20, 50, 100, 200]
estimates = []
for n in sizes:
    audit = audit_sample(proba, risk=pool_risk, n=n, random_state=1)
    answers = truth[audit.positions]
    estimate = estimate_quality(answers, proba[audit.positions], audit.weights, proba_all=proba)
    estimates.append(estimate)
    print(f"{n:3d} audit answers: {estimate.text()}")

# %%
# The intervals narrow as the audit grows. They are a guide, not a guarantee: a 90 % interval
# misses the truth (dashed) one audit in ten, and audits drawn from one matcher share its bias, so
# misses come together. How often they cover the truth over many audits and sessions is on the
# benchmarks page.
fig, ax = plt.subplots(figsize=(6, 3.5))
f1 = np.array([e.f1 for e in estimates])
low, high = np.array([e.f1_interval for e in estimates]).T
ax.errorbar(sizes, f1, yerr=[f1 - low, high - f1], fmt="o", capsize=4, label="estimated F1, 90 % interval")
ax.axhline(f1_score(truth, predicted), ls="--", color="grey", label="true F1")
ax.set_xscale("log")
ax.set_xticks(sizes, [str(s) for s in sizes])
ax.set_xlabel("audit answers")
ax.set_ylabel("F1 of p > 0.5")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# Choosing the threshold. For F1 the default rule keeps 0.5 unless the audit shows, beyond its
# own uncertainty, that another threshold is better; a precision or recall target picks the
# threshold that meets it on the estimate.
audit = audit_sample(proba, risk=pool_risk, n=200, random_state=1)
answers, audited = truth[audit.positions], proba[audit.positions]
for target in ("f1", {"precision": 0.95}, {"recall": 0.99}):
    choice = choose_threshold(answers, audited, audit.weights, target=target, proba_all=proba)
    true_f1 = f1_score(truth, proba > choice.threshold)
    print(f"target {target}: threshold {choice.threshold:.3f}, met: {choice.met}; "
          f"{choice.estimate.text()}; true F1 there {true_f1:.3f}")
