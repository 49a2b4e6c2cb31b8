"""Similarity features per second (issue #26): the pairwise comparisons at 1 and 2 threads.

Two workloads, each a fixed set of pairs between fixed tables:

``person``
    :func:`skrisk.datasets.make_person_table` (``--records``, seed 0) deduplicated; the pairs are
    the table's candidates of a ``standard`` block on ``postcode`` (the first ``--pairs`` of them):
    short person attributes (names, date, address, city, postcode), all metrics.
``person_typed``
    :func:`skrisk.datasets.make_person_table` with ``messy=True`` (raw exports: dates in three
    formats, phones in several layouts, ``NA`` cities), deduplicated with the column types inferred
    (``SimilarityFeatures(types="auto")``: standardised values, the typed comparisons); the pairs
    are the table's candidates of the ``typed`` blocking rule of those types, the default path of
    a person table (the first ``--pairs`` of them).
``dblp``
    DBLP-Scholar's two tables; the pairs are its labelled pairs plus random pairs between the
    tables (seeded) up to ``--pairs``, as in ``bench_scale.py``: titles, authors, venue, year, all
    metrics.

For each workload and each thread count in ``--workers`` it reports the seconds of ``encode``
(every distinct value of each table normalised, tokenised and hashed once) and of the pairwise
comparisons in chunks of ``--chunk-size`` pairs (``transform_encoded``), and pairs per second with
and without the encoding. Run against a checkout without ``SimilarityFeatures.encode`` (the
code before issue #26), it times what that code did for a chunk instead: ``transform`` of the
chunk's pair frame, and reports it as ``comparisons`` with ``encode`` 0.

Usage (from the repository root; ``SKRISK_DATA`` names the data folder)::

    OMP_NUM_THREADS=1 python benchmarks/bench_features.py --workers 1,2
    OMP_NUM_THREADS=1 python benchmarks/bench_features.py --workloads person_typed --workers 1,2
    OMP_NUM_THREADS=1 python benchmarks/bench_features.py --workloads person_typed --workers 2 --parallel chunks

Appends one JSON line per workload and thread count to
``benchmarks/results/speed/features.jsonl`` (``--out``) with the command, machine and load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402
DEFAULT_OUT = HERE / "results" / "speed" / "features.jsonl"


def _person(n_records: int, n_pairs: int):
    """The person table and its pairs; cached as CSV in the temporary folder, so that a run against
    a checkout without ``make_person_table`` (the code before issue #26) reads the same data."""
    import tempfile

    cache = Path(tempfile.gettempdir()) / f"bench_features_person_{n_records}_{n_pairs}"
    if not (cache / "pairs.csv").exists():
        from skrisk.data import block
        from skrisk.datasets import make_person_table

        table, _ = make_person_table(n_records, random_state=0)
        pairs = block(table, None, ("standard", "postcode")).pairs.iloc[:n_pairs]
        cache.mkdir(parents=True, exist_ok=True)
        table.to_csv(cache / "table.csv")
        pairs.to_csv(cache / "pairs.csv", index=False)
    table = pd.read_csv(cache / "table.csv", dtype=str, keep_default_na=False, na_values=[""], index_col="id")
    pairs = pd.read_csv(cache / "pairs.csv", dtype=str)
    return table, None, pairs


def _person_typed(n_records: int, n_pairs: int):
    """The messy person table, its inferred column types and its typed-blocking candidates."""
    from skrisk.data import SimilarityFeatures, block
    from skrisk.datasets import make_person_table

    table, _ = make_person_table(n_records, messy=True, random_state=0)
    table.index = table.index.astype(str)
    sample = table.iloc[:20000]
    frame = pd.DataFrame({**{f"left_{a}": sample[a].to_numpy(dtype=object) for a in table.columns},
                          **{f"right_{a}": sample[a].to_numpy(dtype=object)[::-1] for a in table.columns}})
    types = SimilarityFeatures(types="auto").fit(frame).column_types_
    pairs = block(table, None, [("typed", None, {"types": types})]).pairs.iloc[:n_pairs]
    return table, None, pairs[["left_id", "right_id"]], types


def _dblp(n_pairs: int):
    from skrisk.datasets import load_deepmatcher

    ds = load_deepmatcher("dblp_scholar")
    pairs = ds.pairs[["left_id", "right_id"]].astype(str)
    rng = np.random.default_rng(0)
    extra = n_pairs - len(pairs)
    if extra > 0:
        li = rng.integers(len(ds.left), size=extra)
        ri = rng.integers(len(ds.right), size=extra)
        pairs = pd.concat([pairs, pd.DataFrame({"left_id": ds.left.index.astype(str)[li],
                                                "right_id": ds.right.index.astype(str)[ri]})],
                          ignore_index=True)
    return ds.left, ds.right, pairs.iloc[:n_pairs]


def _run(left: pd.DataFrame, right: pd.DataFrame, pairs: pd.DataFrame, types: object = None, *, workers: int,
         chunk: int, chunk_threads: bool = False) -> dict:
    from skrisk.data import SimilarityFeatures

    left = left.copy()
    left.index = left.index.astype(str)
    right = left if right is None else right.copy()
    right.index = right.index.astype(str)
    lpos = left.index.get_indexer(pairs["left_id"].astype(str))
    rpos = right.index.get_indexer(pairs["right_id"].astype(str))
    attrs = [str(c) for c in left.columns]

    def frame(lp, rp):
        return pd.DataFrame({**{f"left_{a}": left[a].to_numpy(dtype=object)[lp] for a in attrs},
                             **{f"right_{a}": right[a].to_numpy(dtype=object)[rp] for a in attrs}})

    sf = SimilarityFeatures(n_jobs=workers, **({} if types is None else {"types": types}))
    sf.fit(frame(lpos[:20000], rpos[:20000]))
    t0 = time.perf_counter()
    fast = hasattr(sf, "encode")
    if fast:
        enc_l = sf.encode(left)
        enc_r = enc_l if right is left else sf.encode(right)
    t_encode = time.perf_counter() - t0
    checksum = 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    if chunk_threads and fast:  # as skrisk match scores: chunks side by side, each on one thread
        from concurrent.futures import ThreadPoolExecutor

        sf.set_params(n_jobs=None)

        def one(s: int) -> float:
            F = sf.transform_encoded(enc_l, enc_r, lpos[s:s + chunk], rpos[s:s + chunk])
            return float(np.asarray(F, dtype=np.float64).sum())

        with ThreadPoolExecutor(workers) as pool:
            checksum = sum(pool.map(one, range(0, len(pairs), chunk)))
    else:
        for s in range(0, len(pairs), chunk):
            lp, rp = lpos[s:s + chunk], rpos[s:s + chunk]
            F = sf.transform_encoded(enc_l, enc_r, lp, rp) if fast else sf.transform(frame(lp, rp))
            checksum += float(np.asarray(F, dtype=np.float64).sum())
    t_pairs, c_pairs = time.perf_counter() - t0, time.process_time() - c0
    n = len(pairs)
    return {"path": ("encode+transform_encoded" if fast else "transform(pair frame)")
            + (", chunks on threads" if chunk_threads and fast else ""),
            "n_pairs": n, "n_records": len(left) + (0 if right is left else len(right)),
            "n_features": len(sf.get_feature_names_out()), "workers": workers,
            "encode_s": round(t_encode, 3), "comparisons_s": round(t_pairs, 3),
            "comparisons_cpu_s": round(c_pairs, 3),
            "pairs_per_s_comparisons": round(n / t_pairs), "pairs_per_s_with_encode": round(n / (t_encode + t_pairs)),
            "checksum": checksum}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workloads", default="person,dblp", help="person, person_typed and/or dblp")
    p.add_argument("--workers", default="1,2")
    p.add_argument("--records", type=int, default=200_000, help="person table size (default 200,000)")
    p.add_argument("--pairs", type=int, default=1_000_000, help="pairs per workload (default 1,000,000)")
    p.add_argument("--chunk-size", type=int, default=100_000)
    p.add_argument("--parallel", choices=("metrics", "chunks"), default="metrics",
                   help="how --workers threads share the work: within each metric (SimilarityFeatures(n_jobs=)), "
                        "or chunks of pairs side by side, each on one thread (as skrisk match scores)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.workloads.split(","):
        data = {"person": lambda: _person(args.records, args.pairs),
                "person_typed": lambda: _person_typed(args.records, args.pairs),
                "dblp": lambda: _dblp(args.pairs)}[name]()
        for w in (int(x) for x in args.workers.split(",")):
            load0 = os.getloadavg()[0]
            append_record(out, {"workload": name, **_run(*data, workers=w, chunk=args.chunk_size,
                                                          chunk_threads=args.parallel == "chunks")}, load0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
