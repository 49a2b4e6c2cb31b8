"""A scripted ``skrisk label --matcher lm`` session on a DeepMatcher dataset's two tables, on the CPU:
how long the person waits between rounds, and how good the language model is at equal labels.

A real :class:`skrisk.labelling.LabellingSession` (the one behind ``skrisk label``), blocked as
``skrisk label`` blocks (its defaults), ``matcher="lm"`` (the offline all-MiniLM-L6-v2), every
question answered from the gold labels (the matches of all three splits). The scripted person
takes ``--answer-seconds`` to answer each question (a person reads the two records first); the
session trains the next round's language model meanwhile. The wait of a round is the time
``next_question()`` takes when it computes a new batch: from the last answer to the next
question on the screen. Peak memory is the process's (``ru_maxrss``).

At each ``--checkpoints`` label count the round's saved model (``model.skrisk``) is copied; after
the session, each copy is scored on the dataset's test split (test F1 at p > 0.5), beside a random
forest on the similarity features (``FeatureMatcher``) trained on the same labels.

Records: one JSON line per run in ``benchmarks/results/speed/lm_session.jsonl`` (every round's wait,
the labels, the memory, the test F1s), with the command, machine, load and date.

Examples
--------
    OMP_NUM_THREADS=2 python benchmarks/bench_lm_session.py --dataset abt_buy --labels 300 \\
        --answer-seconds 4 --checkpoints 100 200 300
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lab import get_data_home  # noqa: E402
from _speed_record import append_record  # noqa: E402
from bench_session import session_tables  # noqa: E402

from skrisk.datasets import load_deepmatcher  # noqa: E402
from skrisk.labelling import LabellingSession, SessionConfig  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "speed" / "lm_session.jsonl"


def _f1(p: np.ndarray, y: np.ndarray) -> float:
    d = p > 0.5
    tp = int((d & (y == 1)).sum())
    return round(2 * tp / max(int(d.sum()) + int((y == 1).sum()), 1), 4)


def run(args: argparse.Namespace) -> dict:
    folder = Path(get_data_home(args.data)) / args.dataset
    work = Path(tempfile.mkdtemp(prefix="skrisk_bench_lm_session_"))
    tables, gold = session_tables(folder, work)
    cfg = SessionConfig(seed=args.seed, audit=args.audit, n_instances=args.batch, max_pool=args.max_pool, matcher="lm")
    log = open(work / "session.log", "w")
    t0 = time.perf_counter()
    session = LabellingSession.open(work / "s", **tables, config=cfg, out=log)
    opened = time.perf_counter() - t0
    waits: list[dict] = []
    checkpoints = sorted(args.checkpoints)
    saved: dict[int, dict] = {}
    n_answers = 0
    try:
        seen = len(session.state.batches)
        while True:
            t = time.perf_counter()
            q = session.next_question()
            dt = time.perf_counter() - t
            if q is None:
                break
            batches = session.state.batches
            if len(batches) > seen:
                b = batches[-1]
                st = b.get("status") or {}
                labels = len(session.labels())
                waits.append({"round": b.get("round"), "phase": b.get("phase"), "labels": labels,
                              "wait_s": round(dt, 2), "lm": st.get("lm"),
                              "rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)})
                print(json.dumps(waits[-1]), flush=True)
                seen = len(batches)
                if b.get("phase") == "risk":
                    for c in checkpoints:
                        if c not in saved and labels >= c:
                            dst = work / f"model_{c}.skrisk"
                            shutil.copyfile(work / "s" / "model.skrisk", dst)
                            saved[c] = {"path": dst, "labels": dict(session.labels()),
                                        "trained_on": (st.get("lm") or {}).get("trained_on")}
                if labels >= args.labels or time.perf_counter() - t0 > 60 * args.max_minutes:
                    break
            time.sleep(args.answer_seconds)
            session.answer(q.key, "yes" if q.key in gold else "no")
            n_answers += 1
    finally:
        session.close()
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    evaluation = evaluate(folder, saved, session)
    shutil.rmtree(work, ignore_errors=True)
    risk_waits = [w["wait_s"] for w in waits if w["phase"] == "risk"]
    return {
        "dataset": args.dataset, "n_candidates": len(session.keys), "answers": n_answers,
        "answer_seconds": args.answer_seconds, "batch": args.batch, "audit": args.audit, "max_pool": args.max_pool,
        "open_s": round(opened, 1), "session_s": round(seconds, 1), "peak_rss_gb": round(peak, 3),
        "max_wait_s": max(risk_waits) if risk_waits else None, "waits": waits, "evaluation": evaluation,
        "threads": int(os.environ.get("OMP_NUM_THREADS", "0") or 0),
    }


def evaluate(folder: Path, saved: dict, session: LabellingSession) -> list[dict]:
    """Test F1 of each checkpoint's language model, and of a forest on the same labels."""
    from skrisk.matchers import FeatureMatcher
    from skrisk.matching import load_model

    test = load_deepmatcher(folder).split("test")
    y_test = test.y
    F_all = session.features  # the session's own, computed once; its fitted features are in every model
    F_test = None
    out = []
    for c, info in sorted(saved.items()):
        t = time.perf_counter()
        model = load_model(info["path"], device="cpu")
        if F_test is None:
            F_test = np.asarray(model.features.transform(test), dtype=np.float64)
            t = time.perf_counter()
        p_lm = np.asarray(model.matcher.predict_proba(test.to_frame()))[:, 1]
        lm_s = time.perf_counter() - t
        keys, y = list(info["labels"]), np.array(list(info["labels"].values()))
        pos = [session.position[k] for k in keys]
        forest = FeatureMatcher(random_state=0).fit(F_all[pos], y)
        out.append({"labels": c, "n_labels": len(keys), "lm_trained_on": info["trained_on"],
                    "lm_test_f1": _f1(p_lm, y_test), "forest_test_f1": _f1(forest.predict_proba(F_test)[:, 1], y_test),
                    "lm_test_pairs_per_s": round(len(y_test) / lm_s, 1)})
        print(json.dumps(out[-1]), flush=True)
    return out


