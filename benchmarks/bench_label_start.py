"""Seconds from starting ``skrisk label --table`` to its first question (issue #26: within 60 s on a
200,000-record table).

The table is a generated person table (:func:`skrisk.datasets.make_person_table`, seed 0), written
once into ``--work``. ``python -m skrisk.cli label --table ... --session <new folder>`` then runs in
a fresh child process (``PYTHONPATH`` = ``--code``, the code measured) with its console output
timestamped line by line; at the first question the child is answered ``q`` (quit). The record
holds the seconds to the first question, the timestamped lines (which stage took what) and the
child's peak memory (``os.wait4``).

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/bench_label_start.py --n 200000 --work /tmp/label_start
    OMP_NUM_THREADS=1 python benchmarks/bench_label_start.py --n 200000 --work /tmp/label_start --code /work/main

Appends one JSON line per run to ``benchmarks/results/speed/label_start.jsonl`` (``--out``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402

# the console's question: "Same entity? [y]es [n]o ..." (the prompt ends without a newline)
_QUESTION = re.compile(r"Same entity\? \[y\]es")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=200_000, help="records of the table (default 200000)")
    p.add_argument("--work", required=True, help="folder of the table (made once, then reused) and the session")
    p.add_argument("--code", default=str(ROOT), help="repository whose skrisk is measured (default: this one)")
    p.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds")
    p.add_argument("--out", default=str(HERE / "results" / "speed" / "label_start.jsonl"))
    args = p.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    table = work / f"table{args.n}.csv"
    if not table.exists():
        sys.path.insert(0, str(ROOT))
        from skrisk.datasets import make_person_table

        make_person_table(args.n, random_state=0)[0].to_csv(table)
    session = work / f"session{args.n}_{Path(args.code).resolve().name}"
    shutil.rmtree(session, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(Path(args.code).resolve()), "PYTHONUNBUFFERED": "1"}
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    # in --work: ``python -m`` puts its working folder first on sys.path, before PYTHONPATH
    proc = subprocess.Popen([sys.executable, "-m", "skrisk.cli", "label", "--table", str(table), "--session",
                             str(session)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, cwd=work, env=env)
    lines: list[str] = []
    first = None
    pending = ""
    assert proc.stdout is not None and proc.stdin is not None
    while time.perf_counter() - t0 < args.timeout:
        chunk = proc.stdout.read1(4096)  # type: ignore[attr-defined]
        if not chunk:
            break
        pending += chunk.decode("utf-8", "replace")
        *done, pending = pending.split("\n")
        at = time.perf_counter() - t0
        lines += [f"{at:.1f}s {line[:160]}" for line in done if line.strip()]
        if _QUESTION.search(pending) or any(_QUESTION.search(line) for line in done):
            first = at
            lines.append(f"{at:.1f}s {pending.strip()[:160]}")
            proc.stdin.write(b"q\n")
            proc.stdin.flush()
            break
    if first is None:
        proc.kill()
    _, status, usage = os.wait4(proc.pid, 0)
    row = {"n_records": args.n, "measured_code": str(Path(args.code).resolve()),
           "first_question_s": None if first is None else round(first, 2),
           "process_s": round(time.perf_counter() - t0, 2), "peak_gb": round(usage.ru_maxrss / 1024 / 1024, 3),
           "rc": os.waitstatus_to_exitcode(status), "lines": lines[:40]}
    append_record(Path(args.out), row, load0)
    return 0 if first is not None else 1


if __name__ == "__main__":
    raise SystemExit(main())
