"""One risk-sampling query on large pools (issue #19): time per phase, peak memory, default vs preselected.

The pool is DBLP-Scholar's 17,123 unlabelled ``train`` pairs plus random extra candidate pairs
between its two tables (``left_id``, ``right_id`` drawn uniformly, duplicates dropped) up to the
requested size, as in the issue's measurement. |L| = 100 ``train`` pairs (stratified, seeded) are
labelled and a :class:`~skrisk.matchers.FeatureMatcher` is fitted on them; the ``valid`` split
(5,742 pairs) is LearnRisk's ranking data; the batch is b = 100.

Experiments (``--experiment``):

``scale`` (default)
    For every size in ``--sizes``, a fresh subprocess (its peak resident memory is read with
    ``os.wait4``) times the phases of the pool and of two queries on it:

    ==============  =====================================================================
    phase           what
    ==============  =====================================================================
    pairs           building the pair frame (text of both records per pair)
    features        similarity features of the pool (``SimilarityFeatures.transform``)
    probabilities   matcher probabilities and representations of the pool and L
    risk            LearnRisk's fit (out-of-fold probabilities, rules, ranking), the risk
                    of every pool pair and the Lipschitz weights
    kernel          the representative sample (when the pool exceeds
                    ``max_kmedoids_pool``) and weighted fastPAM
    query total     the whole ``RiskSampler`` call
    ==============  =====================================================================

    ``default`` is ``RiskSampler()`` with its defaults: the first query (|L| <= b) solves the
    k-medoids problem over the whole pool, or over a sample of ``max_kmedoids_pool`` pairs of a
    larger pool. ``preselected`` is ``RiskSampler(preselect_after=0)``: k-medoids over the 2b
    riskiest pairs (the issue's "query with preselection from the first round").

``stream``
    The same pool, never held whole: a generator of ``--chunk-size`` chunks of pair ids (DBLP-
    Scholar's unlabelled ``train`` pairs, then distinct random pairs drawn as sorted linear
    indices) through :func:`skrisk.pools.stream_query` (issue #19, part B: features,
    probabilities and risk per chunk, a running top list of the 2b riskiest, the kernel on
    those). The risk model is fitted first (``LearnRisk(FeatureMatcher(), cv=5)`` on L, ranked
    on the ``valid`` split, as the sampler's first query fits it) and timed as ``risk_fit``;
    ``score`` is features + probabilities + risk of every chunk. This is the path for 10M pairs.

``td``
    The quality of the sample: for every size in ``--sizes`` and cap in ``--caps``, the default
    first query with ``max_kmedoids_pool=cap`` beside the same query with no cap (the whole pool),
    on the same matcher, risk and weights; the batch's weighted total deviation (eq. 7) is
    recomputed over the *whole* pool (float64) and reported as a ratio to the whole-pool batch's.

Usage (from the repository root; ``SKRISK_DATA`` names the data folder)::

    nice -n 10 python benchmarks/bench_scale.py --sizes 100000,1000000 --threads 1
    nice -n 10 python benchmarks/bench_scale.py --experiment td --sizes 50000,100000 \\
        --caps 5000,10000,20000 --threads 1
    nice -n 10 python benchmarks/bench_scale.py --experiment stream --sizes 1000000,10000000 --threads 1

Appends one JSON line per size (``scale``, ``stream``) or per size and cap (``td``) to
``benchmarks/results/scale/{scale,td,stream}_bench.jsonl`` (``--out``), with the command, machine,
torch threads and load averages.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
DEFAULT_OUT = HERE / "results" / "scale"


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def _hwm_mb() -> float | None:
    """This process's peak resident memory so far (Linux ``VmHWM``), MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:  # pragma: no cover - not Linux
        return None
    return None


