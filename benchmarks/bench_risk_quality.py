"""How much LearnRisk's risk knows beyond the matcher's own uncertainty, along recorded AL runs.

For recorded active-learning states (``benchmarks/results/al/raw``, written by ``bench_al.py``)
this refits the matcher on the labelled set of a round (the same seed, so the same model the
strategies saw), then scores two rankings of the unlabelled pool for finding the pairs the
matcher mispredicts (the pool's labels are known here):

- the matcher's uncertainty ``min(p, 1 - p)`` (what entropy sampling ranks by), and
- LearnRisk's risk (VaR), fitted exactly as ``RiskSampler`` fits it in that run (rules and
  expectations from the labelled set, weights ranked on the validation split).

Reported per state: ROC AUC of each ranking for the mistakes, and the share of mistakes among
the ``batch`` top-ranked pairs. Where the risk ranks no better than the uncertainty, risk sampling
has nothing to add to uncertainty sampling but its k-medoids spread.

Examples
--------
    python benchmarks/bench_risk_quality.py --dataset dblp_scholar --matcher rnn --seeds 5 --rounds 0 1 2
    python benchmarks/bench_risk_quality.py --dataset abt_buy --matcher rnn --batch 575
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import f1_score, roc_auc_score

from skrisk import LearnRisk
from skrisk.active import ActiveLearner
from skrisk.experiments import build_task
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import machine_line
from _lab import make_matcher_factory, matcher_fit_kwargs
from _lab import recorded_rounds
from _lab import match_labels

from _variants import make_strategy  # noqa: E402  (beside this script)


def _top_share(score: np.ndarray, wrong: np.ndarray, k: int) -> float:
    """Share of mispredicted pairs among the ``k`` highest scores (ties broken by position)."""
    top = np.argsort(-score, kind="stable")[:k]
    return float(wrong[top].mean())


def score_state(task, matcher: str, labelled: np.ndarray, seed: int, r: int, batch: int, risk_epochs: int) -> dict:
    """Refit the matcher on ``labelled`` (pool positions) and score uncertainty and risk."""
    y_pool = task.y[task.pool]
    fit_kwargs = matcher_fit_kwargs(matcher)
    fit_kw = fit_kwargs(task) if fit_kwargs is not None else {}
    t0 = time.perf_counter()
    learner = ActiveLearner(
        make_matcher_factory(matcher)(seed),
        make_strategy("random", task),  # never queried: the risk below has its own sampler
        X_training=task.rows(task.pool[labelled]),
        y_training=y_pool[labelled],
        **fit_kw,
    )
    fit_s = time.perf_counter() - t0
    f1 = f1_score(task.y[task.test], learner.predict(task.rows(task.test)), zero_division=0)
    unl = np.setdiff1d(np.arange(len(task.pool)), labelled)
    X_unl = task.rows(task.pool[unl])
    p = np.asarray(learner.predict_proba(X_unl))[:, 1]
    wrong = match_labels(p) != y_pool[unl]
    # risk ranking as RiskSampler computes it in that run (its LearnRisk settings and seed)
    sampler = make_strategy("risk_topk", task, risk=LearnRisk(epochs=risk_epochs), random_state=seed)
    t1 = time.perf_counter()
    sampler(learner, X_unl, n_instances=min(batch, len(unl)), random_state=seed * 10007 + r)
    risk = np.asarray(sampler.last_query_.risk, dtype=float)
    unc = np.minimum(p, 1.0 - p)
    return {
        "seed": seed,
        "round": r,
        "n_labelled": int(len(labelled)),
        "test_f1": float(f1),
        "pool_mistakes": int(wrong.sum()),
        "auc_uncertainty": float(roc_auc_score(wrong, unc)),
        "auc_risk": float(roc_auc_score(wrong, risk)),
        "top_b_uncertainty": _top_share(unc, wrong, batch),
        "top_b_risk": _top_share(risk, wrong, batch),
        "fit_s": round(fit_s, 2),
        "risk_s": round(time.perf_counter() - t1, 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="dblp_scholar")
    p.add_argument("--matcher", choices=["feature", "rnn"], default="rnn")
    p.add_argument("--strategy", default="risk_paper",
                   help="whose recorded labelled sets to replay: a strategy of bench_al.py's records "
                        "(default: the paper's method)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--rounds", type=int, nargs="+", default=[0, 1, 2],
                   help="rounds whose labelled sets are scored (0 = the seed set)")
    p.add_argument("--batch", type=int, default=100, help="b of the top-b share (the query batch)")
    p.add_argument("--risk-epochs", type=int, default=300)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="benchmarks/results/al", help="where the table and CSV go")
    p.add_argument("--raw", default=None, help="the recorded runs (default: <out>/raw), also the task cache's parent")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    raw = Path(args.raw) if args.raw else out / "raw"
    task = build_task(args.dataset, matcher=args.matcher, cache_dir=raw.parent / "cache")
    rows = []
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        path = raw / f"{task.name}_{args.matcher}_{args.strategy}_seed{seed}.jsonl"
        # the labelled set of every round, rebuilt from the recorded seed set and batches
        recs = {rec["round"]: rec for rec in recorded_rounds(path, args.strategy, seed, dataset=task.name,
                                                             n_pool=len(task.pool))}
        for r in args.rounds:
            if r not in recs:
                print(f"no round {r} recorded in {path}; skipped", file=sys.stderr)
                continue
            row = score_state(task, args.matcher, recs[r]["labelled"], seed, r,
                              args.batch, args.risk_epochs)
            row["recorded_f1"] = recs[r]["f1"]  # the refit is the model the run saw if they agree
            rows.append(row)
            print(json.dumps(row), flush=True)
    if not rows:
        print("nothing scored", file=sys.stderr)
        return 1
    df = pd.DataFrame(rows)
    stem = out / f"{task.name}_{args.matcher}_risk_quality"
    df.to_csv(stem.with_suffix(".csv"), index=False)
    cols = ["auc_uncertainty", "auc_risk", "top_b_uncertainty", "top_b_risk"]
    lines = [
        f"### {task.name}, {args.matcher} matcher: risk vs uncertainty for finding the matcher's mistakes "
        f"({df['seed'].nunique()} runs, labelled sets of `{args.strategy}`)",
        "",
        "| labelled | runs | ROC AUC, uncertainty | ROC AUC, risk | mistakes in top b, uncertainty | "
        f"mistakes in top b, risk (b = {args.batch}) |",
        "|---|---|---|---|---|---|",
    ]
    for n, grp in df.groupby("n_labelled"):
        cells = [f"{grp[c].mean():.3f} ± {np.nan_to_num(grp[c].std()):.3f}" for c in cols]
        lines.append(f"| {n} | {len(grp)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"_command_: `python benchmarks/bench_risk_quality.py {' '.join(argv if argv is not None else sys.argv[1:])}`  ",
        f"_machine_: {machine_line(args.threads)}  ",
        f"_date_: {date.today().isoformat()}, wall time {time.perf_counter() - t0:.0f} s",
        "",
    ]
    stem.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
