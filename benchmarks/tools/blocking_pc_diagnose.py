"""Why the token blocker's pair completeness falls as the table grows (issue #26), and what its
``prefix`` / ``rescore`` parameters buy back.

On a generated person table (:func:`skrisk.datasets.make_person_table`, seed 0) of ``--n``
records: for each parameter set of ``--grid`` the pair completeness, candidates and CPU seconds of
``block(table)`` with that ``tokens`` rule; then, for the true pairs the first set misses, the
share whose records share an index token at all, and (on a sample of ``--sample`` misses, by
brute force) the share whose true partner is among the exact top 10 by cosine of either record.
The index tokens are recomputed here from ``block``'s documented rule (public API only; ties
between equally rare tokens may be broken otherwise than inside the blocker, which moved a share by
0.01 at 20,000 records).

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


def _tfidf(t) -> sp.csr_matrix:
    """The blocker's record vectors as ``block``'s docstring defines them: word TF-IDF (sublinear
    tf, smoothed idf, unit rows) of each record's normalised key texts."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    text = t.fillna("").astype(str).apply(lambda c: c.str.strip().str.lower()).agg(" ".join, axis=1)
    return TfidfVectorizer(token_pattern=r"(?u)\b\w+\b", sublinear_tf=True, dtype=np.float32).fit_transform(text)


def _cheapest_fit(cost: np.ndarray, budget: float) -> np.ndarray:
    """Tokens whose pair costs, taken cheapest first, fit in ``budget`` (and cost something)."""
    order = np.argsort(cost, kind="stable")
    keep = np.zeros(len(cost), dtype=bool)
    keep[order[np.cumsum(cost[order]) <= budget]] = True
    return keep & (cost > 0)


def _index_tokens(m: sp.csr_matrix, budget: float, prefix: int) -> sp.csr_matrix:
    """Each record's index tokens as ``block``'s docstring describes them: the tokens whose record
    pairs fit, rarest first, in the budget, plus the record's ``prefix`` rarest tokens; then those
    whose pairs exceed twice the budget are dropped."""
    present = (m > 0).astype(np.float32).tocoo()
    df = np.bincount(present.col, minlength=m.shape[1]).astype(np.float64)
    rare = _cheapest_fit(df * df, budget)
    rank = np.empty(len(df), np.int64)
    rank[np.lexsort((np.arange(len(df)), df))] = np.arange(len(df))
    order = np.lexsort((rank[present.col], present.row))
    row, col = present.row[order], present.col[order]
    first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    pos = np.arange(len(row)) - np.repeat(first, np.diff(np.r_[first, len(row)]))
    sel = (pos < prefix) | rare[col]
    ia = sp.csr_matrix((np.ones(int(sel.sum()), np.float32), (row[sel], col[sel])), shape=m.shape)
    dfi = np.asarray(ia.sum(axis=0)).ravel().astype(np.float64)
    ia = (ia @ sp.diags(_cheapest_fit(dfi * dfi, 2 * budget).astype(np.float32))).tocsr()
    ia.eliminate_zeros()
    return ia


def _diagnose(t, links, params: dict, res, sample: int) -> dict:
    """Of the true pairs ``res`` (block's result) misses: how many share an index token, and (on a
    sample, by brute force) how many have the true partner in either record's exact top 10."""
    pos = {k: i for i, k in enumerate(t.index.astype(str))}
    a = np.array([pos[x] for x in links.iloc[:, 0].astype(str)])
    b = np.array([pos[x] for x in links.iloc[:, 1].astype(str)])
    found = set(zip(res.pairs.left_id.map(pos), res.pairs.right_id.map(pos)))
    missed = np.array([(x, y) not in found and (y, x) not in found for x, y in zip(a, b)])
    m = _tfidf(t)
    ia = _index_tokens(m, float(params.get("budget", 100)) * len(t), int(params.get("prefix", 5)))
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
