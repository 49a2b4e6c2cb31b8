"""The default token blocking: candidates, pair completeness and seconds (issue #26).

Blocks, with ``block``'s default rule (one ``tokens`` rule over every shared column), Abt-Buy and
DBLP-Scholar (their labelled matches as the truth) and generated person tables
(:func:`skrisk.datasets.make_person_table`, seed 0, deduplicated) of ``--sizes`` records, each
in a fresh process (peak memory from ``os.wait4``). Run it against the checkout before issue #26
(``PYTHONPATH=/path/to/old``) for the all-pairs top-k it replaced; that code cannot run the large
person tables in reasonable time (its cost grows with the square of the table), so give it the
small sizes only.

Usage (from the repository root; ``SKRISK_DATA`` names the data folder)::

    python benchmarks/bench_blocking.py --sizes 20000,200000,1000000

Appends one JSON line per dataset to ``benchmarks/results/speed/blocking.jsonl`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402
DEFAULT_OUT = HERE / "results" / "speed" / "blocking.jsonl"

CHILD = r'''
import json, sys, time, tempfile
from pathlib import Path
import pandas as pd
from skrisk.data import block
name = sys.argv[1]
if name.startswith("person"):
    n = int(name[len("person"):])
    cache = Path(tempfile.gettempdir()) / f"bench_blocking_{name}"
    if not (cache / "links.csv").exists():
        from skrisk.datasets import make_person_table
        table, links = make_person_table(n, random_state=0)
        cache.mkdir(exist_ok=True)
        table.to_csv(cache / "table.csv"); links.to_csv(cache / "links.csv", index=False)
    table = pd.read_csv(cache / "table.csv", dtype=str, keep_default_na=False, na_values=[""], index_col="id")
    links = pd.read_csv(cache / "links.csv", dtype=str)
    t0 = time.perf_counter()
    res = block(table, None, true_links=links)
else:
    from skrisk.datasets import load_deepmatcher
    ds = load_deepmatcher(name)
    t0 = time.perf_counter()
    res = block(ds.left, ds.right, true_links=ds.pairs[ds.pairs["label"] == 1])
s = res.summary()
print(json.dumps({"n_candidates": s["n_candidates"], "pair_completeness": s["pair_completeness"],
                  "reduction_ratio": s["reduction_ratio"], "seconds": time.perf_counter() - t0,
                  "rules": list(res.rule_sizes)}))
'''


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="abt_buy,dblp_scholar")
    p.add_argument("--sizes", default="20000,200000,1000000", help="person table sizes ('' for none)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    names = [d for d in args.datasets.split(",") if d] + [f"person{s}" for s in args.sizes.split(",") if s]
    for name in names:
        load0 = os.getloadavg()[0]
        with tempfile.TemporaryFile("w+") as fh:
            t0 = time.perf_counter()
            # run outside the repository: `-c` puts the working folder first on the path, and the
            # code measured must be the one PYTHONPATH names
            proc = subprocess.Popen([sys.executable, "-c", CHILD, name], stdout=fh, env=os.environ,
                                    cwd=tempfile.gettempdir())
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            fh.seek(0)
            text = fh.read()
        append_record(out, {"dataset": name, "rc": os.waitstatus_to_exitcode(status),
                            "process_wall_s": round(wall, 2), "peak_gb": round(usage.ru_maxrss / 1024 / 1024, 3),
                            **(json.loads(text.strip().splitlines()[-1]) if text.strip() else {})}, load0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
