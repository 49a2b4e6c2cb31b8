"""Peak memory and stage timings of ``skrisk match`` alone on a generated person table (issue #26,
item 3: a pipeline whose memory does not grow with the table).

The table (:func:`skrisk.datasets.make_person_table`, seed 0) and the model (trained as in
``bench_splink.py``: 500 labels of another generated table) are written once into ``--work`` and
reused; then ``python -m skrisk.cli match ... --no-progress`` runs in a fresh child process whose
wall time and peak resident memory come from ``os.wait4``. ``--code`` picks the code measured
(the child's ``PYTHONPATH``), so the code before a change is measured with the same command.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/bench_match_memory.py --n 200000 --work /tmp/match_mem
    OMP_NUM_THREADS=1 python benchmarks/bench_match_memory.py --n 200000 --work /tmp/match_mem --code /work/main
    OMP_NUM_THREADS=1 python benchmarks/bench_match_memory.py --n 200000 --work /tmp/match_mem --workers 2
    OMP_NUM_THREADS=1 python benchmarks/bench_match_memory.py --n 1000000 --work /tmp/match_mem --types auto --workers 2

``--workers N`` runs ``skrisk match --workers N`` (a Dask LocalCluster of N processes): the
peak memory is then sampled over the whole process tree (``peak_gb``: the largest sum of the
processes' resident memory; ``peak_client_gb`` and ``peak_worker_gb``: the largest single
client and worker process), every 0.2 s. ``--types auto`` trains the model on typed features:
its blocking is the ``typed`` rule of person tables, which ``--workers`` runs by shuffling keys
on the cluster (no record gathered on the client).

Appends one JSON line per run to ``benchmarks/results/speed/match_memory.jsonl`` (``--out``).
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
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402
from bench_splink import _child, _quality, _train_model  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=200_000, help="records of the table (default 200000)")
    p.add_argument("--chunk-size", type=int, default=50_000, help="skrisk match --chunk-size (default: its default)")
    p.add_argument("--work", required=True, help="folder of the table and model (made once, then reused)")
    p.add_argument("--code", default=str(ROOT), help="repository whose skrisk is measured (default: this one)")
    p.add_argument("--workers", type=int, default=None, help="skrisk match --workers N (default: one machine)")
    p.add_argument("--types", default=None, choices=["auto"],
                   help="train the model on typed features (types='auto': the typed blocking of person tables)")
    p.add_argument("--out", default=str(HERE / "results" / "speed" / "match_memory.jsonl"))
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import pandas as pd

    from skrisk.datasets import make_person_table

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model_path = work / ("model.skrisk" if args.types is None else f"model_{args.types}.skrisk")
    table_path = work / f"table{args.n}.csv"
    if not model_path.exists():
        print(json.dumps(_train_model(model_path, 500, types=args.types)), flush=True)
    table, links = make_person_table(args.n, random_state=0)
    if not table_path.exists():
        table.to_csv(table_path)
    # in --work: ``python -m`` puts its working folder first on sys.path, before PYTHONPATH
    env = {"PYTHONPATH": str(Path(args.code).resolve())}
    *_, where, _ = _child([sys.executable, "-c", "import skrisk; print(skrisk.__file__)"], env, cwd=work)
    load0 = os.getloadavg()[0]
    out_dir = work / f"out{args.n}_{Path(args.code).resolve().name}_{args.chunk_size}_{args.workers or 0}_{args.types}"
    cmd = [sys.executable, "-m", "skrisk.cli", "match", "--model", str(model_path), "--left", str(table_path),
           "--out", str(out_dir), "--no-progress", "--chunk-size", str(args.chunk_size)]
    row: dict = {"n_records": args.n, "chunk_size": args.chunk_size, "types": args.types, "measured_code": str(Path(args.code).resolve()),
                 "measured_skrisk": where.strip()}
    if args.workers is None:
        wall, peak, text, rc = _child(cmd, env, cwd=work)
        row.update({"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc})
    else:
        wall, peaks, text, rc = _tree_child(cmd + ["--workers", str(args.workers)], env, work)
        row.update({"workers": args.workers, "wall_s": round(wall, 2), **peaks, "rc": rc})
    for line in text.splitlines():
        if line.startswith("Timings (s):"):
            row["stages"] = json.loads(line.split(":", 1)[1])
        if "candidate pairs are matches" in line:
            row["n_candidates"] = int(line.split(" of ")[1].split(" ")[0])
    if rc == 0:
        row.update(_quality(pd.read_csv(out_dir / "matches.csv", dtype=str), "left_id", "right_id", links))
    append_record(Path(args.out), row, load0)
    return rc


def _tree_child(cmd: list[str], env: dict, cwd: Path) -> tuple[float, dict, str, int]:
    """Run a command in a fresh process: wall seconds, the peak resident memory of its process
    tree (GB: the sum, the client, the largest other process), sampled every 0.2 s; its stdout
    and exit status."""
    import psutil

    peaks = {"peak_gb": 0.0, "peak_client_gb": 0.0, "peak_worker_gb": 0.0}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, cwd=cwd, env={**os.environ, **env})
        top = psutil.Process(proc.pid)
        while True:
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            try:
                rss = {p.pid: p.memory_info().rss / 2**30 for p in [top, *top.children(recursive=True)]}
            except psutil.Error:
                rss = {}
            if rss:
                peaks["peak_gb"] = max(peaks["peak_gb"], sum(rss.values()))
                peaks["peak_client_gb"] = max(peaks["peak_client_gb"], rss.get(proc.pid, 0.0))
                others = [v for k, v in rss.items() if k != proc.pid]
                peaks["peak_worker_gb"] = max([peaks["peak_worker_gb"], *others])
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        text, errors = out.read(), err.read()
    if rc:
        sys.stderr.write(errors[-4000:])
    return wall, {k: round(v, 3) for k, v in peaks.items()}, text, rc


if __name__ == "__main__":
    raise SystemExit(main())
