"""Estimates, threshold and stopping rules of ``skrisk.quality`` in simulated sessions.

One simulated session per dataset and seed: the FeatureMatcher with skrisk's default risk
sampling (``skrisk.experiments``: ``build_task``, ``STRATEGIES["risk"]``,
``run_active_learning``), ``--n-seed`` random labels, then ``--batch`` pairs a round up to
``--max-labels``; the oracle answers from the gold labels. At every round the matcher is scored on
the audited pairs (the candidate set the estimates are about; its truth is known here):

* ``--candidates test`` (default): the pool is the dataset's train split, the audited pairs its
  test split;
* ``--candidates blocked``: the two tables are blocked as ``skrisk label`` blocks them
  (``skrisk.data.block``, tokens over all attributes, top 10), and the blocked candidates are
  both the pool and the audited pairs, as in a labelling session (LearnRisk still ranks on the
  dataset's valid split).

* **Audits** (at the label counts ``--audit-at``): the matcher is fixed, only the audit draw
  varies. For each method (risk: aimed with LearnRisk's risk of the audited pairs; score: with the
  matcher's probability; uniform), each audit size and ``--audit-seeds`` draws: whether the 90 %
  interval covers the matcher's true precision, recall and F1, its mean width, and the threshold
  :func:`~skrisk.quality.choose_threshold` picks (F1 by the one-standard-error rule, the
  default; F1's best estimate, ``se_tolerance=0``; precision >= 0.9) with its estimated and true
  precision/recall.
* **Stopping rules**: ``StabilisingPredictions`` (kappa on 1000 test pairs, window 3,
  agreement 0.99) and ``RiskPlateau`` (summed risk of the unlabelled pool, window 3, tol 0.05):
  the labels when each first fires and the F1 lost against the run's final F1.

Writes one JSON per dataset and seed under ``--out`` and, with ``--report``, the markdown tables.
``--states DIR`` keeps the frozen matchers' probabilities and risks; ``--reaudit`` then recomputes
the audits of the records from them (after a change to the estimates) without rerunning the
active learning.

Examples
--------
    nice -n 10 python benchmarks/bench_quality.py --datasets dblp_scholar abt_buy --seeds 0 1 2
    nice -n 10 python benchmarks/bench_quality.py --datasets abt_buy --candidates blocked --max-labels 250
    python benchmarks/bench_quality.py --report
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

import pandas as pd

from skrisk import LearnRisk
from skrisk.data import PairDataset, SimilarityFeatures, block
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import ALTask
from skrisk.experiments import build_task, run_active_learning
from _lab import load_dataset, make_matcher_factory
from _lab import machine_line
from _lab import make_strategy
from _lab import RiskPlateau, StabilisingPredictions
from skrisk.quality import audit_sample, choose_threshold, estimate_quality

METHODS = ("risk", "score", "uniform")


def _truth(p: np.ndarray, y: np.ndarray, t: float = 0.5) -> dict[str, float]:
    d = p > t
    tp, fp, fn = int((d & (y == 1)).sum()), int((d & (y == 0)).sum()), int((~d & (y == 1)).sum())
    return {
        "precision": tp / (tp + fp) if tp + fp else float("nan"),
        "recall": tp / (tp + fn) if tp + fn else float("nan"),
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan"),
    }


def audit_state(p: np.ndarray, risk: np.ndarray, y: np.ndarray, sizes: list[int], n_seeds: int) -> list[dict]:
    """Coverage, width and threshold choice of every method and audit size, the matcher fixed."""
    truth = _truth(p, y)
    out = []
    for method in METHODS:
        for n in sizes:
            cov = {m: [] for m in truth}
            width = {m: [] for m in truth}
            est_f1 = []
            thr = {"f1": [], "f1_max": [], "precision": []}
            for s in range(n_seeds):
                a = audit_sample(p, risk=risk, n=n, method=method, random_state=s)
                ya, pa = y[a.positions], p[a.positions]
                e = estimate_quality(ya, pa, a.weights, confidence=0.9)
                est_f1.append(e.f1)
                for m in truth:
                    lo, hi = e.interval(m)
                    cov[m].append(lo <= truth[m] <= hi)
                    width[m].append(hi - lo)
                for key, target, tol in (("f1", "f1", 1.0), ("f1_max", "f1", 0.0), ("precision", {"precision": 0.9}, 1.0)):
                    c = choose_threshold(ya, pa, a.weights, target=target, se_tolerance=tol)
                    t = _truth(p, y, c.threshold)
                    thr[key].append([c.threshold, c.precision, c.recall, c.f1, t["precision"], t["recall"], t["f1"],
                                     c.met])
            rec = {"method": method, "n_audit": n, "truth": truth, "mean_estimate_f1": float(np.nanmean(est_f1))}
            for m in truth:
                rec[f"coverage_{m}"] = float(np.mean(cov[m]))
                rec[f"width_{m}"] = float(np.mean(width[m]))
            for key, rows in thr.items():
                a = np.array(rows, dtype=float)
                names = ["threshold", "est_precision", "est_recall", "est_f1", "true_precision", "true_recall",
                         "true_f1", "met"]
                rec[f"threshold_{key}"] = {k: float(np.nanmean(a[:, i])) for i, k in enumerate(names)}
            out.append(rec)
    return out


def blocked_task(name: str, cache: str | None) -> tuple[ALTask, dict]:
    """The session's candidate set: ``block`` the two tables (skrisk's default rule, as ``skrisk label``).

    The pool *and* the pairs the estimates are about are all blocked candidates (truth: the
    dataset's labelled matches, all splits); LearnRisk ranks on the dataset's ``valid`` split.
    """
    ds = load_dataset(name)
    gold = ds.pairs.loc[ds.labels == 1, ["left_id", "right_id"]]
    res = block(ds.left, ds.right, true_links=gold)
    cand = res.pairs.assign(split="train")
    valid = ds.pairs.loc[ds.pairs["split"] == "valid", ["left_id", "right_id", "label"]].assign(split="valid")
    frame = pd.concat([cand, valid], ignore_index=True)
    both = PairDataset(ds.left, ds.right, frame.reset_index(drop=True), name=f"{name}_blocked")
    path = Path(cache) / f"{name}_blocked_feature_{len(both)}.npz" if cache else None
    if path is not None and path.exists():
        with np.load(path, allow_pickle=False) as z:
            X = z["X"]
    else:
        X = SimilarityFeatures().fit_transform(both.to_frame()).astype(np.float32)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, X=X)
    n = len(cand)
    info = {"n_candidates": n, "pair_completeness": res.pair_completeness, "n_true_links": res.n_true_links,
            "candidate_matches": int(cand["label"].sum())}
    return ALTask(X=X, y=both.y, pool=np.arange(n), valid=np.arange(n, len(both)), test=np.arange(n),
                  name=f"{name}_blocked"), info


def run_one(name: str, seed: int, args: argparse.Namespace) -> dict:
    info: dict = {}
    if args.candidates == "blocked":
        task, info = blocked_task(name, args.cache)
    else:
        task = build_task(name, matcher="feature", cache_dir=args.cache, max_pool=args.max_pool)
    X_test, y_test = task.rows(task.test), task.y[task.test]
    strategy = make_strategy("risk", task, risk=LearnRisk(epochs=args.risk_epochs), random_state=seed)
    states: list[dict] = []

    def observed(learner, X_pool, n_instances=1, *, random_state=None, **kw):
        result = strategy(learner, X_pool, n_instances=n_instances, random_state=random_state, **kw)
        q = strategy.last_query_
        p = np.asarray(learner.predict_proba(X_test))[:, 1]
        rm = q.risk_model
        risk = np.minimum(p, 1 - p) if rm is None else np.asarray(rm.predict_risk(X_test), dtype=float)
        states.append({"p": p, "risk": risk, "pool_risk": np.asarray(q.risk, dtype=float)})
        return result

    n_rounds = (args.max_labels - args.n_seed) // args.batch + 1
    t0 = time.perf_counter()
    records = run_active_learning(task, observed, make_matcher_factory("feature"), n_seed=args.n_seed,
                                  n_instances=args.batch, n_rounds=n_rounds, seed=seed, strategy_name="risk")
    al_s = time.perf_counter() - t0
    stab = StabilisingPredictions(window=3, agreement=0.99, sample_size=1000, random_state=seed)
    plateau = RiskPlateau(window=3, tol=0.05)
    rounds = []
    audits = []
    for rec, st in zip(records, states):
        stab.update(st["p"])
        plateau.update(st["pool_risk"])
        rounds.append({"n_labelled": rec["n_labelled"], "f1": rec["f1"],
                       "kappa": stab.kappas_[-1] if stab.kappas_ else None, "expected_errors": plateau.totals_[-1],
                       "stabilizing_stop": stab.should_stop, "plateau_stop": plateau.should_stop})
        if rec["n_labelled"] in args.audit_at:
            if args.states:
                Path(args.states).mkdir(parents=True, exist_ok=True)
                np.savez_compressed(Path(args.states) / f"{task.name}_seed{seed}_{rec['n_labelled']}.npz",
                                    p=st["p"], risk=st["risk"], y=y_test)
            t1 = time.perf_counter()
            for a in audit_state(st["p"], st["risk"], y_test, args.audit_sizes, args.audit_seeds):
                audits.append({"n_labelled": rec["n_labelled"], **a})
            print(f"  {name} seed {seed}: audits at {rec['n_labelled']} labels in {time.perf_counter() - t1:.0f} s",
                  flush=True)
    final_f1 = records[-1]["f1"]

    def fired(rule) -> dict:
        if rule.fired_at_ is None:
            return {"labels": None, "f1": None, "f1_lost": None}
        r = rounds[rule.fired_at_ - 1]
        return {"labels": r["n_labelled"], "f1": r["f1"], "f1_lost": final_f1 - r["f1"]}

    return {
        "dataset": task.name, "seed": seed, "candidates": args.candidates, **info,
        "final_labels": records[-1]["n_labelled"], "final_f1": final_f1,
        "max_f1": max(r["f1"] for r in records), "rounds": rounds, "audits": audits,
        "stopping": {"stabilizing": fired(stab), "plateau": fired(plateau)},
        "al_seconds": round(al_s, 1), "n_test": int(len(y_test)), "test_matches": int(y_test.sum()),
        "settings": {k: v for k, v in vars(args).items() if k not in ("report", "cache")},
        "env": machine_line(args.threads), "load": os.getloadavg(), "date": date.today().isoformat(),
    }


def reaudit(out: Path, states: Path, args: argparse.Namespace) -> None:
    """Recompute every record's audits from the kept states (same draws: the audit seeds are 0..K-1)."""
    for path in sorted(out.glob("*_seed*.json")):
        rec = json.loads(path.read_text())
        points = sorted({a["n_labelled"] for a in rec["audits"]})
        audits = []
        for n_lab in points:
            with np.load(states / f"{rec['dataset']}_seed{rec['seed']}_{n_lab}.npz", allow_pickle=False) as z:
                p, risk, y = z["p"], z["risk"], z["y"]
            for a in audit_state(p, risk, y, args.audit_sizes, args.audit_seeds):
                audits.append({"n_labelled": n_lab, **a})
        rec["audits"] = audits
        rec["settings"].update(audit_sizes=args.audit_sizes, audit_seeds=args.audit_seeds)
        rec["audits_recomputed"] = {"date": date.today().isoformat(), "env": machine_line(args.threads)}
        path.write_text(json.dumps(rec, indent=1) + "\n")
        print(f"{path.name}: audits recomputed at {points} labels", flush=True)


def _f(x: float | None, d: int = 3) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.{d}f}"


