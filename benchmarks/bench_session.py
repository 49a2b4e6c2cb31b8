"""Scripted labelling sessions: what ``skrisk label`` estimates, against the truth.

A real :class:`skrisk.labelling.LabellingSession` (the one behind ``skrisk label`` and the Jupyter
labeller) on a DeepMatcher dataset's two tables, blocked as ``skrisk label`` blocks them (its
defaults: tokens over all attributes, top 10 per record), every question answered from the gold
labels (the matches of all three splits). After each risk-sampling round the session prints its
estimate of precision, recall and F1 on all candidate pairs (from the audit answers so far), the
threshold it chose and its stopping advice; this benchmark scores the round's saved model
(``model.skrisk``) on all candidates and records the truth beside what was printed.

Unlike ``bench_quality.py`` (many audit draws of one frozen matcher), one session is one path:
its audits accumulate (5 after each round, each drawn with the risk of that round's matcher) and
its estimates from one round to the next share most answers, so the per-round coverage of a session
is not independent; the seeds are independent sessions.

Examples
--------
    nice -n 10 python benchmarks/bench_session.py --dataset abt_buy --seeds 0 1 2 3 4
    python benchmarks/bench_session.py --report
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from skrisk.data import get_data_home
from skrisk.experiments import machine_line
from skrisk.labelling import LabellingSession, SessionConfig
from skrisk.matching import MODEL_FILE, load_model

MEASURES = ("precision", "recall", "f1")


def _truth(p: np.ndarray, y: np.ndarray, t: float) -> dict[str, float | None]:
    d = p > t
    tp, fp, fn = int((d & (y == 1)).sum()), int((d & (y == 0)).sum()), int((~d & (y == 1)).sum())
    return {
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "f1": round(2 * tp / (2 * tp + fp + fn), 4) if tp + fp + fn else None,
    }


def gold_pairs(folder: Path) -> set[tuple[str, str]]:
    frames = [pd.read_csv(folder / f"{s}.csv", dtype=str) for s in ("train", "valid", "test")]
    g = pd.concat(frames)
    g = g[g["label"] == "1"]
    return set(zip(g["ltable_id"], g["rtable_id"]))


def run_session(folder: Path, seed: int, args: argparse.Namespace) -> dict:
    gold = gold_pairs(folder)
    work = Path(tempfile.mkdtemp(prefix="skrisk_bench_session_"))
    session_dir = work / "session"
    cfg = SessionConfig(seed=seed, audit=args.audit, n_instances=args.batch)
    rounds: list[dict] = []
    t0 = time.perf_counter()
    session = LabellingSession.open(session_dir, left=folder / "tableA.csv", right=folder / "tableB.csv",
                                    config=cfg, out=open(os.devnull, "w"))
    try:
        y_all = np.array([1 if k in gold else 0 for k in session.keys], dtype=np.int64)
        seen = 0
        n_answers = 0
        while True:
            q = session.next_question()
            if q is None:
                break
            batches = session.state.batches
            if len(batches) > seen:
                for b in batches[seen:]:
                    st = b.get("status")
                    if b.get("phase") != "risk" or not isinstance(st, dict):
                        continue
                    model = load_model(session_dir / MODEL_FILE)
                    p = np.asarray(model.matcher.predict_proba(session.features))[:, 1]
                    rounds.append({
                        "round": b["round"], "n_labels": b["n_labels"], "n_audit": st["n_audit"],
                        "estimate": st["estimate"], "truth": _truth(p, y_all, 0.5),
                        "threshold": st["threshold"],
                        "threshold_truth": _truth(p, y_all, float(st["threshold"])),
                        "stop": bool(st.get("stop")),
                        # the printed lines (and the stopping rules' states) of the first session
                        # only, for a README transcript: the numbers in them are the fields above
                        **({"lines": st.get("lines", []), "stabilizing": st.get("stabilizing"),
                            "plateau": st.get("plateau"), "threshold_estimate": st["threshold_estimate"]}
                           if seed == args.seeds[0] else {}),
                    })
                seen = len(batches)
            if rounds and rounds[-1]["n_labels"] >= args.labels:
                break
            session.answer(q.key, "yes" if q.key in gold else "no")
            n_answers += 1
        n_candidates = len(session.keys)
    finally:
        session.close()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "dataset": folder.name, "seed": seed, "n_candidates": n_candidates,
        "candidate_matches": int(y_all.sum()), "gold_matches": len(gold), "answers": n_answers,
        "rounds": rounds, "seconds": round(time.perf_counter() - t0, 1),
        "settings": {"audit": args.audit, "batch": args.batch, "labels": args.labels},
        "env": machine_line(1), "load": os.getloadavg(), "date": date.today().isoformat(),
    }


def _f(x: float | None, d: int = 2) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.{d}f}"


def report(out: Path) -> str:
    runs = [json.loads(p.read_text()) for p in sorted(out.glob("*_session_seed*.json"))]
    if not runs:
        return f"No records under {out}."
    r0 = runs[0]
    lines = [f"Sessions: {r0['dataset']} ({r0['n_candidates']} blocked candidates, {r0['candidate_matches']} of "
             f"its {r0['gold_matches']} gold matches among them); seeds {[r['seed'] for r in runs]}; audit "
             f"{r0['settings']['audit']} pairs after each round of {r0['settings']['batch']}; {r0['env']}; "
             f"{r0['date']}.", ""]
    lines += ["#### Coverage of the printed 90 % intervals across sessions", "",
              "At the first round of each session with at least K audit answers (one interval per session "
              "and K), whether the printed 90 % interval covers the truth on all candidates.", "",
              "| K audit answers | sessions | cover P | cover R | cover F1 | width P | width R | width F1 "
              "| mean abs error F1 |",
              "|---|---|---|---|---|---|---|---|---|"]
    for k in (10, 30, 60, 100, 150):
        cov = {m: [] for m in MEASURES}
        wid = {m: [] for m in MEASURES}
        err = []
        for r in runs:
            x = next((x for x in r["rounds"] if x["estimate"] is not None and x["n_audit"] >= k), None)
            if x is None:
                continue
            e = x["estimate"]
            for m in MEASURES:
                t, iv = x["truth"][m], e.get(f"{m}_interval")
                if t is None or e.get(m) is None:
                    continue
                cov[m].append(iv[0] - 1e-4 <= t <= iv[1] + 1e-4)
                wid[m].append(iv[1] - iv[0])
                if m == "f1":
                    err.append(abs(e[m] - t))
        if cov["f1"]:
            lines.append(f"| {k} | {len(cov['f1'])} | " + " | ".join(_f(np.mean(cov[m]), 3) for m in MEASURES)
                         + " | " + " | ".join(_f(np.mean(wid[m])) for m in MEASURES) + f" | {_f(np.mean(err), 3)} |")
    lines += ["", "#### Chosen threshold and stopping advice", "",
              "| sessions | labels | audit answers | true F1 at 0.5 | true F1 at the chosen threshold | chosen better "
              "| stop first advised at labels (sessions) | true F1 then vs at the end |",
              "|---|---|---|---|---|---|---|---|"]
    last = [r["rounds"][-1] for r in runs]
    f05 = [x["truth"]["f1"] for x in last]
    fth = [x["threshold_truth"]["f1"] for x in last]
    stops = [(next((x for x in r["rounds"] if x["stop"]), None), r["rounds"][-1]) for r in runs]
    fired = [(a, b) for a, b in stops if a is not None]
    at = (f"{np.median([a['n_labels'] for a, _ in fired]):.0f} median ({len(fired)} of {len(runs)})" if fired
          else f"never (0 of {len(runs)})")
    lost = (f"{np.mean([a['truth']['f1'] for a, _ in fired]):.3f} vs {np.mean([b['truth']['f1'] for _, b in fired]):.3f}"
            if fired else "-")
    lines.append(f"| {len(runs)} | {last[0]['n_labels']} | {last[0]['n_audit']} | {np.mean(f05):.3f} | {np.mean(fth):.3f} "
                 f"| {sum(b > a + 1e-9 for a, b in zip(f05, fth))} of {len(runs)} | {at} | {lost} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="abt_buy", help="a DeepMatcher dataset folder under $SKRISK_DATA")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--labels", type=int, default=200, help="stop once a round was trained on this many labels")
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--audit", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="benchmarks/results/quality/sessions")
    p.add_argument("--report", action="store_true", help="only print the tables of the records under --out")
    args = p.parse_args(argv)
    out = Path(args.out)
    if not args.report:
        import torch

        torch.set_num_threads(args.threads)
        folder = get_data_home() / args.dataset
        out.mkdir(parents=True, exist_ok=True)
        for seed in args.seeds:
            res = run_session(folder, seed, args)
            (out / f"{args.dataset}_session_seed{seed}.json").write_text(json.dumps(res) + "\n")
            last = res["rounds"][-1]
            print(f"{args.dataset} session seed {seed}: {res['seconds']:.0f} s, {last['n_labels']} labels, "
                  f"{last['n_audit']} audit answers, true F1 {last['truth']['f1']:.3f}", flush=True)
    print(report(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
