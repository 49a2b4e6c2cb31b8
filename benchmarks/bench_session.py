"""Scripted labelling sessions: what ``skrisk label`` estimates, against the truth.

A real :class:`skrisk.labelling.LabellingSession` (the one behind ``skrisk label`` and the Jupyter
labeller) on a DeepMatcher dataset's two tables, blocked as ``skrisk label`` blocks them (its
defaults: tokens over all attributes, top 10 per record), every question answered from the gold
labels (the matches of all three splits). After each risk-sampling round the session prints its
estimate of precision, recall and F1 on all candidate pairs (from the audit answers so far), the
threshold it chose and its stopping advice; this benchmark scores the round's saved model
(``model.skrisk``) on all candidates and records the truth beside what was printed.

With ``--save-paths DIR`` each session also saves every round's match probabilities and risks of
all candidates; ``--replay DIR`` then replays the audit, the estimates, the threshold and the
stopping advice of those sessions with other audit draws (``--audit-seeds``) and with each
variant of :data:`VARIANTS` (the advice before and after issue #30, draws weighted by the
mixture of all rounds' designs, model-assisted estimates, and the session's stopping check that
compares with the matcher of 10 rounds before, model-assisted: ``paced``; that check with the
decisions on every candidate settled over 20 rounds: ``settled``; the session's since: at most
0.01 per 100 labels in 3 rounds in a row: ``held``; and since issue #30's sixth part, with the
audit aimed by the matcher's probability recalibrated on the audit once the estimate is
model-assisted: ``recalibrated``); the report also checks the audit
size the session prints (``skrisk.quality.more_answers``) against the round where F1 reached it. The matchers of a session do not depend on its audit draws
(audited pairs stay in the training pool), so a replay is the session those audit draws would
have made, at a fraction of the cost; ``--block-top-k`` makes the large candidate sets of
issue #30, and ``--dedup`` stacks the two tables into one to deduplicate
(:func:`skrisk.datasets.stack_tables`: the candidate sets of a dedup session, with the pairs within
one table among them). Attributes that leak the label (:data:`skrisk.data.DEEPMATCHER_LEAKS`:
Fodors-Zagats' ``class``) are left out, as :func:`skrisk.datasets.load_deepmatcher` leaves them out.
``--diagnose DIR`` says where the F1 estimate's error comes from on saved paths
(:func:`diagnose_path`).

Unlike ``bench_quality.py`` (many audit draws of one frozen matcher), one session is one path:
its audits accumulate (5 after each round, each drawn with the risk of that round's matcher) and
its estimates from one round to the next share most answers, so the per-round coverage of a session
is not independent; the seeds are independent sessions.

Examples
--------
    nice -n 10 python benchmarks/bench_session.py --dataset abt_buy --seeds 0 1 2 3 4
    python benchmarks/bench_session.py --report
    python benchmarks/bench_session.py --dataset abt_buy --block-top-k 100 --seeds 0 1 --save-paths /tmp/paths
    python benchmarks/bench_session.py --dataset abt_buy --dedup --block-top-k 100 --seeds 0 --save-paths /tmp/paths
    python benchmarks/bench_session.py --replay /tmp/paths --audit-seeds 0 1 2 --out /tmp/replay
    python benchmarks/bench_session.py --diagnose /tmp/paths --audit-seeds 0 1 2 --at 150 400
"""

from __future__ import annotations

import argparse
import gzip
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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import DEEPMATCHER_LEAKS
from _lab import get_data_home
from skrisk.datasets import load_deepmatcher
from _lab import stack_tables
from _lab import machine_line
from skrisk.labelling import LabellingSession, SessionConfig
from _lab import MODEL_FILE
from skrisk.matching import load_model
from _lab import RiskPlateau, StabilisingPredictions, cohen_kappa
from _lab import audit_aim, audit_design, more_answers
from skrisk.quality import choose_threshold, compare_f1, confirm_stop, estimate_quality

from _summaries import add_session_records, read_session_summary, write_gzip  # noqa: E402  (beside this script)

MEASURES = ("precision", "recall", "f1")


def _truth(p: np.ndarray, y: np.ndarray, t: float) -> dict[str, float | None]:
    d = p > t
    tp, fp, fn = int((d & (y == 1)).sum()), int((d & (y == 0)).sum()), int((~d & (y == 1)).sum())
    return {
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "f1": round(2 * tp / (2 * tp + fp + fn), 4) if tp + fp + fn else None,
    }


def session_tables(folder: Path, work: Path, dedup: bool = False) -> tuple[dict, set[tuple[str, str]]]:
    """The tables of a session on a DeepMatcher dataset, and its gold matches (all three splits).

    Linkage: the dataset's ``tableA.csv`` and ``tableB.csv`` as they are, but for attributes
    that leak the label (:data:`skrisk.data.DEEPMATCHER_LEAKS`), written without them. ``dedup``:
    the two tables stacked as one (:func:`skrisk.datasets.stack_tables`: ids ``a:<id>`` and
    ``b:<id>``; a pair within one table is a non-match), written to ``work``.
    """
    ds = load_deepmatcher(folder)  # its pairs: the labels of all three splits
    if dedup:
        ds = stack_tables(ds)
        path = work / "stacked.csv"
        ds.left.to_csv(path, index_label="id")
        tables: dict = {"table": path}
    else:
        tables = {"left": folder / "tableA.csv", "right": folder / "tableB.csv"}
        leaked = DEEPMATCHER_LEAKS.get(folder.name, ())
        if leaked:  # Fodors-Zagats' class is an entity id: a session on it would learn the label
            for side, name in (("left", "tableA.csv"), ("right", "tableB.csv")):
                t = pd.read_csv(folder / name, dtype=str, keep_default_na=False)
                t.drop(columns=[c for c in leaked if c in t.columns]).to_csv(work / name, index=False)
                tables[side] = work / name
    gold = ds.pairs.loc[ds.pairs["label"] == 1, ["left_id", "right_id"]]
    return tables, set(zip(gold["left_id"], gold["right_id"]))  # dedup: stored as (a:..., b:...)


