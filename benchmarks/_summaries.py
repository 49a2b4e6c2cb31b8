"""Compact summaries of the benchmark records: what the result pages read, and nothing more.

The benchmark scripts write their full records (every round's fields, the pool positions each
query chose, every printed line of a session) to ``raw/`` folders that git ignores; the pages
under ``benchmarks/results/`` are built by ``benchmarks/make_results.py`` from the summaries
this module writes beside them, which are tracked:

- an active-learning folder (``results/al``, ``results/al_rerun``, ...): each table's per-run,
  per-round F1, precision, recall, timings and batch shares as ``<stem>_rounds.csv.gz`` (the
  gzip of the ``<stem>_rounds.csv`` that ``bench_al.py`` writes), and ``runs.csv``: one row per
  raw record (dataset, matcher, strategy, seed, rounds, the dates of its first and last round);
- a session or replay folder of ``results/quality`` (``bench_session.py``): ``records.jsonl.gz``,
  one line per record with the record's top-level fields and only the rounds the reports read
  (:func:`thin_session`): for each audit size the reports tabulate, the first round with an
  estimate from at least that many answers, the rounds the audit-sizing check reaches, the first
  round that advised stopping and the last round; every report reads the same rounds from the
  thinned record as from the full one, so its tables are the same.

Examples
--------
    python benchmarks/_summaries.py al benchmarks/results/al          # raw/ -> runs.csv, *.csv.gz
    python benchmarks/_summaries.py sessions benchmarks/results/quality/sessions RAW_DIR
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import gzip
import io
import json
from pathlib import Path
from typing import Iterator

#: The per-folder summary of session and replay records.
SESSION_SUMMARY = "records.jsonl.gz"
#: The per-folder summary of active-learning runs.
RUNS = "runs.csv"
RUNS_FIELDS = ("file", "dataset", "strategy", "seed", "rounds", "first_date", "last_date")

#: The audit sizes at which ``bench_session.py``'s reports read a run (coverage table, audit
#: sizing, pooled summary), and the half-width the sizing check aims at.
COVERAGE_K = (10, 30, 60, 100, 150, 250, 400)
SIZING_K = (50, 100, 150, 250)
POOLED_K = (60, 150, 400)
SIZING_AIM = 0.1


# --------------------------------------------------------------------------- gzip, deterministic


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed with no time stamp, so that the same data gives the same bytes."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def write_gzip(path: Path, data: bytes) -> Path:
    """Write ``data`` gzip-compressed to ``path`` (atomically: a temporary file renamed)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(gzip_bytes(data))
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------- active learning


def compress_rounds(csv_path: Path) -> Path:
    """Replace ``<stem>_rounds.csv`` by ``<stem>_rounds.csv.gz`` (same bytes once decompressed)."""
    gz = csv_path.with_name(csv_path.name + ".gz")
    write_gzip(gz, csv_path.read_bytes())
    csv_path.unlink()
    return gz


def _jsonl(path: Path) -> Iterator[dict]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def run_row(path: Path) -> dict:
    """The ``runs.csv`` row of one raw record of ``bench_al.py`` (``<dataset>_<matcher>_<strategy>_seed<n>.jsonl``)."""
    recs = list(_jsonl(path))
    dates = [str(r["date"]) for r in recs if r.get("date")]
    first = recs[0] if recs else {}
    return {"file": path.name, "dataset": first.get("dataset", ""), "strategy": first.get("strategy", ""),
            "seed": first.get("seed", ""), "rounds": len(recs),
            # the first round's date: a run is dated by where it started (an undated first round: "")
            "first_date": str(first.get("date") or ""), "last_date": max(dates) if dates else ""}


def write_runs(raw: Path, folder: Path) -> Path:
    """``folder/runs.csv`` from the raw records under ``raw``; rows of records no longer under
    ``raw`` are kept (the raw folder of a clone holds only the runs made there)."""
    rows = {r["file"]: r for r in read_runs(folder)}
    for path in sorted(raw.glob("*_seed*.jsonl")):
        rows[path.name] = run_row(path)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=RUNS_FIELDS, lineterminator="\n")
    w.writeheader()
    for name in sorted(rows):
        w.writerow(rows[name])
    out = folder / RUNS
    out.write_text(buf.getvalue(), encoding="utf-8")
    return out


def read_runs(folder: Path) -> list[dict]:
    """The rows of ``folder/runs.csv`` (none if the file is missing)."""
    path = folder / RUNS
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def summarize_al(folder: Path, raw: Path | None = None) -> list[Path]:
    """Compress every ``<stem>_rounds.csv`` of an active-learning folder and write its ``runs.csv``."""
    raw = folder / "raw" if raw is None else raw
    made = [compress_rounds(p) for p in sorted(folder.glob("*_rounds.csv"))]
    if raw.is_dir():
        made.append(write_runs(raw, folder))
    return made


# --------------------------------------------------------------------------- sessions and replays


