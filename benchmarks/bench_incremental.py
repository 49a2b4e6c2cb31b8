"""Incremental ``skrisk match --entities``: time, peak memory and agreement with a full re-run.

A generated person table (:func:`skrisk.datasets.make_person_table`, seed 0) of ``--n + --new``
records is split into the known records (the first ``--n`` rows) and the new ones (the last
``--new``: their own duplicates and duplicates of known records). The model is trained as in
``bench_splink.py`` (500 labels of another generated table). Each step is a fresh
``python -m skrisk.cli match`` process, its wall time and peak resident memory from ``os.wait4``:

1. a full run on the known records (which writes the blocking index);
2. the incremental run of the new records against it, ``--merge report`` and ``--merge apply``;
3. a full re-run of all the records.

The entities of each incremental run are compared with the re-run's by pairwise F1 (the pairs
of records in one entity), and the known records whose entity id changed are counted.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/bench_incremental.py --n 150000 --new 2000 --work /tmp/incr
    OMP_NUM_THREADS=1 python benchmarks/bench_incremental.py --task link --n 200000 --new 2000 --work /tmp/incr_link

With ``--task link`` the records are dealt into two tables at random and every step matches the
two tables with the same model as a linkage model.

Prints one JSON line per step and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_splink import _child, _train_model  # noqa: E402


def _entities(folder: Path):
    """record id -> entity id (linkage: the record id of the generated table, the same person's
    whichever table holds it)."""
    from skrisk.utils import read_csv_export
    import pandas as pd

    e = read_csv_export(folder / "entities.csv")
    return pd.Series(e["entity_id"].astype(int).to_numpy(), index=e["record_id"].to_numpy())


def _pairwise_f1(pred, true) -> float:
    """Pairwise F1 of two record -> entity assignments (from the counts of their overlaps)."""
    import pandas as pd

    keys = pred.index.union(true.index)
    pred, true = pred.reindex(keys), true.reindex(keys)

    def pairs(counts) -> int:
        return int((counts * (counts - 1) // 2).sum())

    tp = pairs(pd.DataFrame({"p": pred, "t": true}).value_counts())
    n_pred, n_true = pairs(pred.value_counts()), pairs(true.value_counts())
    precision, recall = tp / max(n_pred, 1), tp / max(n_true, 1)
    return round(2 * precision * recall / (precision + recall), 4) if tp else 0.0


def _true_entities(links, ids):
    """record -> true entity (connected components of the true links; others alone)."""
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    index = pd.Index(ids)
    a, b = index.get_indexer(links["left_id"]), index.get_indexer(links["right_id"])
    graph = sp.coo_matrix((np.ones(len(a)), (a, b)), shape=(len(index), len(index)))
    return pd.Series(connected_components(graph, directed=False)[1], index=index)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=150_000, help="known records (default 150000)")
    p.add_argument("--new", type=int, default=2_000, help="new records (default 2000)")
    p.add_argument("--work", required=True, help="folder of the tables, the model and the runs")
    p.add_argument("--task", choices=("dedup", "link"), default="dedup",
                   help="link: the records dealt into two tables at random (a person's records on either "
                        "side), the same model as a linkage model; known and new records of both tables")
    p.add_argument("--types", choices=("auto",), default=None,
                   help="auto: the model's features typed by the columns' inferred types (as skrisk label "
                        "makes them), with the typed blocking that follows; default: text features, tokens blocking")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from skrisk.datasets import make_person_table

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model = work / "model.skrisk"
    if not model.exists():
        print(json.dumps(_train_model(model, 500, args.types)), flush=True)
    table, links = make_person_table(args.n + args.new, random_state=0)
    files = {"known": table.iloc[:args.n], "new": table.iloc[args.n:], "all": table}
    for name, part in files.items():
        part.to_csv(work / f"{name}.csv", index_label="id")
    tables = {name: ["--left", str(work / f"{name}.csv")] for name in files}
    if args.task == "link":
        import numpy as np
        from skrisk.matching import load_model

        linkage = load_model(model)
        linkage.task = "link"
        model = linkage.save(work / "model_link.skrisk")
        side = np.random.default_rng(0).random(len(table)) < 0.5
        for name, part in files.items():
            on_left = side[table.index.get_indexer(part.index)]
            part[on_left].to_csv(work / f"{name}_left.csv", index_label="id")
            part[~on_left].to_csv(work / f"{name}_right.csv", index_label="id")
            tables[name] = ["--left", str(work / f"{name}_left.csv"), "--right", str(work / f"{name}_right.csv")]
    env = {"PYTHONPATH": str(ROOT)}
    steps = [("full run, known records", "known", "full", []),
             ("incremental, --merge report", "new", "incr_report", ["--entities", str(work / "full")]),
             ("incremental, --merge apply", "new", "incr_apply", ["--entities", str(work / "full"),
                                                                   "--merge", "apply"]),
             ("full re-run, all records", "all", "rerun", [])]
    rows = []
    for what, left, out, extra in steps:
        load = os.getloadavg()[0]
        wall, peak, text, rc = _child([sys.executable, "-m", "skrisk.cli", "match", "--model", str(model),
                                       *tables[left], "--out", str(work / out),
                                       "--no-progress", "--n-jobs", "1", *extra], env, cwd=work)
        if rc:
            return rc
        row = {"step": what, "records": len(files[left]), "wall_s": round(wall, 1), "peak_gb": round(peak, 2),
               "load_before": round(load, 1), "summary": text.strip().splitlines()[0][:300]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    known, rerun = _entities(work / "full"), _entities(work / "rerun")
    truth = _true_entities(links, table.index.astype(str))
    print("\n| step | records | wall (s) | peak memory (GB) | pairwise F1 vs full re-run | pairwise F1 vs truth "
          "| known ids changed |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row, out in zip(rows, ("full", "incr_report", "incr_apply", "rerun")):
        agree, moved = "", ""
        got = _entities(work / out)
        if out.startswith("incr"):
            agree = f"{_pairwise_f1(got, rerun):.4f}"
            moved = str(int((got.reindex(known.index) != known).sum()))
        true = f"{_pairwise_f1(got, truth.reindex(got.index)):.4f}"
        print(f"| {row['step']} | {row['records']:,} | {row['wall_s']} | {row['peak_gb']} | {agree} | {true} | {moved} |")
    print(f"\nThe full run of the known records against the re-run, on the known records: pairwise F1 "
          f"{_pairwise_f1(known, rerun.reindex(known.index)):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
