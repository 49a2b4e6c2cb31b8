"""Why LMMatcher did not learn Abt-Buy on the CPU: per-epoch learning curves of short fits.

Fits ``LMMatcher`` on ``--n`` random Abt-Buy training labels (seed 0, the same draw as
``bench_matcher.py labels --seeds 0``) and scores, after every epoch, a stratified subsample of
``--nval`` pairs (10.75 % matches, seed 1) of the ``--valid-from`` split: validation F1 at p > 0.5,
validation loss and ROC AUC (``history_``'s ``valid_f1``, ``valid_loss``, ``valid_auc``). The AUC
shows whether the network ranks matches above non-matches while F1 at 0.5 is still 0.

A diagnosis, not a quality benchmark: with ``--valid-from test`` the kept epoch is chosen on test
pairs, so only the per-epoch curves are read, never the kept model's score. One JSON line per run::

    SKRISK_DATA=... python benchmarks/tools/lm_diagnose.py --lr 5e-5 --pooling cls --class-weight none

Records: ``benchmarks/results/matcher/lm_diagnosis.jsonl``, read in ``benchmarks/results/lm.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from skrisk.datasets import load_deepmatcher
from skrisk.matchers import LMMatcher

OUT = Path(__file__).resolve().parents[1] / "results" / "matcher" / "lm_diagnosis.jsonl"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1000, help="random training labels")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--class-weight", default="none", help="none, balanced or a number")
    p.add_argument("--pooling", choices=["cls", "mean"], default="cls")
    p.add_argument("--freeze-layers", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--nval", type=int, default=300, help="pairs scored after every epoch")
    p.add_argument("--valid-from", choices=["valid", "test"], default="valid")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(OUT))
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    ds = load_deepmatcher("abt_buy")
    tr, va = ds.split("train"), ds.split(a.valid_from)
    idx = np.random.RandomState(0).choice(len(tr.y), a.n, replace=False)
    rs, yva = np.random.RandomState(1), va.y
    k = int(round(a.nval * 0.1075))
    vi = np.sort(np.r_[rs.choice(np.flatnonzero(yva == 1), k, replace=False),
                       rs.choice(np.flatnonzero(yva == 0), a.nval - k, replace=False)])
    cw = {"none": None, "balanced": "balanced"}.get(a.class_weight)
    cw = float(a.class_weight) if cw is None and a.class_weight != "none" else cw
    m = LMMatcher(max_length=a.max_length, lr=a.lr, max_epochs=a.epochs, batch_size=a.batch_size,
                  freeze_layers=a.freeze_layers, class_weight=cw, pooling=a.pooling, device="cpu", random_state=0)
    t0 = time.perf_counter()
    m.fit(tr.to_frame().iloc[idx], tr.y[idx], va.to_frame().iloc[vi], yva[vi])
    row = {"date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
           "command": "python benchmarks/tools/lm_diagnose.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "load_avg_1m_at_end": round(os.getloadavg()[0], 2), "torch_threads": a.threads,
           "args": vars(a) | {"out": None}, "matches_in_labels": int(tr.y[idx].sum()),
           "fit_s": round(time.perf_counter() - t0, 1), "best_epoch": m.best_epoch_,
           "history": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in h.items()} for h in m.history_]}
    print(json.dumps(row), flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "a") as fh:
        fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
