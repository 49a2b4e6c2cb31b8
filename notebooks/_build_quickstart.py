"""Writes notebooks/quickstart.ipynb (run: python notebooks/_build_quickstart.py)."""

from pathlib import Path

import nbformat as nbf

cells = []
md = lambda s: cells.append(nbf.v4.new_markdown_cell(s.strip()))  # noqa: E731
code = lambda s: cells.append(nbf.v4.new_code_cell(s.strip()))  # noqa: E731

md("""
# skrisk quickstart: risk sampling with modAL

This notebook runs active learning for entity resolution with **risk sampling** on DBLP-Scholar
(one of the DeepMatcher datasets in `../shared/data`, or wherever `SKRISK_DATA` points):

1. a modAL `ActiveLearner` querying with `risk_sampling`;
2. a learning curve of risk sampling against random sampling;
3. `GridSearchCV` over LearnRisk hyperparameters;
4. the risk explanation of one pair, as a person labelling it would see it.

It uses the fast feature-based matcher (a random forest on similarity features), so it runs in a
few minutes on a laptop CPU. CI runs it with `SKRISK_NOTEBOOK_QUICK=1` (Beer, tiny settings).
""")
code("""
import os
import warnings

import numpy as np
import matplotlib.pyplot as plt

from skrisk.datasets import load_deepmatcher
from skrisk.data import SimilarityFeatures
from skrisk.matchers import FeatureMatcher
from skrisk.strategies import RiskSampler, random_sampling
from skrisk.experiments import ALTask, run_active_learning, initial_labelled_set

QUICK = os.environ.get("SKRISK_NOTEBOOK_QUICK") == "1"
DATASET = "beer" if QUICK else "dblp_scholar"
SEED_SIZE, BATCH, ROUNDS, RISK_EPOCHS = (40, 20, 3, 50) if QUICK else (100, 100, 6, 300)
warnings.filterwarnings("ignore", category=UserWarning)
""")
md("## Data: two tables, labelled candidate pairs, similarity features")
code("""
ds = load_deepmatcher(DATASET)
print(ds)
frame = ds.to_frame()                       # left_<attr> / right_<attr> text, one row per pair
F = SimilarityFeatures().fit_transform(frame)
names = SimilarityFeatures().fit(frame).get_feature_names_out()
task = ALTask(F, ds.y(), ds.split_positions("train"), ds.split_positions("valid"),
              ds.split_positions("test"), name=ds.name)
F.shape, list(names[:6])
""")
md("""
## 1. modAL's `ActiveLearner` with `risk_sampling`

modAL's `query` works with skrisk strategies as they are (they return `(positions, scores)`).
modAL's `teach`/`fit` fail on scikit-learn >= 1.8 (`force_all_finite`), so the loop below uses
`skrisk.active.ActiveLearner`, which has modAL's shape and fixes that.
""")
code("""
pool_y = task.y[task.pool]
lab = initial_labelled_set(pool_y, SEED_SIZE, random_state=0)
unl = np.setdiff1d(np.arange(len(task.pool)), lab)
sampler = RiskSampler(task.rows(task.valid), task.y[task.valid],
                      risk_params={"epochs": RISK_EPOCHS}, random_state=0)
try:
    from modAL.models import ActiveLearner as ModalLearner
except ImportError:                          # modAL is optional
    from skrisk.active import ActiveLearner as ModalLearner
learner = ModalLearner(estimator=FeatureMatcher(random_state=0), query_strategy=sampler,
                       X_training=F[task.pool[lab]], y_training=pool_y[lab])
query_idx, query_rows = learner.query(F[task.pool[unl]], n_instances=BATCH)
print(type(learner).__module__, "picked", len(query_idx), "pairs; risk of the first five:",
      np.round(sampler.last_risk_[query_idx[:5]], 3))
""")
md("## 2. Learning curve: risk sampling against random sampling")
code("""
make_matcher = lambda seed: FeatureMatcher(random_state=seed)
curves = {}
for name, strategy in [("risk sampling", sampler), ("random", random_sampling)]:
    recs = run_active_learning(task, strategy, make_matcher, n_seed=SEED_SIZE, batch_size=BATCH,
                               n_rounds=ROUNDS, seed=0, strategy_name=name)
    curves[name] = ([r["n_labelled"] for r in recs], [r["f1"] for r in recs])
    print(f"{name:14s}", " ".join(f"{n}:{f:.3f}" for n, f in zip(*curves[name])))

fig, ax = plt.subplots(figsize=(6, 4))
for name, (n, f1) in curves.items():
    ax.plot(n, f1, marker="o", label=name)
ax.set_xlabel("labelled pairs")
ax.set_ylabel("test F1")
ax.set_title(f"{ds.name}: feature-based matcher")
ax.grid(alpha=0.3)
ax.legend()
plt.show()
""")
md("""
## 3. Grid search over LearnRisk hyperparameters

LearnRisk's `fit(X, y)` takes the **validation** pairs it learns to rank (similarity features plus
the matcher's probability as the last column); the matcher's **training** pairs, which give the
rules and expectations, come through `train_pairs=(X_train, y_train)`, which cross-validation
never splits. `score` is the ROC AUC of the risk for finding mispredictions.
""")
code("""
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from skrisk.risk import LearnRiskEstimator, mispredicted

matcher = FeatureMatcher(random_state=0).fit(F[task.pool[lab]], pool_y[lab])
with_p = lambda pos: np.column_stack([F[pos], matcher.predict_proba(F[pos])[:, 1]])
X_train, y_train = with_p(task.pool[lab]), pool_y[lab]
X_valid, y_valid = with_p(task.valid), task.y[task.valid]
z = mispredicted(X_valid[:, -1], y_valid)
cv = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X_valid, z))
grid = GridSearchCV(
    LearnRiskEstimator(train_pairs=(X_train, y_train), epochs=RISK_EPOCHS, random_state=0),
    {"max_depth": [1, 2], "theta": [0.8, 0.9]}, cv=cv)
grid.fit(X_valid, y_valid)
print("best:", grid.best_params_, "AUC", round(grid.best_score_, 3))
""")
md("## 4. Why is a pair risky? One pair's explanation")
code("""
risk_model = grid.best_estimator_
X_pool = with_p(task.pool[unl])
risk = risk_model.predict_risk(X_pool)
i = int(np.argmax(risk))
pair = ds.subset([task.pool[unl][i]])
print(pair.to_frame().T.to_string(header=False))
print()
print(risk_model.explain(X_pool, i))
""")

nb = nbf.v4.new_notebook()
nb["cells"] = cells
nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
out = Path(__file__).with_name("quickstart.ipynb")
nbf.write(nb, out)
print("wrote", out)
