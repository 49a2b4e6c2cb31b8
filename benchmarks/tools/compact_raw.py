"""One-off conversion of the active-learning records to the compact format of issue #20 (kept).

Before issue #20 every round of ``benchmarks/results/al/raw/*.jsonl`` held the whole labelled set
twice (``labelled`` and ``next_labelled``): 68 MB. The compact format (``skrisk.experiments``'s
``run_active_learning``) holds per round the results, the pool positions queried (sorted, as the
first position and the gaps) and, in round 0, the seed set; the labelled set of a round is
rebuilt from them. This script

1. rewrites every record file in that format (a round recorded twice keeps its later record, as
   every reader did), with the machine and day of each round: the records did not store them, so
   the day is the day of the git commit that first held the round and the machine is what the
   tables of that day name (marked as recorded by this conversion);
2. writes ``raw/tables.json``: the title and footer (command, machine, date) of every committed
   ``bench_al.py`` table with the SHA-256 of its numbers, so that ``--report-only`` on unchanged
   records rewrites each table byte for byte;
3. with ``--check``, reruns every table's command with ``--report-only`` on the records into a
   temporary folder and compares the ``*_summary.csv``, ``*_rounds.csv.gz`` and ``*.md`` files with
   the committed ones (PNG files may differ in bytes).

Examples
--------
    python benchmarks/tools/compact_raw.py            # convert (idempotent)
    python benchmarks/tools/compact_raw.py --check    # prove every table regenerates identically
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import io
import json
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks' own modules (_lab)
from _lab import atomic_write_text
from _lab import format_record, read_results, recorded_rounds

ROOT = Path(__file__).resolve().parents[2]
#: What the tables say the runs ran on: 2026-11-23 tables name only the cores and threads
#: (``environment()`` came later), 2026-11-24 tables name the CPU and the libraries too.
_ENV_BY_DAY = {
    "2026-11-23": "x86_64 2 cores, torch threads 1, no GPU",
    "2026-11-24": "x86_64 2 cores, torch threads 1, no GPU; AMD EPYC (family 26, model 2, AVX-512), "
                  "Python 3.11.7, torch 2.13.0+cpu, numpy 2.4.6, scikit-learn 1.9.1, skorch 1.4.0",
}
_MARK = " [not recorded by the run: what the tables of that day name, recorded by benchmarks/tools/compact_raw.py]"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _days_by_round(raw: Path) -> dict[str, dict[tuple, str]]:
    """file name -> {(strategy, seed, round, f1): day of the first commit holding that record}."""
    rel = raw.resolve().relative_to(ROOT).as_posix()
    commits = [ln.split() for ln in _git("log", "--reverse", "--format=%H %ad", "--date=short", "--", rel).split("\n") if ln]
    blobs: dict[str, list[tuple[str, str]]] = {}  # blob -> [(file name, day)]
    for commit, day in commits:
        for ln in _git("ls-tree", commit, f"{rel}/").splitlines():
            meta, name = ln.split("\t")
            if name.endswith(".jsonl"):
                blobs.setdefault(meta.split()[2], []).append((Path(name).name, day))
    out: dict[str, dict[tuple, str]] = {}
    batch = subprocess.run(["git", "cat-file", "--batch"], cwd=ROOT, check=True, capture_output=True,
                           input="".join(f"{b}\n" for b in blobs).encode()).stdout
    pos = 0
    for blob in blobs:
        header_end = batch.index(b"\n", pos)
        size = int(batch[pos:header_end].split()[2])
        text = batch[header_end + 1: header_end + 1 + size]
        pos = header_end + 1 + size + 1
        for raw_line in text.split(b"\n"):
            try:
                rec = json.loads(raw_line)
            except ValueError:
                continue
            key = (rec.get("strategy"), rec.get("seed"), rec.get("round"), rec.get("f1"))
            for name, day in blobs[blob]:
                days = out.setdefault(name, {})
                days[key] = min(days.get(key, day), day)
    return out


def convert_file(path: Path, days: dict[tuple, str]) -> tuple[int, int]:
    """Rewrite one record file in the compact format; returns (bytes before, bytes after)."""
    before = path.stat().st_size
    recs = read_results(path)
    runs = list(dict.fromkeys((r["strategy"], r["seed"]) for r in recs))
    lines, last = [], None
    for strategy, seed in runs:
        dataset = next(r.get("dataset") for r in recs if (r["strategy"], r["seed"]) == (strategy, seed))
        for rec in recorded_rounds(path, strategy, seed, dataset=dataset):
            rec = {k: v for k, v in rec.items() if k != "labelled"}
            if "env" not in rec:
                day = days.get((strategy, seed, rec["round"], rec["f1"]), "unknown")
                rec["env"] = _ENV_BY_DAY.get(day, "unknown") + _MARK
                rec["date"] = day
            prov = (rec.pop("env", None), rec.pop("date", None))
            if prov != last:  # readers carry env and date forward to the next lines
                rec["env"], rec["date"] = prov
                last = prov
            lines.append(format_record(rec))
    atomic_write_text(path, "".join(lines))
    return before, path.stat().st_size


def _bench_tables(tables: Path) -> dict[str, tuple[str, str, str]]:
    """stem -> (title, body, footer) of every committed ``bench_al.py`` table."""
    out = {}
    for md in sorted(tables.glob("*.md")):
        text = md.read_text()
        cut = text.find("\n_command_: `python benchmarks/bench_al.py ")
        if cut < 0:
            continue
        title, _, rest = text.partition("\n")
        body_end = cut - len(title) - 1
        out[md.stem] = (title, rest[:body_end], rest[body_end:])
    return out


def write_provenance(raw: Path, tables: Path) -> int:
    known = {
        stem: {"sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(), "title": title, "footer": footer}
        for stem, (title, body, footer) in _bench_tables(tables).items()
    }
    atomic_write_text(raw / "tables.json", json.dumps(known, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return len(known)


def check(raw: Path, tables: Path) -> int:
    """Rerun every table's command with ``--report-only`` on ``raw`` in a temporary folder and diff."""
    spec = importlib.util.spec_from_file_location("bench_al", ROOT / "benchmarks" / "bench_al.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    failed = 0
    for stem, (_, _, footer) in _bench_tables(tables).items():
        cmd = footer.split("`")[1]
        argv = shlex.split(cmd)[2:]
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(raw, Path(tmp) / "raw", ignore=shutil.ignore_patterns("cache"))
            argv[argv.index("--out") + 1] = tmp
            if "--report-only" not in argv:
                argv.append("--report-only")
            with contextlib.redirect_stdout(io.StringIO()):
                rc = bench.main(argv)
            made = [p.stem for p in Path(tmp).glob("*.md")]  # a table renamed by hand regenerates
            new_stem = made[0] if len(made) == 1 else stem  # under its command's name
            diffs = []
            for suffix in ("_summary.csv", "_rounds.csv.gz", ".md"):
                new, old = Path(tmp) / f"{new_stem}{suffix}", tables / f"{stem}{suffix}"
                if old.exists() and (not new.exists() or new.read_bytes() != old.read_bytes()):
                    diffs.append(f"{stem}{suffix}")
        failed += bool(diffs) or rc != 0
        compared = [s for s in ("_summary.csv", "_rounds.csv.gz", ".md") if (tables / f"{stem}{s}").exists()]
        print(f"{'DIFFERS' if diffs or rc else 'identical'}: {stem} ({', '.join(compared)})"
              + (f" -> {', '.join(diffs)} differ" if diffs else "")
              + (f" [regenerates as {new_stem}]" if new_stem != stem else "")
              + f"\n    {' '.join(shlex.quote(a) for a in ['bench_al.py', *argv])}", flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=str(ROOT / "benchmarks" / "results" / "al"))
    p.add_argument("--check", action="store_true", help="only compare regenerated tables with the committed ones")
    args = p.parse_args(argv)
    tables = Path(args.tables)
    raw = tables / "raw"
    if not args.check:
        total_before = total_after = 0
        days = _days_by_round(raw)
        for path in sorted(raw.glob("*.jsonl")):
            b, a = convert_file(path, days.get(path.name, {}))
            total_before, total_after = total_before + b, total_after + a
        n = write_provenance(raw, tables)
        print(f"converted {len(list(raw.glob('*.jsonl')))} files: {total_before / 1e6:.1f} MB -> "
              f"{total_after / 1e6:.1f} MB; provenance of {n} tables in {raw / 'tables.json'}")
    failed = check(raw, tables)
    print(f"{failed} table(s) differ" if failed else "every table regenerates identically")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
