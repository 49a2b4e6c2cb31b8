"""The fixed cost of ``skrisk match`` (issue #46): seconds from process start to the start of the
scoring stage (and to the blocking stage, the first), and of the whole run, on a generated
person table.

Each run is a fresh child process (``python -c``) that wraps the scoring loop's ``map_in_order``
to print the wall time since the parent launched it at its first call, then runs
``skrisk.cli.main(["match", ...])`` as the console script does. Reported per run: seconds to the
scoring stage, the run's wall seconds, its stage timings (``Timings (s):``), the time outside the
stages and whether torch was imported.

Usage (from the repository root; a model and a table first, e.g. as ``bench_splink.py`` makes them)::

    OMP_NUM_THREADS=1 python benchmarks/bench_match_start.py --model model.skrisk --table table.csv --repeat 3

Prints one JSON line per run.
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

CHILD = r'''
import os, sys, time
t_launch = float(os.environ["BENCH_T_LAUNCH"])
import skrisk.matching._match as _m
_orig = _m.map_in_order
def _first(*a, **k):
    print("SCORING_START", time.time() - t_launch, flush=True)
    _m.map_in_order = _orig
    return _orig(*a, **k)
_m.map_in_order = _first
_cand = _m._candidates
def _blocking(*a, **k):
    print("BLOCKING_START", time.time() - t_launch, flush=True)
    return _cand(*a, **k)
_m._candidates = _blocking
from skrisk.cli import main
rc = main(sys.argv[1:])
print("TORCH", "torch" in sys.modules, flush=True)
print("WALL", time.time() - t_launch, flush=True)
sys.exit(rc)
'''


def run_once(model: str, table: str, out: str) -> dict:
    env = dict(os.environ)
    env["BENCH_T_LAUNCH"] = repr(time.time())
    proc = subprocess.run([sys.executable, "-c", CHILD, "match", "--model", model, "--left", table,
                           "--out", out, "--no-progress"], env=env, capture_output=True, text=True,
                          cwd=tempfile.gettempdir())  # the skrisk of PYTHONPATH, not of the working folder
    wall = time.time() - float(env["BENCH_T_LAUNCH"])
    row: dict = {"rc": proc.returncode, "process_wall_s": round(wall, 2)}
    for line in proc.stdout.splitlines():
        if line.startswith("BLOCKING_START"):
            row["to_blocking_s"] = round(float(line.split()[1]), 2)
        elif line.startswith("SCORING_START"):
            row["to_scoring_s"] = round(float(line.split()[1]), 2)
        elif line.startswith("TORCH"):
            row["torch_imported"] = line.split()[1] == "True"
        elif line.startswith("Timings (s):"):
            row["stages"] = json.loads(line.split(":", 1)[1])
    if "stages" in row:
        st = row["stages"]
        row["outside_stages_s"] = round(wall - sum(v for k, v in st.items() if k != "total"), 2)
    if proc.returncode:
        row["stderr"] = proc.stderr[-2000:]
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--label", default="", help="a name for the runs in the output (e.g. before / after)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_match_start_") as tmp:
        for i in range(args.repeat):
            row = run_once(args.model, args.table, str(Path(tmp) / f"out{i}"))
            row.update(label=args.label, code=os.environ.get("PYTHONPATH", ""), load=round(os.getloadavg()[0], 2), omp=os.environ.get("OMP_NUM_THREADS", "default"))
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
