"""Test F1 of RNNMatcher before and after a change of its code (issue #16 item 5).

RNNMatcher with lr 3e-3, 10 epochs, patience 3, on the CPU with one torch thread, early-stopped on
the valid split; FastText vectors trained on the dataset (5 epochs, seed 0); Beer with its whole
training split, DBLP-Scholar with 1,000 fixed random training labels (subset seed 0). One JSON
line per matcher seed, then one summary line per (dataset, model).

Run it once with the old code and once with the new one on the same machine (``PYTHONPATH``
selects the code, e.g. a ``git archive`` export of the old commit)::

    SKRISK_DATA=... python benchmarks/tools/rnn_refactor_check.py before --seeds 0 5 > before.jsonl

The records of issue #16 are in ``benchmarks/results/matcher/refactor16/`` (seeds 0-39 for the
DBLP-Scholar hybrid, 0-4 elsewhere), summarised in ``benchmarks/results/matcher.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch
from sklearn.metrics import f1_score

from skrisk.data import PairEncoder, SimilarityFeatures
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks' own modules (_lab)
from _lab import train_fasttext
from skrisk.datasets import load_deepmatcher
from skrisk.matchers import RNNMatcher


def _y(part):
    y = part.y
    return np.asarray(y() if callable(y) else y)  # a method before issue #16, a property after


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tag", help="a name for the code measured (before / after)")
    p.add_argument("--datasets", nargs="+", default=["beer", "dblp_scholar"])
    p.add_argument("--models", nargs="+", default=["hybrid", "plain"], choices=["hybrid", "plain"])
    p.add_argument("--seeds", nargs=2, type=int, default=[0, 5], metavar=("FIRST", "STOP"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for name in args.datasets:
        n_labels = None if name == "beer" else 1000
        ds = load_deepmatcher(name)
        wv = train_fasttext(ds, dim=50 if name == "beer" else 100, epochs=5, random_state=0)
        for model in args.models:
            enc = PairEncoder(max_length=20, vocabulary=wv,
                              features=SimilarityFeatures() if model == "hybrid" else None)
            enc.fit(ds.split("train").to_frame())
            X = {s: enc.transform(ds.split(s).to_frame()) for s in ("train", "valid", "test")}
            Y = {s: _y(ds.split(s)) for s in X}
            Xtr, ytr = X["train"], Y["train"]
            if n_labels:
                idx = np.random.RandomState(0).choice(len(ytr), size=n_labels, replace=False)
                Xtr, ytr = Xtr[idx], ytr[idx]
            f1s = []
            for seed in range(*args.seeds):
                t = time.perf_counter()
                m = RNNMatcher(embeddings=wv, lr=3e-3, max_epochs=10, patience=3, random_state=seed, device="cpu")
                m.fit(Xtr, ytr, X_valid=X["valid"], y_valid=Y["valid"])
                f1s.append(float(f1_score(Y["test"], m.predict(X["test"]))))
                print(json.dumps({"tag": args.tag, "dataset": name, "model": model, "seed": seed,
                                  "test_f1": round(f1s[-1], 4), "best_epoch": int(m.best_epoch_),
                                  "fit_s": round(time.perf_counter() - t, 1)}), flush=True)
            print(json.dumps({"tag": args.tag, "dataset": name, "model": model, "n_train": len(ytr),
                              "test_f1_mean": round(float(np.mean(f1s)), 4),
                              "test_f1_std": round(float(np.std(f1s)), 4)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