def run_session(folder: Path, seed: int, args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="skrisk_bench_session_"))
    tables, gold = session_tables(folder, work, dedup=args.dedup)
    session_dir = work / "session"
    cfg = SessionConfig(seed=seed, audit=args.audit, n_instances=args.batch)
    rounds: list[dict] = []
    t0 = time.perf_counter()
    blocking = None if args.block_top_k is None else [("tokens", None, {"top_k": args.block_top_k})]
    session = LabellingSession.open(session_dir, **tables, config=cfg, out=open(os.devnull, "w"), blocking=blocking)
    path: dict[str, list] = {"proba": [], "risk": [], "n_labels": [], "stop_predictions": [], "expected_errors": []}
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
                    if args.save_paths:  # what the audit of this round sees, for --replay
                        risk = (np.minimum(p, 1 - p) if model.risk_model is None
                                else np.asarray(model.risk_model.predict_risk(session.features)))
                        for k, v in (("proba", p.astype(np.float32)), ("risk", risk.astype(np.float32)),
                                     ("n_labels", b["n_labels"]), ("stop_predictions", st["stop_predictions"]),
                                     ("expected_errors", st["expected_errors"])):
                            path[k].append(v)
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
        if args.save_paths:
            Path(args.save_paths).mkdir(parents=True, exist_ok=True)
            np.savez_compressed(Path(args.save_paths) / f"{folder.name}{_tag(args)}_seed{seed}.npz",
                                y=y_all.astype(np.int8), proba=np.stack(path["proba"]), risk=np.stack(path["risk"]),
                                n_labels=np.asarray(path["n_labels"]), stop_predictions=np.asarray(path["stop_predictions"]),
                                expected_errors=np.asarray(path["expected_errors"], dtype=np.float64),
                                seed=seed, stop_set_size=min(1000, n_candidates))
    finally:
        session.close()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "dataset": folder.name, "task": "dedup" if args.dedup else "link", "seed": seed, "n_candidates": n_candidates,
        "candidate_matches": int(y_all.sum()), "gold_matches": len(gold), "answers": n_answers,
        "rounds": rounds, "seconds": round(time.perf_counter() - t0, 1),
        "settings": {"audit": args.audit, "batch": args.batch, "labels": args.labels,
                     "block_top_k": args.block_top_k, "dedup": args.dedup},
        "env": machine_line(1), "load": os.getloadavg(), "date": date.today().isoformat(),
    }


#: The advice compared by --replay: how each draw is weighted, how the threshold is chosen,
#: whether the stopping rules' advice needs the audit's confirmation that the recent gain is small,
#: and whether the estimates are model-assisted (``estimate_quality(proba_all=...)``).
VARIANTS = {
    "before": {"weights": "own", "rule": "one-se", "confirm": False},
    "after": {"weights": "own", "rule": "no-harm", "confirm": True},
    "after_mixture": {"weights": "mixture", "rule": "no-harm", "confirm": True},
    "assisted": {"weights": "own", "rule": "no-harm", "confirm": True, "assisted": True},
    "assisted_mixture": {"weights": "mixture", "rule": "no-harm", "confirm": True, "assisted": True},
    # the session's since issue #30's fourth part: the gain over the last 10 rounds, model-assisted
    # (both matchers' decisions on every candidate), at most 0.01 per 50 labels; and the no-harm
    # threshold model-assisted (choose_threshold(proba_all=...))
    "paced": {"weights": "own", "rule": "no-harm", "confirm": True, "assisted": True, "gain": "assisted",
              "gain_rounds": 10, "per_labels": 50},
    # issue #30's fifth part, measured and not kept: paced, and the decisions on every candidate
    # settled (Cohen's kappa with the matcher of 20 rounds before at least 0.98)
    "settled": {"weights": "own", "rule": "no-harm", "confirm": True, "assisted": True, "gain": "assisted",
                "gain_rounds": 10, "per_labels": 50, "kappa_rounds": 20, "min_kappa": 0.98},
    # the session's since issue #30's fifth part: the gain over the last 10 rounds at most 0.01 per
    # 100 labels, passing in 3 risk rounds in a row
    "held": {"weights": "own", "rule": "no-harm", "confirm": True, "assisted": True, "gain": "assisted",
             "gain_rounds": 10, "per_labels": 100, "hold": 3},
    # the session's since issue #30's sixth part: held, and once the estimate is model-assisted
    # the audit aimed by the matcher's probability recalibrated on the audit (not LearnRisk's risk)
    "recalibrated": {"weights": "own", "rule": "no-harm", "confirm": True, "assisted": True, "gain": "assisted",
                     "gain_rounds": 10, "per_labels": 100, "hold": 3, "aim": "recalibrated"},
}


