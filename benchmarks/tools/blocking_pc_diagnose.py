"""Why the token blocker's pair completeness falls as the table grows (issue #26), and what its
``prefix`` / ``rescore`` parameters buy back.

On a generated person table (:func:`skrisk.datasets.make_person_table`, seed 0) of ``--n``
records: for each parameter set of ``--grid`` the pair completeness, candidates and CPU seconds of
``block(table)`` with that ``tokens`` rule; then, for the true pairs the first set misses, the
share whose records share an index token at all, and (on a sample of ``--sample`` misses, by
brute force) the share whose true partner is among the exact top 10 by cosine of either record.
The private helpers of ``skrisk.data._blocking`` are used on purpose: this tool looks inside the
blocker (it is not a benchmark of the public API).

Usage (from the repository root)::

    python benchmarks/tools/blocking_pc_diagnose.py --n 200000 \
        --grid '[{"prefix": 3, "rescore": 4}, {"prefix": 5, "rescore": 8}]'

Appends one JSON line per parameter set to ``benchmarks/results/speed/blocking_pc.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))
from _speed_record import append_record  # noqa: E402


def _diagnose(t, links, params: dict, res, sample: int) -> dict:
    import skrisk.data._blocking as B

    a = t.index.get_indexer(links.iloc[:, 0])
    b = t.index.get_indexer(links.iloc[:, 1])
    rank = B._id_rank(t)
    truth = B._dedup_codes(a, b, rank, len(t))
    found = B._dedup_codes(t.index.get_indexer(res.pairs.left_id), t.index.get_indexer(res.pairs.right_id), rank, len(t))
    missed = ~np.isin(truth, found)
    (m,) = B._tfidf_records([t], list(t.columns))
    present = m.astype(bool).astype(np.float32)
    df = np.asarray(present.sum(axis=0)).ravel()
    budget = float(params.get("budget", B._DEFAULT_PARAMS["tokens"]["budget"])) * len(t)
    prefix = int(params.get("prefix", B._DEFAULT_PARAMS["tokens"]["prefix"]))
    rare = B._affordable(df, df, budget)
    rk = np.empty(len(df), np.int64)
    rk[np.lexsort((np.arange(len(df)), df + df))] = np.arange(len(df))
    ia = B._index_entries(present, rk, rare, prefix)
    dfi = np.asarray(ia.sum(axis=0)).ravel()
    ia = (ia @ sp.diags(B._affordable(dfi, dfi, 2 * budget).astype(np.float32))).tocsr()
    ia.eliminate_zeros()
    miss = np.flatnonzero(missed)
    share = np.asarray(ia[a[miss]].multiply(ia[b[miss]]).sum(axis=1)).ravel() > 0
    pick = np.random.default_rng(0).choice(miss, min(sample, len(miss)), replace=False)
    in_top10 = []
    for j in pick:
        best = []
        for x, y in ((a[j], b[j]), (b[j], a[j])):
            sims = (m @ m[x].T).toarray().ravel()
            sims[x] = -1
            best.append(int((sims > sims[y]).sum()))
        in_top10.append(min(best) < 10)
    return {"n_missed": int(len(miss)),
            "missed_sharing_an_index_token": round(float(share.mean()), 4) if len(miss) else None,
            "missed_in_exact_top10_sampled": round(float(np.mean(in_top10)), 4) if in_top10 else None,
            "sample": len(pick), "index_tokens_per_record": round(ia.getnnz() / len(t), 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--grid", default='[{"prefix": 3, "rescore": 4}, {"prefix": 5, "rescore": 8}]')
    p.add_argument("--sample", type=int, default=150, help="missed pairs ranked by brute force")
    p.add_argument("--out", default=str(HERE.parent / "results" / "speed" / "blocking_pc.jsonl"))
    args = p.parse_args(argv)
    from skrisk.datasets import make_person_table

    t, links = make_person_table(args.n, random_state=0)
    for params in json.loads(args.grid):
        load0 = os.getloadavg()[0]
        c0 = time.process_time()
        from skrisk.data import block

        res = block(t, None, ("tokens", list(t.columns), params), true_links=links)
        cpu = time.process_time() - c0
        row = {"n_records": args.n, "params": params, "block_cpu_s": round(cpu, 2),
               "pair_completeness": round(res.pair_completeness, 4), "n_candidates": len(res.pairs)}
        row.update(_diagnose(t, links, params, res, args.sample))
        append_record(Path(args.out), row, load0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
