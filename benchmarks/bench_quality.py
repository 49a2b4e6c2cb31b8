"""Estimates, threshold and stopping rules of ``skrisk.quality`` in simulated sessions.

One simulated session per dataset and seed: the FeatureMatcher with skrisk's default risk
sampling (``skrisk.experiments``: ``build_task``, ``STRATEGIES["risk"]``,
``run_active_learning``), ``--n-seed`` random labels, then ``--batch`` pairs a round up to
``--max-labels``; the oracle answers from the gold labels. At every round the matcher is scored on
the test split (the candidate set the estimates are about; its truth is known here).

* **Audits** (at the label counts ``--audit-at``): the matcher is fixed, only the audit draw
  varies. For each method (risk: in proportion to LearnRisk's risk of the test pairs; score:
  to ``sqrt(p (1 - p))``; uniform), each audit size and ``--audit-seeds`` draws: whether the 90 %
  interval covers the matcher's true precision, recall and F1 on the test split, its mean width,
  and the threshold :func:`~skrisk.quality.choose_threshold` picks (max F1, precision >= 0.9)
  with its estimated and true precision/recall.
* **Stopping rules**: ``StabilizingPredictions`` (kappa on 1000 test pairs, window 3,
  agreement 0.99) and ``RiskPlateau`` (summed risk of the unlabelled pool, window 3, tol 0.05):
  the labels when each first fires and the F1 lost against the run's final F1.

Writes one JSON per dataset and seed under ``--out`` and, with ``--report``, the markdown tables.

Examples
--------
    nice -n 10 python benchmarks/bench_quality.py --datasets dblp_scholar abt_buy --seeds 0 1 2
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

from skrisk.experiments import build_task, machine_line, make_matcher_factory, make_strategy, run_active_learning
from skrisk.quality import RiskPlateau, StabilizingPredictions, audit_sample, choose_threshold, estimate_quality

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
            thr = {"f1": [], "precision": []}
            for s in range(n_seeds):
                a = audit_sample(p, risk=risk, n=n, method=method, random_state=s)
                ya, pa = y[a.positions], p[a.positions]
                e = estimate_quality(ya, pa, a.weights, confidence=0.9)
                est_f1.append(e.f1)
                for m in truth:
                    lo, hi = e.interval(m)
                    cov[m].append(lo <= truth[m] <= hi)
                    width[m].append(hi - lo)
                for key, target in (("f1", "f1"), ("precision", {"precision": 0.9})):
                    c = choose_threshold(ya, pa, a.weights, target=target)
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


def run_one(name: str, seed: int, args: argparse.Namespace) -> dict:
    task = build_task(name, matcher="feature", cache_dir=args.cache, max_pool=args.max_pool)
    X_test, y_test = task.rows(task.test), task.y[task.test]
    strategy = make_strategy("risk", task, risk_params={"epochs": args.risk_epochs}, random_state=seed)
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
    stab = StabilizingPredictions(window=3, agreement=0.99, sample_size=1000, random_state=seed)
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
        "dataset": name, "seed": seed, "final_labels": records[-1]["n_labelled"], "final_f1": final_f1,
        "max_f1": max(r["f1"] for r in records), "rounds": rounds, "audits": audits,
        "stopping": {"stabilizing": fired(stab), "plateau": fired(plateau)},
        "al_seconds": round(al_s, 1), "n_test": int(len(y_test)), "test_matches": int(y_test.sum()),
        "settings": {k: v for k, v in vars(args).items() if k not in ("report", "cache")},
        "env": machine_line(args.threads), "load": os.getloadavg(), "date": date.today().isoformat(),
    }


def _f(x: float | None, d: int = 3) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.{d}f}"


def report(out: Path) -> str:
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
    lines += ["", "### Chosen threshold (n audit = 100): estimated vs true on the test split", "",
              "| dataset | labels | method | target | threshold | est P | true P | est R | true R | true F1 | F1 at 0.5 |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(rows, key=lambda k: (k[0], k[1], METHODS.index(k[2]), k[3])):
        if key[3] != 100:
            continue
        a = rows[key]
        for target in ("f1", "precision"):
            t = {k: np.mean([x[f"threshold_{target}"][k] for x in a]) for k in a[0][f"threshold_{target}"]}
            f05 = np.mean([x["truth"]["f1"] for x in a])
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {'max F1' if target == 'f1' else 'P >= 0.9'} | "
                         f"{_f(t['threshold'], 2)} | {_f(t['est_precision'])} | {_f(t['true_precision'])} | "
                         f"{_f(t['est_recall'])} | {_f(t['true_recall'])} | {_f(t['true_f1'])} | {_f(f05)} |")
    lines += ["", "### Stopping rules (labels when the rule first fires; F1 lost against the run's final F1)", "",
              "Window 3 for both; the stabilising rule at several agreements, the plateau at several tolerances "
              "(recomputed from the recorded per-round kappas and expected mispredictions).", "",
              "| dataset | seed | final labels | final F1 | rule | fires at labels | F1 then | F1 lost |",
              "|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["dataset"], r["seed"])):
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
        rule = StabilizingPredictions(window=3, agreement=agreement)
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
    p.add_argument("--report", action="store_true", help="only print the tables of the records under --out")
    args = p.parse_args(argv)
    out = Path(args.out)
    if not args.report:
        import torch

        torch.set_num_threads(args.threads)
        out.mkdir(parents=True, exist_ok=True)
        for name in args.datasets:
            for seed in args.seeds:
                t0 = time.perf_counter()
                res = run_one(name, seed, args)
                (out / f"{name}_seed{seed}.json").write_text(json.dumps(res, indent=1) + "\n")
                print(f"{name} seed {seed}: {time.perf_counter() - t0:.0f} s, final F1 {res['final_f1']:.3f}, "
                      f"stopping {res['stopping']}", flush=True)
    print(report(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