def first_match_ranks(folder: Path, args: argparse.Namespace) -> dict:
    """How many starting pairs a session asks before its first match, now and before.

    ``questions``: a real session (``skrisk label``'s, default settings) answered from the gold
    labels until its first "yes". ``questions_by_average``: the same for the seeding before issue
    #30's seventh part, which went on down the average similarity (the mean of the session's
    similarity features, missing values left out) two pairs a round after a first round of the
    three most and three least similar pairs. ``features_led_by_a_match``: of the similarity
    features, how many have a match as their most similar pair (ties broken by the average).
    """
    work = Path(tempfile.mkdtemp(prefix="skrisk_bench_session_"))
    try:
        tables, gold = session_tables(folder, work, dedup=args.dedup)
        blocking = None if args.block_top_k is None else [("tokens", None, {"top_k": args.block_top_k})]
        session = LabellingSession.open(work / "s", **tables, config=SessionConfig(), out=open(os.devnull, "w"),
                                        blocking=blocking)
        try:
            y = np.array([k in gold for k in session.keys])
            F = np.asarray(session.features)
            asked = 0
            while (q := session.next_question()) is not None and q.phase == "initial":
                asked += 1
                key = (q.left_id, q.right_id)
                if key in gold:
                    break
                session.answer(key, "no")
        finally:
            session.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with np.errstate(all="ignore"):
        avg = np.nan_to_num(np.nanmean(np.where(F >= 0, F, np.nan), axis=1))
    order = np.argsort(-avg, kind="stable")
    first = np.concatenate([[order[i], order[-1 - i]] for i in range(3)])  # the first round: high, low, ...
    hits = np.flatnonzero(y[first])
    if len(hits):
        before = int(hits[0]) + 1
    else:
        rest = order[~np.isin(order, first)]
        before = 6 + int(np.flatnonzero(y[rest])[0]) + 1 if y[rest].any() else None
    led = 0
    for j in range(F.shape[1]):
        v = F[:, j]
        tied = np.flatnonzero(v == v.max())
        led += bool(v.max() > 0 and y[tied[np.argmax(avg[tied])]])
    return {"dataset": folder.name, "task": "dedup" if args.dedup else "link", "block_top_k": args.block_top_k,
            "n_candidates": len(y), "candidate_matches": int(y.sum()), "questions": asked,
            "questions_by_average": before, "features_led_by_a_match": led, "features": int(F.shape[1])}


def report_first_match(path: Path) -> str:
    """The table of the ``--first-match`` records in the JSON-lines file ``path``."""
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    lines = ["| dataset | task | blocking: top k | candidates | matches | starting pairs asked until the first match: "
             "the session | before (down the average similarity) | features whose most similar pair is a match |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {'stacked, dedup' if r['task'] == 'dedup' else 'linkage'} | "
                     f"{r['block_top_k'] or 10} | {r['n_candidates']:,} | {r['candidate_matches']} | {r['questions']} | "
                     f"{r['questions_by_average']} | {r['features_led_by_a_match']} of {r['features']} |")
    return "\n".join(lines)


def _tag(args: argparse.Namespace) -> str:
    """The saved path's name part for the candidate set: ``_k<K>`` and ``_dedup`` when stacked."""
    return f"_k{args.block_top_k}" + ("_dedup" if args.dedup else "")


def _audit_draws(path_seed: int, audit_seed: int, r: int, n: int, q: np.ndarray) -> np.ndarray:
    """Round ``r``'s ``n`` audit draws (with replacement, in proportion to ``q``) of one replay:
    the same for :func:`replay_path` and :func:`diagnose_path`, so that their records agree."""
    rng = np.random.RandomState(np.random.SeedSequence([path_seed, audit_seed, r]).generate_state(1)[0])
    return rng.choice(len(q), size=n, replace=True, p=q).astype(np.intp)


