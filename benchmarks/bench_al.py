"""Active-learning benchmarks: the paper's Fig. 3 (F1 vs labels), Fig. 4 (misprediction share of
batches), Fig. 5 (validation ratio) and the ablations, for the RNN or the feature-based matcher.

Results are appended per (dataset, strategy, seed, round) to ``<out>/raw/*.jsonl`` (one line per
round: its results, the pool positions it queried, and the machine and library versions of the
process that ran it), so a rerun resumes where it stopped; seeds run in parallel processes with
``--jobs``. The records, the figures and ``<stem>_summary.csv`` stay out of git; the result pages
read the tracked summaries written beside the table ``<stem>.md``: ``<stem>_rounds.csv.gz`` (each
run's F1 and times per round) and ``runs.csv`` (``benchmarks/_summaries.py``). ``<out>/raw/tables.json`` remembers how each table was made (title, command, machine,
date): ``--report-only`` on unchanged records rewrites a table byte for byte instead of re-dating it.

Strategies are named as in ``skrisk.experiments.STRATEGIES`` and ``_variants.VARIANTS`` beside this
script (``--strategies``): ``risk`` is
skrisk's default, ``risk_paper`` the paper's method. Records written before the records took those
names (the paper's method was ``risk``, the default ``risk_pre2w``) are renamed once by
``benchmarks/tools/rename_records.py``.

Examples
--------
    python benchmarks/bench_al.py --dataset dblp_scholar --matcher feature --seeds 5
    python benchmarks/bench_al.py --dataset abt_buy --seed-size 575 --batch 575 --matcher rnn
    python benchmarks/bench_al.py --experiment validation --dataset dblp_scholar
    python benchmarks/bench_al.py --quick            # <= 10 minutes on 2 cores
    python benchmarks/bench_al.py --dataset abt_buy --matcher lm --seed-size 200 --batch 300 \
        --rounds 4 --seeds 1 --strategies risk entropy random --lm-params '{"max_length": 64}'
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from datetime import date
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import atomic_write_text
from skrisk import LearnRisk
from skrisk.exceptions import DataError
from skrisk.experiments import build_task, run_active_learning
from _lab import load_dataset, make_matcher_factory, matcher_fit_kwargs
from _lab import machine_line
from _lab import recorded_rounds

from _al_report import write_outputs  # noqa: E402  (beside this script)
from _summaries import compress_rounds, write_runs  # noqa: E402
from _variants import REGISTRY, make_strategy  # noqa: E402

#: The paper's seven strategies (Fig. 3-4); ``risk_paper`` is the paper's risk sampling.
STRATEGY_NAMES = ["risk_paper", "random", "entropy", "bald", "coreset", "egl", "badge"]
#: Ablations of the paper's risk sampling.
ABLATIONS = ["risk_topk", "kmedoids_unit", "risk_nodist"]
#: Variants of risk sampling measured as improvements (``risk`` is skrisk's default).
VARIANTS = ["risk_pre2", "risk_pre3", "risk_pre5", "risk_pre10", "risk_topk_lip", "risk", "risk_pre3w",
            "risk_pre5w", "risk_pre2w_nodist"]
#: The mark of a table whose names are the registry's (``raw/tables.json``); tables without it
#: are renamed by ``benchmarks/tools/rename_records.py``.
NAMES_MARK = "registry"


_TASKS: dict = {}


def _task(args: argparse.Namespace):
    """The encoded task, once per process (and from ``<out>/cache`` across processes and runs)."""
    key = (args.dataset, args.matcher, args.max_pool, args.max_valid, args.max_test)
    if key not in _TASKS:
        _TASKS[key] = build_task(args.dataset, matcher=args.matcher, cache_dir=Path(args.out) / "cache",
                                 max_pool=args.max_pool, max_valid=args.max_valid, max_test=args.max_test)
    return _TASKS[key]


def _task_name(args: argparse.Namespace) -> str:
    """The task's name; ``--report-only`` reads the dataset's name without encoding it."""
    if args.report_only:
        return load_dataset(args.dataset).name
    return _task(args).name


def _name(strategy: str, valid_ratio: float) -> str:
    return strategy if valid_ratio == 1.0 else f"{strategy}_v{valid_ratio:g}"


def _results_file(raw: Path, task_name: str, matcher: str, name: str, seed: int) -> Path:
    return raw / f"{task_name}_{matcher}_{name}_seed{seed}.jsonl"


def _recorded(args: argparse.Namespace, strategy: str, seed: int, valid_ratio: float, raw: Path) -> list[dict]:
    """The rounds already in ``raw`` for one job (``--report-only``), however far it got."""
    name = _name(strategy, valid_ratio)
    dataset = _task_name(args)
    recs = recorded_rounds(_results_file(raw, dataset, args.matcher, name, seed), name, seed, dataset=dataset)
    return [r for r in recs if r["round"] < args.rounds]


def _jobs(strategies: list[str], seeds: range, ratios: list[float]) -> list[tuple[str, int, float]]:
    """(strategy, seed, validation ratio) of every run; the ratios apply to the risk variants."""
    return [
        (s, seed, r)
        for seed in seeds
        for s in strategies
        for r in (ratios if s.startswith("risk") else [1.0])
    ]


def _run_one(args: argparse.Namespace, strategy: str, seed: int, valid_ratio: float, raw: Path) -> list[dict]:
    if args.report_only:
        return _recorded(args, strategy, seed, valid_ratio, raw)
    torch.set_num_threads(args.threads)
    task = _task(args)
    strat = make_strategy(strategy, task, valid_ratio=valid_ratio,
                          risk=LearnRisk(epochs=args.risk_epochs), random_state=seed)
    name = _name(strategy, valid_ratio)
    query_kwargs = {"subsample": args.egl_subsample} if strategy == "egl" and args.egl_subsample else None
    return run_active_learning(
        task,
        strat,
        make_matcher_factory(args.matcher, **(json.loads(args.lm_params) if args.matcher == "lm" else {})),
        n_seed=args.seed_size,
        n_instances=args.batch,
        n_rounds=args.rounds,
        seed=seed,
        strategy_name=name,
        fit_kwargs=matcher_fit_kwargs(args.matcher),
        query_kwargs=query_kwargs,
        results_file=_results_file(raw, task.name, args.matcher, name, seed),
        progress=not args.no_progress,
    )


#: How each table under ``<out>`` was made, beside the records: ``{stem: {"sha256", "title", "footer"}}``.
TABLES = "tables.json"


def _finish_table(table: Path, provenance: Path, stem: str, footer: str, *, reuse: bool) -> None:
    """Append the footer (command, machine, date) to a table written by ``write_outputs``.

    The table's provenance is kept in ``provenance``. With ``reuse`` (``--report-only``), a table
    whose numbers are those recorded there keeps its recorded title and footer: regenerating a
    table from unchanged records rewrites it byte for byte and does not re-date its runs.
    """
    text = table.read_text()
    title, _, body = text.partition("\n")
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    try:
        known = json.loads(provenance.read_text(encoding="utf-8")) if provenance.is_file() else {}
    except (OSError, ValueError) as exc:
        raise DataError(f"{provenance} is not readable JSON ({exc}): restore it from git, or delete it "
                        "(tables regenerated then get new command, machine and date lines).") from exc
    if not isinstance(known, dict):
        raise DataError(f"{provenance} does not hold a JSON object: restore it from git, or delete it.")
    # the table of this name, or one saved under another name (e.g. a copy made with another --tag)
    candidates = [known.get(stem), *(v for k, v in sorted(known.items()) if k != stem)]
    entry = next((e for e in candidates if isinstance(e, dict) and e.get("sha256") == digest), None)
    if reuse and entry is not None:
        table.write_text(f"{entry['title']}\n{body}{entry['footer']}")
        return
    table.write_text(text + footer)
    known[stem] = {"sha256": digest, "title": title, "footer": footer, "names": NAMES_MARK}
    atomic_write_text(provenance, json.dumps(known, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="dblp_scholar")
    p.add_argument("--matcher", choices=["feature", "rnn", "lm"], default="feature")
    p.add_argument("--lm-params", default='{"warm_start": true}',
                   help="JSON of LMMatcher parameters (--matcher lm), e.g. '{\"max_length\": 64, "
                        "\"warm_start\": true, \"freeze_layers\": 4}'; warm_start: each round continues "
                        "from the last round's weights")
    p.add_argument("--max-pool", type=int, default=None, help="stratified subset of the pool (train split)")
    p.add_argument("--max-valid", type=int, default=None, help="stratified subset of the validation split")
    p.add_argument("--max-test", type=int, default=None, help="stratified subset of the test split")
    p.add_argument("--experiment", choices=["compare", "validation", "ablation", "variants"],
                   help="compare: the paper's strategies (Fig. 3-4); validation: risk sampling at "
                        "validation ratios 0.25/0.5/1 and core-set (Fig. 5); ablation: parts of risk "
                        "sampling removed; variants: risk sampling with skrisk's measured changes", default="compare")
    p.add_argument("--strategies", nargs="+", default=None,
                   help="names of skrisk.experiments.STRATEGIES or _variants.VARIANTS ('risk': skrisk's default, 'risk_paper': "
                        "the paper's method)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0,
                   help="run seeds first-seed .. seeds-1 only (e.g. to run other seeds in a second "
                   "process); the table also holds the rounds recorded for the seeds below it")
    p.add_argument("--seed-size", type=int, default=100)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--rounds", type=int, default=9, help="rounds including the initial one")
    p.add_argument("--risk-epochs", type=int, default=1000)
    p.add_argument("--egl-subsample", type=int, default=None)
    p.add_argument("--jobs", type=int, default=1, help="processes running seeds in parallel")
    p.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    p.add_argument("--out", default="benchmarks/results/al")
    p.add_argument("--tag", default="", help="suffix of the output files' names (<dataset>_<matcher>_<experiment>_<tag>)")
    p.add_argument("--quick", action="store_true", help="small settings (<= 10 minutes on 2 cores)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: write the CSV, figures and tables from the rounds already recorded "
                        "under <out>/raw, for the seeds every strategy has started (partial runs "
                        "included; the table counts the runs behind each cell)")
    args = p.parse_args(argv)
    if not 0 <= args.first_seed < args.seeds:
        p.error(f"--first-seed must be in [0, --seeds), got {args.first_seed} with --seeds {args.seeds}")
    if args.quick:
        args.dataset = args.dataset if args.dataset != "dblp_scholar" else "beer"
        args.seeds, args.seed_size, args.batch, args.rounds, args.risk_epochs = 2, 40, 20, 3, 100
        if args.strategies is None:
            args.strategies = STRATEGY_NAMES if args.matcher == "rnn" else ["risk_paper", "random", "entropy", "coreset"]
    if args.strategies is None:
        if args.experiment == "compare":
            args.strategies = STRATEGY_NAMES if args.matcher == "rnn" else ["risk_paper", "random", "entropy", "bald", "coreset"]
        elif args.experiment == "ablation":
            args.strategies = ["risk_paper", *ABLATIONS]
        elif args.experiment == "variants":
            args.strategies = ["risk_paper", *VARIANTS]
        else:
            args.strategies = ["risk_paper", "coreset"]
    unknown = [s for s in args.strategies if s not in REGISTRY]
    if unknown:
        hint = (" ('risk_pre2w' is now 'risk', skrisk's default; the paper's method is 'risk_paper')"
                if "risk_pre2w" in unknown else "")
        p.error(f"unknown strategy {', '.join(unknown)}{hint}; known: {', '.join(REGISTRY)}")
    ratios = [0.25, 0.5, 1.0] if args.experiment == "validation" else [1.0]
    out = Path(args.out)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    jobs = _jobs(args.strategies, range(args.first_seed, args.seeds), ratios)
    t0 = time.perf_counter()
    if args.jobs > 1 and not args.report_only:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=args.jobs)(delayed(_run_one)(args, s, seed, r, raw) for s, seed, r in jobs)
    else:
        results = [_run_one(args, s, seed, r, raw) for s, seed, r in jobs]
    wall = time.perf_counter() - t0
    records = [rec for res in results for rec in res]
    if args.first_seed and not args.report_only:
        # the table covers every run below --seeds: add the rounds recorded for the seeds that
        # another process (or an earlier run) has done
        earlier = _jobs(args.strategies, range(args.first_seed), ratios)
        records += [rec for s, seed, r in earlier for rec in _recorded(args, s, seed, r, raw)]
    if args.report_only:
        # compare like with like: only the runs (seeds) that every strategy has started
        names = {_name(st, r) for st, _, r in jobs}
        seeds = [{rec["seed"] for rec in records if rec["strategy"] == n} for n in names]
        common = set.intersection(*seeds) if seeds else set()
        records = [rec for rec in records if rec["seed"] in common]
    if not records:
        print(f"No rounds recorded under {raw} for these settings: nothing to report.", file=sys.stderr)
        return 1
    stem = f"{records[0]['dataset']}_{args.matcher}_{args.experiment}" + (f"_{args.tag}" if args.tag else "")
    title = (
        f"{records[0]['dataset']}, {args.matcher} matcher, "
        f"seed {args.seed_size}, batch {args.batch}, {len({r['seed'] for r in records})} runs"
        + (" (rounds recorded so far)" if args.report_only else "")
    )
    paths = write_outputs(records, out, stem, title)
    compute = sum(r.get("fit_s", 0.0) + r.get("query_s", 0.0) for r in records)
    command = f"python benchmarks/bench_al.py {' '.join(argv if argv is not None else sys.argv[1:])}"
    if args.report_only:  # the runs' own machine and dates, as recorded with them
        envs = sorted({str(r["env"]) for r in records if r.get("env")}) or ["not recorded"]
        dates = sorted({str(r["date"]) for r in records if r.get("date")}) or ["not recorded"]
        machine, when = " / ".join(envs), dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    else:
        machine, when = machine_line(args.threads), date.today().isoformat()
    footer = (
        f"\n_command_: `{command}`  \n"
        f"_machine_: {machine}  \n"
        f"_date_: {when}, wall time {wall:.0f} s (resumed runs count only new rounds); "
        f"fit + query time summed over all rounds of the table {compute:.0f} s\n"
    )
    _finish_table(paths["table"], raw / TABLES, stem, footer, reuse=args.report_only)
    # the tracked summaries the result pages read: the rounds compressed (<stem>_rounds.csv.gz),
    # and the folder's runs with their dates (runs.csv); raw/, the figures and _summary.csv stay untracked
    compress_rounds(paths["rounds"])
    write_runs(raw, out)
    print(paths["table"].read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