def _views(rec: dict) -> list[list[dict]]:
    """The round lists the reports read from ``rec``: its rounds (a session), or one list per
    advice variant it holds (a replay: each variant's fields beside the shared ones; a variant is
    a field of the rounds holding its own stopping advice)."""
    rounds = rec["rounds"]
    if "audit_seed" not in rec or not rounds:
        return [rounds]
    shared = ("round", "n_labels", "n_audit", "truth")
    variants = [k for k, v in rounds[0].items() if isinstance(v, dict) and "stop" in v]
    return [[{**{k: x[k] for k in shared}, **x[v]} for x in rounds] for v in variants]


def _first(rounds: list[dict], pred) -> int | None:
    return next((i for i, x in enumerate(rounds) if pred(x)), None)


def needed_rounds(rounds: list[dict]) -> set[int]:
    """The positions of the rounds of one round list that ``bench_session.py``'s reports read.

    Each report reads the first round that satisfies a condition (an estimate from at least K
    answers, an F1 interval within the aim, advice to stop) or the last round; keeping every such
    first round, in order, keeps each one the first round that satisfies its condition.
    """
    if not rounds:
        return set()
    keep = {len(rounds) - 1}
    stop = _first(rounds, lambda x: x.get("stop"))
    if stop is not None:
        keep.add(stop)
    for k in sorted(set(COVERAGE_K) | set(POOLED_K) | set(SIZING_K)):
        i = _first(rounds, lambda x: x.get("estimate") is not None and x["n_audit"] >= k)
        if i is not None:
            keep.add(i)
    est = [i for i, x in enumerate(rounds) if x.get("estimate") is not None and x["estimate"].get("f1") is not None]
    for k in SIZING_K:
        i = next((i for i in est if rounds[i]["n_audit"] >= k), None)
        if i is None:
            continue
        keep.add(i)
        n = rounds[i]["n_audit"]
        hit = next((j for j in est if rounds[j]["n_audit"] >= n
                    and (rounds[j]["estimate"]["f1_interval"][1] - rounds[j]["estimate"]["f1_interval"][0]) / 2
                    <= SIZING_AIM), None)
        if hit is not None:
            keep.add(hit)
    return keep


#: The fields of a session round that no report reads: the printed lines and their parts.
_UNREAD = ("lines", "stabilizing", "plateau", "threshold_estimate", "stop_text")


def thin_session(rec: dict) -> dict:
    """A session or replay record with only the rounds (and round fields) the reports read."""
    keep: set[int] = set()
    for view in _views(rec):
        keep |= needed_rounds(view)

    def strip(x: dict) -> dict:
        return {k: (strip(v) if isinstance(v, dict) and k not in ("truth", "threshold_truth", "estimate") else v)
                for k, v in x.items() if k not in _UNREAD}

    return {**rec, "rounds": [strip(x) for i, x in enumerate(rec["rounds"]) if i in keep]}


def session_line(name: str, rec: dict) -> str:
    """One line of ``records.jsonl.gz``: the thinned record and the name of its raw file."""
    return json.dumps({"file": name, **thin_session(rec)}, separators=(",", ":"))


def read_session_summary(folder: Path, pattern: str) -> list[dict]:
    """The thinned records of ``folder/records.jsonl.gz`` whose raw file name matches
    ``pattern`` (``*.json``), in the raw files' name order."""
    path = folder / SESSION_SUMMARY
    if not path.is_file():
        return []
    rows = [json.loads(x) for x in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines() if x.strip()]
    rows = [r for r in rows if fnmatch.fnmatchcase(r["file"], pattern)]
    return [{k: v for k, v in r.items() if k != "file"} for r in sorted(rows, key=lambda r: r["file"])]


def add_session_records(folder: Path, named: dict[str, dict]) -> Path:
    """Add (or replace) records in ``folder/records.jsonl.gz``; ``named``: raw file name -> record."""
    path = folder / SESSION_SUMMARY
    lines: dict[str, str] = {}
    if path.is_file():
        for x in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines():
            if x.strip():
                lines[json.loads(x)["file"]] = x
    for name, rec in named.items():
        lines[name] = session_line(name, rec)
    return write_gzip(path, "".join(lines[n] + "\n" for n in sorted(lines)).encode("utf-8"))


def summarize_sessions(folder: Path, raw: Path) -> Path:
    """``folder/records.jsonl.gz`` from every ``*.json`` / ``*.json.gz`` record under ``raw``."""
    named = {}
    for p in sorted(raw.glob("*.json")) + sorted(raw.glob("*.json.gz")):
        data = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        named[p.name.removesuffix(".gz")] = json.loads(data)
    return add_session_records(folder, named)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["al", "sessions"])
    ap.add_argument("folder", type=Path, help="the folder whose summaries to write")
    ap.add_argument("raw", type=Path, nargs="?", default=None, help="its raw records (default: FOLDER/raw)")
    args = ap.parse_args(argv)
    raw = args.folder / "raw" if args.raw is None else args.raw
    if args.kind == "al":
        for p in summarize_al(args.folder, raw):
            print(p)
        return 0
    print(summarize_sessions(args.folder, raw))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
