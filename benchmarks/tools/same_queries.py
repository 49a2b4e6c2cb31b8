"""Compare the queries of two ``bench_al.py`` runs, batch for batch (issue #28: one risk-sampling core).

Run ``benchmarks/bench_al.py`` once with the old code and once with the new one, on the same machine,
with the same arguments and separate ``--out`` folders (``PYTHONPATH`` selects the code, e.g. the
main checkout and a worktree)::

    for code in /work/main /work/wt/core; do
      PYTHONPATH=$code OMP_NUM_THREADS=1 python $code/benchmarks/bench_al.py --dataset dblp_scholar \\
        --matcher feature --seeds 1 --rounds 4 --seed-size 100 --batch 100 \\
        --strategies risk_pre2w risk --threads 1 --no-progress --out /tmp/q/$(basename $code)/dblp
    done
    python benchmarks/tools/same_queries.py /tmp/q/main /tmp/q/core

Every record file found under both folders' ``raw/`` is compared round by round: the seed set, the
queried pool positions (``batch``), their scores (the risks the strategy returned) and the test F1.
Prints one Markdown table row per file and exits 1 when any round differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks' own modules (_lab)
from _lab import read_results


def compare(before: Path, after: Path) -> tuple[list[str], bool]:
    rows, same_all = [], True
    files = sorted(p.relative_to(before) for p in before.rglob("raw/*.jsonl"))
    for rel in files:
        other = after / rel
        if not other.is_file():
            rows.append(f"| {rel} | missing in {after} | | |")
            same_all = False
            continue
        a, b = read_results(before / rel), read_results(other)
        n = min(len(a), len(b))
        differ = [
            r["round"] for r, s in zip(a[:n], b[:n])
            if any(r.get(k) != s.get(k) for k in ("seed_set", "batch", "scores", "f1"))
        ]
        batches = sum(1 for r in a[:n] if r.get("batch") is not None)
        same = not differ and len(a) == len(b)
        same_all &= same
        verdict = ("identical" if same else f"DIFFER in rounds {differ}" if differ
                   else "identical so far, rounds missing")
        rows.append(f"| {rel.name} | {n} rounds, {batches} batches | {verdict} | {len(a)} / {len(b)} |")
    return rows, same_all


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before", type=Path, help="--out folder (or its parent) of the old code's runs")
    p.add_argument("after", type=Path, help="the same for the new code")
    args = p.parse_args(argv)
    rows, same = compare(args.before, args.after)
    if not rows:
        print(f"no raw/*.jsonl records under {args.before}", file=sys.stderr)
        return 2
    print("| records | compared | seed set, batches, scores, F1 | rounds before / after |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
