"""``match`` on a Dask LocalCluster from a Parquet folder, step by step (issue #51, item 4).

A generated person table (``make_person_table``; above a million records, blocks of a million
with their own seeds and id prefixes, the duplicates within each block) is written once as a
Parquet folder of ``--partition`` records a file in ``--work``, with a model trained on typed
features (``bench_splink._train_model(..., types="auto")``: the ``typed`` rule, keys shuffled on
the cluster). Then, in this process, a ``LocalCluster`` of ``--workers`` processes (one thread
each) matches the folder (``match(model, folder, client=client)``: the workers read it), while

- Dask's task stream records every task's compute and transfer time, summed per step (the
  function: reading, checking, keys, buckets, blocking, joining, scoring) and per worker; the
  shuffles' own cost is the transfers between workers plus picking the buckets out (getitem);
- every 0.2 s the resident memory of the client (this process) and of each worker is sampled.

Appends one JSON line to ``--out`` (default ``benchmarks/results/speed/dask_match.jsonl``): wall
time, the match's timings, per-step and per-worker seconds, the shuffle's share (the bucket
tasks and the transfers), pairs per second per worker, peak memory per process, candidates,
matches and the precision/recall against the generator's links.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/bench_dask_match.py --n 1000000 --work /tmp/dask_match --workers 2
    OMP_NUM_THREADS=1 python benchmarks/bench_dask_match.py --n 10000000 --work /tmp/dask_match --workers 2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402
from bench_splink import _quality, _train_model  # noqa: E402

_BLOCK = 1_000_000


def _write_table(n: int, folder: Path, per_file: int) -> pd.DataFrame:
    """The table as Parquet files of ``per_file`` records (written once); its true links."""
    from skrisk.datasets import make_person_table

    links_path = folder.parent / f"{folder.name}_links.parquet"
    if links_path.exists():
        return pd.read_parquet(links_path)
    folder.mkdir(parents=True, exist_ok=True)
    links, k = [], 0
    for block, start in enumerate(range(0, n, _BLOCK)):
        size = min(_BLOCK, n - start)
        table, lk = make_person_table(size, random_state=block)
        if n > _BLOCK:  # ids unique over the blocks
            prefix = f"b{block:03d}-"
            table.index = prefix + table.index.astype(str)
            lk = lk.assign(left_id=prefix + lk["left_id"].astype(str), right_id=prefix + lk["right_id"].astype(str))
        links.append(lk[["left_id", "right_id"]])
        table = table.rename_axis("id").reset_index()
        for lo in range(0, len(table), per_file):
            table.iloc[lo:lo + per_file].to_parquet(folder / f"part.{k:05d}.parquet", index=False)
            k += 1
        del table
    out = pd.concat(links, ignore_index=True)
    out.to_parquet(links_path)
    return out


class _Memory(threading.Thread):
    """Peak resident memory (GB) of this process and of each worker process, every 0.2 s."""

    def __init__(self, pids: dict[str, int]) -> None:
        super().__init__(daemon=True)
        import psutil

        self.procs = {"client": psutil.Process(os.getpid())}
        self.procs.update({addr: psutil.Process(pid) for addr, pid in pids.items()})
        self.peak = dict.fromkeys(self.procs, 0.0)
        self.total = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            now = 0.0
            for name, p in self.procs.items():
                try:
                    rss = p.memory_info().rss / 2**30
                except Exception:  # a worker restarted: its process is gone
                    continue
                self.peak[name] = max(self.peak[name], rss)
                now += rss
            self.total = max(self.total, now)
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--work", required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--partition", type=int, default=250_000, help="records per Parquet file")
    p.add_argument("--chunk-size", type=int, default=50_000)
    p.add_argument("--out", default=str(HERE / "results" / "speed" / "dask_match.jsonl"))
    args = p.parse_args(argv)

    import distributed
    from dask.utils import key_split
    from distributed import Client, LocalCluster, get_task_stream

    from skrisk.matching import load_model, match

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model_path = work / "model_auto.skrisk"
    if not model_path.exists():
        print(json.dumps(_train_model(model_path, 500, types="auto")), flush=True)
    folder = work / f"table{args.n}_{args.partition}"
    t0 = time.perf_counter()
    links = _write_table(args.n, folder, args.partition)
    print(f"table ready in {time.perf_counter() - t0:.1f} s", flush=True)
    model = load_model(model_path)
    load0 = os.getloadavg()[0]
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        memory = _Memory(client.run(os.getpid))
        memory.start()
        tick = time.perf_counter()
        with get_task_stream(client) as stream:
            result = match(model, str(folder), client=client, chunk_size=args.chunk_size, progress=False)
        wall = time.perf_counter() - tick
        memory.stop.set()
        memory.join()
        tasks = stream.data
    steps: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    longest: dict[str, float] = defaultdict(float)
    per_worker: dict[str, float] = defaultdict(float)
    transfer = 0.0
    for t in tasks:
        step = key_split(t["key"])
        for ss in t["startstops"]:
            d = ss["stop"] - ss["start"]
            if ss["action"] == "compute":
                steps[step] += d
                count[step] += 1
                longest[step] = max(longest[step], d)
                per_worker[t["worker"]] += d
            elif ss["action"] == "transfer":
                transfer += d
    score_s = sum(v for k, v in steps.items() if "score_bucket" in k)
    matches = result.matches
    row = {
        "n_records": args.n, "workers": args.workers, "partition": args.partition, "chunk_size": args.chunk_size,
        "wall_s": round(wall, 2), "timings": {k: round(v, 2) for k, v in result.timings.items()},
        "n_candidates": int(result.n_candidates), "n_matches": int(len(matches)),
        "steps_s": {k: round(v, 2) for k, v in sorted(steps.items())},
        "tasks": dict(sorted(count.items())), "longest_task_s": {k: round(v, 2) for k, v in sorted(longest.items())},
        "per_worker_compute_s": {k: round(v, 2) for k, v in per_worker.items()},
        "transfer_s": round(transfer, 2),
        # the shuffles' own cost: moving the buckets between workers and picking them out
        "shuffle_s": round(transfer + steps.get("getitem", 0.0), 2),
        "scoring_pairs_per_s_per_worker": round(result.n_candidates / score_s, 0) if score_s else None,
        "peak_gb": {k if k == "client" else f"worker{i}": round(v, 3)
                    for i, (k, v) in enumerate(memory.peak.items())},
        "peak_sum_gb": round(memory.total, 3),
        "dask": distributed.__version__,
    }
    row.update(_quality(matches[["left_id", "right_id"]].astype(str), "left_id", "right_id", links))
    append_record(Path(args.out), row, load0)
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