def _stratified(y, n: int, seed: int):
    import numpy as np

    rng = np.random.RandomState(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    n_pos = max(2, int(round(n * len(pos) / len(y))))
    return np.sort(np.concatenate([rng.choice(pos, n_pos, replace=False), rng.choice(neg, n - n_pos, replace=False)]))


def _build(size: int, args: argparse.Namespace, t: dict[str, float]) -> dict[str, Any]:
    """DBLP-Scholar's L, validation split and a pool of ``size`` pairs with their features."""
    import numpy as np
    import pandas as pd

    from skrisk.data import PairDataset, SimilarityFeatures
    from skrisk.datasets import load_deepmatcher

    start = time.perf_counter()
    ds = load_deepmatcher("dblp_scholar")
    train, valid = ds.split("train"), ds.split("valid")
    y_tr, y_va = np.asarray(train.y), np.asarray(valid.y)
    lab = _stratified(y_tr, args.labelled, args.seed)
    base = train.pairs.drop(index=lab)[["left_id", "right_id"]]
    n_extra = max(0, size - len(base))
    rng = np.random.RandomState(args.seed)
    extra = pd.DataFrame({
        "left_id": ds.left.index.to_numpy()[rng.randint(len(ds.left), size=int(n_extra * 1.02) + 10)],
        "right_id": ds.right.index.to_numpy()[rng.randint(len(ds.right), size=int(n_extra * 1.02) + 10)],
    })
    pairs = pd.concat([base, extra], ignore_index=True).drop_duplicates(ignore_index=True).iloc[:size]
    if len(pairs) < size:
        raise SystemExit(f"only {len(pairs)} distinct pairs drawn for a pool of {size}")
    pairs = pairs.assign(label=np.int8(-1), split="pool")
    pool = PairDataset(left=ds.left, right=ds.right, pairs=pairs.reset_index(drop=True), name="scale")
    t["load"] = time.perf_counter() - start
    start = time.perf_counter()
    frame = pool.to_frame()
    t["pairs"] = time.perf_counter() - start
    sim = SimilarityFeatures().fit(train.to_frame())
    f_tr = train.to_frame()
    start = time.perf_counter()
    X_pool = np.asarray(sim.transform(frame), dtype=np.float64)
    t["features"] = time.perf_counter() - start
    del frame
    X_lab = np.asarray(sim.transform(f_tr.iloc[lab]), dtype=np.float64)
    X_va = np.asarray(sim.transform(valid.to_frame()), dtype=np.float64)
    return {"X_pool": X_pool, "X_lab": X_lab, "y_lab": y_tr[lab], "X_va": X_va, "y_va": y_va,
            "names": list(sim.get_feature_names_out()), "n_from_train": int(len(base))}


def _learner(data: dict[str, Any], sampler: Any, seed: int) -> Any:
    from skrisk.active import ActiveLearner
    from skrisk.matchers import FeatureMatcher

    return ActiveLearner(FeatureMatcher(random_state=seed), sampler, X_training=data["X_lab"],
                         y_training=data["y_lab"])


def _phases(timings: dict[str, float]) -> dict[str, float]:
    g = timings.get
    return {
        "probabilities": round(g("proba_repr", 0.0), 3),
        "risk": round(g("learnrisk_fit", 0.0) + g("risk", 0.0) + g("weights", 0.0), 3),
        "kernel": round(g("sample", 0.0) + g("kmedoids", 0.0), 3),
        "query_total": round(g("total", 0.0), 3),
        "detail": {k: round(v, 3) for k, v in timings.items()},
    }


def _sampler(data: dict[str, Any], args: argparse.Namespace, **kw: Any) -> Any:
    from skrisk import LearnRisk
    from skrisk.strategies import KMedoidsSelector, RiskSampler

    return RiskSampler(data["X_va"], data["y_va"], risk=LearnRisk(feature_names=data["names"]),
                       selector=KMedoidsSelector(device="cpu", **kw), random_state=args.seed,
                       n_threads=args.threads)


def _child_scale(size: int, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    prep: dict[str, float] = {}
    data = _build(size, args, prep)
    rec: dict[str, Any] = {"pool": size, "pool_from_train": data["n_from_train"],
                           "prep_s": {k: round(v, 3) for k, v in prep.items()},
                           "peak_rss_mb_after_features": _hwm_mb()}
    for mode, kw in (("default", {}), ("preselected", {"preselect_after": 0})):
        sampler = _sampler(data, args, **kw)
        learner = _learner(data, sampler, args.seed)
        load_before = _load()
        pos, _ = learner.query(data["X_pool"], n_instances=args.batch, random_state=args.seed)
        assert len(np.unique(pos)) == args.batch
        q = sampler.last_query_
        rec[mode] = {**_phases(q.timings), "load_before": load_before, "load_after": _load(),
                     "threads": q.n_threads, "peak_rss_mb_so_far": _hwm_mb(),
                     "kmedoids_points": None if q.kmedoids is None else int(len(q.kmedoids.labels)),
                     "n_swaps": None if q.kmedoids is None else int(q.kmedoids.n_swaps),
                     "max_kmedoids_pool": sampler.selector.max_pool}
    return rec


def _child_td(size: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    import numpy as np
    from scipy.spatial.distance import cdist

    prep: dict[str, float] = {}
    data = _build(size, args, prep)
    caps = [c for c in args.caps if c < size]
    out: list[dict[str, Any]] = []
    ref = None
    for cap in [None, *caps]:
        sampler = _sampler(data, args, max_pool=cap)
        learner = _learner(data, sampler, args.seed)
        load_before = _load()
        pos, _ = learner.query(data["X_pool"], n_instances=args.batch, random_state=args.seed)
        q = sampler.last_query_
        est = learner.estimator
        rep_pool = est.represent(data["X_pool"])
        rep_lab = est.represent(data["X_lab"])
        fixed = np.concatenate([rep_lab, rep_pool[pos]]).astype(np.float64)
        d = np.concatenate([cdist(rep_pool[s:s + 8192].astype(np.float64), fixed).min(axis=1)
                            for s in range(0, len(rep_pool), 8192)])
        td = float((q.weights * d).sum())
        if ref is None:
            ref = {"td": td, "pos": set(pos.tolist()), "weights": q.weights}
        out.append({
            "pool": size, "max_kmedoids_pool": cap, "td_whole_pool": td, "td_ratio": td / ref["td"],
            "same_weights": bool(np.array_equal(q.weights, ref["weights"])),
            "batch_overlap_with_uncapped": len(ref["pos"] & set(pos.tolist())),
            **_phases(q.timings), "load_before": load_before, "load_after": _load(), "threads": q.n_threads,
            "n_swaps": int(q.kmedoids.n_swaps),
        })
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


def _child_stream(size: int, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    from skrisk import LearnRisk
    from skrisk.data import SimilarityFeatures
    from skrisk.datasets import load_deepmatcher
    from skrisk.matchers import FeatureMatcher
    from skrisk.pools import stream_query
    from skrisk.pools import ChunkScorer
    from skrisk.strategies import KMedoidsSelector, RiskSampler

    t: dict[str, float] = {}
    start = time.perf_counter()
    ds = load_deepmatcher("dblp_scholar")
    train, valid = ds.split("train"), ds.split("valid")
    y_tr = np.asarray(train.y)
    lab = _stratified(y_tr, args.labelled, args.seed)
    f_tr = train.to_frame()
    sim = SimilarityFeatures().fit(f_tr)
    X_lab = np.asarray(sim.transform(f_tr.iloc[lab]), dtype=np.float64)
    X_va = np.asarray(sim.transform(valid.to_frame()), dtype=np.float64)
    t["load"] = time.perf_counter() - start
    start = time.perf_counter()
    risk = LearnRisk(FeatureMatcher(random_state=args.seed), cv=5, random_state=args.seed).fit(
        X_lab, y_tr[lab], X_valid=X_va, y_valid=np.asarray(valid.y))
    t["risk_fit"] = time.perf_counter() - start
    scorer = ChunkScorer(ds.left, ds.right, features=sim, matcher=risk.estimator_, risk_model=risk)
    labelled = train.pairs.iloc[lab][["left_id", "right_id"]]
    base = train.pairs.drop(index=lab)[["left_id", "right_id"]]
    left_ids, right_ids = ds.left.index.to_numpy(), ds.right.index.to_numpy()
    n_extra = max(0, size - len(base))
    rng = np.random.default_rng(args.seed)
    n_all = len(left_ids) * len(right_ids)
    if n_extra > n_all - len(base):
        raise SystemExit(f"a pool of {size} pairs exceeds the {n_all} pairs of the two tables")
    # distinct random pairs as sorted linear indices (8 bytes per pair: ids, not a pair frame);
    # draw until enough are distinct (at 10M of DBLP-Scholar's 28M pairs, a sixth of the draws repeat)
    lin = np.empty(0, dtype=np.int64)
    while len(lin) < n_extra:
        lin = np.unique(np.concatenate([lin, rng.integers(0, n_all, size=int((n_extra - len(lin)) * 1.3) + 100)]))
    lin = rng.permutation(lin)[:n_extra]
    lin.sort()

    def chunks():
        yield base.reset_index(drop=True)
        for s in range(0, len(lin), args.chunk_size):
            part = lin[s:s + args.chunk_size]
            yield pd.DataFrame({"left_id": left_ids[part // len(right_ids)],
                                "right_id": right_ids[part % len(right_ids)]})

    load_before = _load()
    q = stream_query(scorer, chunks(), labelled=labelled, n_instances=args.batch, chunk_size=args.chunk_size,
                     sampler=RiskSampler(selector=KMedoidsSelector(device="cpu")), random_state=args.seed,
                     progress=False)
    assert len(q.positions) == args.batch
    if q.n_pairs + sum(q.n_filtered.values()) != size:
        raise SystemExit(f"the source held {q.n_pairs + sum(q.n_filtered.values())} pairs, not {size}")
    return {"pool": size, "pool_scored": int(q.n_pairs), "pool_filtered": dict(q.n_filtered),
            "pool_from_train": int(len(base)),
            "chunk_size": args.chunk_size, "prep_s": {k: round(v, 3) for k, v in t.items()},
            "stream": {"score": round(q.timings.get("score", 0.0), 3),
                       "kernel": round(q.timings.get("weights", 0.0) + q.timings.get("kmedoids", 0.0), 3),
                       "query_total": round(q.timings["total"], 3),
                       "query_plus_risk_fit": round(q.timings["total"] + t["risk_fit"], 3),
                       "detail": {k: round(v, 3) for k, v in q.timings.items()},
                       "load_before": load_before, "load_after": _load()},
            "peak_rss_mb_so_far": _hwm_mb()}


def _header(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    import torch

    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join(["python", "benchmarks/bench_scale.py", *argv]),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, "
        + (f"CUDA {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "no GPU")
        + f"; {platform.processor() or platform.platform()}",
        "python": platform.python_version(), "torch": torch.__version__, "torch_threads": args.threads,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "labelled": args.labelled, "batch": args.batch,
        "seed": args.seed, "note": args.note,
    }


def _run_child(size: int, args: argparse.Namespace, argv: list[str]) -> tuple[Any, float, float]:
    """Run one size in a fresh process; its result, its peak RSS (MiB) and its wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        res_file = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--child-size", str(size),
               "--child-out", str(res_file)]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"the run for a pool of {size} pairs failed (exit {proc.returncode})")
        return json.loads(res_file.read_text()), round(usage.ru_maxrss / 1024, 1), round(wall, 1)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", choices=["scale", "td", "stream"], default="scale")
    ap.add_argument("--sizes", default="100000,1000000", help="pool sizes, comma-separated")
    ap.add_argument("--caps", default="5000,10000,20000", help="td: max_kmedoids_pool values, comma-separated")
    ap.add_argument("--labelled", type=int, default=100)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the query (RiskSampler n_threads)")
    ap.add_argument("--chunk-size", type=int, default=100_000, help="stream: pairs per chunk")
    ap.add_argument("--note", default="")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--child-size", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.sizes = [int(float(s)) for s in str(args.sizes).split(",") if s]
    args.caps = [int(float(s)) for s in str(args.caps).split(",") if s]
    import torch

    torch.set_num_threads(args.threads)
    if args.child_size is not None:
        child = {"td": _child_td, "stream": _child_stream, "scale": _child_scale}[args.experiment]
        res = child(args.child_size, args)
        Path(args.child_out).write_text(json.dumps(res))
        return 0

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_file = out_dir / f"{args.experiment}_bench.jsonl"
    for size in args.sizes:
        head = {**_header(args, argv), "load_avg_start": _load()}
        res, peak, wall = _run_child(size, args, argv)
        rows = res if isinstance(res, list) else [res]
        with out_file.open("a") as fh:
            for row in rows:
                rec = {**head, **row, "peak_rss_mb": peak, "wall_s": wall, "load_avg_end": _load()}
                fh.write(json.dumps(rec) + "\n")
                print(json.dumps(rec, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