def report(out: Path, tables: tuple[str, ...] = ("coverage", "threshold", "stopping")) -> str:
    runs = [json.loads(p.read_text()) for p in sorted(out.glob("*_seed*.json"))]
    if not runs:
        return f"No records under {out}."
    lines = [f"Runs: {', '.join(sorted({r['dataset'] for r in runs}))}; seeds "
             f"{sorted({r['seed'] for r in runs})}; {runs[0]['env']}; {runs[0]['date']}.", ""]
    lines += ["### Coverage and width of the 90 % intervals (mean over AL seeds and audit draws)", "",
              "| dataset | labels | method | n audit | cover P | cover R | cover F1 | width P | width R | width F1 |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    rows: dict[tuple, list] = {}
    for r in runs:
        for a in r["audits"]:
            rows.setdefault((r["dataset"], a["n_labelled"], a["method"], a["n_audit"]), []).append(a)
    for key in sorted(rows, key=lambda k: (k[0], k[1], METHODS.index(k[2]), k[3])):
        a = rows[key]
        m = {k: np.mean([x[k] for x in a]) for k in a[0] if k.startswith(("coverage", "width"))}
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | " + " | ".join(
            _f(m[f"{s}_{q}"], 2 if s == "width" else 3) for s in ("coverage", "width") for q in ("precision", "recall", "f1")
        ) + " |")
    if "threshold" not in tables:
        return "\n".join(lines)
    lines += ["", "### Chosen threshold (n audit = 100): estimated vs true on the audited pairs", "",
              "| dataset | labels | method | target | threshold | est P | true P | est R | true R | true F1 | F1 at 0.5 |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(rows, key=lambda k: (k[0], k[1], METHODS.index(k[2]), k[3])):
        if key[3] != 100:
            continue
        a = rows[key]
        names = {"f1": "F1, 1-SE rule", "f1_max": "F1, best estimate", "precision": "P >= 0.9"}
        for target in [t for t in names if f"threshold_{t}" in a[0]]:
            t = {k: np.mean([x[f"threshold_{target}"][k] for x in a]) for k in a[0][f"threshold_{target}"]}
            f05 = np.mean([x["truth"]["f1"] for x in a])
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {names[target]} | "
                         f"{_f(t['threshold'], 2)} | {_f(t['est_precision'])} | {_f(t['true_precision'])} | "
                         f"{_f(t['est_recall'])} | {_f(t['true_recall'])} | {_f(t['true_f1'])} | {_f(f05)} |")
    if "stopping" not in tables:
        return "\n".join(lines)
    lines += ["", "### Stopping rules (labels when the rule first fires; F1 lost against the run's final F1)", "",
              "Window 3 for both; the stabilising rule at several agreements, the plateau at several tolerances "
              "(recomputed from the recorded per-round kappas and expected mispredictions).", "",
              "| dataset | seed | final labels | final F1 | rule | fires at labels | F1 then | F1 lost |",
              "|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["dataset"], r["seed"])):
        if r.get("candidates") == "blocked":
            continue
        for rule, at in _fired_variants(r["rounds"]):
            if at is None:
                lines.append(f"| {r['dataset']} | {r['seed']} | {r['final_labels']} | {_f(r['final_f1'])} | {rule} | "
                             "never | - | - |")
            else:
                f1 = r["rounds"][at]["f1"]
                lines.append(f"| {r['dataset']} | {r['seed']} | {r['final_labels']} | {_f(r['final_f1'])} | {rule} | "
                             f"{r['rounds'][at]['n_labelled']} | {_f(f1)} | {_f(r['final_f1'] - f1)} |")
    return "\n".join(lines)


def _fired_variants(rounds: list[dict]) -> list[tuple[str, int | None]]:
    """(rule, index of the round where it first fires) for several settings, from the recorded rounds."""
    out = []
    for agreement in (0.99, 0.95, 0.9):
        rule = StabilisingPredictions(window=3, agreement=agreement)
        kappas = [r["kappa"] for r in rounds]
        at = next((i for i in range(len(rounds)) if i >= 3 and None not in kappas[i - 2:i + 1]
                   and np.mean(kappas[i - 2:i + 1]) >= rule.agreement), None)
        out.append((f"stabilising, kappa >= {agreement}", at))
    for tol in (0.02, 0.05, 0.10):
        rule = RiskPlateau(window=3, tol=tol)
        at = None
        for i, r in enumerate(rounds):
            rule.update([r["expected_errors"]])
            if rule.should_stop:
                at = i
                break
        out.append((f"risk plateau, tol {tol:.0%}", at))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["dblp_scholar", "abt_buy"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--n-seed", type=int, default=50, help="random labels before the first round")
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--max-labels", type=int, default=600)
    p.add_argument("--max-pool", type=int, default=None, help="a stratified subset of the pool (faster)")
    p.add_argument("--audit-at", type=int, nargs="+", default=[50, 100, 200])
    p.add_argument("--audit-sizes", type=int, nargs="+", default=[25, 50, 100])
    p.add_argument("--audit-seeds", type=int, default=200)
    p.add_argument("--risk-epochs", type=int, default=300)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cache", default=os.environ.get("SKRISK_CACHE", "/tmp/skrisk_cache"))
    p.add_argument("--out", default="benchmarks/results/quality")
    p.add_argument("--candidates", choices=["test", "blocked"], default="test",
                   help="test: audit the test split; blocked: pool and audits over the blocked candidate set "
                        "of the two tables, as a labelling session has it")
    p.add_argument("--states", default=None,
                   help="keep the frozen matchers' probabilities and risks (npz) here, for --reaudit")
    p.add_argument("--reaudit", action="store_true",
                   help="recompute the audits of the records under --out from the states under --states "
                        "(after a change to the estimates; the active learning is not rerun)")
    p.add_argument("--report", action="store_true", help="only print the tables of the records under --out")
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.reaudit:
        if not args.states:
            p.error("--reaudit needs --states")
        reaudit(out, Path(args.states), args)
    elif not args.report:
        import torch

        torch.set_num_threads(args.threads)
        out.mkdir(parents=True, exist_ok=True)
        for name in args.datasets:
            for seed in args.seeds:
                t0 = time.perf_counter()
                res = run_one(name, seed, args)
                (out / f"{res['dataset']}_seed{seed}.json").write_text(json.dumps(res, indent=1) + "\n")
                print(f"{name} seed {seed}: {time.perf_counter() - t0:.0f} s, final F1 {res['final_f1']:.3f}, "
                      f"stopping {res['stopping']}", flush=True)
    print(report(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
