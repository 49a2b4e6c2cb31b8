"""The joins of the ``typed`` blocking passes: numpy (skrisk's) against DuckDB (Splink's engine), issue #46.

Both join the same input: for every pass of the person table's inferred column types, one int64
code per record (the tuple of standardised keys, ``-1`` where a key is missing), computed once
by skrisk's key derivation and not timed. Then each engine finds, per pass, every pair of records
sharing a code in blocks of at most ``max_block`` records, and the union of the passes:

``numpy``
    skrisk's own join (sort by code, pairs within each block by offsets), then ``np.unique`` of
    the pair codes.
``duckdb``
    the codes as one long table ``(pass, pos, code)`` registered from pandas, one SQL self-join
    over all passes (block sizes by ``GROUP BY``, ``a.pos < b.pos``), ``SELECT DISTINCT``, the
    result fetched as numpy arrays; with ``--duckdb-threads`` threads.

Both must give the same set of pairs (checked). Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/bench_typed_joins.py --records 200000,1000000 --repeat 3

Appends one JSON line per table size to ``benchmarks/results/speed/typed_joins.jsonl`` (``--out``)
with the command, machine and load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _lab import typed_blocking as tb  # noqa: E402
from _speed_record import append_record  # noqa: E402

DEFAULT_OUT = HERE / "results" / "speed" / "typed_joins.jsonl"


def _pass_codes(n_records: int) -> tuple[list[np.ndarray], list[tuple[str, ...]]]:
    """Each pass's record codes for the messy person table of ``n_records`` (seed 0)."""
    from skrisk.datasets import make_person_table

    table, _ = make_person_table(n_records, messy=True, random_state=0)
    types = tb.table_types(table, None)
    passes = tb.typed_passes(types, list(types))
    cache: dict = {}
    return [tb._pass_codes([tb._key_codes(table, k, types, cache) for k in p]) for p in passes], passes


def _numpy(codes: list[np.ndarray], max_block: int) -> np.ndarray:
    n = len(codes[0])
    parts = [tb._within(c, max_block) for c in codes]
    li = np.concatenate([p[0] for p in parts]).astype(np.int64)
    ri = np.concatenate([p[1] for p in parts]).astype(np.int64)
    return np.unique(li * n + ri)


def _duckdb(codes: list[np.ndarray], max_block: int, threads: int) -> np.ndarray:
    import duckdb
    import pandas as pd

    n = len(codes[0])
    frame = pd.DataFrame({
        "pass": np.repeat(np.arange(len(codes), dtype=np.int32), n),
        "pos": np.tile(np.arange(n, dtype=np.int64), len(codes)),
        "code": np.concatenate(codes),
    })
    con = duckdb.connect()
    con.execute(f"SET threads TO {int(threads)}")
    con.register("keys", frame)
    sql = f"""
        WITH k AS (SELECT pass, pos, code FROM keys WHERE code >= 0),
             ok AS (SELECT pass, code FROM k GROUP BY pass, code HAVING count(*) BETWEEN 2 AND {int(max_block)}),
             kk AS (SELECT k.pass, k.pos, k.code FROM k JOIN ok USING (pass, code))
        SELECT DISTINCT a.pos * {n} + b.pos AS pair
        FROM kk a JOIN kk b ON a.pass = b.pass AND a.code = b.code AND a.pos < b.pos
    """
    out = con.execute(sql).fetchnumpy()["pair"]
    con.close()
    return np.sort(np.asarray(out, dtype=np.int64))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", default="200000", help="person table sizes, comma separated")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each engine (the best is reported)")
    p.add_argument("--duckdb-threads", type=int, default=2)
    p.add_argument("--max-block", type=int, default=20)
    p.add_argument("--out", default=str(DEFAULT_OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    import duckdb

    for n in (int(x) for x in args.records.split(",") if x):
        load0 = os.getloadavg()[0]
        codes, passes = _pass_codes(n)
        times: dict[str, list[float]] = {"numpy": [], "duckdb": []}
        results = {}
        for _ in range(args.repeat):
            for name, fn in (("numpy", lambda: _numpy(codes, args.max_block)),
                             ("duckdb", lambda: _duckdb(codes, args.max_block, args.duckdb_threads))):
                t0 = time.perf_counter()
                results[name] = fn()
                times[name].append(time.perf_counter() - t0)
        same = bool(np.array_equal(results["numpy"], results["duckdb"]))
        append_record(out, {
            "n_records": n, "n_passes": len(passes), "n_pairs": int(len(results["numpy"])), "same_pairs": same,
            "numpy_s": round(min(times["numpy"]), 3), "duckdb_s": round(min(times["duckdb"]), 3),
            "duckdb_threads": args.duckdb_threads, "duckdb_version": duckdb.__version__,
            "numpy_runs_s": [round(t, 3) for t in times["numpy"]],
            "duckdb_runs_s": [round(t, 3) for t in times["duckdb"]],
        }, load0)
        if not same:
            print(f"the engines disagree at {n} records", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