def replay_path(npz: Path, audit_seed: int, args: argparse.Namespace) -> dict:
    """One simulated session: a saved session path (its matchers) with fresh audit draws.

    The matchers a session trains do not depend on its audit draws (audited pairs stay in the
    pool; see ``skrisk.labelling``), so the saved path's matchers are those of a session with
    any audit draws: this replays the audit, the estimates, the threshold and the stopping
    advice with the draws of ``audit_seed``, ``args.audit`` pairs after each round, every
    answer from the gold labels.
    """
    z = np.load(npz)
    variants = {k: VARIANTS[k] for k in (args.variants or VARIANTS)}
    y, proba, risk = z["y"].astype(np.float64), z["proba"], z["risk"]
    n_rounds, N = proba.shape
    size = int(z["stop_set_size"])
    rules = {v: (StabilisingPredictions(window=3, agreement=0.99, sample_size=size), RiskPlateau(window=3, tol=0.05))
             for v in variants}
    streak = dict.fromkeys(variants, 0)  # rounds in a row whose check passed
    designs = {(v.get("method", "risk"), v.get("floor", 0.1), v.get("aim", "risk")) for v in variants.values()}
    drawn: dict = {d: ([], []) for d in designs}  # each design's draws and its design over all pairs, by round
    rounds = []
    for r in range(n_rounds):
        p_r = proba[r].astype(np.float64)
        rec: dict = {"round": r, "n_labels": int(z["n_labels"][r]), "n_audit": r * args.audit,
                     "truth": _truth(p_r, y, 0.5)}
        bits = np.unpackbits(np.frombuffer(bytes.fromhex(str(z["stop_predictions"][r])), dtype=np.uint8))[:size]
        for name, v in variants.items():
            pos_all, q_rounds = drawn[(v.get("method", "risk"), v.get("floor", 0.1), v.get("aim", "risk"))]
            pos = np.concatenate(pos_all) if pos_all else np.zeros(0, dtype=np.intp)
            stab, plateau = rules[name]
            stab.update(bits)
            plateau.update([float(z["expected_errors"][r])])
            fires = bool(stab.should_stop or plateau.should_stop)
            out = {"estimate": None, "threshold": 0.5, "stop": False if v["confirm"] else fires}
            if len(pos) >= 10:
                # every draw of every earlier round drew the same number of pairs
                q = (np.concatenate([qr[pos_all[i]] for i, qr in enumerate(q_rounds)]) if v["weights"] == "own"
                     else np.mean([qr[pos] for qr in q_rounds], axis=0))
                w = 1.0 / (N * q)
                ya, pa = y[pos], p_r[pos]
                out["estimate"] = estimate_quality(ya, pa, w, proba_all=p_r if v.get("assisted") else None).to_dict()
                if ya.sum() > 0:
                    out["threshold"] = choose_threshold(ya, pa, w, rule=v["rule"],
                                                        proba_all=p_r if v.get("gain") == "assisted" else None).threshold
                g = v.get("gain_rounds", args.gain_rounds)
                if v["confirm"] and r >= g:
                    p_old = proba[r - g].astype(np.float64)
                    if v.get("gain") == "assisted":  # the older decisions on every candidate are known
                        gain, iv = compare_f1(ya, pa, p_old[pos], w, proba_all_a=p_r, proba_all_b=p_old)
                    else:
                        old = int(sum(len(x) for x in pos_all[: r - g + 1]))  # draws the older round knew
                        gain, iv = (compare_f1(ya[:old], pa[:old], p_old[pos[:old]], w[:old]) if old >= 10
                                    else (None, None))
                    e = out["estimate"]
                    kr = v.get("kappa_rounds")
                    kappa = (cohen_kappa(p_r > 0.5, proba[r - kr] > 0.5) if kr and r >= kr else None)
                    out["stop"], out["stop_text"] = confirm_stop(
                        fires, gain, iv, labels=rec["n_labels"] - int(z["n_labels"][r - g]),
                        f1_interval=tuple(e["f1_interval"]) if e["f1"] is not None else None,
                        n_matches=e["n_matches"], per_labels=v.get("per_labels"), kappa=kappa,
                        min_kappa=v.get("min_kappa"),
                        kappa_labels=rec["n_labels"] - int(z["n_labels"][r - kr]) if kappa is not None else None)
            streak[name] = streak[name] + 1 if out["stop"] else 0
            if v.get("hold"):  # the check must pass in this many rounds in a row
                out["stop"] = streak[name] >= v["hold"]
            out["threshold_truth"] = _truth(p_r, y, float(out["threshold"]))
            rec[name] = out
        rounds.append(rec)
        for (method, floor, aim), (pos_all, q_rounds) in drawn.items():
            aim_r = risk[r].astype(np.float64)
            if aim == "recalibrated" and pos_all:  # as the session: once its estimate is model-assisted
                pos = np.concatenate(pos_all)
                w = 1.0 / (N * np.concatenate([qr[pos_all[i]] for i, qr in enumerate(q_rounds)]))
                aim_r, _ = audit_aim(y[pos], p_r[pos], w, p_r, aim_r)
            q_r = audit_design(p_r, risk=aim_r, method=method, floor=floor)
            pos_all.append(_audit_draws(int(z["seed"]), audit_seed, r, args.audit, q_r))
            q_rounds.append(q_r)
    return {"dataset": npz.stem.split("_k")[0], "task": "dedup" if "_dedup_" in npz.name else "link",
            "path": npz.name, "seed": int(z["seed"]), "audit_seed": audit_seed,
            "n_candidates": N, "candidate_matches": int(y.sum()), "rounds": rounds,
            "settings": {"audit": args.audit, "gain_rounds": args.gain_rounds}, "env": machine_line(1), "load": os.getloadavg(),
            "date": date.today().isoformat()}


def _fn_sd(v: np.ndarray, designs: list[np.ndarray], audit: int) -> float:
    """Standard deviation of the Hansen-Hurwitz estimate of ``sum(v)`` from ``audit`` draws with
    replacement from each of ``designs`` (one design per round): the variance of each draw is
    ``sum(v ** 2 / q) - sum(v) ** 2``."""
    n = audit * len(designs)
    total = float(v.sum())
    var = sum(audit * (float((v * v / q).sum()) - total**2) for q in designs) / n**2
    return float(np.sqrt(max(var, 0.0)))


