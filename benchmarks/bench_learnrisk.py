"""Benchmark LearnRisk: finding a matcher's mispredictions on DBLP-Scholar and Abt-Buy.

Protocol (issue #4): the matcher is trained on the ``train`` split; LearnRisk takes its rules and
expectations from the training pairs, learns its ranking on the ``valid`` split and is evaluated on
``test``. Reported per dataset (mean and std over seeds): ROC AUC of the risk for separating
mispredicted from correct test pairs, and precision among the 10 % riskiest test pairs, for
LearnRisk and for the matcher's uncertainty ``1 - max(p, 1 - p)`` and the expectation baseline
``|yhat - p|`` (for a binary matcher the two baselines are the same number: min(p, 1-p)).

Examples
--------
    python benchmarks/bench_learnrisk.py --quick
    python benchmarks/bench_learnrisk.py --datasets dblp_scholar abt_buy --seeds 0 1 2
    python benchmarks/bench_learnrisk.py --time-only            # fit time on DBLP-Scholar

The matcher is a scikit-learn classifier on :class:`skrisk.data.SimilarityFeatures` (``--matcher
logreg`` or ``rf``); ``--matcher rnn`` is reserved for :class:`skrisk.matchers.RNNMatcher`.
``--train-proba oof`` gives the training pairs out-of-fold probabilities (5-fold
``cross_val_predict``) for the bin statistics; ``insample`` uses the fitted matcher's own
(overconfident) probabilities.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrisk.datasets import load_deepmatcher
import sys
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import match_labels
from skrisk import LearnRisk
from skrisk.risk.research import mispredicted
from skrisk.risk.research import LearnRiskEstimator  # the research core (given probabilities)

try:  # the lead exports it from skrisk.data once the foundation issue lands
    from skrisk.data import SimilarityFeatures
except ImportError:  # pragma: no cover
    from skrisk.data import SimilarityFeatures


def features(name: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    ds = load_deepmatcher(name)
    sim = SimilarityFeatures().fit(ds.split("train").to_frame())
    F = pd.DataFrame(sim.transform(ds.to_frame()).astype(np.float64), columns=sim.get_feature_names_out())
    return F, ds.labels, ds.pairs["split"].to_numpy().astype(str)


def make_matcher(kind: str, seed: int):
    if kind == "logreg":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    if kind == "rf":
        return RandomForestClassifier(n_estimators=200, min_samples_leaf=2, n_jobs=1, random_state=seed)
    raise SystemExit(f"unknown matcher {kind!r}")


def top_precision(z: np.ndarray, score: np.ndarray, frac: float = 0.1) -> float:
    k = max(1, int(round(frac * z.size)))
    order = np.argsort(-score, kind="stable")
    return float(z[order[:k]].mean())


#: The research code's LearnRisk settings (learnrisk.md); skrisk's defaults differ (see RESULTS.md).
RESEARCH = dict(match_gini=0.01, unmatch_gini=1e-4, rsd_scale="mean", optimizer="sgd",
                learning_rate=1e-3, epochs=1000)

RNN_CACHE = Path(__file__).resolve().parent / "results" / "learnrisk" / "rnn_probas"


def rnn_probas(name: str, seed: int, model: str, log) -> dict[str, np.ndarray]:
    """Train an RNNMatcher on the train split (early stopping on valid) and return its match
    probabilities per split, cached in ``results/learnrisk/rnn_probas/`` (training takes minutes).

    ``model="plain"``: tokens only (a deep matcher in DeepMatcher's sense); ``"hybrid"``: tokens
    plus the similarity features. The training pairs get the network's own (in-sample)
    probabilities, as in the research code (an out-of-fold estimate would cost 5 trainings).
    """
    import torch

    from _lab import train_fasttext
    from skrisk.data import PairEncoder
    from skrisk.matchers import RNNMatcher

    RNN_CACHE.mkdir(parents=True, exist_ok=True)
    f = RNN_CACHE / f"{name}_{model}_seed{seed}.npz"
    if f.exists():
        z = np.load(f)
        return {k: z[k] for k in ("train", "valid", "test")}
    torch.set_num_threads(1)  # a shared 2-core machine: more threads than free cores stall
    ds = load_deepmatcher(name)
    t = time.perf_counter()
    wv = train_fasttext(ds, dim=100, epochs=5, random_state=0)
    feats = SimilarityFeatures() if model == "hybrid" else None
    enc = PairEncoder(max_length=32 if name == "abt_buy" else 20, vocabulary=wv, features=feats)
    enc.fit(ds.split("train").to_frame())
    X = {s: enc.transform(ds.split(s).to_frame()) for s in ("train", "valid", "test")}
    Y = {s: ds.split(s).y for s in ("train", "valid", "test")}
    m = RNNMatcher(embeddings=wv, max_epochs=10, patience=3, random_state=seed, device=None)
    m.fit(X["train"], Y["train"], X_valid=X["valid"], y_valid=Y["valid"])
    out = {s: m.predict_proba(X[s])[:, 1].astype(np.float64) for s in X}
    secs = time.perf_counter() - t
    np.savez(f, **out, seconds=np.asarray(secs), best_epoch=np.asarray(m.best_epoch_))
    log(f"# trained RNNMatcher({model}) on {name}, seed {seed}: {secs:.0f} s, best epoch "
        f"{m.best_epoch_}, test F1 {_f1(Y['test'], match_labels(out['test']) == 1):.4f}")
    return out


def run_one(name, F, y, split, seed, args, log):
    tr, va, te = (split == s for s in ("train", "valid", "test"))
    if args.matcher == "rnn":
        proba = rnn_probas(name, seed, args.rnn_model, log)
    else:
        matcher = make_matcher(args.matcher, seed)
        matcher.fit(F[tr], y[tr])
        proba = {k: matcher.predict_proba(F[m])[:, 1] for k, m in (("train", tr), ("valid", va), ("test", te))}
    if args.train_proba == "oof" and args.matcher != "rnn":
        cv = StratifiedKFold(5, shuffle=True, random_state=seed)
        proba["train"] = cross_val_predict(
            make_matcher(args.matcher, seed), F[tr], y[tr], cv=cv, method="predict_proba"
        )[:, 1]

    def X(part, mask):
        out = F[mask].reset_index(drop=True).copy()
        out["proba"] = proba[part]
        return out

    Xtr, Xva, Xte = X("train", tr), X("valid", va), X("test", te)
    ytr, yva, yte = y[tr], y[va], y[te]
    z = mispredicted(proba["test"], yte)
    unc = 1.0 - np.maximum(proba["test"], 1.0 - proba["test"])
    expb = np.abs((proba["test"] >= 0.5) - proba["test"])
    row = {
        "dataset": name, "seed": seed,
        "matcher": f"rnn-{args.rnn_model}" if args.matcher == "rnn" else args.matcher,
        "train_proba": "insample" if args.matcher == "rnn" else args.train_proba,
        "valid_errors": int(mispredicted(proba["valid"], yva).sum()), "test_errors": int(z.sum()),
        "test_pairs": int(z.size), "matcher_test_f1": _f1(yte, proba["test"] >= 0.5),
        "auc_uncertainty": roc_auc_score(z, unc), "auc_expectation": roc_auc_score(z, expb),
        "p10_uncertainty": top_precision(z, unc), "p10_expectation": top_precision(z, expb),
    }
    # "research": the research code's settings; "learnrisk": skrisk's defaults (see the
    # estimator's Notes); both fitted the same way, rules/expectations on train, ranking on valid
    configs = {"research": dict(RESEARCH, epochs=args.epochs), "learnrisk": {}}
    if args.optimizer_variant:
        configs["learnrisk_es"] = {"early_stopping": True}
    for label, params in configs.items():
        t = time.perf_counter()
        est = LearnRiskEstimator(proba_column="proba", random_state=seed, **params).fit(
            Xva, yva, X_train=Xtr, y_train=ytr)
        row[f"fit_s_{label}"] = time.perf_counter() - t
        risk = est.predict_risk(Xte)
        row[f"auc_{label}"] = roc_auc_score(z, risk)
        row[f"p10_{label}"] = top_precision(z, risk)
        row[f"rules_{label}"] = len(est.rules_)
        row[f"valid_auc_{label}"] = est.score(Xva, yva)
    if args.tune:
        # hyperparameters chosen on the validation pairs only: 3 folds stratified on the risk label
        zva = mispredicted(proba["valid"], yva)
        grid = {"match_gini": [0.01, 0.2], "unmatch_gini": [1e-4, 0.05], "rsd_scale": ["mean", "symmetric"]}
        base = LearnRiskEstimator(proba_column="proba", train_pairs=(Xtr, ytr), epochs=args.tune_epochs,
                                  random_state=seed)
        cv = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(Xva, zva))
        t = time.perf_counter()
        gs = GridSearchCV(base, grid, cv=cv, n_jobs=1, refit=False).fit(Xva, yva)
        best = base.set_params(epochs=300, **gs.best_params_).fit(Xva, yva)
        row["fit_s_tuned"] = time.perf_counter() - t
        risk = best.predict_risk(Xte)
        row["auc_tuned"] = roc_auc_score(z, risk)
        row["p10_tuned"] = top_precision(z, risk)
        row["rules_tuned"] = len(best.rules_)
        row["tuned_params"] = json.dumps(gs.best_params_)
    log(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}))
    return row


def _f1(y, yhat):
    tp = int(((y == 1) & yhat).sum())
    return 2 * tp / max(1, int((y == 1).sum()) + int(yhat.sum()))


def time_fit(args, log):
    F, y, split = features("dblp_scholar")
    tr, va = split == "train", split == "valid"
    matcher = make_matcher("logreg", 0).fit(F[tr], y[tr])
    Xtr = F[tr].assign(proba=matcher.predict_proba(F[tr])[:, 1])
    Xva = F[va].assign(proba=matcher.predict_proba(F[va])[:, 1])
    E = args.time_epochs
    for label, params in (("research settings", dict(RESEARCH, epochs=E)),
                          ("skrisk defaults", dict(epochs=E)),
                          (f"skrisk defaults ({LearnRisk().epochs} epochs)", {})):
        t, c = time.perf_counter(), time.process_time()
        est = LearnRiskEstimator(proba_column="proba", random_state=0, **params).fit(
            Xva, y[va], X_train=Xtr, y_train=y[tr])
        dt, dc = time.perf_counter() - t, time.process_time() - c
        log(f"fit time DBLP-Scholar, {label}: {int(va.sum())} validation pairs, {int(tr.sum())} "
            f"training pairs, {len(est.rules_)} rules, {est.epochs} epochs: {dt:.1f} s wall, "
            f"{dc:.1f} s CPU (one thread) "
            f"(load average before/after: {args._load0} / {os.getloadavg()[0]:.2f})")


def summarise(paths: list[str]) -> str:
    """Markdown table (mean +- std over seeds) from the CSVs this script writes."""
    df = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    methods = [("uncertainty 1 - max(p, 1 - p)", "uncertainty"), ("expectation abs(yhat - p)", "expectation"),
               ("LearnRisk, research settings", "research"), ("LearnRisk, skrisk defaults", "learnrisk")]
    lines = ["| dataset | matcher (test F1) | seeds | test errors | method | ROC AUC | precision top 10 % | fit s |",
             "|---|---|---|---|---|---|---|---|"]
    for (ds, m), g in df.groupby(["dataset", "matcher"], sort=False):
        for label, key in methods:
            if f"auc_{key}" not in g:
                continue
            fit = g.get(f"fit_s_{key}")
            lines.append(
                f"| {ds} | {m} ({g['matcher_test_f1'].mean():.3f}) | {len(g)} | {g['test_errors'].mean():.0f} "
                f"| {label} | {g[f'auc_{key}'].mean():.4f} +- {g[f'auc_{key}'].std(ddof=0):.4f} "
                f"| {g[f'p10_{key}'].mean():.3f} | {'' if fit is None else f'{fit.mean():.1f}'} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dblp_scholar", "abt_buy"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--matcher", choices=["logreg", "rf", "rnn"], default="logreg")
    ap.add_argument("--rnn-model", choices=["plain", "hybrid"], default="plain",
                    help="with --matcher rnn: tokens only, or tokens plus similarity features")
    ap.add_argument("--train-proba", choices=["insample", "oof"], default="oof")
    ap.add_argument("--epochs", type=int, default=1000, help="epochs of the research configuration")
    ap.add_argument("--optimizer-variant", action="store_true",
                    help="also fit skrisk's defaults with early stopping")
    ap.add_argument("--tune", action="store_true", help="also GridSearchCV the Gini thresholds on valid")
    ap.add_argument("--tune-epochs", type=int, default=100)
    ap.add_argument("--time-epochs", type=int, default=1000, help="epochs for --time-only")
    ap.add_argument("--quick", action="store_true", help="one seed, 100 epochs, DBLP-Scholar only")
    ap.add_argument("--time-only", action="store_true", help="only time the fit on DBLP-Scholar")
    ap.add_argument("--summarise", nargs="+", default=None, metavar="CSV",
                    help="print a Markdown table from result CSVs and exit")
    ap.add_argument("--out", default=None, help="write the per-run rows to this CSV")
    args = ap.parse_args(argv)
    if args.summarise:
        print(summarise(args.summarise))
        return
    args._load0 = f"{os.getloadavg()[0]:.2f}"
    if args.quick:
        args.seeds, args.epochs, args.datasets, args.tune_epochs = [0], 100, ["dblp_scholar"], 50
        args.time_epochs = 100

    def log(msg):
        print(msg, flush=True)

    log(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.node()} cpus={os.cpu_count()} "
        f"load={args._load0} args={vars(args)}")
    if args.time_only:
        time_fit(args, log)
        return
    rows = []
    for name in args.datasets:
        F, y, split = features(name)
        for seed in args.seeds:
            rows.append(run_one(name, F, y, split, seed, args, log))
    df = pd.DataFrame(rows)
    num = df.select_dtypes("number").drop(columns=["seed"]).columns
    summary = df.groupby("dataset")[list(num)].agg(["mean", "std"])
    pd.set_option("display.width", 250)
    log(summary.T.to_string(float_format=lambda v: f"{v:.4f}"))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(args.out, index=False)
    log(f"# load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
