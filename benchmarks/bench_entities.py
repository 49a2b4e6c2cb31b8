"""Benchmark of entity resolution end to end: blocking, a matcher trained on few labels, entities.

For each task: block (pair completeness, candidates), train a FeatureMatcher on ``--n-labels``
candidate pairs drawn at random (labels from the known truth), score every candidate, then
measure

- the pairwise precision/recall/F1 of the predicted matches (``p > 0.5``) against *all* true
  links (links that blocking lost count as missed);
- the same for the pairs implied by the entities (transitive closure adds pairs), and the
  cluster-level scores (exact entities, B-cubed) against the true entities;
- for linkage tasks, everything with and without ``one_to_one``.

Tasks: FEBRL1/2/3 (dedup, known entities), FEBRL4 (linkage, one-to-one, 5,000 links) and
Fodors-Zagats (linkage; its 110 labelled matches are one-to-one, other pairs count as
non-matches).

Run from the repository root::

    SKRISK_DATA=../shared/data nice -n 10 python benchmarks/bench_entities.py            # all tasks
    SKRISK_DATA=../shared/data python benchmarks/bench_entities.py --tasks febrl1 --quick  # smoke run

Writes ``benchmarks/results/entities/entities.json`` (one record per task and setting, with the
machine, date, load average and command) and ``entities.md`` (a markdown table).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)

OUT = Path(__file__).resolve().parent / "results" / "entities"
TASKS = ("febrl1", "febrl2", "febrl3", "febrl4", "fodors_zagats")
#: Blocking of Fodors-Zagats: names or addresses sharing words (top 10 per record, both ways).
FODORS_BLOCKING = (("tokens", ["name"], {"top_k": 10}), ("tokens", ["addr"], {"top_k": 5}))


def _load(task: str):
    """(dataset of all candidates with true labels, blocking result, true links, true entity per record)."""
    from skrisk.data import block
    from _lab import febrl_entity
    from skrisk.datasets import load_deepmatcher, load_febrl
    from skrisk.matching import cluster_entities

    if task.startswith("febrl"):
        ds, res = load_febrl(dataset=task, split=(1.0, 0.0, 0.0), return_blocking=True)
        if ds.task == "dedup":
            ids = ds.left.index
            grp = pd.Series(ids, index=ids).groupby(ids.map(febrl_entity))
            true_links = [(a, b) for _, g in grp for i, a in enumerate(sorted(g)) for b in sorted(g)[i + 1:]]
            truth = {("table", i): febrl_entity(i) for i in ids}
        else:
            true_links = [(a, b) for a in ds.left.index for b in [a.replace("-org", "-dup-0")] if b in ds.right.index]
            truth = {**{("left", i): febrl_entity(i) for i in ds.left.index},
                     **{("right", i): febrl_entity(i) for i in ds.right.index}}
        return ds, res, true_links, truth
    dm = load_deepmatcher(task)
    pos = dm.pairs[dm.pairs["label"] == 1]
    true_links = list(zip(pos["left_id"], pos["right_id"]))
    res = block(dm.left, dm.right, FODORS_BLOCKING, true_links=true_links)
    from skrisk.data import PairDataset

    pairs = res.pairs.assign(split="train")
    ds = PairDataset(left=dm.left, right=dm.right, pairs=pairs, name=task)
    # true entities: components of the true links, every record included
    ent = cluster_entities(pd.DataFrame({"left_id": pos["left_id"], "right_id": pos["right_id"], "probability": 1.0}),
                           task="link", records=(dm.left.index, dm.right.index))
    truth = {(s, r): e for s, r, e in zip(ent.clusters["side"], ent.clusters["record_id"], ent.clusters["entity_id"])}
    return ds, res, true_links, truth


def run_task(task: str, n_labels: int, seeds: int, max_size: int) -> list[dict]:
    """One record per seed (and per ``one_to_one`` setting for linkage); features computed once."""
    from skrisk.data import SimilarityFeatures
    from skrisk.matchers import FeatureMatcher
    from skrisk.matching import cluster_entities
    from _lab import cluster_scores, pairwise_scores

    t0 = time.perf_counter()
    ds, res, true_links, truth = _load(task)
    t_block = time.perf_counter() - t0
    y = ds.y
    t0 = time.perf_counter()
    X = SimilarityFeatures().fit_transform(ds)
    t_features = time.perf_counter() - t0
    records = ds.left.index if ds.task == "dedup" else (ds.left.index, ds.right.index)
    out = []
    for seed in range(seeds):
        rng = np.random.RandomState(seed)
        lab = rng.choice(len(ds), size=min(n_labels, len(ds)), replace=False)
        while len(set(y[lab])) < 2:  # both classes in the sample
            lab = rng.choice(len(ds), size=min(n_labels, len(ds)), replace=False)
        t0 = time.perf_counter()
        matcher = FeatureMatcher(random_state=seed).fit(X[lab], y[lab])
        proba = matcher.predict_proba(X)[:, 1]
        t_matcher = time.perf_counter() - t0
        scored = ds.pairs[["left_id", "right_id"]].assign(probability=proba)
        predicted = scored[proba > 0.5]
        base = {
            "task": task, "kind": ds.task,
            "records": len(ds.left) if ds.task == "dedup" else f"{len(ds.left)}+{len(ds.right)}",
            "true_links": len(true_links), "candidates": len(ds), "pair_completeness": res.pair_completeness,
            "reduction_ratio": res.reduction_ratio, "n_labels": int(len(lab)), "seed": seed,
            "seconds_blocking": round(t_block, 2), "seconds_features": round(t_features, 2),
            "seconds_matcher": round(t_matcher, 2),
        }
        raw = pairwise_scores(predicted, true_links, task=ds.task)
        for one_to_one in ((False, True) if ds.task == "link" else (False,)):
            t0 = time.perf_counter()
            ent = cluster_entities(scored, task=ds.task, one_to_one=one_to_one, max_size=max_size, records=records)
            t_cluster = time.perf_counter() - t0
            pw = pairwise_scores(ent, true_links, task=ds.task)
            cl = cluster_scores(ent, truth)
            sizes = ent.clusters.groupby("entity_id").size()
            out.append({
                **base, "one_to_one": one_to_one,
                "pairs_precision": raw["precision"], "pairs_recall": raw["recall"], "pairs_f1": raw["f1"],
                "entity_pairs_precision": pw["precision"], "entity_pairs_recall": pw["recall"],
                "entity_pairs_f1": pw["f1"],
                "cluster_precision": cl["precision"], "cluster_recall": cl["recall"], "cluster_f1": cl["f1"],
                "bcubed_precision": cl["bcubed_precision"], "bcubed_recall": cl["bcubed_recall"],
                "bcubed_f1": cl["bcubed_f1"],
                "entities": ent.n_entities, "largest_entity": int(sizes.max()),
                "suspicious_entities": int(ent.suspicious["entity_id"].nunique()),
                "seconds_clustering": round(t_cluster, 3),
            })
    return out


def _markdown(rows: list[dict], meta: dict) -> str:
    head = ("| task | kind | 1:1 | candidates | PC | labels | pairs P/R/F1 | entity pairs P/R/F1 | clusters P/R/F1 "
            "| B-cubed P/R/F1 | entities (suspicious) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        def prf(k):
            return "/".join(f"{r[f'{k}_{m}']:.3f}" for m in ("precision", "recall", "f1"))
        lines.append(
            f"| {r['task']} | {r['kind']} | {'yes' if r['one_to_one'] else 'no'} | {r['candidates']} | "
            f"{r['pair_completeness']:.4f} | {r['n_labels']} | {prf('pairs')} | {prf('entity_pairs')} | "
            f"{prf('cluster')} | {prf('bcubed')} | {r['entities']} ({r['suspicious_entities']}) |"
        )
    foot = (f"\n_command_: `{meta['command']}`; machine: {meta['machine']}; date: {meta['date']}; "
            f"load average before/after: {meta['loadavg_before']} / {meta['loadavg_after']}; "
            f"seconds: {meta['seconds']:.0f}\n")
    return head + "\n".join(lines) + "\n" + foot


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, from {', '.join(TASKS)}")
    p.add_argument("--n-labels", type=int, default=200, help="random labelled pairs for the matcher (default 200)")
    p.add_argument("--seeds", type=int, default=3, help="repetitions with seeds 0..n-1 (default 3)")
    p.add_argument("--max-size", type=int, default=50, help="entity size above which it is suspicious")
    p.add_argument("--threads", type=int, default=1, help="threads for numeric libraries (default 1)")
    p.add_argument("--quick", action="store_true", help="one seed, 100 labels (smoke run)")
    p.add_argument("--out", default=str(OUT), help=f"output folder (default {OUT})")
    args = p.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        p.error(f"unknown task(s) {unknown}: choose from {list(TASKS)}")
    seeds = 1 if args.quick else args.seeds
    n_labels = 100 if args.quick else args.n_labels
    load_before = tuple(round(x, 2) for x in os.getloadavg())
    t0 = time.perf_counter()
    per_seed = [row for task in tasks for row in run_task(task, n_labels, seeds, args.max_size)]
    # mean over seeds per (task, one_to_one)
    frame = pd.DataFrame(per_seed)
    keys = ["task", "kind", "one_to_one"]
    num = frame.drop(columns=keys + ["records", "seed"]).columns
    mean = frame.groupby(keys, sort=False)[list(num)].mean().reset_index()
    mean["records"] = frame.groupby(keys, sort=False)["records"].first().to_numpy()
    mean = mean.astype({c: int for c in ("candidates", "n_labels", "true_links", "entities", "largest_entity")})
    mean["suspicious_entities"] = mean["suspicious_entities"].round(1)
    from skrisk import __version__

    meta = {
        "command": " ".join(["python", "benchmarks/bench_entities.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, {platform.python_version()}",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "loadavg_before": load_before, "loadavg_after": tuple(round(x, 2) for x in os.getloadavg()),
        "seconds": time.perf_counter() - t0, "skrisk": __version__, "seeds": seeds, "n_labels": n_labels,
    }
    rows = mean.to_dict(orient="records")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "entities.json").write_text(json.dumps({"meta": meta, "mean": rows, "runs": per_seed}, indent=1,
                                                  default=float) + "\n")
    md = _markdown(rows, meta)
    (out / "entities.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