def diagnose_path(npz: Path, ks: list[int], audit_seeds: list[int], audit: int, bands: int = 50) -> list[dict]:
    """Where the F1 estimate's error comes from, at the first round with at least K audit answers.

    On every candidate the truth is known, so the variance that an audit design implies for the
    estimate of the missed matches (FN, among the predicted non-matches) is computed exactly,
    not replayed: its standard deviation, as a share of F1 (``|dF1/dFN| sd(FN)``, a lower bound
    on the F1 estimate's, which also has the precision side's), for the Hansen-Hurwitz estimate
    (``HH``) and for the difference estimate with a perfectly calibrated model (``diff``: the
    share of matches among the predicted non-matches of the same score band, ``bands`` quantile
    bands; what the model-assisted estimate reaches at best), under the designs the session's
    rounds drew from when aimed by LearnRisk's risk (before issue #30's sixth part; the aim by the
    recalibrated matcher depends on the answers, so ``--replay`` measures it), under the round's
    own design for every draw, and under the allocation that
    minimises it for FN (Neyman: ``q`` in proportion to the calibrated model's ``sqrt(m (1 - m))``,
    with the session's uniform floor of 0.1). Beside it, the session's F1 estimate
    (``estimate_quality(proba_all=)``) on the risk-aimed draws of ``audit_seeds``: how often its 90 % interval
    misses the truth low (the truth above it) and high, and the audited missed matches.
    """
    z = np.load(npz)
    y, proba, risk = z["y"].astype(np.float64), z["proba"], z["risk"]
    n_rounds, N = proba.shape
    at = {k: -(-k // audit) for k in ks if 0 < -(-k // audit) < n_rounds}  # a round after some draws
    designs: list[np.ndarray] = []
    drawn: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {a: [] for a in audit_seeds}
    out = []
    for r in range(max(at.values(), default=-1) + 1):
        p_r = proba[r].astype(np.float64)
        if r in at.values():
            d = p_r > 0.5
            tp, fp, fn = int((d & (y == 1)).sum()), int((d & (y == 0)).sum()), int((~d & (y == 1)).sum())
            t = 2 * tp / max(2 * tp + fp + fn, 1)  # the true F1
            grad = 2 * tp / max(2 * tp + fp + fn, 1) ** 2  # |dF1 / dFN|
            missed = (~d & (y == 1)).astype(np.float64)
            edges = np.unique(np.quantile(p_r[~d], np.linspace(0, 1, bands + 1)))
            band = np.clip(np.searchsorted(edges, p_r, side="right") - 1, 0, len(edges) - 2)
            rate = np.bincount(band[~d], weights=y[~d], minlength=len(edges)) / np.maximum(
                np.bincount(band[~d], minlength=len(edges)), 1)
            m = np.where(d, 0.0, rate[band])
            resid = missed - m
            ney = np.where(d, 0.0, np.sqrt(m * (1 - m)))
            ney = 0.9 * ney / ney.sum() + 0.1 / N if ney.sum() > 0 else np.full(N, 1.0 / N)
            sds = {}
            for name, ds in (("risk", designs), ("own", [designs[-1]] * len(designs)),
                             ("neyman", [ney] * len(designs))):
                sds[name] = (grad * _fn_sd(missed, ds, audit), grad * _fn_sd(resid, ds, audit))
            low = high = 0
            n_missed = []
            for a in audit_seeds:
                pos = np.concatenate([x[0] for x in drawn[a]])
                w = 1.0 / (N * np.concatenate([x[1] for x in drawn[a]]))
                e = estimate_quality(y[pos], p_r[pos], w, proba_all=p_r)
                low += t > e.f1_interval[1] + 1e-4
                high += t < e.f1_interval[0] - 1e-4
                n_missed.append(int(((p_r[pos] <= 0.5) & (y[pos] == 1)).sum()))
            cuts = [0.0, 0.01, 0.05, 0.2, 0.5]
            where = [(int(((p_r >= lo) & (p_r < hi) & (y == 1)).sum()),
                      float(designs[-1][(p_r >= lo) & (p_r < hi)].sum())) for lo, hi in zip(cuts, cuts[1:])]
            k = next(k for k, v in at.items() if v == r)
            out.append({"path": npz.name, "K": k, "n_audit": r * audit, "f1": t, "fn": fn, "sd": sds,
                        "miss_low": low, "miss_high": high, "replays": len(audit_seeds),
                        "audited_missed": float(np.mean(n_missed)), "bands": where})
        q_r = audit_design(p_r, risk=risk[r].astype(np.float64), method="risk", floor=0.1)
        designs.append(q_r)
        for a in audit_seeds:  # the draws of replay_path, so its records and these agree
            pos = _audit_draws(int(z["seed"]), a, r, audit, q_r)
            drawn[a].append((pos, q_r[pos]))
    return out


def report_diagnosis(rows: list[dict]) -> str:
    """The tables of :func:`diagnose_path`."""
    lines = ["| path | K audit answers | true F1 | missed matches (FN) "
             "| sd of F1 from FN: the rounds' risk-aimed designs, HH / diff "
             "| each round's own design for every draw | Neyman for FN "
             "| answers for ±0.1 (diff, risk-aimed / Neyman) "
             "| replayed 90 % interval misses low / high | audited missed matches, mean |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for x in rows:
        sd = x["sd"]

        def need(s: float) -> str:  # answers for a 90 % half-width of 0.1: n (1.645 sd / 0.1) ** 2
            return f"{x['n_audit'] * (1.645 * s / 0.1) ** 2:.0f}"

        lines.append(f"| {x['path'].removesuffix('.npz')} | {x['K']} | {x['f1']:.3f} | {x['fn']} | "
                     f"{sd['risk'][0]:.3f} / {sd['risk'][1]:.3f} | {sd['own'][0]:.3f} / {sd['own'][1]:.3f} | "
                     f"{sd['neyman'][0]:.3f} / {sd['neyman'][1]:.3f} | "
                     f"{need(sd['risk'][1])} / {need(sd['neyman'][1])} | "
                     f"{x['miss_low']} / {x['miss_high']} of {x['replays']} | {x['audited_missed']:.2f} |")
    lines += ["", "Where the missed matches are, at the first K (score bands of the round's matcher: true matches "
              "among the predicted non-matches, and the share of the round's audit design there):", "",
              "| path | p < 0.01 | 0.01-0.05 | 0.05-0.2 | 0.2-0.5 |", "|---|---|---|---|---|"]
    first = {}
    for x in rows:
        first.setdefault(x["path"], x)
    for x in first.values():
        lines.append(f"| {x['path'].removesuffix('.npz')} (K {x['K']}) | "
                     + " | ".join(f"{n} ({s:.0%})" for n, s in x["bands"]) + " |")
    return "\n".join(lines) + "\n"


def _compact(res: dict) -> str:
    """A replay record as compact JSON: the stopping check's text only where it advised stopping."""
    for x in res["rounds"]:
        for name in VARIANTS:
            if name in x and not x[name].get("stop"):
                x[name].pop("stop_text", None)
    return json.dumps(res, separators=(",", ":"))


def write_record(path: Path, text: str) -> Path:
    """Write one record: the whole record, gzip-compressed, under ``raw/`` beside ``path`` (which
    git ignores; no time stamp inside, so the same record gives the same bytes), and its summary
    (the rounds the reports read) into the folder's ``records.jsonl.gz``, which is tracked."""
    raw = path.parent / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    gz = write_gzip(raw / (path.name + ".gz"), text.encode("utf-8"))
    add_session_records(path.parent, {path.name: json.loads(text)})
    return gz


def read_records(out: Path, pattern: str) -> list[dict]:
    """The summaries of the records under ``out`` whose file name matches ``pattern`` (``*.json``),
    in name order (see ``benchmarks/_summaries.py``: every report reads the same rounds from
    them as from the whole records)."""
    return read_session_summary(out, pattern)


def read_raw_records(out: Path, pattern: str) -> list[dict]:
    """The whole records under ``out/raw`` matching ``pattern`` (``*.json``), in name order."""
    paths = sorted((out / "raw").glob(pattern + ".gz"))
    return [json.loads(gzip.decompress(q.read_bytes())) for q in paths]


def _variant_rounds(run: dict, variant: str) -> list[dict]:
    """A replayed run's rounds as a session's records: the variant's fields beside the shared ones."""
    return [{**{k: x[k] for k in ("round", "n_labels", "n_audit", "truth")}, **x[variant]} for x in run["rounds"]]


def _name(run: dict) -> str:
    """The dataset of a record, and whether its two tables were stacked and deduplicated."""
    return run["dataset"] + (", its two tables stacked as one to deduplicate" if run.get("task") == "dedup" else "")


def report_replay(out: Path) -> str:
    runs = read_records(out, "*_replay_*.json")
    if not runs:
        return f"No replay records under {out}."
    r0 = runs[0]
    paths = sorted({r["seed"] for r in runs})
    audits = sorted({r["audit_seed"] for r in runs})
    loads = [r["load"][0] for r in runs]
    lines = [f"Replayed sessions: {_name(r0)} ({r0['n_candidates']} blocked candidates, "
             f"{r0['candidate_matches']} matches among them: {r0['candidate_matches'] / r0['n_candidates']:.2%}); "
             f"{len(runs)} sessions = the saved paths of session seeds {paths} x audit seeds {audits}; audit "
             f"{r0['settings']['audit']} pairs after each round; {r0['env']}; {r0['date']}; 1-minute load "
             f"{min(loads):.1f}-{max(loads):.1f}.", ""]
    for variant, v in VARIANTS.items():
        if variant not in r0["rounds"][0]:
            continue
        weights = "its own round's design" if v["weights"] == "own" else "the mixture of all rounds' designs"
        stop = "confirmed by the recent gain" if v["confirm"] else "of the rules alone"
        if v.get("gain") == "assisted":
            stop = (f"confirmed by the model-assisted gain over the last {v['gain_rounds']} rounds, at most 0.01 "
                    f"per {v['per_labels']} labels")
            if v.get("kappa_rounds"):
                stop += (f", and by the decisions on every candidate settled (Cohen's kappa with the matcher of "
                         f"{v['kappa_rounds']} rounds before at least {v['min_kappa']:g})")
            if v.get("hold"):
                stop += f", in {v['hold']} rounds in a row"
            v = {**v, "rule": "no-harm (model-assisted)"}
        est = "model-assisted estimates" if v.get("assisted") else "ratio estimates"
        words = f"{est}, each draw weighted by {weights}, threshold rule {v['rule']}, stopping advice {stop}"
        if v.get("aim") == "recalibrated":
            words += (", the audit aimed by the matcher's probability recalibrated on the audit once the "
                      "estimate is model-assisted (before, by the risk)")
        lines += [f"**Variant `{variant}`**: {words}.", ""]
        lines.append(_tables([{**r, "rounds": _variant_rounds(r, variant)} for r in runs]))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _at(run: dict, k: int) -> dict | None:
    """The first round of a session record with an estimate from at least ``k`` audit answers."""
    return next((x for x in run["rounds"] if x["estimate"] is not None and x["n_audit"] >= k), None)


def _first_stop(run: dict) -> dict | None:
    """The first round of a session record whose advice was to stop."""
    return next((x for x in run["rounds"] if x["stop"]), None)


def _f(x: float | None, d: int = 2) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.{d}f}"


def _mean(v: list) -> float:
    """The mean, nan for no value (a measure no session could estimate at that audit size)."""
    return float(np.mean(v)) if v else float("nan")


def _tables(runs: list[dict]) -> str:
    """The coverage, threshold and stopping tables of session records (scripted or replayed)."""
    lines = ["#### Coverage of the printed 90 % intervals across sessions", "",
             "At the first round of each session with at least K audit answers (one interval per session "
             "and K), whether the printed 90 % interval covers the truth on all candidates; mean and median "
             "widths, and the mean absolute error of the F1 estimate.", "",
             "| K audit answers | sessions | cover P | cover R | cover F1 | width P | width R | width F1 "
             "| median width F1 | mean abs error F1 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for k in (10, 30, 60, 100, 150, 250, 400):
        cov = {m: [] for m in MEASURES}
        wid = {m: [] for m in MEASURES}
        err = []
        for r in runs:
            x = _at(r, k)
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
            lines.append(f"| {k} | {len(cov['f1'])} | " + " | ".join(_f(_mean(cov[m]), 3) for m in MEASURES)
                         + " | " + " | ".join(_f(_mean(wid[m])) for m in MEASURES)
                         + f" | {_f(np.median(wid['f1']))} | {_f(np.mean(err), 3)} |")
    lines += _sizing(runs)
    lines += ["", "#### Chosen threshold and stopping advice", "",
              "True F1 at the last round at 0.5 and at the chosen threshold; the round where stopping was first "
              "advised, and whether its true F1 was within 0.01 of the session's last round.", "",
              "| sessions | labels | audit answers | true F1 at 0.5 | at the chosen threshold | chosen better / worse "
              "| stop first advised at labels (sessions) | true F1 then vs at the end | F1 lost, median / largest "
              "| lost <= 0.01 |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    last = [r["rounds"][-1] for r in runs]
    f05 = np.array([x["truth"]["f1"] for x in last])
    fth = np.array([x["threshold_truth"]["f1"] for x in last])
    stops = [(_first_stop(r), r["rounds"][-1]) for r in runs]
    fired = [(a, b) for a, b in stops if a is not None]
    at = (f"{np.median([a['n_labels'] for a, _ in fired]):.0f} median ({len(fired)} of {len(runs)})" if fired
          else f"never (0 of {len(runs)})")
    lost = (f"{np.mean([a['truth']['f1'] for a, _ in fired]):.3f} vs {np.mean([b['truth']['f1'] for _, b in fired]):.3f}"
            if fired else "-")
    ok = (f"{sum(b['truth']['f1'] - a['truth']['f1'] <= 0.01 for a, b in fired)} of {len(fired)}" if fired else "-")
    losses = [b["truth"]["f1"] - a["truth"]["f1"] for a, b in fired]
    spread = f"{np.median(losses):.3f} / {max(losses):.3f}" if fired else "-"
    lines.append(f"| {len(runs)} | {last[0]['n_labels']} | {last[0]['n_audit']} | {f05.mean():.3f} | {fth.mean():.3f} "
                 f"| {int((fth > f05 + 1e-9).sum())} / {int((fth < f05 - 1e-9).sum())} | {at} | {lost} | {spread} | {ok} |")
    return "\n".join(lines)


def _sizing(runs: list[dict], aim: float = 0.1) -> list[str]:
    """Does the audit size the session prints ("N more would narrow it to about ±0.1") hold?

    At the first round with at least K answers, the F1 interval's answers needed in all
    (:func:`skrisk.quality.more_answers`) against the first round of the same session whose
    F1 interval is within ± ``aim``.
    """
    lines = ["", "#### Audit sizing: the answers the session says F1 needs to reach ±0.1, against when it did", "",
             "At the first round with at least K audit answers: the F1 interval's answers needed in all "
             "(`skrisk.quality.more_answers`); then, in the same session, the first round whose F1 interval "
             "was within ±0.1 (if any within the session).", "",
             "| K audit answers | sessions | needed in all, median | reached within the session | "
             "reached at, median | reached by 1.25x the size said |",
             "|---|---|---|---|---|---|"]
    for k in (50, 100, 150, 250):
        said, got, ok = [], [], 0
        for r in runs:
            est_rounds = [x for x in r["rounds"] if x["estimate"] is not None and x["estimate"].get("f1") is not None]
            x = next((x for x in est_rounds if x["n_audit"] >= k), None)
            if x is None:
                continue
            need = x["n_audit"] + more_answers(x["n_audit"], tuple(x["estimate"]["f1_interval"]), aim)
            said.append(need)
            hit = next((y["n_audit"] for y in est_rounds if y["n_audit"] >= x["n_audit"]
                        and (y["estimate"]["f1_interval"][1] - y["estimate"]["f1_interval"][0]) / 2 <= aim), None)
            if hit is not None:
                got.append(hit)
                ok += hit <= 1.25 * need
        if said:
            lines.append(f"| {k} | {len(said)} | {np.median(said):.0f} | {len(got)} of {len(said)} | "
                         f"{_f(np.median(got) if got else None, 0)} | {ok} of {len(said)} |")
    return lines


def pooled_summary(dirs: list[Path], variant: str = "recalibrated", k: int = 150) -> str:
    """Issue #30's four figures per candidate set, pooled over record folders (sessions and replays).

    One row per dataset and task (linkage or stacked dedup): the independent session paths and
    the simulated sessions behind it (a replay is one session: a path with one audit's draws;
    a session as run counts as one), the 90 % intervals' coverage of precision, recall and F1 and
    the F1 interval's median width at ``k`` audit answers, the F1 estimate's mean absolute error
    at 60 / ``k`` / 400 answers, the chosen threshold's true F1 against 0.5's at the last round,
    and where the stopping advice fired, the share within 0.01 of the session's last round.
    Replays are read with ``variant``'s advice; sessions as run with what they printed.
    """
    groups: dict[tuple, list[dict]] = {}
    for d in dirs:
        for r in read_records(Path(d), "*.json"):
            if "audit_seed" in r:
                if variant not in r["rounds"][0]:
                    continue
                r = {**r, "rounds": _variant_rounds(r, variant)}
            groups.setdefault((r["dataset"], r.get("task", "link"), "audit_seed" in r), []).append(r)
    lines = [f"| dataset | candidates (matches) | session paths | sessions | cover P / R / F1 at {k} answers "
             f"| median F1 width at {k} | F1 abs error at 60 / {k} / 400 | true F1 at the chosen threshold "
             "- at 0.5, mean (worse in) | stopping fired | fired within 0.01 of the end |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (name, task, replayed), runs in sorted(groups.items()):
        paths = {(r["n_candidates"], r["seed"]) for r in runs}
        sizes = sorted({(r["n_candidates"], r["candidate_matches"]) for r in runs})
        cov, width, err = {m: [] for m in MEASURES}, [], {60: [], k: [], 400: []}
        for r in runs:
            for kk in err:
                x = _at(r, kk)
                if x is None or x["estimate"].get("f1") is None:
                    continue
                err[kk].append(abs(x["estimate"]["f1"] - x["truth"]["f1"]))
                if kk != k:
                    continue
                for m in MEASURES:
                    t, iv = x["truth"][m], x["estimate"].get(f"{m}_interval")
                    if t is not None and x["estimate"].get(m) is not None:
                        cov[m].append(iv[0] - 1e-4 <= t <= iv[1] + 1e-4)
                width.append(x["estimate"]["f1_interval"][1] - x["estimate"]["f1_interval"][0])
        last = [r["rounds"][-1] for r in runs]
        gap = np.array([x["threshold_truth"]["f1"] - x["truth"]["f1"] for x in last])
        fired = [(a, r["rounds"][-1]) for r in runs if (a := _first_stop(r))]
        ok = sum(b["truth"]["f1"] - a["truth"]["f1"] <= 0.01 for a, b in fired)
        what = f"{name}" + (" (stacked, dedup)" if task == "dedup" else "") + (", replayed" if replayed else ", as run")
        cands = ", ".join(f"{n:,} ({m / n:.2%})" for n, m in sizes)
        lines.append(
            f"| {what} | {cands} | {len(paths)} | {len(runs)} | "
            + " / ".join(_f(_mean(cov[m]), 2) for m in MEASURES) + f" ({len(cov['f1'])}) | "
            + f"{_f(np.median(width) if width else None)} | " + " / ".join(_f(_mean(err[kk]), 3) for kk in err)
            + f" | {gap.mean():+.4f} ({int((gap < -1e-9).sum())} of {len(runs)}) | {len(fired)} of {len(runs)}"
            + (f", at {np.median([a['n_labels'] for a, _ in fired]):.0f} labels (median)" if fired else "")
            + f" | {f'{ok} of {len(fired)} ({ok / len(fired):.0%})' if fired else '-'} |")
    return "\n".join(lines)


def report(out: Path) -> str:
    runs = read_records(out, "*_session_seed*.json")
    if not runs:
        return f"No records under {out}."
    r0 = runs[0]
    head = (f"Sessions: {_name(r0)} ({r0['n_candidates']} blocked candidates, {r0['candidate_matches']} of "
            f"its {r0['gold_matches']} gold matches among them); seeds {sorted(r['seed'] for r in runs)}; audit "
            f"{r0['settings']['audit']} pairs after each round of {r0['settings']['batch']}; {r0['env']}; "
            f"{r0['date']}.")
    return head + "\n\n" + _tables(runs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="abt_buy", help="a DeepMatcher dataset folder under $SKRISK_DATA")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--labels", type=int, default=200, help="stop once a round was trained on this many labels")
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--audit", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--block-top-k", type=int, default=None,
                   help="block with tokens, each record's K most similar (default: the session's, 10)")
    p.add_argument("--dedup", action="store_true",
                   help="deduplicate the two tables stacked as one (ids a<id>, b<id>) instead of linking them")
    p.add_argument("--save-paths", default=None,
                   help="also save each round's probabilities and risks of all candidates here (npz, for --replay)")
    p.add_argument("--replay", default=None, metavar="DIR",
                   help="replay the audits of the session paths saved in DIR (--save-paths) with --audit-seeds")
    p.add_argument("--audit-seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--gain-rounds", type=int, default=3,
                   help="the audit-only stopping checks' recent gain: against the matcher this many rounds before "
                        "(the variant paced, the session's, uses 10)")
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=None,
                   help="the advice variants to replay (default: all)")
    p.add_argument("--diagnose", default=None, metavar="DIR",
                   help="where the F1 estimate's error comes from, on the session paths saved in DIR (--save-paths): "
                        "the variance audit designs imply for the missed matches, at --at audit answers")
    p.add_argument("--at", type=int, nargs="+", default=[150, 400], help="audit answers for --diagnose")
    p.add_argument("--out", default="benchmarks/results/quality/sessions")
    p.add_argument("--report", action="store_true", help="only print the tables of the records under --out")
    p.add_argument("--first-match", action="store_true",
                   help="only print where the first match is for the starting pairs (first_match_ranks)")
    p.add_argument("--pooled", nargs="+", default=None, metavar="DIR",
                   help="print issue #30's figures per candidate set, pooled over these record folders "
                        "(replays read with the first of --variants, default recalibrated)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.first_match:
        print(json.dumps(first_match_ranks(get_data_home() / args.dataset, args)))
        return 0
    if args.pooled:
        print(pooled_summary([Path(d) for d in args.pooled], (args.variants or ["recalibrated"])[0]))
        return 0
    if args.diagnose:
        rows = [x for npz in sorted(Path(args.diagnose).glob("*.npz"))
                for x in diagnose_path(npz, args.at, args.audit_seeds, args.audit)]
        print(report_diagnosis(rows))
        return 0
    if args.replay:
        out.mkdir(parents=True, exist_ok=True)
        if not args.report:
            for npz in sorted(Path(args.replay).glob("*.npz")):
                for a in args.audit_seeds:
                    res = replay_path(npz, a, args)
                    write_record(out / f"{npz.stem}_replay_audit{a}.json", _compact(res) + "\n")
        print(report_replay(out))
        return 0
    if not args.report:
        import torch

        torch.set_num_threads(args.threads)
        folder = get_data_home() / args.dataset
        out.mkdir(parents=True, exist_ok=True)
        for seed in args.seeds:
            res = run_session(folder, seed, args)
            k = ("" if args.block_top_k is None else f"_k{args.block_top_k}") + ("_dedup" if args.dedup else "")
            write_record(out / f"{args.dataset}{k}_session_seed{seed}.json", json.dumps(res) + "\n")
            last = res["rounds"][-1]
            print(f"{args.dataset} session seed {seed}: {res['seconds']:.0f} s, {last['n_labels']} labels, "
                  f"{last['n_audit']} audit answers, true F1 {last['truth']['f1']:.3f}", flush=True)
    print(report(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
