"""Column types on the DeepMatcher datasets (issue #46): do inferred types change the features, and
the forest's active learning?

For each dataset the feature task is built once (``build_task(name, matcher="feature")``, the
generic features of ``SimilarityFeatures(types=None)``); its X is recomputed with
``SimilarityFeatures(types="auto")`` on the same pair frame (``PairDataset.to_frame()``, the
order ``build_task`` encodes), so both tasks share pairs, splits and labels. The two matrices are
compared (feature names, values with NaN equal to NaN). Where they differ, the forest
(``FeatureMatcher``) with skrisk's default ``STRATEGIES["risk"]`` runs on both feature sets with
the same seeds (the same seed set per seed) and batch sizes; the final test F1 and the area under
the learning curve (``skrisk.experiments.aulc``) are recorded per seed, and the paired differences
(auto minus none) summarised by their mean and standard error.

Round records go to ``<out>/raw/`` (untracked; a rerun resumes there); the page
``<out>.md`` and the summary ``<out>.json`` are written beside ``<out>``.

Examples
--------
    OMP_NUM_THREADS=1 python benchmarks/bench_types_deepmatcher.py --datasets fodors_zagats beer
    OMP_NUM_THREADS=1 python benchmarks/bench_types_deepmatcher.py --features-only
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from skrisk import LearnRisk
from skrisk.data import SimilarityFeatures
from skrisk.experiments import STRATEGIES, aulc, build_task, run_active_learning
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import machine_line
from _lab import load_dataset, make_matcher_factory

DATASETS = ["abt_buy", "dblp_scholar", "beer", "fodors_zagats"]
VARIANTS = {"none": None, "auto": "auto"}
#: (seed set, batch, rounds) per dataset: the settings of the forest pages under
#: ``benchmarks/results/al`` (``<dataset>_feature_compare.md``).
SETTINGS = {"abt_buy": (575, 575, 9), "dblp_scholar": (100, 100, 10), "beer": (30, 30, 7),
            "fodors_zagats": (50, 50, 8)}


def _compare(X_none: np.ndarray, names_none, X_auto: np.ndarray, names_auto) -> dict:
    """Whether two feature matrices are identical, and where they differ."""
    out: dict = {"names_equal": list(names_none) == list(names_auto), "n_features_none": len(names_none),
                 "n_features_auto": len(names_auto)}
    if out["names_equal"] and X_none.shape == X_auto.shape:
        same = (X_none == X_auto) | (np.isnan(X_none) & np.isnan(X_auto))
        cols = np.flatnonzero(~same.all(axis=0))
        out["values_equal"] = bool(same.all())
        out["differing_features"] = {str(names_none[c]): int((~same[:, c]).sum()) for c in cols}
        out["differing_rows"] = int((~same.all(axis=1)).sum())
    else:
        out["values_equal"] = False
        out["only_none"] = sorted(set(map(str, names_none)) - set(map(str, names_auto)))
        out["only_auto"] = sorted(set(map(str, names_auto)) - set(map(str, names_none)))
    out["identical"] = bool(out["names_equal"] and out["values_equal"])
    return out


def _features(name: str) -> tuple[dict, dict]:
    """The generic task, its typed twin and their comparison."""
    task = build_task(name, matcher="feature")
    ds = load_dataset(name)
    frame = ds.to_frame()
    sf_none = SimilarityFeatures(types=None)
    X_none = sf_none.fit_transform(frame).astype(np.float32)
    # the pairs' order: the recomputed generic matrix is the task's own
    if not (X_none.shape == task.X.shape and np.array_equal(X_none, task.X, equal_nan=True)):
        raise RuntimeError(f"{name}: SimilarityFeatures(types=None) on ds.to_frame() does not reproduce "
                           "build_task's X; the pair order differs.")
    sf_auto = SimilarityFeatures(types="auto")
    X_auto = sf_auto.fit_transform(frame).astype(np.float32)
    cmp = _compare(X_none, sf_none.get_feature_names_out(), X_auto, sf_auto.get_feature_names_out())
    cmp["types"] = {a: t["type"] if isinstance(t, dict) else str(t) for a, t in sf_auto.column_types_.items()}
    cmp["n_pairs"], cmp["n_pool"] = int(len(task.y)), int(len(task.pool))
    tasks = {"none": task, "auto": dataclasses.replace(task, X=X_auto)}
    return cmp, tasks


def _run(task, variant: str, seed: int, args, raw: Path, n_seed: int, batch: int, n_rounds: int) -> list[dict]:
    strategy = STRATEGIES["risk"](task, risk=LearnRisk(epochs=args.risk_epochs), random_state=seed)
    return run_active_learning(
        task, strategy, make_matcher_factory("feature"), n_seed=n_seed, n_instances=batch,
        n_rounds=n_rounds, seed=seed, strategy_name=f"risk_{variant}",
        results_file=raw / f"{task.name}_{variant}_seed{seed}.jsonl",
    )


def _paired(a: list[float], b: list[float]) -> dict:
    d = np.asarray(b) - np.asarray(a)
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return {"mean": float(d.mean()), "se": se, "per_seed": [round(float(x), 4) for x in d]}


def _page(summary: dict, command: str) -> str:
    lines = [f"# Column types on the DeepMatcher datasets (issue #46)", "",
             "Forest (`FeatureMatcher`) with skrisk's default `risk` strategy, features of "
             "`SimilarityFeatures(types=None)` (generic, today) and `types=\"auto\"` (inferred types); "
             "the same pairs, splits, seeds and seed sets (paired runs). Differences are auto minus none, "
             "mean ± standard error over the seeds. Seed set, batch and rounds are those of the forest "
             "pages `benchmarks/results/al/<dataset>_feature_compare.md` (LearnRisk 300 epochs), so the "
             "`none` runs are today's `risk` runs there. F1 is the test F1 of the last round; AULC the "
             "area under one run's learning curve (`skrisk.experiments.aulc`), divided by the label range.", ""]
    for name, res in summary["datasets"].items():
        cmp = res["features"]
        lines.append(f"## {name}")
        lines.append("")
        lines.append("Inferred types: " + ", ".join(f"{a}={t}" for a, t in cmp["types"].items()) + ".")
        if cmp["identical"]:
            lines.append(f"Feature matrices **identical** ({cmp['n_features_none']} features, same names and "
                         f"values on {cmp['n_pairs']} pairs): the runs would be identical, none were made.")
        else:
            where = (", ".join(f"`{k}` ({v} pairs)" for k, v in cmp.get("differing_features", {}).items())
                     if cmp["names_equal"] else
                     f"names differ (only generic: {cmp['only_none']}; only typed: {cmp['only_auto']})")
            lines.append(f"Feature matrices **differ**: {where}"
                         + (f"; {cmp['differing_rows']} of {cmp['n_pairs']} pairs" if cmp["names_equal"] else "")
                         + ".")
        lines.append("")
        al = res.get("al")
        if al:
            lines += [f"{al['n_seeds']} seeds ({', '.join(map(str, al['seeds']))}), seed set {al['seed_size']}, "
                      f"batch {al['batch']}, {al['rounds']} rounds (to {al['final_labels']} labels), "
                      f"pool {cmp['n_pool']}.", "",
                      "| identical? | F1 none | F1 auto | ΔF1 (paired) | AULC none | AULC auto | ΔAULC (paired) |",
                      "|---|---|---|---|---|---|---|"]
            f, a = al["f1"], al["aulc"]
            lines.append(f"| no | {np.mean(f['none']):.3f} | {np.mean(f['auto']):.3f} | "
                         f"{al['diff_f1']['mean']:+.3f} ± {al['diff_f1']['se']:.3f} | {np.mean(a['none']):.3f} | "
                         f"{np.mean(a['auto']):.3f} | {al['diff_aulc']['mean']:+.3f} ± {al['diff_aulc']['se']:.3f} |")
            if al["n_seeds"] > 5:
                d5f, d5a = (_paired(m["none"][:5], m["auto"][:5]) for m in (f, a))
                lines += ["", f"Seeds 0-4 alone: ΔF1 {d5f['mean']:+.3f} ± {d5f['se']:.3f}, "
                          f"ΔAULC {d5a['mean']:+.3f} ± {d5a['se']:.3f}."]
            lines += ["", "Per seed (F1 none / auto; AULC none / auto): "
                      + "; ".join(f"{s}: {f['none'][i]:.3f} / {f['auto'][i]:.3f}, {a['none'][i]:.3f} / {a['auto'][i]:.3f}"
                                  for i, s in enumerate(al["seeds"])) + ".", ""]
        elif cmp["identical"]:
            lines += ["| identical? | F1 none vs auto | AULC none vs auto | paired difference |", "|---|---|---|---|",
                      "| yes | same runs | same runs | 0 (identical inputs) |", ""]
        else:
            lines += ["Active learning not run for this dataset (see the report).", ""]
    lines += [f"_command_: `{command}`  ", f"_machine_: {summary['machine']}  ",
              f"_load_ (`uptime` at start / end): {summary['load_start']} / {summary['load_end']}  ",
              f"_date_: {summary['date']}, wall time {summary['wall_s']:.0f} s (runs resumed from `raw/` count only "
              f"new rounds); fit + query time summed over every round of the runs {summary.get('compute_s', 0):.0f} s", ""]
    return "\n".join(lines)


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "not available"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=DATASETS)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--seed-size", type=int, default=None, help="default: SETTINGS per dataset")
    p.add_argument("--batch", type=int, default=None, help="default: SETTINGS per dataset")
    p.add_argument("--rounds", type=int, default=None, help="rounds including the initial one "
                   "(default: SETTINGS per dataset)")
    p.add_argument("--risk-epochs", type=int, default=300, help="LearnRisk epochs (the forest pages' 300)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--features-only", action="store_true", help="compare the feature matrices, run nothing")
    p.add_argument("--out", default="benchmarks/results/types_deepmatcher")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    summary_path = out.with_suffix(".json")
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {"datasets": {}}
    load_start, t0, compute = _uptime(), time.perf_counter(), 0.0
    for name in args.datasets:
        cmp, tasks = _features(name)
        print(name, json.dumps({k: v for k, v in cmp.items() if k != "types"}), flush=True)
        res: dict = {"features": cmp}
        if not cmp["identical"] and not args.features_only:
            n_seed, batch, rounds = SETTINGS.get(name, (100, 100, 9))
            n_seed, batch = args.seed_size or n_seed, args.batch or batch
            rounds = args.rounds or rounds
            seeds = list(range(args.seeds))
            f1: dict = {"none": [], "auto": []}
            area: dict = {"none": [], "auto": []}
            for seed in seeds:
                for variant in VARIANTS:
                    recs = _run(tasks[variant], variant, seed, args, raw, n_seed, batch, rounds)
                    compute += sum(r.get("fit_s", 0.0) + r.get("query_s", 0.0) for r in recs)
                    f1[variant].append(float(recs[-1]["f1"]))
                    area[variant].append(float(aulc(recs).iloc[0]))
                print(f"  seed {seed}: F1 {f1['none'][-1]:.3f} / {f1['auto'][-1]:.3f}, "
                      f"AULC {area['none'][-1]:.3f} / {area['auto'][-1]:.3f}", flush=True)
            res["al"] = {"seeds": seeds, "n_seeds": len(seeds), "seed_size": n_seed, "batch": batch,
                         "rounds": rounds, "final_labels": int(recs[-1]["n_labelled"]),
                         "risk_epochs": args.risk_epochs,
                         "f1": {k: [round(x, 4) for x in v] for k, v in f1.items()},
                         "aulc": {k: [round(x, 4) for x in v] for k, v in area.items()},
                         "diff_f1": _paired(f1["none"], f1["auto"]),
                         "diff_aulc": _paired(area["none"], area["auto"])}
        elif name in summary["datasets"] and "al" in summary["datasets"][name] and not cmp["identical"]:
            res["al"] = summary["datasets"][name]["al"]  # --features-only keeps earlier runs
        summary["datasets"][name] = res
    summary.update(machine=machine_line(args.threads), load_start=load_start, load_end=_uptime(),
                   date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                   wall_s=time.perf_counter() - t0, compute_s=compute)
    summary["datasets"] = {k: summary["datasets"][k] for k in DATASETS if k in summary["datasets"]}
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    command = f"OMP_NUM_THREADS=1 python benchmarks/bench_types_deepmatcher.py {' '.join(argv if argv is not None else sys.argv[1:])}"
    out.with_suffix(".md").write_text(_page(summary, command))
    print(out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
