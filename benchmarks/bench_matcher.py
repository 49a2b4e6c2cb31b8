"""Benchmarks of the matchers (issue #3 "Done when" figures).

Each call runs one task and appends one JSON line per result to
``benchmarks/results/matcher/results.jsonl`` (``--out``); peak memory is the process's maximum
resident set size and ``process_cpu_s`` its user + system CPU time, so run one task per process
(``run_all.sh`` does). ``--cache DIR`` keeps the FastText vectors and the encoded splits between
runs (their reported build times are those of the run that made them).

Tasks
-----
fasttext   word-vector training time (DBLP-Scholar tables)
full       train on the full training split, F1 on the test split (``--dataset``, ``--model``)
labels     ``--n-labels`` random training labels, ``--seeds`` seeds, DBLP-Scholar test F1
score      time to score the 17,223-pair DBLP-Scholar train pool (proba + representation) and
           20 MC-dropout passes vs one pass
feature    FeatureMatcher (RandomForest vs LogisticRegression) on full / 1,000 labels
round      ``--matcher lm`` only: seconds of one labelling round (fit + scoring ``--pool`` pairs) at
           each of ``--round-labels`` random labels (the first from the pretrained weights with
           ``--epochs``, the next warm-started from the previous size with ``--warm-epochs``),
           pairs per second scored, peak memory and test F1

``--matcher lm`` runs ``labels`` and ``round`` with :class:`skrisk.matchers.LMMatcher` (the
offline all-MiniLM-L6-v2 unless ``--lm-model``); ``--max-length`` is its tokens per pair.

Examples
--------
python benchmarks/bench_matcher.py full --dataset dblp_scholar --model hybrid
python benchmarks/bench_matcher.py labels --model plain --seeds 0 1 2
python benchmarks/bench_matcher.py score --quick
python benchmarks/bench_matcher.py labels --model hybrid --class-weight none --lr 1e-3 --cache /tmp/skrisk_cache
python benchmarks/bench_matcher.py round --matcher lm --dataset abt_buy --max-length 64 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "matcher" / "results.jsonl"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _load(name: str):
    from skrisk.datasets import load_deepmatcher

    return load_deepmatcher(name)


def _emit(args: argparse.Namespace, row: dict) -> None:
    row = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "command": "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, no GPU",
        "torch_threads": args.threads,
        "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
        "peak_rss_mb": round(_peak_mb(), 1),
        "process_cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 1),
        **row,
    }
    print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps(row) + "\n")


def _cache_file(args, *parts) -> Path | None:
    if not args.cache:
        return None
    folder = Path(args.cache)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / ("_".join(str(p) for p in parts) + ".npz")


def _vectors(ds, args):
    """FastText vectors (seed 0), from the cache when ``--cache`` holds them (the reported
    fasttext_s is then the time of the run that trained them)."""
    from _lab import WordVectors, train_fasttext
    from _lab import Vocabulary

    f = _cache_file(args, "fasttext", ds.name, args.dim, args.ft_epochs)
    if f is not None and f.exists():
        z = np.load(f, allow_pickle=False)
        wv = WordVectors(Vocabulary(z["tokens"].tolist()), z["vectors"], source=str(z["source"]))
        return wv, float(z["seconds"])
    t = time.perf_counter()
    wv = train_fasttext(ds, dim=args.dim, epochs=args.ft_epochs, random_state=0)
    secs = time.perf_counter() - t
    if f is not None:
        np.savez(f, tokens=np.asarray(wv.vocabulary.to_list()), vectors=wv.vectors,
                 source=np.asarray(wv.source), seconds=np.asarray(secs))
    return wv, secs


def _matcher_params(args, seed: int) -> dict:
    return dict(
        hidden_size=args.hidden,
        classifier_size=args.classifier_size,
        max_epochs=args.epochs,
        patience=args.patience,
        batch_size=args.batch_size,
        lr=args.lr,
        class_weight=None if args.class_weight == "none" else args.class_weight,
        scale_features=not args.no_scale_features,
        dropout=args.dropout,
        iterator_valid__batch_size=args.valid_batch_size,
        random_state=seed,
        device=None,
        verbose=int(args.verbose),
    )


def _encode(ds, wv, args, model: str):
    from skrisk.data import SimilarityFeatures
    from skrisk.data import PairEncoder

    from skorch.helper import SliceDict

    f = _cache_file(args, "encoded", ds.name, args.dim, args.ft_epochs, args.max_length, model)
    if f is not None and f.exists():
        z = np.load(f, allow_pickle=False)
        parts = {}
        for s in ("train", "valid", "test"):
            pool = {"tokens": z[f"{s}_tokens"]}
            if model == "hybrid":
                pool["features"] = z[f"{s}_features"]
            parts[s] = (SliceDict(**pool), z[f"{s}_y"])
        return parts, float(z["seconds"])
    feats = SimilarityFeatures() if model == "hybrid" else None
    enc = PairEncoder(max_length=args.max_length, vocabulary=wv, features=feats)
    t = time.perf_counter()
    # the encoder's fit is label-free (vocabulary fixed; TF-IDF of the similarity features):
    # fit it on the training pairs (the active-learning pool)
    enc.fit(ds.split("train").to_frame())
    parts = {s: (enc.transform(ds.split(s).to_frame()), ds.split(s).y) for s in ("train", "valid", "test")}
    secs = time.perf_counter() - t
    if f is not None:
        arrays = {"seconds": np.asarray(secs)}
        for s, (X, y) in parts.items():
            arrays[f"{s}_tokens"] = X["tokens"]
            if model == "hybrid":
                arrays[f"{s}_features"] = X["features"]
            arrays[f"{s}_y"] = y
        np.savez(f, **arrays)
    return parts, secs


def task_fasttext(args):
    ds = _load("dblp_scholar")
    from _lab import train_fasttext

    for dim, ep in ((100, 5), (100, 10), (300, 10)) if not args.quick else ((100, 5),):
        t = time.perf_counter()
        wv = train_fasttext(ds, dim=dim, epochs=ep, random_state=0)
        _emit(args, {"task": "fasttext", "dataset": "dblp_scholar", "dim": dim, "epochs": ep,
                     "vocab": len(wv), "wall_s": round(time.perf_counter() - t, 1)})


def task_full(args):
    from sklearn.metrics import f1_score
    from skrisk.matchers import RNNMatcher

    ds = _load(args.dataset)
    wv, ft_s = _vectors(ds, args)
    parts, enc_s = _encode(ds, wv, args, args.model)
    (Xtr, ytr), (Xva, yva), (Xte, yte) = parts["train"], parts["valid"], parts["test"]
    if args.quick:
        Xtr, ytr = Xtr[:2000], ytr[:2000]
    m = RNNMatcher(embeddings=wv, **_matcher_params(args, args.seeds[0]))
    t = time.perf_counter()
    m.fit(Xtr, ytr, X_valid=Xva, y_valid=yva)
    fit_s = time.perf_counter() - t
    f1 = f1_score(yte, m.predict(Xte))
    _emit(args, {"task": "full", "dataset": args.dataset, "model": args.model, "n_train": len(ytr),
                 "test_f1": round(float(f1), 4), "best_epoch": m.best_epoch_,
                 "epochs_run": len(m.history), "fit_s": round(fit_s, 1),
                 "fasttext_s": round(ft_s, 1), "encode_s": round(enc_s, 1),
                 "params": {k: v for k, v in _matcher_params(args, args.seeds[0]).items()},
                 "dim": args.dim, "max_length": args.max_length})


def task_labels(args):
    from sklearn.metrics import f1_score
    from skrisk.matchers import RNNMatcher

    ds = _load("dblp_scholar")
    wv, _ = _vectors(ds, args)
    parts, _ = _encode(ds, wv, args, args.model)
    (Xtr, ytr), (Xva, yva), (Xte, yte) = parts["train"], parts["valid"], parts["test"]
    f1s = []
    for seed in args.seeds:
        idx = np.random.RandomState(seed).choice(len(ytr), size=args.n_labels, replace=False)
        m = RNNMatcher(embeddings=wv, **_matcher_params(args, seed))
        t = time.perf_counter()
        m.fit(Xtr[idx], ytr[idx], X_valid=Xva, y_valid=yva)
        fit_s = time.perf_counter() - t
        f1 = float(f1_score(yte, m.predict(Xte)))
        f1s.append(f1)
        _emit(args, {"task": "labels", "dataset": "dblp_scholar", "model": args.model,
                     "n_labels": args.n_labels, "seed": seed, "test_f1": round(f1, 4),
                     "best_epoch": m.best_epoch_, "epochs_run": len(m.history), "fit_s": round(fit_s, 1),
                     "params": _matcher_params(args, seed), "dim": args.dim, "max_length": args.max_length})
    _emit(args, {"task": "labels_mean", "dataset": "dblp_scholar", "model": args.model,
                 "n_labels": args.n_labels, "seeds": args.seeds, "test_f1_mean": round(float(np.mean(f1s)), 4),
                 "test_f1_std": round(float(np.std(f1s)), 4)})


def task_score(args):
    from skrisk.matchers import RNNMatcher

    ds = _load("dblp_scholar")
    wv, _ = _vectors(ds, args)
    parts, _ = _encode(ds, wv, args, args.model)
    (Xtr, ytr), (Xva, yva) = parts["train"], parts["valid"]
    idx = np.random.RandomState(0).choice(len(ytr), size=500, replace=False)
    params = _matcher_params(args, 0)
    params["max_epochs"] = 1
    m = RNNMatcher(embeddings=wv, **params).fit(Xtr[idx], ytr[idx])
    pool = Xtr if not args.quick else Xtr[:3000]
    t = time.perf_counter(); P = m.predict_proba(pool); proba_s = time.perf_counter() - t
    t = time.perf_counter(); H = m.represent(pool); rep_s = time.perf_counter() - t
    t = time.perf_counter(); m.predict_proba_and_represent(pool); both_s = time.perf_counter() - t
    t = time.perf_counter(); m.predict_proba_mc(pool, n_iter=1, random_state=0); one_s = time.perf_counter() - t
    t = time.perf_counter(); m.predict_proba_mc(pool, n_iter=20, random_state=0); mc_s = time.perf_counter() - t
    t = time.perf_counter(); m.gradient_embedding(pool); g_s = time.perf_counter() - t
    # the plain batched forward pass (every attribute slot through its GRU), for comparison
    import torch

    t = time.perf_counter()
    m.module_.eval()
    with torch.inference_mode():
        for i in range(0, len(P), args.valid_batch_size):
            sl = slice(i, i + args.valid_batch_size)
            xb = {"tokens": torch.as_tensor(pool["tokens"][sl])}
            if args.model == "hybrid":
                xb["features"] = torch.as_tensor(pool["features"][sl])
            m.module_.hidden(**xb)
    batched_s = time.perf_counter() - t
    _emit(args, {"task": "score", "dataset": "dblp_scholar", "model": args.model, "n_pool": len(P),
                 "proba_s": round(proba_s, 1), "represent_s": round(rep_s, 1),
                 "proba_plus_represent_s": round(proba_s + rep_s, 1),
                 "predict_proba_and_represent_s": round(both_s, 1), "rep_dim": H.shape[1],
                 "mc1_s": round(one_s, 1), "mc20_s": round(mc_s, 1),
                 "mc20_over_mc1": round(mc_s / one_s, 2),
                 "mc20_over_predict_proba": round(mc_s / proba_s, 2),
                 "gradient_embedding_s": round(g_s, 1),
                 "plain_batched_forward_hidden_s": round(batched_s, 1), "params": params,
                 "dim": args.dim, "max_length": args.max_length})


def task_feature(args):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from skrisk.data import SimilarityFeatures
    from skrisk.matchers import FeatureMatcher

    ds = _load(args.dataset)
    t = time.perf_counter()
    F = SimilarityFeatures().fit(ds.to_frame()).transform(ds.to_frame())
    feat_s = time.perf_counter() - t
    tr, te = ds.split_positions("train"), ds.split_positions("test")
    y = ds.labels
    for name, clf in (("random_forest", None), ("logistic_regression", LogisticRegression(max_iter=2000))):
        for n in (None, 1000):
            f1s, fit_times = [], []
            for seed in (args.seeds if n else args.seeds[:1]):
                rows = tr if n is None else np.random.RandomState(seed).choice(tr, size=min(n, len(tr)), replace=False)
                t = time.perf_counter()
                m = FeatureMatcher(clf, random_state=seed).fit(F[rows], y[rows])
                fit_times.append(time.perf_counter() - t)
                f1s.append(float(f1_score(y[te], m.predict(F[te]))))
            _emit(args, {"task": "feature", "dataset": args.dataset, "classifier": name,
                         "n_labels": "all" if n is None else n, "seeds": args.seeds if n else args.seeds[:1],
                         "test_f1_mean": round(float(np.mean(f1s)), 4),
                         "test_f1_all": [round(f, 4) for f in f1s],
                         "fit_s_mean": round(float(np.mean(fit_times)), 2),
                         "features_s": round(feat_s, 1), "n_features": F.shape[1]})


def _lm(args, seed: int, **extra):
    from skrisk.matchers import LMMatcher

    params = dict(max_length=args.max_length, lr=args.lr, max_epochs=args.epochs, warm_epochs=args.warm_epochs,
                  batch_size=args.batch_size, freeze_layers=args.freeze_layers, device="cpu",
                  class_weight=None if args.class_weight == "none" else "balanced", pooling=args.pooling,
                  random_state=seed, **extra)
    if args.lm_model:
        params["model"] = args.lm_model
    return LMMatcher(**params), params


def _f1(y, pred) -> float:
    tp = int(((pred == 1) & (y == 1)).sum())
    return 2 * tp / max(int((pred == 1).sum()) + int((y == 1).sum()), 1)


def task_lm_labels(args):
    """F1 on the test split after fitting on ``--n-labels`` random training labels (no validation)."""
    ds = _load(args.dataset)
    train, test = ds.split("train"), ds.split("test")
    Xtr, ytr, Xte, yte = train.to_frame(), train.y, test.to_frame(), test.y
    for seed in args.seeds:
        rng = np.random.RandomState(seed)
        idx = rng.choice(len(ytr), min(args.n_labels, len(ytr)), replace=False)
        m, params = _lm(args, seed)
        t0 = time.perf_counter()
        m.fit(Xtr.iloc[idx], ytr[idx])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = m.predict(Xte)
        score_s = time.perf_counter() - t0
        _emit(args, {"task": "labels", "matcher": "lm", "dataset": ds.name, "seed": seed, "n_labels": len(idx),
                     "fit_s": round(fit_s, 1), "test_score_s": round(score_s, 1),
                     "pairs_per_s_scored": round(len(yte) / score_s, 1), "test_f1": round(_f1(yte, pred), 4),
                     "params": {k: v for k, v in params.items() if k != "random_state"}})


def task_lm_round(args):
    """Seconds per labelling round at growing label counts: fit (fresh, then warm) + score the pool."""
    ds = _load(args.dataset)
    train, test = ds.split("train"), ds.split("test")
    Xtr, ytr = train.to_frame(), train.y
    Xte, yte = test.to_frame(), test.y
    rng = np.random.RandomState(args.seeds[0])
    order = rng.permutation(len(ytr))
    m, params = _lm(args, args.seeds[0], warm_start=True)
    for n in args.round_labels:
        lab, pool = order[:n], order[n:n + args.pool]
        warm = hasattr(m, "module_")
        t0 = time.perf_counter()
        m.fit(Xtr.iloc[lab], ytr[lab])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        m.predict_proba_and_represent(Xtr.iloc[pool])
        score_s = time.perf_counter() - t0
        f1 = _f1(yte, m.predict(Xte)) if args.test_f1 else None
        _emit(args, {"task": "round", "matcher": "lm", "dataset": ds.name, "n_labels": int(n), "warm": warm,
                     "epochs": len(m.history_), "fit_s": round(fit_s, 1), "pool": int(len(pool)),
                     "pool_score_s": round(score_s, 1), "round_s": round(fit_s + score_s, 1),
                     "pairs_per_s_scored": round(len(pool) / score_s, 1),
                     "train_pairs_per_s": round(n * len(m.history_) / fit_s, 1), "test_f1": f1,
                     "params": {k: v for k, v in params.items() if k != "random_state"}})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", choices=["fasttext", "full", "labels", "score", "feature", "round"])
    p.add_argument("--matcher", choices=["rnn", "lm"], default="rnn",
                   help="rnn: RNNMatcher (every task but round); lm: LMMatcher (labels, round)")
    p.add_argument("--lm-model", default="", help="LMMatcher model folder (default: the offline MiniLM)")
    p.add_argument("--warm-epochs", type=int, default=1, help="LMMatcher epochs of a warm-started round")
    p.add_argument("--pooling", choices=["cls", "mean"], default="cls",
                   help="LMMatcher: the head's input (first token or mean over the tokens)")
    p.add_argument("--freeze-layers", type=int, default=0, help="LMMatcher: transformer layers kept fixed")
    p.add_argument("--round-labels", type=int, nargs="+", default=[300, 1000, 2000])
    p.add_argument("--pool", type=int, default=2000, help="round: unlabelled pairs scored per round")
    p.add_argument("--test-f1", action="store_true", help="round: also score the test split each round")
    p.add_argument("--dataset", default="dblp_scholar")
    p.add_argument("--model", choices=["plain", "hybrid"], default="hybrid")
    p.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--n-labels", type=int, default=1000)
    p.add_argument("--dim", type=int, default=100, help="FastText dimension")
    p.add_argument("--ft-epochs", type=int, default=5)
    p.add_argument("--max-length", type=int, default=20)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--classifier-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--patience", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--class-weight", choices=["balanced", "none"], default="balanced")
    p.add_argument("--no-scale-features", action="store_true", help="feed the raw similarity features")
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--valid-batch-size", type=int, default=512,
                   help="iterator_valid__batch_size (pairs per inference batch)")
    p.add_argument("--cache", default="",
                   help="folder caching the FastText vectors and encoded splits between runs")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (1 on a loaded shared machine: oversubscription is slow)")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    if args.quick:
        args.epochs = min(args.epochs, 2)
        args.seeds = args.seeds[:1]
        args.dim = min(args.dim, 50)
        args.ft_epochs = min(args.ft_epochs, 2)
        args.out = str(Path(args.out).with_name("results_quick.jsonl"))
    if args.matcher == "lm" or args.task == "round":
        if args.matcher != "lm" or args.task not in ("labels", "round"):
            p.error("--matcher lm runs the tasks labels and round; round needs --matcher lm")
        {"labels": task_lm_labels, "round": task_lm_round}[args.task](args)
        return
    {"fasttext": task_fasttext, "full": task_full, "labels": task_labels, "score": task_score,
     "feature": task_feature}[args.task](args)


if __name__ == "__main__":
    main()
