"""Benchmark large pools (issue #19): stream_query in bounded memory, and dask_query per worker count.

Protocol: DBLP-Scholar's tables (2,616 x 64,263 records). :class:`~skrisk.data.SimilarityFeatures`
(all metrics) is fitted on the ``train`` split's pairs; the matcher (``FeatureMatcher``, a random
forest) is fitted on |L| = 100 labelled pairs (a stratified, seeded sample of ``train``);
:class:`~skrisk.LearnRisk` is fitted around it (``cv="prefit"``) with the ``valid`` split as its
ranking pairs. The pool is random ``(left_id, right_id)`` pairs of the two tables, generated chunk
by chunk from a seed (chunk ``k`` from ``RandomState(seed + k)``), so a pool of any size is never
held in memory: the same pairs for every chunk size, worker count or partitioning.

``--stream-pairs N[,N...]``: one :func:`skrisk.pools.stream_query` per size (``n_instances = 100``,
``preselect = 2``), its phases (scoring, top-k merge, weights, kernel), pairs per second and the
process's peak resident memory (``ru_maxrss``, which includes the tables and the models; the
RSS before the query is recorded beside it).

``--dask-workers 1,2``: for each count, a ``LocalCluster(n_workers=k, threads_per_worker=1,
processes=True)`` on 127.0.0.1; the workers import skrisk and receive the scorer in a warm-up
query (not timed); then :func:`skrisk.pools.dask_query` over ``--dask-pairs`` pairs in
``--partitions`` partitions that the workers generate themselves (``dask.dataframe.from_map``).
Reported: wall time, pairs per second, the mean per-partition cost (worker seconds per partition
and per pair), and the extrapolation ``time(N) = N / (pairs per second per worker x workers)`` to
100M and 1B pairs, an estimate that assumes the work per pair stays the same and the client's
merge stays small (it receives ``n_partitions x 2 b`` candidates).

Usage (from the repository root; on a shared machine run it with ``nice`` and one thread)::

    SKRISK_DATA=../shared/data nice -n 10 python benchmarks/bench_pools.py --stream-pairs 1000000
    SKRISK_DATA=../shared/data nice -n 10 python benchmarks/bench_pools.py --dask-workers 1,2 \\
        --dask-pairs 400000 --partitions 8

Appends one JSON line per measurement to ``benchmarks/results/pools/pools_bench.jsonl``
(``--out``), with the machine, the load average before and after, and the command.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)

OUT = HERE / "results" / "pools" / "pools_bench.jsonl"


def _rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_rss_mb() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:  # pragma: no cover - not Linux
        pass
    return float("nan")


def setup(dataset: str = "dblp_scholar", n_labelled: int = 100, seed: int = 0) -> dict[str, Any]:
    """Tables, fitted models, the labelled pairs and the scorer (timed separately)."""
    from skrisk import LearnRisk
    from _lab import stratified_choice
    from skrisk.data import SimilarityFeatures
    from skrisk.datasets import load_deepmatcher
    from skrisk.matchers import FeatureMatcher
    from skrisk.pools import ChunkScorer

    t = time.perf_counter()
    ds = load_deepmatcher(dataset)
    train, valid = ds.split("train"), ds.split("valid")
    sf = SimilarityFeatures().fit(train.to_frame())
    rng = np.random.RandomState(seed)
    y = train.y
    pos = stratified_choice(y, lambda cls, n: max(1, int(round(n_labelled * n / len(y)))), rng)
    lab = train.subset(pos)
    F_lab = sf.transform(lab.to_frame()).astype(np.float64)
    matcher = FeatureMatcher(random_state=seed).fit(F_lab, lab.y)
    F_valid = sf.transform(valid.to_frame()).astype(np.float64)
    risk = LearnRisk(matcher, cv="prefit", random_state=seed).fit(F_lab, lab.y, X_valid=F_valid,
                                                                  y_valid=valid.y)
    scorer = ChunkScorer(ds.left, ds.right, features=sf, matcher=matcher, risk_model=risk)
    return {
        "scorer": scorer, "labelled": lab.pairs[["left_id", "right_id"]],
        "left_ids": ds.left.index.to_numpy(dtype=object),
        "right_ids": ds.right.index.to_numpy(dtype=object),
        "setup_s": time.perf_counter() - t, "dataset": dataset, "n_labelled": len(pos),
        "n_features": int(len(sf.get_feature_names_out())),
    }


def random_chunk(
    number: int, size: int, left_ids: np.ndarray, right_ids: np.ndarray, seed: int
) -> pd.DataFrame:
    """Chunk ``number`` of the random pool: ``size`` pairs from ``RandomState(seed + number)``."""
    rng = np.random.RandomState(seed + number)
    return pd.DataFrame({"left_id": left_ids[rng.randint(len(left_ids), size=size)],
                         "right_id": right_ids[rng.randint(len(right_ids), size=size)]})


def random_chunks(n_pairs: int, size: int, left_ids: np.ndarray, right_ids: np.ndarray,
                  seed: int) -> Iterator[pd.DataFrame]:
    for number, start in enumerate(range(0, n_pairs, size)):
        yield random_chunk(number, min(size, n_pairs - start), left_ids, right_ids, seed)


def run_stream(env: dict[str, Any], n_pairs: int, *, chunk_size: int = 100_000, n_instances: int = 100,
               seed: int = 0, progress: bool = False) -> dict[str, Any]:
    """One stream_query over ``n_pairs`` generated pairs: timings, throughput, peak memory."""
    from skrisk.pools import PairSource, stream_query

    rss_before = _current_rss_mb()
    source = PairSource(lambda: random_chunks(n_pairs, chunk_size, env["left_ids"], env["right_ids"], seed),
                        name=f"random pool of {n_pairs} pairs")
    t = time.perf_counter()
    q = stream_query(env["scorer"], source, labelled=env["labelled"], n_instances=n_instances,
                     chunk_size=chunk_size, random_state=seed, progress=progress)
    wall = time.perf_counter() - t
    return {
        "mode": "stream", "n_pairs": n_pairs, "chunk_size": chunk_size, "n_instances": n_instances,
        "wall_s": wall, "pairs_per_s": n_pairs / wall, "timings": q.timings,
        "n_candidates": q.n_candidates, "rss_before_query_mb": rss_before, "peak_rss_mb": _rss_mb(),
        "batch_head": q.pairs.head(5).to_numpy().tolist(),
    }


def run_dask(env: dict[str, Any], workers: int, n_pairs: int, n_partitions: int, *,
             chunk_size: int = 100_000, n_instances: int = 100, seed: int = 0) -> dict[str, Any]:
    """dask_query over ``n_pairs`` generated pairs on a LocalCluster of ``workers`` processes."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from skrisk.pools import dask_query

    size = -(-n_pairs // n_partitions)
    sizes = [min(size, n_pairs - k * size) for k in range(n_partitions)]
    left_ids, right_ids = env["left_ids"], env["right_ids"]

    def frame(n_parts: int, parts_sizes: list[int]) -> Any:
        return dd.from_map(random_chunk, list(range(n_parts)), parts_sizes, left_ids=left_ids,
                           right_ids=right_ids, seed=seed,
                           meta=pd.DataFrame({"left_id": pd.Series(dtype=object),
                                              "right_id": pd.Series(dtype=object)}),
                           enforce_metadata=False)

    t = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        start_s = time.perf_counter() - t
        t = time.perf_counter()  # warm-up: imports on the workers, the scorer sent (not timed)
        dask_query(env["scorer"], frame(workers, [2_000] * workers), labelled=env["labelled"],
                   n_instances=n_instances, random_state=seed, client=client, progress=False)
        warm_s = time.perf_counter() - t
        t = time.perf_counter()
        q = dask_query(env["scorer"], frame(n_partitions, sizes), labelled=env["labelled"],
                       n_instances=n_instances, chunk_size=chunk_size, random_state=seed, client=client,
                       progress=False)
        wall = time.perf_counter() - t
    worker_s = q.timings["partition_seconds"]
    per_worker = n_pairs / worker_s  # pairs per worker-second
    out = {
        "mode": "dask", "workers": workers, "n_pairs": n_pairs, "n_partitions": n_partitions,
        "chunk_size": chunk_size, "n_instances": n_instances, "wall_s": wall,
        "pairs_per_s": n_pairs / wall, "pairs_per_s_per_worker": per_worker,
        "partition_s_mean": worker_s / n_partitions, "us_per_pair_on_a_worker": 1e6 * worker_s / n_pairs,
        "timings": q.timings, "cluster_start_s": start_s, "warm_up_s": warm_s,
        "batch_head": q.pairs.head(5).to_numpy().tolist(),
    }
    for label, n in (("100M", 10**8), ("1B", 10**9)):
        out[f"estimate_{label}_s_per_worker_count"] = {
            str(k): n / (per_worker * k) for k in (1, 2, 8, 32, 128)
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="dblp_scholar")
    parser.add_argument("--stream-pairs", default="", help="comma-separated pool sizes for stream_query")
    parser.add_argument("--chunk-size", type=int, default=100_000)
    parser.add_argument("--dask-workers", default="", help="comma-separated worker counts, e.g. 1,2")
    parser.add_argument("--dask-pairs", type=int, default=400_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--n-instances", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of this process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    env = setup(args.dataset, seed=args.seed)
    common = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [sys.executable.split("/")[-1], *sys.argv]),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}",
        "dataset": env["dataset"], "n_labelled": env["n_labelled"], "n_features": env["n_features"],
        "setup_s": env["setup_s"], "threads": args.threads,
    }
    runs: list[dict[str, Any]] = []
    for n in [int(s) for s in args.stream_pairs.split(",") if s]:
        load = os.getloadavg()
        r = run_stream(env, n, chunk_size=args.chunk_size, n_instances=args.n_instances, seed=args.seed,
                       progress=args.progress)
        runs.append({**common, **r, "loadavg_before": load, "loadavg_after": os.getloadavg()})
        print(json.dumps(runs[-1]), flush=True)
    for k in [int(s) for s in args.dask_workers.split(",") if s]:
        load = os.getloadavg()
        r = run_dask(env, k, args.dask_pairs, args.partitions, chunk_size=args.chunk_size,
                     n_instances=args.n_instances, seed=args.seed)
        runs.append({**common, **r, "loadavg_before": load, "loadavg_after": os.getloadavg()})
        print(json.dumps(runs[-1]), flush=True)
    if runs:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as fh:
            for r in runs:
                fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
