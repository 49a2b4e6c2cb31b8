"""skrisk match beside Splink on generated person tables (issue #26): time, peak memory, quality.

For every size in ``--sizes`` one table of :func:`skrisk.datasets.make_person_table` (seed 0;
typos, swapped names, three date formats, missing values; known truth) is written as CSV, then
each tool runs on it in a fresh child process, whose wall time and peak resident memory
(``os.wait4``) are measured, one after the other in the same run:

``skrisk match``
    ``python -m skrisk.cli match --model model.skrisk --left table.csv --out DIR --no-progress``,
    as a user runs it: read, block (the model's default token blocking), features, matcher,
    LearnRisk, entities, write. The model is trained once, before the timed runs, as a user
    with labels would: ``--labels`` candidate pairs of another generated table (20,000
    records, seed 1) labelled from its truth (half matches, half not), SimilarityFeatures (all
    metrics), a FeatureMatcher (random forest) and LearnRisk around it.
``splink predict``
    Splink 5 (DuckDB) with the model it trained on the same table (``splink train``, timed on its
    own): read the CSV, ``predict`` with its blocking rules, connected components at 0.5, write
    the pairs. The like-for-like of ``skrisk match`` (both apply a trained model).
``splink train``
    Splink's unsupervised training on the table: lambda from deterministic rules, u by random
    sampling, m by expectation maximisation on two blocking rules; writes the model JSON.

Reported per tool: wall seconds of the whole process (import included), peak memory, candidate
pairs, pairs per second of the scoring stage, precision and recall of the predicted pairs
against the truth, and for skrisk its stage timings. ``ratio`` = skrisk match / splink predict.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/bench_splink.py --sizes 20000,200000,1000000

Appends one JSON line per size to ``benchmarks/results/speed/splink.jsonl`` (``--out``), with the
command, machine and load. Needs the ``bench`` extra (``pip install -e ".[bench]"``: splink).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "results" / "speed" / "splink.jsonl"
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402

SPLINK_COMMON = r'''
import json, sys, time
t0 = time.perf_counter()
import pandas as pd
import splink.comparison_library as cl
from splink import DuckDBAPI, Linker, SettingsCreator, block_on
folder = sys.argv[1]
df = pd.read_csv(f"{folder}/table.csv", dtype=str, keep_default_na=False, na_values=[""])
df = df.rename(columns={"id": "unique_id"})
t_read = time.perf_counter() - t0
db = DuckDBAPI()
sdf = db.register(df)
RULES = [block_on("given_name", "surname"), block_on("surname", "date_of_birth"), block_on("postcode"),
         block_on("date_of_birth", "city")]
'''

SPLINK_TRAIN = SPLINK_COMMON + r'''
settings = SettingsCreator(
    link_type="dedupe_only",
    comparisons=[
        cl.JaroWinklerAtThresholds("given_name", [0.92, 0.8]),
        cl.JaroWinklerAtThresholds("surname", [0.92, 0.8]),
        cl.LevenshteinAtThresholds("date_of_birth", [1, 2]),
        cl.LevenshteinAtThresholds("address", [1, 3]),
        cl.LevenshteinAtThresholds("city", [1, 2]),
        cl.ExactMatch("postcode"),
    ],
    blocking_rules_to_generate_predictions=RULES,
)
linker = Linker(sdf, settings, log_level=None)
t1 = time.perf_counter()
linker.training.estimate_probability_two_random_records_match(
    [block_on("given_name", "surname", "date_of_birth")], recall=0.7)
linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=0)
linker.training.estimate_parameters_using_expectation_maximisation(block_on("date_of_birth"))
linker.training.estimate_parameters_using_expectation_maximisation(block_on("postcode"))
linker.misc.save_model_to_json(f"{folder}/splink_model.json", overwrite=True)
print(json.dumps({"read": t_read, "train": time.perf_counter() - t1}))
'''

SPLINK_PREDICT = SPLINK_COMMON + r'''
linker = Linker(sdf, f"{folder}/splink_model.json", log_level=None)
t1 = time.perf_counter()
pred = linker.inference.predict(threshold_match_probability=0.5)
t2 = time.perf_counter()
clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, 0.5)
t3 = time.perf_counter()
pairs = pred.as_pandas_dataframe()[["unique_id_l", "unique_id_r", "match_probability"]]
pairs.to_csv(f"{folder}/splink_pairs.csv", index=False)
clusters.as_pandas_dataframe()[["cluster_id", "unique_id"]].to_csv(f"{folder}/splink_clusters.csv", index=False)
n_blocked = linker.table_management.compute_blocked_pairs_for_predict().as_pandas_dataframe().shape[0] \
    if "--count" in sys.argv else None
print(json.dumps({"read": t_read, "predict": t2 - t1, "cluster": t3 - t2, "write": time.perf_counter() - t3,
                  "n_pairs_above": len(pairs), "n_blocked": n_blocked}))
'''


def _child(cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> tuple[float, float, str, int]:
    """Run a command in a fresh process (in ``cwd``): wall seconds, its peak resident memory (GB,
    from ``os.wait4``), its stdout, its exit status."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, cwd=cwd, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        text, errors = out.read(), err.read()
    if rc:
        sys.stderr.write(errors[-4000:])
    return wall, usage.ru_maxrss / 1024 / 1024, text, rc


