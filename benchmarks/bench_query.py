"""Benchmark one risk-sampling query on the DBLP-Scholar pool (issue #6).

Protocol: the 17,223 ``train`` pairs of DBLP-Scholar are the pool; |L| = 100 of them (stratified,
seeded) are labelled and the matcher is fitted on those; the ``valid`` split (5,742 pairs) is
:class:`~skrisk.RiskSampler`'s validation data for LearnRisk's ranking. One call of the sampler
with ``n_instances = b = 100`` on the 17,123 unlabelled pairs is timed, LearnRisk fitting and the
weighted fastPAM kernel included, phase by phase:

==================  =========================================================================
phase               what
==================  =========================================================================
proba_repr          matcher probabilities and representations of the pool and of L
valid_proba         matcher probabilities of the validation pairs
labelled_proba      out-of-fold probabilities of L (``cv`` refits of a clone; FeatureMatcher)
rules               LearnRisk's one-sided rule generation (inside ``learnrisk_fit``)
ranking             LearnRisk's ranking epochs (inside ``learnrisk_fit``)
risk                VaR risk of every pool pair
weights             Lipschitz weights (eq. 6)
kmedoids            weighted fastPAM with L fixed
total               the whole call
==================  =========================================================================

Data preparation (loading, similarity features, tokens, word vectors, the matcher's fit on L) is
timed separately and is not part of the query. ``rules`` and ``ranking`` are measured by wrapping
``skrisk.risk``'s ``generate_rules`` and ``train_risk_model`` in this process only.

With ``--quality`` the risk is also scored: ROC AUC of the pool pairs' risk for separating the
matcher's mistakes on the pool from its correct labels (the labels of the pool are known here),
next to the matcher's uncertainty ``min(p, 1 - p)``.

Usage (from the repository root)::

    SKRISK_DATA=../shared/data python benchmarks/bench_query.py --matcher feature
    SKRISK_DATA=../shared/data python benchmarks/bench_query.py --matcher rnn
    python benchmarks/bench_query.py --matcher feature --quality --risk-params '{"epochs": 1000}'

Appends one JSON line per run to ``benchmarks/results/query/query_bench.jsonl`` (``--out``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from skrisk import LearnRisk  # noqa: E402
from skrisk.active import ActiveLearner  # noqa: E402
from skrisk.data import SimilarityFeatures  # noqa: E402
from skrisk.datasets import load_deepmatcher  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import match_labels  # noqa: E402
from skrisk.strategies import KMedoidsSelector, RiskSampler  # noqa: E402

DEFAULT_OUT = HERE / "results" / "query" / "query_bench.jsonl"


def load() -> float:
    return round(os.getloadavg()[0], 2)


def stratified_labels(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` positions with the class ratio of ``y`` (at least 2 of each class), seeded."""
    rng = np.random.RandomState(seed)
    pos = np.flatnonzero(y == 1)
    n_pos = max(2, int(round(n * len(pos) / len(y))))
    neg = np.flatnonzero(y == 0)
    chosen = [rng.choice(pos, n_pos, replace=False), rng.choice(neg, n - n_pos, replace=False)]
    return np.sort(np.concatenate(chosen))


def prepare(args: argparse.Namespace, prep: dict[str, float]) -> dict[str, Any]:
    t = time.perf_counter()
    ds = load_deepmatcher("dblp_scholar")
    train, valid = ds.split("train"), ds.split("valid")
    f_tr, f_va = train.to_frame(), valid.to_frame()
    y_tr, y_va = np.asarray(train.y), np.asarray(valid.y)
    prep["load_s"] = time.perf_counter() - t
    lab = stratified_labels(y_tr, args.labelled, args.seed)
    pool = np.setdiff1d(np.arange(len(y_tr)), lab)
    t = time.perf_counter()
    if args.matcher == "feature":
        sim = SimilarityFeatures().fit(f_tr)
        X_tr = np.asarray(sim.transform(f_tr), dtype=np.float64)
        X_va = np.asarray(sim.transform(f_va), dtype=np.float64)
        names = sim.get_feature_names_out()
        prep["features_s"] = time.perf_counter() - t
    else:
        from skorch.helper import SliceDict

        from _lab import train_fasttext
        from skrisk.data import PairEncoder

        t = time.perf_counter()
        vectors = train_fasttext(ds, dim=args.rnn_dim, epochs=args.rnn_vector_epochs, random_state=args.seed)
        prep["word_vectors_s"] = time.perf_counter() - t
        t = time.perf_counter()
        enc = PairEncoder(max_length=args.max_length, vocabulary=vectors, features=SimilarityFeatures()).fit(f_tr)
        X_tr, X_va = enc.transform(f_tr), enc.transform(f_va)
        names = enc.features_.get_feature_names_out()
        prep["encode_s"] = time.perf_counter() - t
        X_tr = SliceDict(tokens=X_tr["tokens"], features=X_tr["features"])
        X_va = SliceDict(tokens=X_va["tokens"], features=X_va["features"])
        prep["vectors"] = vectors  # type: ignore[assignment]
    return {"X_tr": X_tr, "y_tr": y_tr, "X_va": X_va, "y_va": y_va, "lab": lab, "pool": pool, "names": names}


