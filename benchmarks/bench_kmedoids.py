"""Benchmark of the weighted fastPAM kernel (skrisk.kmedoids.weighted_fastpam).

Reproduces the paper's scalability figure (runtime and number of swaps against n at k = 200,
|L| = 100, |Q| = 100) and the comparison with the Rust ``kmedoids`` package (``fasterpam``, and
``fastpam1`` where affordable) on unit weights without fixed medoids, plus the two shapes of
issue #5: n = 100,000 (|L| = 100, b = 100, d = 64; wall time and peak RSS measured in a fresh
subprocess) and the active-learning shape n = 17,000, |L| = 1,000, b = 100, d = 256.

Data: a random 64-d Gaussian mixture (50 centres); "risk-like" weights follow the paper's eq. 6,
w_i = r_i / min_{l in L} ||x_i - x_l|| with r_i ~ Beta(2, 5). Times are medians of ``--repeats``
runs; ours is measured warm (after one untimed call in the same process), the ``kmedoids`` times
include building their float32 distance matrix.

With ``--busy`` the comparison with ``kmedoids.fasterpam`` runs twice: on the machine as it is,
then with one core held by a competing process that the benchmark starts itself (a Python busy
loop, ended afterwards): experiment ``vs_rust_busy`` (issue #28: two OpenMP threads on a 2-core
machine with one busy process had made the kernel 24x slower than one thread). The kernel runs
with the library's own thread policy (``skrisk._device``); ``OMP_WAIT_POLICY`` is left as found.

Usage::

    python benchmarks/bench_kmedoids.py --quick            # well under a minute
    python benchmarks/bench_kmedoids.py                    # the full run (several minutes)
    python benchmarks/bench_kmedoids.py --only vs_rust --sizes 10000 --no-best --busy

Writes ``kmedoids_bench.csv``, ``kmedoids_scaling.png``, ``kmedoids_vs_rust.png`` and
``kmedoids_bench.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from skrisk.kmedoids import weighted_fastpam  # noqa: E402

FIELDS = [
    "experiment", "method", "n", "d", "n_fixed", "n_select", "weights", "repeats", "seconds",
    "seconds_all", "total_deviation", "td_ratio", "n_swaps", "n_iter", "peak_rss_mb",
    "baseline_rss_mb", "device", "threads",
]


# ---- data ---------------------------------------------------------------------------------------
def gaussian_mixture(n: int, d: int = 64, centers: int = 50, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    C = rng.normal(scale=3.0, size=(centers, d))
    lab = rng.integers(0, centers, n)
    return (C[lab] + rng.normal(size=(n, d))).astype(np.float32)


def risk_like_weights(X: np.ndarray, fixed: np.ndarray, seed: int = 0) -> np.ndarray:
    """Eq. 6: risk / distance to the nearest labelled point (0 on the labelled points)."""
    rng = np.random.default_rng(seed + 1)
    risk = rng.beta(2.0, 5.0, size=len(X))
    Xt = torch.from_numpy(X).double()
    L = Xt[torch.as_tensor(fixed)]
    dmin = torch.full((len(X),), float("inf"), dtype=torch.float64)
    for s in range(0, len(X), 8192):
        dmin[s : s + 8192] = torch.cdist(Xt[s : s + 8192], L).min(dim=1).values
    w = risk / np.maximum(dmin.numpy(), 1e-6)
    w[fixed] = 0.0
    return w


def td64(X: np.ndarray, w: np.ndarray, medoids: np.ndarray) -> float:
    """Weighted total deviation in float64 (the same yardstick for every method)."""
    Xt = torch.from_numpy(X).double()
    medoids = torch.as_tensor(np.asarray(medoids, dtype=np.int64))
    M = Xt[medoids]
    best = torch.full((len(X),), float("inf"), dtype=torch.float64)
    for s in range(0, len(M), 256):
        best = torch.minimum(best, torch.cdist(Xt, M[s : s + 256]).min(dim=1).values)
    best[medoids] = 0.0
    return float((torch.from_numpy(w) * best).sum())


def problem(n: int, d: int, n_fixed: int, weights: str, seed: int = 0):
    X = gaussian_mixture(n, d, seed=seed)
    rng = np.random.default_rng(seed + 2)
    fixed = np.sort(rng.choice(n, size=n_fixed, replace=False)) if n_fixed else None
    if weights == "unit":
        w = np.ones(n)
    else:
        w = risk_like_weights(X, fixed, seed)
    return X, w, fixed


# ---- runners ------------------------------------------------------------------------------------
def run_ours(X, w, fixed, b, schedule, repeats, device, init="heaviest") -> dict[str, Any]:
    times, res = [], None
    for r in range(repeats):
        t = time.perf_counter()
        res = weighted_fastpam(
            X, b, sample_weight=w, fixed=fixed, schedule=schedule, init=init, device=device,
            random_state=r,
        )
        times.append(time.perf_counter() - t)
    assert res is not None
    return dict(
        seconds=statistics.median(times), seconds_all=times, total_deviation=res.total_deviation,
        n_swaps=res.n_swaps, n_iter=res.n_iter,
    )


def run_rust(X, k, method, repeats) -> dict[str, Any]:
    import kmedoids
    from sklearn.metrics import euclidean_distances

    times, res = [], None
    for r in range(repeats):
        t = time.perf_counter()
        D = euclidean_distances(X)  # float32 n x n, as the package needs
        if method == "fasterpam":
            res = kmedoids.fasterpam(D, k, random_state=r)
        else:
            # one swap per iteration: the default max_iter=100 stops it before convergence
            res = kmedoids.fastpam1(D, k, max_iter=100 * k, random_state=r)
        times.append(time.perf_counter() - t)
        del D
    assert res is not None
    w = np.ones(len(X))
    return dict(
        seconds=statistics.median(times), seconds_all=times,
        total_deviation=td64(X, w, np.asarray(res.medoids)), n_swaps=int(res.n_swap),
        n_iter=int(res.n_iter),
    )


def child_large(args: argparse.Namespace) -> None:
    """Run in a fresh process: one large problem, report time and peak RSS as JSON."""
    torch.set_num_threads(args.threads)
    X, w, fixed = problem(args.n, args.d, args.n_fixed, args.weights)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    weighted_fastpam(X[:2000], 10, device=args.device)  # warm-up
    out = run_ours(X, w, fixed, args.n_select, args.schedule, args.repeats, args.device)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["baseline_rss_mb"] = base
    print("RESULT " + json.dumps(out))


def run_large(n, d, n_fixed, b, weights, schedule, repeats, threads, device) -> dict[str, Any]:
    cmd = [
        sys.executable, __file__, "--child", "--n", str(n), "--d", str(d), "--n-fixed",
        str(n_fixed), "--n-select", str(b), "--weights", weights, "--schedule", schedule,
        "--repeats", str(repeats), "--threads", str(threads), "--device", device,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


# ---- main ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, finishes in well under 1 min")
    p.add_argument("--out", default=str(HERE / "results" / "kmedoids"), help="output directory")
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    p.add_argument("--repeats", type=int, default=3, help="repeats per timing (median)")
    p.add_argument("--device", default="auto", help="torch device for the kernel")
    p.add_argument("--no-rust", action="store_true", help="skip the kmedoids package")
    p.add_argument("--only", default="", help="comma list of experiments: vs_rust,scaling,large,al")
    p.add_argument("--sizes", default="", help="comma list of n for vs_rust / scaling (override)")
    p.add_argument("--no-best", action="store_true", help="skip the best-swap schedule")
    p.add_argument("--busy", action="store_true",
                   help="run vs_rust again with one core held by a competing process (vs_rust_busy)")
    # child mode (internal)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--d", type=int, default=64, help=argparse.SUPPRESS)
    p.add_argument("--n-fixed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--n-select", type=int, default=100, help=argparse.SUPPRESS)
    p.add_argument("--weights", default="risk", help=argparse.SUPPRESS)
    p.add_argument("--schedule", default="eager", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child_large(args)
        return

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    dev = "cpu" if dev == "auto" else dev
    devname = torch.cuda.get_device_name(0) if dev.startswith("cuda") else _cpu_name()
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only  # noqa: E731
    rep = args.repeats
    q = args.quick
    started = _dt.datetime.now()
    load0 = os.getloadavg()
    rows: list[dict[str, Any]] = []

    def add(**kw: Any) -> None:
        kw.setdefault("device", devname)
        kw.setdefault("threads", args.threads)
        kw["seconds_all"] = " ".join(f"{t:.3f}" for t in kw.get("seconds_all", []))
        rows.append(kw)
        print(
            f"{kw['experiment']:<9} {kw['method']:<18} n={kw['n']:<7} "
            f"{kw['seconds']:8.2f}s  TD={kw.get('total_deviation', float('nan')):.6g} "
            f"swaps={kw.get('n_swaps', '')} ratio={kw.get('td_ratio', '')}",
            flush=True,
        )

    weighted_fastpam(gaussian_mixture(2000), 20, device=dev)  # warm-up: ours is timed warm

    # 1. unit weights, no fixed medoids, k = 200: against the Rust kmedoids package; with --busy
    # again while a competing process holds one core
    def vs_rust(experiment: str) -> None:
        sizes = [1000, 2000] if q else [2000, 5000, 10000, 20000]
        sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else sizes
        k = 50 if q else 200
        for n in sizes:
            X, w, _ = problem(n, 64, 0, "unit")
            base = dict(experiment=experiment, n=n, d=64, n_fixed=0, n_select=k, weights="unit")
            ours = run_ours(X, w, None, k, "eager", rep, dev)
            ref = None
            if not args.no_rust:
                ref = run_rust(X, k, "fasterpam", rep)
                add(method="kmedoids.fasterpam", repeats=rep, td_ratio=1.0, **base, **ref)
            ratio = ours["total_deviation"] / ref["total_deviation"] if ref else ""
            add(method="ours eager", repeats=rep, td_ratio=ratio, **base, **ours)
            if n <= (1000 if q else 10000) and not args.no_best:
                r1 = 1 if n > 2000 else rep
                best = run_ours(X, w, None, k, "best", r1, dev)
                ratio = best["total_deviation"] / ref["total_deviation"] if ref else ""
                add(method="ours best", repeats=r1, td_ratio=ratio, **base, **best)
            if not args.no_rust and n <= (1000 if q else 5000):
                r1 = 1 if n > 2000 else rep
                f1 = run_rust(X, k, "fastpam1", r1)
                add(method="kmedoids.fastpam1", repeats=r1,
                    td_ratio=f1["total_deviation"] / ref["total_deviation"], **base, **f1)

    busy_load = None
    if want("vs_rust"):
        vs_rust("vs_rust")
        if args.busy:
            spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                time.sleep(1.0)
                vs_rust("vs_rust_busy")
                busy_load = [round(x, 2) for x in os.getloadavg()]
            finally:
                spinner.kill()
                spinner.wait()

    # 2. the paper's scalability figure: |L| = 100, |Q| = 100, risk-like weights
    if want("scaling"):
        sizes = [1000, 2000, 4000] if q else [1000, 2000, 5000, 10000, 20000, 50000]
        sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else sizes
        for n in sizes:
            X, w, fixed = problem(n, 64, 100, "risk")
            base = dict(experiment="scaling", n=n, d=64, n_fixed=100, n_select=100,
                        weights="risk")
            eager = run_ours(X, w, fixed, 100, "eager", rep, dev)
            add(method="ours eager", repeats=rep, **base, **eager)
            if n <= (1000 if q else 10000) and not args.no_best:
                r1 = 1 if n > 2000 else rep
                best = run_ours(X, w, fixed, 100, "best", r1, dev)
                add(method="ours best", repeats=r1,
                    td_ratio=best["total_deviation"] / eager["total_deviation"], **base, **best)

    # 3. n = 100,000 (8,000 in quick mode) in a fresh process: time and peak memory
    if want("large"):
        n = 8000 if q else 100000
        r1 = 1
        res = run_large(n, 64, 100, 100, "risk", "eager", r1, args.threads, dev)
        add(experiment="large", method="ours eager", n=n, d=64, n_fixed=100, n_select=100,
            weights="risk", repeats=r1, **res)

    # 4. the active-learning shape
    if want("al"):
        n, d, nf = (3000, 256, 200) if q else (17000, 256, 1000)
        X, w, fixed = problem(n, d, nf, "risk")
        base = dict(experiment="al_shape", n=n, d=d, n_fixed=nf, n_select=100, weights="risk")
        add(method="ours eager", repeats=rep, **base, **run_ours(X, w, fixed, 100, "eager",
                                                                   rep, dev))

    meta = dict(
        command="python " + " ".join([os.path.relpath(__file__, HERE.parent)] + sys.argv[1:]),
        date=started.isoformat(timespec="seconds"), finished=_dt.datetime.now().isoformat(
            timespec="seconds"), device=devname, torch=torch.__version__,
        threads=torch.get_num_threads(), cpus=os.cpu_count(), python=platform.python_version(),
        omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"),
        loadavg_start=[round(x, 2) for x in load0], loadavg_after_busy=busy_load,
        loadavg_end=[round(x, 2) for x in os.getloadavg()],
    )
    _write(out, rows, meta)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"{platform.processor() or 'CPU'} ({os.cpu_count()} cores)"


def markdown_table(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The Markdown of ``kmedoids_bench.md``: the run's command, date and machine, then one row per
    measurement (also used by ``benchmarks/make_results.py`` to rebuild the page from the CSV)."""
    lines = [
        f"Command: `{meta['command']}`  ",
        f"Date: {meta['date']}; device: {meta['device']}; torch {meta['torch']}, "
        f"{meta['threads']} threads, OMP_WAIT_POLICY={meta['omp_wait_policy']}; load average at "
        f"start/end: {meta['loadavg_start']} / {meta['loadavg_end']}"
        + (f"; after the busy-core runs: {meta['loadavg_after_busy']}" if meta.get("loadavg_after_busy") else ""),
        "",
        "| experiment | method | n | d | \\|L\\| | b | weights | time (s, median) | runs | TD | "
        "TD / fasterpam | swaps | passes | peak RSS (MB) |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = r.get("td_ratio", "")
        ratio = f"{ratio:.5f}" if isinstance(ratio, float) else ""
        rss = r.get("peak_rss_mb", "")
        rss = f"{rss:.0f}" if isinstance(rss, float) else ""
        lines.append(
            f"| {r['experiment']} | {r['method']} | {r['n']} | {r['d']} | {r['n_fixed']} | "
            f"{r['n_select']} | {r['weights']} | {r['seconds']:.2f} | {r['repeats']} | "
            f"{r['total_deviation']:.6g} | {ratio} | {r['n_swaps']} | {r['n_iter']} | {rss} |"
        )
    return "\n".join(lines) + "\n"


def _write(out: Path, rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    with open(out / "kmedoids_bench.csv", "w", newline="") as fh:
        fh.write("# " + json.dumps(meta) + "\n")
        wr = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        wr.writeheader()
        for r in rows:
            wr.writerow(r)
    (out / "kmedoids_bench.md").write_text(markdown_table(rows, meta))
    _plots(out, rows, meta)
    print(f"wrote {out}/kmedoids_bench.csv, .md and .png files")


def _plots(out: Path, rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sc = [r for r in rows if r["experiment"] in ("scaling", "large")]
    if sc:
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        for method, mk in (("ours eager", "o-"), ("ours best", "s--")):
            pts = sorted((r["n"], r["seconds"], r["n_swaps"]) for r in sc if r["method"] == method)
            if pts:
                ns, ts, sw = zip(*pts)
                ax[0].plot(ns, ts, mk, label=method)
                ax[1].plot(ns, sw, mk, label=method)
        ax[0].set(xscale="log", yscale="log", xlabel="n", ylabel="runtime (s)",
                  title="(a) runtime, k = 200 (|L| = |Q| = 100)")
        ax[1].set(xscale="log", xlabel="n", ylabel="swaps until convergence",
                  title="(b) convergence")
        for a in ax:
            a.grid(alpha=0.3)
            a.legend()
        fig.suptitle(f"weighted fastPAM scalability - {meta['device']}, {meta['threads']} threads",
                     fontsize=9)
        fig.tight_layout()
        fig.savefig(out / "kmedoids_scaling.png", dpi=120)
        plt.close(fig)
    vr = [r for r in rows if r["experiment"] == "vs_rust"]
    if vr:
        fig, ax = plt.subplots(figsize=(6, 4))
        for method in sorted({r["method"] for r in vr}):
            pts = sorted((r["n"], r["seconds"]) for r in vr if r["method"] == method)
            ns, ts = zip(*pts)
            ax.plot(ns, ts, "o-", label=method)
        ax.set(xscale="log", yscale="log", xlabel="n", ylabel="runtime (s)",
               title="unit weights, no fixed medoids, k = 200")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "kmedoids_vs_rust.png", dpi=120)
        plt.close(fig)


if __name__ == "__main__":
    main()