def _train_model(path: Path, n_labels: int) -> dict:
    from skrisk import LearnRisk
    from skrisk.data import block, SimilarityFeatures, PairDataset
    from skrisk.datasets import make_person_table
    from skrisk.matchers import FeatureMatcher
    from skrisk.matching import MatchModel

    t0 = time.perf_counter()
    table, links = make_person_table(20_000, random_state=1)
    cand = block(table, None, true_links=links).pairs
    rng = np.random.default_rng(1)
    pos, neg = np.flatnonzero(cand["label"] == 1), np.flatnonzero(cand["label"] == 0)
    take = np.concatenate([rng.choice(pos, n_labels // 2, replace=False),
                           rng.choice(neg, n_labels - n_labels // 2, replace=False)])
    ds = PairDataset.from_table(table, cand.iloc[np.sort(take)], split="train", name="persons-train")
    frame = ds.to_frame()
    sf = SimilarityFeatures().fit(frame)
    F = sf.transform(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        risk = LearnRisk(FeatureMatcher(random_state=0), cv=3, random_state=0).fit(F, ds.y)
    model = MatchModel(list(table.columns), sf, risk.estimator_, risk_model=risk, task="dedup")
    model.save(path)
    return {"train_labels": int(len(take)), "train_seconds": round(time.perf_counter() - t0, 1)}


def _quality(pred: pd.DataFrame, a: str, b: str, links: pd.DataFrame) -> dict:
    lo = np.minimum(pred[a].astype(str), pred[b].astype(str))
    hi = np.maximum(pred[a].astype(str), pred[b].astype(str))
    got = set(zip(lo, hi))
    truth = set(zip(links["left_id"], links["right_id"]))
    tp = len(got & truth)
    return {"precision": round(tp / max(len(got), 1), 4), "recall": round(tp / max(len(truth), 1), 4),
            "n_predicted": len(got)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="20000,200000,1000000")
    p.add_argument("--labels", type=int, default=500, help="labelled pairs of the skrisk model (default 500)")
    p.add_argument("--chunk-size", type=int, default=None,
                   help="skrisk match --chunk-size (default: none given, skrisk match's own default)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--keep", default=None, help="folder to keep the tables and outputs in (default: temporary)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from skrisk.datasets import make_person_table

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_splink_"))
    work.mkdir(parents=True, exist_ok=True)
    model_path = work / "model.skrisk"
    trained = _train_model(model_path, args.labels)
    print(json.dumps(trained), flush=True)
    env = {"PYTHONPATH": str(ROOT)}
    for n in (int(s) for s in args.sizes.split(",")):
        folder = work / f"n{n}"
        folder.mkdir(exist_ok=True)
        table, links = make_person_table(n, random_state=0)
        table.to_csv(folder / "table.csv")
        row: dict = {"n_records": n, "n_true_pairs": len(links), **trained}
        load0 = os.getloadavg()[0]
        # skrisk match, as a user runs it
        wall, peak, text, rc = _child([sys.executable, "-m", "skrisk.cli", "match", "--model", str(model_path),
                                       "--left", str(folder / "table.csv"), "--out", str(folder / "skrisk"),
                                       "--no-progress",
                                       *(["--chunk-size", str(args.chunk_size)] if args.chunk_size else [])], env)
        row["skrisk"] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc}
        for line in text.splitlines():
            if line.startswith("Timings (s):"):
                row["skrisk"]["stages"] = json.loads(line.split(":", 1)[1])
            if "candidate pairs are matches" in line:
                row["skrisk"]["n_candidates"] = int(line.split(" of ")[1].split(" ")[0])
        if rc == 0:
            m = pd.read_csv(folder / "skrisk" / "matches.csv", dtype=str)
            row["skrisk"].update(_quality(m, "left_id", "right_id", links))
        # Splink: train (unsupervised), then predict + cluster with the trained model
        wall, peak, text, rc = _child([sys.executable, "-c", SPLINK_TRAIN, str(folder)])
        row["splink_train"] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc,
                               **(json.loads(text.strip().splitlines()[-1]) if rc == 0 else {})}
        wall, peak, text, rc = _child([sys.executable, "-c", SPLINK_PREDICT, str(folder)])
        row["splink_predict"] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc,
                                 **(json.loads(text.strip().splitlines()[-1]) if rc == 0 else {})}
        if rc == 0:
            sp_pairs = pd.read_csv(folder / "splink_pairs.csv", dtype=str)
            row["splink_predict"].update(_quality(sp_pairs, "unique_id_l", "unique_id_r", links))
        if row["skrisk"]["rc"] == 0 and rc == 0:
            row["ratio_skrisk_to_splink_predict"] = round(row["skrisk"]["wall_s"] / row["splink_predict"]["wall_s"], 2)
        append_record(out, row, load0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