def make_matcher(args: argparse.Namespace, prep: dict[str, Any]) -> Any:
    if args.matcher == "feature":
        from skrisk.matchers import FeatureMatcher

        return FeatureMatcher(random_state=args.seed)
    from skrisk.matchers import RNNMatcher

    return RNNMatcher(
        embeddings=prep.pop("vectors"), hidden_size=args.rnn_hidden, classifier_size=args.rnn_classifier,
        max_epochs=args.rnn_epochs, early_stopping=None, batch_size=16, random_state=args.seed, device="cpu",
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matcher", choices=["feature", "rnn"], default="feature")
    ap.add_argument("--labelled", type=int, default=100)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="queries timed (the same call again)")
    ap.add_argument("--risk-params", type=json.loads, default=None,
                    help="JSON dict merged over RiskSampler's defaults (e.g. '{\"epochs\": 1000}')")
    ap.add_argument("--cv", type=int, default=None, help="RiskSampler's cv (default: its own)")
    ap.add_argument("--n-threads", default=None,
                    help="RiskSampler's n_threads: 'none' (torch's setting, its default) or an int")
    ap.add_argument("--quality", action="store_true", help="also score the risk on the pool's true labels")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--rnn-hidden", type=int, default=64)
    ap.add_argument("--rnn-classifier", type=int, default=128)
    ap.add_argument("--rnn-epochs", type=int, default=10)
    ap.add_argument("--rnn-dim", type=int, default=100)
    ap.add_argument("--rnn-vector-epochs", type=int, default=5)
    ap.add_argument("--max-length", type=int, default=16)
    ap.add_argument("--note", default="")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    load_start = load()
    wall = time.perf_counter()
    prep: dict[str, Any] = {}
    data = prepare(args, prep)
    X_tr, y_tr, lab, pool = data["X_tr"], data["y_tr"], data["lab"], data["pool"]
    X_lab, X_pool = X_tr[lab], X_tr[pool]  # an ndarray or a SliceDict: both take rows by position
    matcher = make_matcher(args, prep)
    risk_kw: dict[str, Any] = dict(args.risk_params or {})
    if args.cv is not None:
        risk_kw["cv"] = args.cv
    nt = args.n_threads
    sampler = RiskSampler(data["X_va"], data["y_va"], risk=LearnRisk(feature_names=data["names"], **risk_kw),
                          selector=KMedoidsSelector(device="cpu"), random_state=args.seed,
                          n_threads=None if nt is None or nt == "none" else int(nt))
    t = time.perf_counter()
    learner = ActiveLearner(matcher, sampler, X_training=X_lab, y_training=y_tr[lab])
    prep["matcher_fit_s"] = time.perf_counter() - t

    runs = []
    for _ in range(args.repeats):
        load_q = load()
        t = time.perf_counter()
        pos, risk = learner.query(X_pool, n_instances=args.batch, random_state=args.seed)
        total_outer = time.perf_counter() - t
        q = sampler.last_query_
        ph = dict(q.timings)  # LearnRisk's "rules" and "ranking" come from its fit_timings_
        ph["query_total"] = total_outer
        runs.append({"load_before": load_q, "load_after": load(), "query_threads": q.n_threads,
                     "phases_s": {k: round(v, 3) for k, v in ph.items()}})
        assert len(pos) == args.batch and len(np.unique(pos)) == args.batch

    rec: dict[str, Any] = {
        "date": _dt.date.today().isoformat(),
        "time": _dt.datetime.now().strftime("%H:%M"),
        "command": shlex.join(["python", "benchmarks/bench_query.py", *(sys.argv[1:] if argv is None else argv)]),
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, "
        + ("no GPU" if not torch.cuda.is_available() else torch.cuda.get_device_name()),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "load_avg_1m_start": load_start,
        "dataset": "dblp_scholar",
        "matcher": args.matcher if args.matcher == "feature" else
        f"rnn(hidden={args.rnn_hidden}, classifier={args.rnn_classifier}, epochs={args.rnn_epochs}, "
        f"dim={args.rnn_dim}, L={args.max_length})",
        "pool": int(len(pool)),
        "labelled": int(len(lab)),
        "labelled_matches": int(y_tr[lab].sum()),
        "valid": int(len(data["y_va"])),
        "batch": args.batch,
        "risk_params": {"epochs": LearnRisk().epochs, **(args.risk_params or {})},
        "cv": sampler.risk.cv,
        "n_threads": sampler.n_threads,
        "n_rules": None if q.risk_model is None else len(q.risk_model.rules_),
        "n_mispredicted_valid": None if q.risk_model is None else int(q.risk_model.risk_model_.n_mispredicted_),
        "kmedoids": None if q.kmedoids is None else {
            "n_swaps": int(q.kmedoids.n_swaps), "n_iter": int(q.kmedoids.n_iter),
            "converged": bool(q.kmedoids.converged)},
        "prep_s": {k: round(v, 3) for k, v in prep.items() if isinstance(v, float)},
        "runs": runs,
        "query_total_s": runs[-1]["phases_s"]["total"],
        "target_s": 60,
        "ok": bool(max(r["phases_s"]["total"] for r in runs) <= 60),
    }
    if args.quality:
        from sklearn.metrics import roc_auc_score

        p = learner.predict_proba(X_pool)[:, 1]
        wrong = match_labels(p) != y_tr[pool]
        risk_all = q.risk
        rec["quality"] = {
            "pool_mispredicted": int(wrong.sum()),
            "auc_learnrisk": round(float(roc_auc_score(wrong, risk_all)), 4),
            "auc_uncertainty": round(float(roc_auc_score(wrong, np.minimum(p, 1 - p))), 4),
            "batch_mispredicted": int(wrong[pos].sum()),
            "valid_loss_last": None if q.risk_model is None
            else round(float(q.risk_model.risk_model_.loss_curve_[-1]), 5),
        }
    rec["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    rec["wall_s"] = round(time.perf_counter() - wall, 2)
    rec["note"] = args.note
    print(json.dumps(rec, indent=1))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")
    return rec


if __name__ == "__main__":
    main()