def report(record: dict) -> str:
    """Markdown tables of one record: the waits by band of 100 labels, and the test F1s."""
    risk = [w for w in record["waits"] if w["phase"] == "risk"]
    lines = ["| labels | rounds | wait median (s) | wait max (s) | peak memory so far (GB) |",
             "|---|---:|---:|---:|---:|"]
    for lo in range(0, max(w["labels"] for w in risk) + 1, 100):
        band = [w for w in risk if lo <= w["labels"] < lo + 100]
        if band:
            waits = [w["wait_s"] for w in band]
            lines.append(f"| {lo}-{lo + 99} | {len(band)} | {np.median(waits):.1f} | {max(waits):.1f} | "
                         f"{max(w['rss_gb'] for w in band):.2f} |")
    lines += ["", "| labels | language model trained on | LM test F1 | forest test F1 (same labels) |",
              "|---:|---:|---:|---:|"]
    for e in record["evaluation"]:
        lines.append(f"| {e['n_labels']} | {e['lm_trained_on']} | {e['lm_test_f1']:.3f} | {e['forest_test_f1']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="abt_buy")
    ap.add_argument("--data", default=None, help="the DeepMatcher data folder (default: SKRISK_DATA or ../shared/data)")
    ap.add_argument("--labels", type=int, default=1000, help="stop once this many labels are in force")
    ap.add_argument("--answer-seconds", type=float, default=4.0, help="the scripted person's time per question")
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--audit", type=int, default=5)
    ap.add_argument("--max-pool", type=int, default=SessionConfig.max_pool)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-minutes", type=float, default=float("inf"),
                    help="end the session at the first round after this long (the record says where it ended)")
    ap.add_argument("--checkpoints", type=int, nargs="*", default=[500, 1000, 1700])
    ap.add_argument("--report", action="store_true", help="print the tables of the last record and exit")
    args = ap.parse_args(argv)
    if args.report:
        print(report(json.loads(OUT.read_text().splitlines()[-1])))
        return 0
    load = os.getloadavg()[0]
    append_record(OUT, run(args), load)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
