"""Benchmark of the data layer: loaders, similarity features, the fast baseline matcher, FEBRL blocking.

Run from the repository root::

    SKRISK_DATA=../shared/data python benchmarks/bench_data.py            # full (~2 min, 2 cores)
    SKRISK_DATA=../shared/data python benchmarks/bench_data.py --quick    # smoke run (~20 s)

Writes ``benchmarks/results/data/bench_data.csv`` and ``benchmarks/results/data/RESULTS_section.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import time
from pathlib import Path

import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, precision_score, recall_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrisk.datasets import load_febrl
from skrisk.datasets import load_deepmatcher
from skrisk.data import SimilarityFeatures

# ../shared/data/README.md: (train, valid, test) pairs and positive rate
README = {
    "dblp_scholar": ((17223, 5742, 5742), 0.186),
    "abt_buy": ((5743, 1916, 1916), 0.107),
    "beer": ((268, 91, 91), 0.151),
    "fodors_zagats": ((567, 190, 189), 0.116),
}
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
OUT = Path(__file__).resolve().parent / "results" / "data"


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def bench_loaders(rows):
    out = {}
    for name, (sizes, rate) in README.items():
        ds, sec = _timed(lambda: load_deepmatcher(name))
        got = tuple(ds.split_sizes.values())
        rows.append(
            {"part": "load", "dataset": name, "metric": "pairs train/valid/test", "value": "/".join(map(str, got)),
             "expected": "/".join(map(str, sizes)), "ok": got == sizes, "seconds": round(sec, 3)}
        )
        rows.append(
            {"part": "load", "dataset": name, "metric": "positive rate", "value": round(ds.positive_rate, 4),
             "expected": rate, "ok": abs(ds.positive_rate - rate) < 0.0006, "seconds": ""}
        )
        out[name] = ds
    return out


def bench_features(ds, rows, n_jobs):
    frame = ds.to_frame()
    sf = SimilarityFeatures(n_jobs=n_jobs)
    X, sec = _timed(lambda: sf.fit_transform(frame))
    rows.append(
        {"part": "similarity", "dataset": ds.name, "metric": f"fit_transform seconds, {len(ds)} pairs, "
         f"{X.shape[1]} features, n_jobs={n_jobs}", "value": round(sec, 2), "expected": "<= 60",
         "ok": sec <= 60, "seconds": round(sec, 2)}
    )
    return sec


def bench_matchers(ds, rows, with_rf=True):
    tr, va, te = (ds.split(s) for s in ("train", "valid", "test"))
    (sf, Xtr), sec = _timed(lambda: (lambda s: (s, s.fit_transform(tr.to_frame())))(SimilarityFeatures()))
    Xva, Xte = sf.transform(va.to_frame()), sf.transform(te.to_frame())
    ytr, yva, yte = tr.y, va.y, te.y
    t0 = time.perf_counter()
    best = None
    for cw in (None, "balanced"):
        for C in C_GRID:
            lr = make_pipeline(StandardScaler(), LogisticRegression(C=C, class_weight=cw, max_iter=5000))
            f1 = f1_score(yva, lr.fit(Xtr, ytr).predict(Xva))
            if best is None or f1 > best[0]:
                best = (f1, C, cw, lr)
    f1v, C, cw, lr = best
    pred = lr.predict(Xte)
    rows.append(
        {"part": "baseline", "dataset": ds.name, "metric": f"LogisticRegression test F1 (C={C}, class_weight={cw}, "
         f"valid F1 {f1v:.4f}; P {precision_score(yte, pred):.4f} R {recall_score(yte, pred):.4f})",
         "value": round(f1_score(yte, pred), 4), "expected": ">= 0.88" if ds.name == "dblp_scholar" else "record",
         "ok": f1_score(yte, pred) >= 0.88 if ds.name == "dblp_scholar" else "",
         "seconds": round(sec + time.perf_counter() - t0, 2)}
    )
    if with_rf:
        rf = RandomForestClassifier(n_estimators=300, random_state=0, n_jobs=1)
        _, sec = _timed(lambda: rf.fit(Xtr, ytr))
        pred = rf.predict(Xte)
        rows.append(
            {"part": "baseline", "dataset": ds.name, "metric": "RandomForest(300 trees) test F1 (reference)",
             "value": round(f1_score(yte, pred), 4), "expected": "record", "ok": "", "seconds": round(sec, 2)}
        )


def bench_febrl(rows):
    (ds, res), sec = _timed(lambda: load_febrl(return_blocking=True))
    rows.append(
        {"part": "febrl", "dataset": "febrl4", "metric": f"blocking pair completeness ({len(res)} candidates, "
         f"{res.n_true_links} true links)", "value": round(res.pair_completeness, 4), "expected": ">= 0.95",
         "ok": res.pair_completeness >= 0.95, "seconds": round(res.seconds, 3)}
    )
    rows.append(
        {"part": "febrl", "dataset": "febrl4", "metric": "blocking reduction ratio",
         "value": round(res.reduction_ratio, 5), "expected": ">= 0.99", "ok": res.reduction_ratio >= 0.99,
         "seconds": ""}
    )
    rows.append(
        {"part": "febrl", "dataset": "febrl4", "metric": f"load_febrl() total seconds ({len(ds)} pairs, "
         f"positive rate {ds.positive_rate:.3f})", "value": round(sec, 2), "expected": "a few seconds",
         "ok": sec < 5, "seconds": round(sec, 2)}
    )
    return ds


def write_section(rows, args, wall, load_before):
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / "bench_data.csv", index=False)
    cmd = "SKRISK_DATA=../shared/data python benchmarks/bench_data.py" + (" --quick" if args.quick else "")
    lines = [
        "## Data layer (issue #2): loaders, similarity features, baseline matcher, FEBRL blocking",
        "",
        f"- Command: `{cmd}` (from the repository root, venv active)",
        f"- Machine: {os.cpu_count()}-core CPU, no GPU, {platform.python_version()}; shared with other "
        f"engineers (1-min load average at start: {load_before:.2f})",
        f"- Date: {dt.date.today().isoformat()}; total wall time {wall:.1f} s",
        "",
        "| part | dataset | metric | value | target | ok | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['part']} | {r['dataset']} | {r['metric']} | {r['value']} | {r['expected']} | "
            f"{'' if r['ok'] == '' else ('yes' if r['ok'] else 'NO')} | {r['seconds']} |"
        )
    lines += [
        "",
        "Notes: features are fitted on the train split only (TF-IDF vocabulary/idf); C and class_weight "
        f"are chosen on the valid split from C in {list(C_GRID)} x {{None, balanced}}; the test split is "
        "used once. Similarity timing is `SimilarityFeatures().fit_transform` over all pairs "
        "(33 features: 8 metrics x 4 attributes + year_num_delta).",
        "",
    ]
    (OUT / "RESULTS_section.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: small datasets only, no random forest")
    ap.add_argument("--n-jobs", type=int, default=1, help="rapidfuzz threads for the similarity timing")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    rows: list[dict] = []
    data = bench_loaders(rows)
    if not args.quick:
        bench_features(data["dblp_scholar"], rows, args.n_jobs)
    for name in (("beer", "fodors_zagats") if args.quick else ("dblp_scholar", "abt_buy")):
        bench_matchers(data[name], rows, with_rf=not args.quick)
    bench_febrl(rows)
    write_section(rows, args, time.perf_counter() - t0, load_before)


if __name__ == "__main__":
    main()
