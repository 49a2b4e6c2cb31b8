"""Regenerate the computed blocks of ``benchmarks/RESULTS.md`` and of the per-topic pages under
``benchmarks/results/``.

A page is the one copy of its prose. Each of its tables, and every number of the summary, sits
between the comments ``<!-- {{name}} -->`` (or ``<!-- {{name:argument}} -->``) and
``<!-- {{/name}} -->`` and is recomputed here, by the block of that name (see ``BLOCKS``), from the
summaries the benchmark scripts write beside their records (``benchmarks/_summaries.py``):

- active learning: the tables ``benchmarks/bench_al.py --report-only`` writes (``<stem>.md``), the
  per-run, per-round summaries ``<stem>_rounds.csv.gz`` and ``runs.csv`` of each folder, and the
  replays of ``benchmarks/bench_risk_quality.py`` (``<stem>_risk_quality.csv``);
- sessions and replays (``bench_session.py``): the ``records.jsonl.gz`` of each folder under
  ``benchmarks/results/quality/``;
- data, matcher, LearnRisk, k-medoids kernel, query time, scale: the CSV / JSON-lines records of
  ``bench_data.py``, ``bench_matcher.py``, ``bench_learnrisk.py``, ``bench_kmedoids.py``,
  ``bench_query.py`` and ``bench_scale.py`` under ``benchmarks/results/<part>/``.

The whole records (every round's fields, the pool positions each query chose, the figures) stay
out of the tree, under the ``raw/`` folders git ignores; those made up to commit afff963 are in
the repository's history (``git checkout afff963 -- benchmarks/results``), and ``--from-raw`` and
a run without ``--pages-only`` rebuild the AL tables from them.

Examples
--------
    python benchmarks/make_results.py --pages-only   # every page from the tracked summaries
    python benchmarks/make_results.py            # every AL table from raw/ first
    python benchmarks/make_results.py --check    # exit 1 and list the pages that differ (fast)
    python benchmarks/make_results.py --check --from-raw   # also every AL table from raw/
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import atomic_write_text

from _summaries import RUNS, read_runs  # noqa: E402  (beside this script)

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
AL = RESULTS / "al"
#: the pages (relative to the repository root): each is the one copy of its prose, and its
#: computed blocks are rebuilt in place (see :func:`render`)
OUTPUTS = (
    "benchmarks/RESULTS.md",
    "benchmarks/results/strategies.md",
    "benchmarks/results/components.md",
    "benchmarks/results/active_learning.md",
    "benchmarks/results/active_learning_ablations.md",
    "benchmarks/results/data.md",
    "benchmarks/results/matcher.md",
    "benchmarks/results/learnrisk.md",
    "benchmarks/results/kmedoids.md",
    "benchmarks/results/query.md",
    "benchmarks/results/matching.md",
    "benchmarks/results/quality.md",
    "benchmarks/results/scale.md",
    "benchmarks/results/lm.md",
)

DEFAULT = "risk"
PAPER = "risk_paper"
#: the strategies of the summary, in its column order, with their names for a reader
STRATEGIES = {
    "risk": "skrisk default `risk`",
    "risk_paper": "paper's `risk_paper`",
    "random": "random",
    "entropy": "entropy",
    "bald": "BALD",
    "coreset": "core-set",
    "egl": "EGL",
    "badge": "BADGE",
}
BASELINES = ["random", "entropy", "bald", "coreset", "egl", "badge"]
#: setting -> the compare experiments that measured it (later stems add runs to earlier ones); a
#: stem is a table under results/al/, or under results/ where it names its folder
SETTINGS = {
    "DBLP-Scholar x forest": ["dblp_scholar_feature_compare_all"],
    # 6.5's tables (dblp_scholar_rnn_compare, ..._runs10) predate the RNN's rewrite: the runs of
    # every strategy there are rerun on main (6.17, 6.19): BALD, EGL, BADGE seeds 0-7, core-set, random 0-4
    "DBLP-Scholar x RNN": ["al_rerun/dblp_scholar_rnn_compare_main_base", "al_rerun/dblp_scholar_rnn_compare_main_base10",
                           "al_rerun/dblp_scholar_rnn_compare_main_kcenter", "al_rerun/dblp_scholar_rnn_compare_main"],
    "DBLP-Scholar x LM": ["al_lm_gpu/dblp_scholar_lm_compare_gpu", "al_lm_gpu/dblp_scholar_lm_compare_gpu6",
                          "al_lm_gpu/dblp_scholar_lm_compare_gpu10"],
    "Abt-Buy x forest": ["abt_buy_feature_compare_all"],
    # every run of 6.7's tables (abt_buy_rnn_compare, ..._runs10) is rerun on main (6.18)
    "Abt-Buy x RNN": ["al_rerun/abt_buy_rnn_compare_main_base", "al_rerun/abt_buy_rnn_compare_main"],
    "Abt-Buy x LM": ["al_lm_gpu/abt_buy_lm_compare_gpu", "al_lm_gpu/abt_buy_lm_compare_gpu6"],
    "Beer x forest": ["beer_feature_compare"],
    "Beer x RNN": ["beer_rnn_compare", "beer_rnn_compare_runs10"],
    "Beer x LM": ["al_lm_gpu/beer_lm_compare_gpu"],
    "Fodors-Zagats x forest": ["fodors_zagats_feature_compare"],
    "Fodors-Zagats x RNN": ["fodors_zagats_rnn_compare", "fodors_zagats_rnn_compare_runs10"],
    "Fodors-Zagats x LM": ["al_lm_gpu/fodors_zagats_lm_compare_gpu", "al_lm_gpu/fodors_zagats_lm_compare_gpu20"],
}
#: the settings of issue #7's goal (section 6.9 of the active-learning page)
GOAL_SETTINGS = ("DBLP-Scholar x forest", "DBLP-Scholar x RNN", "Abt-Buy x forest", "Abt-Buy x RNN")
NAMES = {"dblp_scholar": "DBLP-Scholar", "abt_buy": "Abt-Buy", "beer": "Beer", "fodors_zagats": "Fodors-Zagats"}
#: a paired AULC difference smaller than this counts as a tie (it rounds to 0.000)
TIE = 5e-4


#: the suffix of a table's per-run, per-round summary (the gzip of bench_al's ``_rounds.csv``)
ROUNDS = "_rounds.csv.gz"


class ResultsError(RuntimeError):
    """A record or template the pages cannot be built from; the message names the file and the fix."""


# --------------------------------------------------------------------------- records


def _rel(path: Path) -> str:
    """``path`` relative to the repository root where it is inside it, for messages."""
    try:
        return str(Path(path).resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return str(path)


def _read_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise ResultsError(f"{_rel(path)} is missing: run the benchmark that writes it "
                           "(see its page's command) or restore it with git.")
    return pd.read_csv(path, comment="#")


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise ResultsError(f"{_rel(path)} is missing: restore it with git.")
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ResultsError(f"{_rel(path)}, line {i}: not JSON ({exc.msg}); "
                                   "restore the file with git.") from None
    return out


def _bench_module(name: str):
    """A benchmark script as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def stem_file(stem: str, suffix: str, al_dir: Path = AL) -> Path:
    """The file of a table ``stem`` (see :data:`SETTINGS`): under ``al_dir``, or under results/."""
    return RESULTS / f"{stem}{suffix}" if "/" in stem else al_dir / f"{stem}{suffix}"


def href(target: str, ctx: dict) -> str:
    """The link to ``target`` (relative to benchmarks/) from the page being built (``ctx["page"]``,
    relative to the repository root; benchmarks/RESULTS.md where none is named)."""
    page = ctx.get("page", "benchmarks/RESULTS.md")
    return posixpath.relpath(f"benchmarks/{target}", posixpath.dirname(page))


def stem_link(stem: str, ctx: dict) -> str:
    """The link to a table ``stem`` from the page being built."""
    return href(f"results/{stem}.md" if "/" in stem else f"results/al/{stem}.md", ctx)


def rounds(stems: list[str], al_dir: Path = AL) -> pd.DataFrame:
    """Per-(strategy, seed, round) records of the experiments ``stems``, each round once."""
    frames = [_read_csv(stem_file(s, ROUNDS, al_dir)) for s in stems]
    df = pd.concat(frames, ignore_index=True)
    return df.drop_duplicates(subset=["strategy", "seed", "round"], keep="last")


def run_aulc(df: pd.DataFrame) -> pd.DataFrame:
    """Area under each run's learning curve (mean F1 over the label range), complete runs only.

    The mean of these equals ``bench_al``'s AULC (the area under the mean curve) when every run
    has every budget, which is why incomplete runs are left out.
    """
    rows = []
    for (strat, seed), g in df.groupby(["strategy", "seed"]):
        g = g.sort_values("n_labelled")
        x, y = g["n_labelled"].to_numpy(float), g["f1"].to_numpy(float)
        rows.append({"strategy": strat, "seed": int(seed), "n": len(x),
                     "aulc": float(np.trapezoid(y, x) / (x[-1] - x[0])) if len(x) > 1 else float(y[0])})
    out = pd.DataFrame(rows)
    full = out.groupby("strategy")["n"].transform("max")
    return out[out["n"] == full].drop(columns="n")


def _paired(per_run: pd.DataFrame, a: str, b: str) -> dict:
    """AULC of ``a`` minus that of ``b`` over the runs both have: mean, std, 90 % t-interval,
    wins / ties / losses (a tie: less than ``TIE`` apart)."""
    from scipy.stats import t

    x = per_run[per_run["strategy"] == a].set_index("seed")["aulc"]
    y = per_run[per_run["strategy"] == b].set_index("seed")["aulc"]
    d = (x - y).dropna()
    n = len(d)
    sd = float(d.std(ddof=1)) if n > 1 else float("nan")
    half = float(t.ppf(0.95, n - 1) * sd / np.sqrt(n)) if n > 1 else float("nan")
    return {"other": b, "n": n, "mean": float(d.mean()), "sd": sd, "lo": float(d.mean()) - half,
            "hi": float(d.mean()) + half, "wins": int((d > TIE).sum()), "ties": int((d.abs() <= TIE).sum()),
            "losses": int((d < -TIE).sum())}


def setting_summary(stems: list[str], al_dir: Path = AL) -> dict:
    """AULC per strategy, runs, the best strategy and baseline, the default's paired comparisons."""
    df = rounds(stems, al_dir)
    per_run = run_aulc(df)
    aulc = per_run.groupby("strategy")["aulc"].mean()
    runs = per_run.groupby("strategy")["seed"].nunique()
    curve = df.groupby(["strategy", "n_labelled"])["f1"].mean()
    present = [s for s in STRATEGIES if s in aulc.index]
    best = max(present, key=lambda s: aulc[s])
    baselines = [s for s in BASELINES if s in aulc.index]
    best_base = max(baselines, key=lambda s: aulc[s])
    budgets = sorted(df["n_labelled"].unique())

    def paired(other: str) -> dict:
        return _paired(per_run, DEFAULT, other)

    first3 = budgets[1:4]  # the labelled-set sizes after the first three queries
    return {
        "aulc": aulc, "runs": runs, "best": best, "best_base": best_base, "budgets": budgets,
        "first3": first3, "curve": curve, "vs_base": paired(best_base),
        "vs_paper": paired(PAPER) if PAPER in aulc.index else None,
        "stems": stems, "per_run": per_run,
    }


def summaries(al_dir: Path = AL) -> dict[str, dict]:
    return {name: setting_summary(stems, al_dir) for name, stems in SETTINGS.items()}


# --------------------------------------------------------------------------- blocks: summary


def _signed(x: float, nd: int = 4) -> str:
    """``x`` with its sign, and no "-0.000" for a value that rounds to zero."""
    v = round(float(x), nd)
    return f"{0.0:.{nd}f}" if v == 0 else f"{v:+.{nd}f}"


def _fmt_sd(x: float) -> str:
    return "n/a" if np.isnan(x) else f"{x:.4f}"


def block_summary_table(_: str, ctx: dict) -> str:
    """Rows: settings; columns: strategies; AULC, shortfall from the setting's best, runs."""
    head = "| setting | " + " | ".join(STRATEGIES.values()) + " |"
    lines = [head, "|---" * (len(STRATEGIES) + 1) + "|"]
    for name, s in ctx["summaries"].items():
        top = s["aulc"][s["best"]]
        cells = []
        for strat in STRATEGIES:
            if strat not in s["aulc"].index:
                cells.append("n/a")
                continue
            v, n = s["aulc"][strat], int(s["runs"][strat])
            gap = v - top
            mark = f"**{v:.3f}** best" if strat == s["best"] else f"{v:.3f} ({_signed(gap, 3)})"
            cells.append(f"{mark}, {n} runs")
        link = ", ".join(f"[{i + 1}]({stem_link(st, ctx)})" for i, st in enumerate(s["stems"]))
        lines.append(f"| {name} (tables: {link}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _verdict(p: dict) -> str:
    if np.isnan(p["lo"]):
        return "one run: no interval"
    if p["lo"] > 0:
        return "ahead beyond noise"
    if p["hi"] < 0:
        return "behind beyond noise"
    return "within noise"


def block_paired_table(_: str, ctx: dict) -> str:
    lines = ["| setting | default against | runs paired | mean AULC difference | std | 90 % interval | wins / ties / losses | reading |",
             "|---|---|---|---|---|---|---|---|"]
    for name, s in ctx["summaries"].items():
        for p, what in ((s["vs_base"], "best baseline"), (s["vs_paper"], "the paper's method")):
            if p is None:  # the setting did not run the paper's method
                continue
            lines.append(
                f"| {name} | {what}: {STRATEGIES[p['other']]} ({s['aulc'][p['other']]:.3f}) | {p['n']} "
                f"| {_signed(p['mean'])} | {_fmt_sd(p['sd'])} | [{_signed(p['lo'])}, {_signed(p['hi'])}] "
                f"| {p['wins']} / {p['ties']} / {p['losses']} | {_verdict(p)} |")
    return "\n".join(lines)


def block_candidate(name: str, ctx: dict) -> str:
    """A candidate strategy ``name`` against the default and the setting's best baseline, paired
    over runs, in every setting whose tables hold its complete runs."""
    lines = [f"| setting | runs | `{name}` | default | best baseline | `{name}` minus the default "
             f"| `{name}` minus the best baseline |", "|---|---|---|---|---|---|---|"]

    def cell(p: dict) -> str:
        return (f"{_signed(p['mean'], 3)} [{_signed(p['lo'], 3)}, {_signed(p['hi'], 3)}], "
                f"{p['wins']} / {p['ties']} / {p['losses']}")

    for setting, s in ctx["summaries"].items():
        if name not in s["aulc"].index:
            continue
        base = s["best_base"]
        vs_def, vs_base = _paired(s["per_run"], name, DEFAULT), _paired(s["per_run"], name, base)
        lines.append(f"| {setting} | {vs_def['n']} | {s['aulc'][name]:.3f} | {s['aulc'][DEFAULT]:.3f} "
                     f"| {STRATEGIES[base]} {s['aulc'][base]:.3f} | {cell(vs_def)} | {cell(vs_base)} |")
    return "\n".join(lines)


def _first3(s: dict, strat: str) -> list[float]:
    return [float(s["curve"][(strat, b)]) for b in s["first3"]]


def block_recommendation(_: str, ctx: dict) -> str:
    """Which strategy to use per setting, and how sure, from the paired comparisons.

    The default is recommended unless the best baseline is ahead of it beyond noise (the 90 %
    interval of the paired AULC difference below zero); then that baseline is.
    """
    lines = ["| setting | use | how sure (paired over runs: mean AULC difference, 90 % interval, wins / ties / losses) | first three queries, default against the best baseline at each |",
             "|---|---|---|---|"]
    for name, s in ctx["summaries"].items():
        p = s["vs_base"]
        verdict = _verdict(p)
        d3 = _first3(s, DEFAULT)
        b3 = [max(float(s["curve"][(b, n)]) for b in BASELINES if (b, n) in s["curve"].index) for n in s["first3"]]
        if verdict == "behind beyond noise":
            use = f"{STRATEGIES[p['other']]} (AULC {s['aulc'][p['other']]:.3f})"
            sure = (f"{STRATEGIES[p['other']]} is ahead of the default beyond noise: {_signed(-p['mean'])} "
                    f"[{_signed(-p['hi'])}, {_signed(-p['lo'])}], {p['losses']} / {p['ties']} / {p['wins']} over {p['n']} runs")
        else:
            higher = [st for st in STRATEGIES if st != DEFAULT and st in s["aulc"].index
                      and s["aulc"][st] > s["aulc"][DEFAULT]]
            notes = []
            for st in higher:
                q = _paired(s["per_run"], DEFAULT, st)
                notes.append(f"{STRATEGIES[st]} {s['aulc'][st]:.3f}, {_verdict(q)} over {q['n']} paired runs")
            level = f"; higher mean: {'; '.join(notes)}" if notes else ""
            use = f"the default `RiskSampler()` (AULC {s['aulc'][DEFAULT]:.3f}{level})"
            sure = (f"against {STRATEGIES[p['other']]}: {verdict}, {_signed(p['mean'])} [{_signed(p['lo'])}, {_signed(p['hi'])}], "
                    f"{p['wins']} / {p['ties']} / {p['losses']} over {p['n']} runs")
        lines.append(f"| {name} | {use} | {sure} | {' / '.join(f'{x:.3f}' for x in d3)} against "
                     f"{' / '.join(f'{y:.3f}' for y in b3)} ({' / '.join(str(int(n)) for n in s['first3'])} labels) |")
    return "\n".join(lines)


def block_sources(_: str, ctx: dict) -> str:
    """Machine, date and command of every table behind the summary (from the tables' own lines)."""
    lines = []
    for name, s in ctx["summaries"].items():
        for stem in s["stems"]:
            text = stem_file(stem, ".md", ctx["al_dir"]).read_text()
            meta = {k: re.search(rf"_{k}_: (.*?)\s*$", text, re.M) for k in ("command", "machine", "date")}
            date = meta["date"].group(1).split(",")[0] if meta["date"] else "?"
            machine = meta["machine"].group(1) if meta["machine"] else "?"
            cmd = meta["command"].group(1) if meta["command"] else "?"
            lines.append(f"- {name}, [`{stem}.md`]({stem_link(stem, ctx)}): {date}; {machine}; {cmd}")
    return "\n".join(lines)


#: The RNN matcher's code was rewritten on this date (issue #16: the skorch way, batch dropout
#: seeded by the CPU generator): runs recorded before it start from other seed-set fits than the
#: code on main gives (test F1 equal within noise, benchmarks/results/matcher.md), so they do not
#: rerun on main and a pairing across the date compares different fits.
RNN_REWRITE = "2026-11-25"


def runs_before(stem: str, per_run: pd.DataFrame, date: str, al_dir: Path = AL,
                skip: set | None = None) -> dict[str, list[int]]:
    """Strategy -> seeds of the complete runs (rows of ``per_run``) that table ``stem`` holds and
    whose raw record is dated before ``date`` (its first round's date; a record without one
    counts as before; the dates are those of the folder's ``runs.csv``). ``skip``: (strategy,
    seed) pairs to pass over; the pairs the table holds are added to it, so that a later table's
    runs, read first, shadow an earlier table's."""
    out: dict[str, list[int]] = {}
    if "_rnn_" not in Path(stem).name:
        return out
    table = stem_file(stem, ROUNDS, al_dir)
    frame = _read_csv(table)
    held = set(zip(frame["strategy"], frame["seed"].astype(int)))
    runs = table.parent / RUNS
    if not runs.is_file():
        raise ResultsError(f"{_rel(runs)} is missing: write it from the raw records with "
                           f"`python benchmarks/_summaries.py al {_rel(table.parent)}`, or restore it with git.")
    first_dates = {r["file"]: r["first_date"] for r in read_runs(table.parent)}
    dataset = str(frame["dataset"].iloc[0])
    skip = set() if skip is None else skip
    for strat, seed in per_run[["strategy", "seed"]].itertuples(index=False):
        key = (strat, int(seed))
        if key not in held or key in skip:
            continue
        skip.add(key)
        name = f"{dataset}_rnn_{strat}_seed{int(seed)}.jsonl"
        if name not in first_dates:
            raise ResultsError(f"{_rel(runs)} has no row for {name}: write it from the raw records with "
                               f"`python benchmarks/_summaries.py al {_rel(table.parent)}`.")
        if first_dates[name] < date:
            out.setdefault(strat, []).append(int(seed))
    return out


def block_settings_note(_: str, ctx: dict) -> str:
    """Run counts that differ within a setting, runs made before the RNN's rewrite, and each
    setting's seed set and batch."""
    parts = []
    for name, s in ctx["summaries"].items():
        if "RNN" not in name:
            continue
        old: dict[str, set[int]] = {}
        shadowed: set = set()
        for stem in reversed(s["stems"]):  # the later tables' runs are the summary's
            for strat, seeds in runs_before(stem, s["per_run"], RNN_REWRITE, ctx["al_dir"], shadowed).items():
                old.setdefault(strat, set()).update(seeds)
        shown = [st for st in STRATEGIES if st in old]
        if shown:
            listed = ", ".join(f"{STRATEGIES[st]} ({len(old[st])} of {int(s['runs'][st])} runs)" for st in shown)
            parts.append(f"In the {name} row, the runs of {listed} were recorded before the RNN's code was "
                         f"rewritten ({RNN_REWRITE}, issue #16; test F1 equal within noise): they start from "
                         "other seed-set fits than main gives, so they do not rerun on main, and a pairing "
                         "with a later run compares different fits.")
    for name, s in ctx["summaries"].items():
        counts = s["runs"][[st for st in STRATEGIES if st in s["runs"].index]]
        if counts.nunique() > 1:
            few = [STRATEGIES[st] for st, n in counts.items() if n < counts.max()]
            few_txt = few[0] if len(few) == 1 else ", ".join(few[:-1]) + " and " + few[-1]
            parts.append(f"In the {name} row, {few_txt} ran {int(counts.min())} runs and the other "
                         f"strategies {int(counts.max())}, so their shortfalls compare means over different runs; "
                         "every paired comparison uses the runs both strategies share.")
    sizes = []
    for name, s in ctx["summaries"].items():
        title = stem_file(s["stems"][0], ".md", ctx["al_dir"]).read_text().partition("\n")[0]
        m = re.search(r"seed (\d+), batch (\d+)", title)
        if m:
            sizes.append(f"{name} {int(m.group(1)):,} / {int(m.group(2)):,}")
    parts.append("Seed set / batch: " + "; ".join(sizes) + ".")
    parts.append(f"Paired: same initial labels and matcher seed; a tie is a difference below {TIE:g}.")
    return " ".join(parts)


#: the matchers of the summary's settings, with their class names
MATCHERS = {"forest": "FeatureMatcher", "RNN": "RNNMatcher", "LM": "LMMatcher"}


def block_matcher_table(_: str, ctx: dict) -> str:
    """The matcher matters more than the strategy: per dataset, the best AULC with each matcher
    (and the strategy that reached it). Areas compare only over the same label range: the best
    over the forest's range is bold, and an area over another range says its range."""
    lines = ["| dataset | labels | " + " | ".join(f"{m} (`{c}`)" for m, c in MATCHERS.items()) + " |",
             "|---" * (len(MATCHERS) + 2) + "|"]
    for ds in ("DBLP-Scholar", "Abt-Buy", "Beer", "Fodors-Zagats"):
        base = ctx["summaries"][f"{ds} x forest"]["budgets"]
        best, same = {}, {}
        for m in MATCHERS:
            s = ctx["summaries"][f"{ds} x {m}"]
            strat = max((k for k in s["aulc"].index if k in STRATEGIES), key=lambda k: s["aulc"][k])
            best[m] = (strat, float(s["aulc"][strat]), int(s["runs"][strat]), s["budgets"])
            same[m] = s["budgets"] == base
        top = max((m for m in MATCHERS if same[m]), key=lambda m: best[m][1])
        cells = []
        for m in MATCHERS:
            strat, v, n, budgets = best[m]
            value = f"**{v:.3f}**" if m == top else f"{v:.3f}"
            span = "" if same[m] else f"; over labels {int(budgets[0]):,}-{int(budgets[-1]):,}"
            cells.append(f"{value} ({STRATEGIES[strat]}, {n} runs{span})")
        lines.append(f"| {ds} | {int(base[0]):,}-{int(base[-1]):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def block_components(_: str, ctx: dict) -> str:
    """One line per component figure, every number from its records, with a link to its page."""
    km = _read_csv(RESULTS / "kmedoids/quiet/kmedoids_bench.csv")
    ours = km[(km["experiment"] == "vs_rust") & (km["method"] == "ours eager")].set_index("n")["seconds"]
    rust = km[(km["experiment"] == "vs_rust") & (km["method"] == "kmedoids.fasterpam")].set_index("n")["seconds"]
    speed = ", ".join(f"{ours[n]:.2f} s against {rust[n]:.2f} s ({ours[n] / rust[n]:.2f}x) at n = {n:,}"
                      for n in sorted(ours.index) if n in rust.index)
    al_shape = km[km["experiment"] == "al"]
    al_txt = f"; the active-learning shape (n = {int(al_shape['n'].iloc[0]):,}) {al_shape['seconds'].iloc[0]:.2f} s" if len(al_shape) else ""
    rec = _read_jsonl(RESULTS / "matcher/results.jsonl")
    full = {r["dataset"]: r for r in rec if r.get("task") == "full" and r.get("model") == "hybrid"
            and not r.get("params", {}).get("stack_forest")}
    lr = pd.concat([_read_csv(p) for p in sorted((RESULTS / "learnrisk").glob("runs_rnn_plain_*.csv"))])
    g = lr.groupby("dataset")[["auc_learnrisk", "auc_uncertainty"]].mean()
    # queries with RiskSampler's defaults (no --risk-params, or an empty one), every repeat
    q = [r for r in _read_jsonl(RESULTS / "query/query_bench.jsonl")
         if "--risk-params" not in r["command"] or "--risk-params '{}'" in r["command"]]
    totals = {kind: [run["phases_s"]["query_total"] for r in q if (r["matcher"] == "feature") == (kind == "forest")
                     for run in r["runs"]] for kind in ("forest", "rnn")}
    span = {k: f"{min(v):.1f}" if min(v) == max(v) else f"{min(v):.1f}-{max(v):.1f}" for k, v in totals.items()}
    data = _read_csv(RESULTS / "data/bench_data.csv")
    sim = data[(data["part"] == "similarity") & (data["dataset"] == "dblp_scholar")].iloc[0]
    base = data[(data["part"] == "baseline") & (data["dataset"] == "dblp_scholar")
                & data["metric"].str.startswith("LogisticRegression")].iloc[0]
    lines = [
        f"- **Kernel against `kmedoids` (Rust FasterPAM), unit weights, k = 200, idle machine:** "
        f"{speed}{al_txt}. [kmedoids.md]({href('results/kmedoids.md', ctx)})",
        "- **Matcher:** hybrid RNN on the full training split, test F1 "
        + ", ".join(f"{NAMES.get(d, d)} {r['test_f1']:.4f}" for d, r in sorted(full.items()))
        + f". [matcher.md]({href('results/matcher.md', ctx)})",
        "- **LearnRisk:** ROC AUC of the risk for a plain RNN's test mistakes, against the RNN's own "
        "uncertainty: " + ", ".join(f"{NAMES.get(d, d)} {row.auc_learnrisk:.3f} against {row.auc_uncertainty:.3f}"
                                     for d, row in g.iterrows())
        + f". [learnrisk.md]({href('results/learnrisk.md', ctx)})",
        f"- **Query time** (one risk-sampling query, DBLP-Scholar pool of {q[0]['pool']:,}, b = {q[0]['batch']}): "
        f"{span['forest']} s with the forest, {span['rnn']} s with the RNN, with `RiskSampler`'s defaults (target <= {q[0]['target_s']} s). "
        f"[query.md]({href('results/query.md', ctx)})",
        f"- **Data layer:** DBLP-Scholar's {sim['metric'].split(', ')[2]} for {sim['metric'].split(', ')[1]} in {float(sim['value']):.1f} s; "
        f"logistic regression on them, test F1 {float(base['value']):.4f} (target {base['expected']}). [data.md]({href('results/data.md', ctx)})",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- blocks: AL pages


def _split_meta(text: str) -> tuple[str, str]:
    i = text.find("\n_command_:")
    return (text, "") if i < 0 else (text[:i], text[i:])


def block_al(stem: str, ctx: dict) -> str:
    """A ``bench_al`` table as written by ``--report-only``, with links to its files."""
    path = ctx["al_dir"] / f"{stem}.md"
    if not path.is_file():
        raise ResultsError(f"{_rel(path)} is missing: write it with its bench_al "
                           "--report-only command (python benchmarks/make_results.py does).")
    text = path.read_text().rstrip("\n")
    first, _, rest = text.partition("\n")
    title = first.removeprefix("### ").strip()
    return f"Files: [`{stem}.md`](al/{stem}.md), `al/{stem}{ROUNDS}`. *{title}*\n{rest}"


def _table_rows(text: str) -> set[str]:
    return {ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| strategy |")}


def block_al_link(arg: str, ctx: dict) -> str:
    """A ``bench_al`` table whose rows are in a table shown elsewhere: its link, title and command,
    machine and date lines only. ``arg``: ``stem|target stem|where the rows are|strategies not
    there`` (the last part optional, space-separated); the rows are checked, so the claim stays true."""
    stem, target, where, *rest = (arg.split("|") + [""])[:4]
    text = (ctx["al_dir"] / f"{stem}.md").read_text().rstrip("\n")
    skip = set(rest[0].split()) if rest else set()
    rows = {r for r in _table_rows(text) if r.split(" | ")[0].removeprefix("| ") not in skip}
    missing = rows - _table_rows((ctx["al_dir"] / f"{target}.md").read_text())
    if missing:
        raise ResultsError(f"{target}.md no longer holds every row of {stem}.md ({len(missing)} differ): "
                           f"show {stem} with {{{{al:{stem}}}}} on its page.")
    title = text.partition("\n")[0].removeprefix("### ").strip()
    meta = _split_meta(text)[1].strip("\n")
    return (f"Files: [`{stem}.md`](al/{stem}.md), `al/{stem}{ROUNDS}`. *{title}*: every row of this table "
            f"is in {where}, so it is linked, not repeated.\n\n{meta}")


def block_file(rel: str, ctx: dict) -> str:
    """A table file written by a benchmark script, verbatim (its title line dropped)."""
    path = RESULTS / rel
    if not path.is_file():
        raise ResultsError(f"{_rel(path)} is missing: restore it with git.")
    text = path.read_text().rstrip("\n")
    return text.partition("\n")[2].lstrip("\n") if text.startswith("#") else text


def block_risk_quality(_: str, ctx: dict) -> str:
    """Risk against uncertainty for finding the matcher's mistakes, the four settings."""
    lines = ["| setting | labelled | runs | ROC AUC, uncertainty | ROC AUC, risk | mistakes among the top b, uncertainty | mistakes among the top b, risk |",
             "|---|---|---|---|---|---|---|"]
    for name, stem in (("DBLP-Scholar, RNN", "dblp_scholar_rnn"), ("Abt-Buy, RNN", "abt_buy_rnn"),
                       ("DBLP-Scholar, forest", "dblp_scholar_feature"), ("Abt-Buy, forest", "abt_buy_feature")):
        df = _read_csv(ctx["al_dir"] / f"{stem}_risk_quality.csv")
        for n, g in df.groupby("n_labelled"):
            cells = [f"{g[c].mean():.3f} ± {g[c].std():.3f}" for c in
                     ("auc_uncertainty", "auc_risk", "top_b_uncertainty", "top_b_risk")]
            lines.append(f"| {name} | {n:,} | {len(g)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def block_nodist(_: str, ctx: dict) -> str:
    """skrisk's default against ``weighting="risk"`` (``risk_pre2w_nodist``), paired by run."""
    lines = ["| setting | runs | rounds | AULC, default `risk` | AULC, `risk_pre2w_nodist` | paired by run | first three queries, default | first three queries, `nodist` |",
             "|---|---|---|---|---|---|---|---|"]
    for name, stem in (("DBLP-Scholar, forest", "dblp_scholar_feature_variants"),
                       ("Abt-Buy, forest", "abt_buy_feature_variants"),
                       ("DBLP-Scholar, RNN", "dblp_scholar_rnn_variants"),
                       ("Abt-Buy, RNN", "abt_buy_rnn_variants")):
        df = rounds([stem], ctx["al_dir"])
        df = df[df["strategy"].isin([DEFAULT, "risk_pre2w_nodist"])]
        per = run_aulc(df).pivot(index="seed", columns="strategy", values="aulc").dropna()
        d = per["risk_pre2w_nodist"] - per[DEFAULT]
        curve = df.groupby(["strategy", "n_labelled"])["f1"].mean()
        budgets = sorted(df["n_labelled"].unique())[1:4]
        f3 = {s: " / ".join(f"{curve[(s, b)]:.3f}" for b in budgets) for s in (DEFAULT, "risk_pre2w_nodist")}
        lines.append(
            f"| {name} | {len(per)} | {df['round'].max() + 1} | {per[DEFAULT].mean():.4f} | {per['risk_pre2w_nodist'].mean():.4f} "
            f"| `nodist` higher / level / lower: {int((d > TIE).sum())} / {int((d.abs() <= TIE).sum())} / {int((d < -TIE).sum())} of {len(d)}, mean {_signed(d.mean())} | {f3[DEFAULT]} | {f3['risk_pre2w_nodist']} |")
    return "\n".join(lines)


def block_goal(_: str, ctx: dict) -> str:
    """Issue #7's goal per setting: a risk variant >= every baseline at each of the first three
    queries and in AULC."""
    lines = ["| setting | runs | strategy | F1 at the first three queries | best baseline at each | AULC | best baseline's AULC | goal |",
             "|---|---|---|---|---|---|---|---|"]
    for name in GOAL_SETTINGS:
        s = ctx["summaries"][name]
        b3 = []
        for n in s["first3"]:
            vals = {b: float(s["curve"][(b, n)]) for b in BASELINES if (b, n) in s["curve"].index}
            top = max(vals, key=vals.get)
            b3.append((vals[top], top))
        for strat in (DEFAULT, PAPER):
            f3 = _first3(s, strat)
            met = all(round(x, 3) >= round(y, 3) for x, (y, _) in zip(f3, b3)) and \
                round(s["aulc"][strat], 3) >= round(s["aulc"][s["best_base"]], 3)
            lines.append(
                f"| {name} | {int(s['runs'][strat])} | {STRATEGIES[strat]} | {' / '.join(f'{x:.3f}' for x in f3)} "
                f"| {' / '.join(f'{y:.3f} ({STRATEGIES[b]})' for y, b in b3)} | {s['aulc'][strat]:.3f} "
                f"| {s['aulc'][s['best_base']]:.3f} ({STRATEGIES[s['best_base']]}) | {'met' if met else 'not met'} |")
    return "\n".join(lines)


def block_goal_f1(_: str, ctx: dict) -> str:
    """The best configuration's test F1 at the issue's budgets, forest and RNN."""
    lines = ["| dataset | budget (labels) | target | matcher | skrisk default | paper's `risk_paper` | best strategy there | met by the best |",
             "|---|---|---|---|---|---|---|---|"]
    for ds, budget, target in (("DBLP-Scholar", 1000, 0.93), ("Abt-Buy", 2300, 0.60)):
        for matcher in ("forest", "RNN"):
            s = ctx["summaries"][f"{ds} x {matcher}"]
            at = {st: float(s["curve"][(st, n)]) for (st, n) in s["curve"].index if n == budget and st in STRATEGIES}
            if not at:
                continue
            top = max(at, key=at.get)
            lines.append(f"| {ds} | {budget:,} | >= {target:.2f} | {matcher} | {at[DEFAULT]:.3f} | {at[PAPER]:.3f} "
                         f"| {at[top]:.3f} ({STRATEGIES[top]}) | {'met' if at[top] >= target else 'not met'} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- blocks: components


def block_data_table(_: str, ctx: dict) -> str:
    df = _read_csv(RESULTS / "data/bench_data.csv").fillna("")
    lines = ["| part | dataset | metric | value | target | ok | seconds |", "|---|---|---|---|---|---|---|"]
    for r in df.to_dict("records"):
        ok = "" if r["ok"] == "" else ("yes" if r["ok"] in (True, "True") else "NO")
        lines.append(f"| {r['part']} | {r['dataset']} | {r['metric']} | {r['value']} | {r['expected']} | {ok} | {r['seconds']} |")
    return "\n".join(lines)


def block_data_meta(_: str, ctx: dict) -> str:
    """The command, machine and date lines ``bench_data.py`` wrote beside its CSV."""
    text = (RESULTS / "data/RESULTS_section.md").read_text()
    return "\n".join(ln for ln in text.splitlines() if ln.startswith(("- Command:", "- Machine:", "- Date:")))


def _matcher_rows(pred: Callable[[dict], bool]) -> list[dict]:
    return [r for r in _read_jsonl(RESULTS / "matcher/results.jsonl") if pred(r)]


def block_matcher_full(_: str, ctx: dict) -> str:
    lines = ["| date | dataset | model | lr | epochs (max / run / best) | `class_weight` | `scale_features` | `stack_forest` | max length | test F1 | fit s | process CPU s | peak RSS MB | load | command |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in _matcher_rows(lambda r: r.get("task") == "full"):
        p = r.get("params", {})
        lines.append(
            f"| {r['date']} | {r['dataset']} | {r['model']} | {p.get('lr', '')} | {p.get('max_epochs', '')} / {r.get('epochs_run', '')} / {r.get('best_epoch', '')} "
            f"| {p.get('class_weight')} | {p.get('scale_features', '')} | {p.get('stack_forest', '')} | {r.get('max_length', '')} "
            f"| {r['test_f1']:.4f} | {r.get('fit_s', '')} | {r.get('process_cpu_s', '')} | {r.get('peak_rss_mb', '')} | {r.get('load_avg_1m_at_end', '')} | `{r['command']}` |")
    return "\n".join(lines)


def _params_cells(p: dict) -> str:
    def get(key: str) -> str:
        return "(not an option yet)" if key not in p else f"`{p[key]}`"
    return f"{p.get('lr', '')} | {get('class_weight')} | {get('scale_features')} | {get('stack_forest')} | {get('feature_skip')}"


def block_matcher_labels(_: str, ctx: dict) -> str:
    """The means over seeds of ``bench_matcher.py labels`` (each after its per-seed records) and the
    feature-matcher runs of ``bench_matcher.py feature``."""
    lines = ["| date | model | lr | `class_weight` | `scale_features` | `stack_forest` | `feature_skip` | labels | seeds | test F1 mean ± std | per seed | load | command |",
             "|---" * 13 + "|"]
    recs = _read_jsonl(RESULTS / "matcher/results.jsonl")
    for i, r in enumerate(recs):
        if r.get("task") == "labels_mean":
            per = [x for x in recs[:i] if x.get("task") == "labels" and x.get("command") == r["command"]][-len(r["seeds"]):]
            params = per[-1].get("params", {}) if per else {}
            sd = r.get("test_f1_std")
            per_txt = ", ".join(f"{x['test_f1']:.4f}" for x in per)
            lines.append(f"| {r['date']} | {r['model']} | {_params_cells(params)} | {r['n_labels']} | {len(r['seeds'])} "
                         f"| {r['test_f1_mean']:.4f} ± {'' if sd is None else f'{sd:.3f}'} "
                         f"| {per_txt} | {r.get('load_avg_1m_at_end', '')} | `{r['command']}` |")
        elif r.get("task") == "labels" and r.get("params", {}).get("feature_skip"):
            lines.append(f"| {r['date']} | {r['model']} | {_params_cells(r['params'])} | {r['n_labels']} | 1 (seed {r['seed']}) "
                         f"| {r['test_f1']:.4f} | {r['test_f1']:.4f} | {r.get('load_avg_1m_at_end', '')} | `{r['command']}` |")
        elif r.get("task") == "feature":
            f1 = r["test_f1_all"]
            sd = f" ± {np.std(f1, ddof=1):.3f}" if len(f1) > 1 else ""
            lines.append(f"| {r['date']} | {r['classifier']} on the {r['n_features']} features | | | | | | {r['n_labels']} | {len(r['seeds'])} "
                         f"| {r['test_f1_mean']:.4f}{sd} | {', '.join(f'{x:.4f}' for x in f1)} "
                         f"| {r.get('load_avg_1m_at_end', '')} | `{r['command']}` |")
    return "\n".join(lines)


def block_matcher_score(_: str, ctx: dict) -> str:
    """The scoring-cost records of ``bench_matcher.py score`` (seconds over the pool)."""
    cols = [("proba_s", "`predict_proba`"), ("represent_s", "`represent`"),
            ("proba_plus_represent_s", "both, two calls"), ("predict_proba_and_represent_s", "`predict_proba_and_represent`"),
            ("plain_batched_forward_hidden_s", "plain batched forward pass"), ("mc1_s", "1 MC-dropout pass"),
            ("mc20_s", "20 MC-dropout passes"), ("mc20_over_mc1", "20 / 1 MC passes"),
            ("gradient_embedding_s", "BADGE gradient embeddings")]
    lines = ["| date | pool | load | lr | " + " | ".join(c for _, c in cols) + " | command |", "|---" * (len(cols) + 5) + "|"]
    for r in _matcher_rows(lambda r: r.get("task") == "score"):
        lines.append(f"| {r['date']} | {r['n_pool']:,} | {r.get('load_avg_1m_at_end', '')} | {r.get('params', {}).get('lr', '')} | "
                     + " | ".join(str(r.get(k, "")) for k, _ in cols) + f" | `{r['command']}` |")
    return "\n".join(lines)


def block_lm_rounds(_: str, ctx: dict) -> str:
    """The ``bench_matcher.py round --matcher lm`` records: seconds per labelling round on the CPU."""
    lines = ["| date | max length | frozen layers | labels | warm | epochs | fit s | train pairs/s | pool pairs "
             "| pool scoring s | pairs/s scored | round s | test F1 | peak RSS MB | load | command |", "|---" * 16 + "|"]
    for r in _read_jsonl(RESULTS / "matcher/lm_results.jsonl"):
        if r.get("task") != "round":
            continue
        p = r.get("params", {})
        f1 = "not scored" if r.get("test_f1") is None else f"{r['test_f1']:.3f}"
        lines.append(
            f"| {r['date']} | {p.get('max_length')} | {p.get('freeze_layers')} | {r['n_labels']:,} | "
            f"{'yes' if r['warm'] else 'no'} | {r['epochs']} | {r['fit_s']} | {r['train_pairs_per_s']} | "
            f"{r['pool']:,} | {r['pool_score_s']} | {r['pairs_per_s_scored']} | **{r['round_s']}** | "
            f"{f1} | "
            f"{r['peak_rss_mb']} | {r['load_avg_1m_at_end']} | `{r['command']}` |")
    return "\n".join(lines)


def block_lm_labels(_: str, ctx: dict) -> str:
    """The ``bench_matcher.py labels --matcher lm`` records: test F1 after random labels, no validation."""
    lines = ["| date | labels | max length | frozen layers | epochs | lr | `class_weight` | `pooling` | fit s "
             "| test pairs/s | test F1 | peak RSS MB | load | command |", "|---" * 14 + "|"]
    for r in _read_jsonl(RESULTS / "matcher/lm_results.jsonl"):
        if r.get("task") != "labels":
            continue
        p = r.get("params", {})
        lines.append(
            f"| {r['date']} | {r['n_labels']:,} | {p.get('max_length')} | {p.get('freeze_layers')} | "
            f"{p.get('max_epochs')} | {p.get('lr')} | {p.get('class_weight')} | {p.get('pooling', 'cls')} | "
            f"{r['fit_s']} | "
            f"{r['pairs_per_s_scored']} | **{r['test_f1']:.3f}** | {r['peak_rss_mb']} | {r['load_avg_1m_at_end']} "
            f"| `{r['command']}` |")
    return "\n".join(lines)


def block_lm_diagnosis(_: str, ctx: dict) -> str:
    """The ``benchmarks/tools/lm_diagnose.py`` records: per-epoch curves of short LMMatcher fits."""
    lines = ["| date | labels | epochs | lr | `class_weight` | `pooling` | scored on | fit s | epoch: train loss "
             "/ valid loss / valid F1 / valid AUC | load | command |", "|---" * 12 + "|"]
    for r in _read_jsonl(RESULTS / "matcher/lm_diagnosis.jsonl"):
        a = r["args"]
        curve = "<br>".join(f"{h['epoch']}: {h['train_loss']:.3f} / {h['valid_loss']:.3f} / {h['valid_f1']:.3f} / "
                            f"{h['valid_auc']:.3f}" for h in r["history"])
        lines.append(f"| {r['date']} | {a['n']:,} | {a['epochs']} | {a['lr']:g} | {a['class_weight']} "
                     f"| {a['pooling']} "
                     f"| {a['nval']} {a['valid_from']} pairs | {r['fit_s']} | {curve} | {r['load_avg_1m_at_end']} "
                     f"| `{r['command']}` |")
    return "\n".join(lines)


def block_learnrisk_table(_: str, ctx: dict) -> str:
    mod = _bench_module("bench_learnrisk")
    order = ["runs_rnn_plain_dblp_scholar.csv", "runs_rnn_plain_abt_buy.csv", "runs_rnn_hybrid_abt_buy.csv",
             "runs_rf.csv", "runs_logreg.csv"]
    return mod.summarise([str(RESULTS / "learnrisk" / f) for f in order])


def block_learnrisk_time(_: str, ctx: dict) -> str:
    """LearnRisk's fitting time, from the log of ``bench_learnrisk.py --time-only``."""
    path = RESULTS / "learnrisk/time_fit.log"
    text = path.read_text()
    pat = re.compile(r"fit time ([^:]+): (\d+) validation pairs, (\d+) training pairs, (\d+) rules, "
                     r"(\d+) epochs: ([\d.]+) s wall, ([\d.]+) s CPU.*?\(load average before/after: ([\d.]+) / ([\d.]+)\)")
    lines = ["| settings | validation pairs | training pairs | rules | epochs | wall time (s) | CPU time (s) | load before / after |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for m in pat.finditer(text):
        g = m.groups()
        lines.append(f"| {g[0]} | {int(g[1]):,} | {int(g[2]):,} | {g[3]} | {int(g[4]):,} | {g[5]} | {g[6]} | {g[7]} / {g[8]} |")
    if len(lines) == 2:
        raise ResultsError(f"{_rel(path)} holds no fit-time line: rerun bench_learnrisk.py --time-only.")
    head = text.splitlines()[0].lstrip("# ").split(" args=")[0]
    return f"Run: {head}.\n\n" + "\n".join(lines)


def block_kmedoids_table(rel: str, ctx: dict) -> str:
    mod = _bench_module("bench_kmedoids")
    path = RESULTS / rel
    first = path.read_text().partition("\n")[0]
    meta = json.loads(first.lstrip("# ")) if first.startswith("#") else {}
    rows = [{k: ("" if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
            for r in _read_csv(path).to_dict("records")]
    return mod.markdown_table(rows, meta)


def block_query_table(_: str, ctx: dict) -> str:
    """One row per query of ``query_bench.jsonl`` (seconds per phase, as the script records them)."""
    recs = _read_jsonl(RESULTS / "query/query_bench.jsonl")
    phases = ["proba_repr", "labelled_proba", "valid_proba", "rules", "ranking", "risk", "weights", "kmedoids"]
    lines = ["| date | matcher | `risk_params` | `n_threads` | load (1 min) | threads | run | " + " | ".join(phases)
             + " | **total** | <= 60 s | k-medoids swaps | ROC AUC of the risk / of the uncertainty for the pool's mistakes | mistakes in the batch | command |",
             "|---" * (len(phases) + 13) + "|"]
    for r in recs:
        q = r.get("quality") or {}
        auc = f"{q['auc_learnrisk']:.4f} / {q['auc_uncertainty']:.4f} ({q['pool_mispredicted']})" if "auc_learnrisk" in q else ""
        for i, run in enumerate(r.get("runs", []), 1):
            ph = run.get("phases_s", {})
            total = ph.get("query_total", r["query_total_s"])
            lines.append(
                f"| {r['date']} {r['time']} | {r['matcher']} | `{json.dumps(r.get('risk_params'))}` | {r.get('n_threads')} "
                f"| {run.get('load_before', '')} | {run.get('query_threads', '')} | {i} | "
                + " | ".join("" if k not in ph else f"{ph[k]:.2f}" for k in phases)
                + f" | **{total:.1f}** | {'yes' if total <= r['target_s'] else 'no'} | {r.get('kmedoids', {}).get('n_swaps', '')} "
                f"| {auc} | {q.get('batch_mispredicted', '')} | `{r['command']}` |")
    return "\n".join(lines)


#: The DBLP-Scholar forest comparison rerun for issue #16 (3 runs): the committed 10-run records
#: (other machine), the code before the change and the code after it, both on one machine.
API16_RUNS = (
    ("old code, 2026-11-23 (AMD EPYC, the committed runs)", AL, "dblp_scholar_feature_compare_all"),
    ("old code a357115, 2026-11-25 (Intel Xeon)", RESULTS / "al_api16_before", "dblp_scholar_feature_compare"),
    ("new code, 2026-11-25 (Intel Xeon)", RESULTS / "al_api16", "dblp_scholar_feature_compare"),
)


def block_api16(_: str, ctx: dict) -> str:
    """Per-run AULC of the default and the paper's method before and after issue #16 (seeds 0-2),
    and the paired difference of the two runs on one machine."""
    per = {}
    for label, folder, stem in API16_RUNS:
        pr = run_aulc(rounds([stem], folder))
        per[label] = pr[pr["seed"].isin([0, 1, 2])].set_index(["strategy", "seed"])["aulc"]
    labels = [lab for lab, _, _ in API16_RUNS]
    lines = ["| strategy | seed | " + " | ".join(labels) + " | after - before (one machine) |",
             "|---|---|" + "---|" * len(labels) + "---|"]
    for strat in (DEFAULT, PAPER):
        diffs = []
        for seed in (0, 1, 2):
            vals = [per[lab].get((strat, seed), float("nan")) for lab in labels]
            diffs.append(vals[2] - vals[1])
            lines.append(f"| {strat} | {seed} | " + " | ".join(f"{v:.4f}" for v in vals) + f" | {diffs[-1]:+.4f} |")
        means = [float(np.mean([per[lab].get((strat, s), float("nan")) for s in (0, 1, 2)])) for lab in labels]
        lines.append(f"| **{strat}** | mean | " + " | ".join(f"**{v:.4f}**" for v in means)
                     + f" | **{np.mean(diffs):+.4f}** |")
    return "\n".join(lines)


def block_rnn_refactor(_: str, ctx: dict) -> str:
    """Test F1 of the RNN matcher before and after issue #16's rewrite, per dataset and model, from
    ``matcher/refactor16/{before,after}.jsonl`` (one line per matcher seed)."""
    rows = []
    for tag in ("before", "after"):
        for r in _read_jsonl(RESULTS / "matcher" / "refactor16" / f"{tag}.jsonl"):
            if "seed" in r and "test_f1" in r:
                rows.append({**r, "tag": tag})
    df = pd.DataFrame(rows).drop_duplicates(["tag", "dataset", "model", "seed"], keep="last")
    lines = ["| dataset | model | seeds | test F1 before (mean ± std) | after | after - before |",
             "|---|---|---|---|---|---|"]
    for (dataset, model), g in df.groupby(["dataset", "model"], sort=False):
        b, a = (g[g["tag"] == t]["test_f1"] for t in ("before", "after"))
        lines.append(f"| {NAMES.get(dataset, dataset)} | {model} | {len(b)} / {len(a)} | {b.mean():.4f} ± {b.std(ddof=0):.4f} "
                     f"| {a.mean():.4f} ± {a.std(ddof=0):.4f} | {a.mean() - b.mean():+.4f} |")
    return "\n".join(lines)


def block_match_table(_: str, ctx: dict) -> str:
    """``skrisk match`` on a dedup and a linkage task: speed per phase, memory, pair and cluster scores."""
    paths = sorted((RESULTS / "match").glob("bench_match*.json"))
    if not paths:
        raise ResultsError(f"{_rel(RESULTS / 'match')} holds no bench_match*.json: rerun "
                           "`python benchmarks/bench_match.py --out DIR` and copy its record there.")
    lines = ["| run (load at the start) | task | dataset | labels | candidates | pairs/s scored (features / matcher / risk) "
             "| pairs/s end to end | peak RSS MB (before match) | pairwise P / R / F1 | cluster P / R / F1 | B-cubed F1 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    metas = []
    for path in paths:
        rec = json.loads(path.read_text())
        m = rec["meta"]
        run = f"{m['date'][:16]} ({m['loadavg'][0]:.1f})"
        metas.append(f"`{path.name}`: `{m['command'].strip()}`, {m['date']}, load average "
                     f"{', '.join(f'{x:.1f}' for x in m['loadavg'])}")
        for r in rec["results"]:
            ps, pw, cl = r["pairs_per_second"], r["pairwise"], r["cluster"]
            bc = cl.get("bcubed_f1")
            lines.append(
                f"| {run} | {r['task']} | {r['dataset']} | {r.get('labels', '-')} | {r['n_candidates']:,} "
                f"| {ps['scoring']:,.0f} ({ps['features']:,.0f} / {ps['matcher']:,.0f} / {ps['risk']:,.0f}) "
                f"| {ps['end_to_end']:,.0f} | {r['peak_rss_mb']:.0f} ({r['rss_before_match_mb']:.0f}) "
                f"| {pw['precision']:.3f} / {pw['recall']:.3f} / {pw['f1']:.3f} "
                f"| {cl['precision']:.3f} / {cl['recall']:.3f} / {cl['f1']:.3f} | {'-' if bc is None else f'{bc:.3f}'} |")
    lines += ["", f"Machine: {m['machine']}, Python {m['python']}, {m['torch_threads']} torch thread(s). Runs: "
              + "; ".join(metas) + "."]
    return "\n".join(lines)


def block_quality_report(_: str, ctx: dict) -> str:
    """The tables of ``bench_quality.py --report``: coverage and width, chosen thresholds, stopping rules."""
    return _bench_module("bench_quality").report(RESULTS / "quality")


def block_quality_holdout(_: str, ctx: dict) -> str:
    """The coverage table of ``bench_quality.py`` on the held-out datasets (``results/quality/holdout``)."""
    return _bench_module("bench_quality").report(RESULTS / "quality" / "holdout", tables=("coverage",))


def block_session_report(_: str, ctx: dict) -> str:
    """The tables of ``bench_session.py --report``: scripted ``skrisk label`` sessions against the truth."""
    return _bench_module("bench_session").report(RESULTS / "quality" / "sessions")


def block_session_before(_: str, ctx: dict) -> str:
    """``bench_session.py --report`` of the sessions run before audited pairs stayed in the pool."""
    return _bench_module("bench_session").report(RESULTS / "quality" / "sessions-before")


def block_sessions_in(arg: str, ctx: dict) -> str:
    """``bench_session.py --report`` of the scripted sessions under ``results/quality/<arg>``."""
    return _bench_module("bench_session").report(RESULTS / "quality" / arg)


def block_session_replay(arg: str, ctx: dict) -> str:
    """``bench_session.py --replay ... --report``: the advice variants replayed under ``results/quality/<arg>``."""
    return _bench_module("bench_session").report_replay(RESULTS / "quality" / arg)


def block_session_pooled(arg: str, ctx: dict) -> str:
    """``bench_session.py --pooled``: issue #30's figures pooled over the ``+``-joined folders of
    ``results/quality`` (replays read with the session's advice, ``recalibrated``)."""
    return _bench_module("bench_session").pooled_summary([RESULTS / "quality" / d for d in arg.split("+")])


def block_first_match(_: str, ctx: dict) -> str:
    """``bench_session.py --first-match``: where the first match is for the starting pairs."""
    return _bench_module("bench_session").report_first_match(RESULTS / "quality" / "first_match.jsonl")


def _scale_records(name: str) -> list[dict]:
    path = RESULTS / "scale" / f"{name}_bench.jsonl"
    if not path.is_file():
        raise ResultsError(f"{_rel(path)} is missing: rerun `python benchmarks/bench_scale.py --experiment {name}`.")
    return _read_jsonl(path)


def _load1(rec: dict, part: dict | None = None) -> str:
    load = (part or {}).get("load_before") or rec.get("load_avg_start")
    return f"{load[0]:.1f}" if load else "-"


def block_scale_query(_: str, ctx: dict) -> str:
    """One in-memory query on 100k / 1M pools: time per phase, peak memory, default vs preselected."""
    lines = ["| date | pool | features s | query | probabilities s | risk s | kernel s | **total s** | k-medoids points | peak RSS GB | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in _scale_records("scale"):
        for q in ("default", "preselected"):
            d = r[q]
            first = q == "default"
            lines.append(
                f"| {r['date'][:16] if first else ''} | {r['pool']:,} | {format(r['prep_s']['features'], '.1f') if first else ''} | {q} "
                f"| {d['probabilities']:.1f} | {d['risk']:.1f} | {d['kernel']:.2f} | **{d['query_total']:.1f}** "
                f"| {d.get('kmedoids_points', '-'):,} | {r['peak_rss_mb'] / 1024:.2f} | {_load1(r, d)} |")
    return "\n".join(lines)


def block_scale_td(_: str, ctx: dict) -> str:
    """The sampled k-medoids stage against the whole pool: total deviation ratio and kernel time."""
    lines = ["| pool | max_kmedoids_pool | TD ratio (over the whole pool) | batch overlap with the whole-pool batch | kernel s | load (1 min) |",
             "|---|---|---|---|---|---|"]
    for r in _scale_records("td"):
        cap = r["max_kmedoids_pool"]
        lines.append(f"| {r['pool']:,} | {'none' if cap is None else f'{cap:,}'} | {r['td_ratio']:.4f} "
                     f"| {r.get('batch_overlap_with_uncapped', '-')} | {r['kernel']:.1f} | {_load1(r)} |")
    return "\n".join(lines)


def block_scale_stream(_: str, ctx: dict) -> str:
    """The streamed query (skrisk.pools.stream_query) on 1M and 10M pairs."""
    lines = ["| date | pool | chunk | scoring s | kernel s | risk model fit s | query + fit s | pairs/s scored | peak RSS GB | load (1 min) | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in _scale_records("stream"):
        st = r["stream"]
        lines.append(f"| {r['date'][:16]} | {r['pool']:,} | {r['chunk_size']:,} | {st['score']:.0f} | {st['kernel']:.2f} "
                     f"| {r['prep_s']['risk_fit']:.1f} | {st['query_plus_risk_fit']:.0f} | {r['pool_scored'] / st['score']:,.0f} "
                     f"| {r['peak_rss_mb'] / 1024:.2f} | {_load1(r, st)} | {r.get('note') or ''} |")
    return "\n".join(lines)


BLOCKS: dict[str, Callable[[str, dict], str]] = {
    "rnn_refactor": block_rnn_refactor,
    "api16": block_api16,
    "summary_table": block_summary_table,
    "paired_table": block_paired_table,
    "candidate": block_candidate,
    "recommendation": block_recommendation,
    "matcher_table": block_matcher_table,
    "sources": block_sources,
    "settings_note": block_settings_note,
    "components": block_components,
    "al": block_al,
    "file": block_file,
    "al_link": block_al_link,
    "risk_quality": block_risk_quality,
    "nodist": block_nodist,
    "goal": block_goal,
    "goal_f1": block_goal_f1,
    "data_table": block_data_table,
    "data_meta": block_data_meta,
    "learnrisk_time": block_learnrisk_time,
    "matcher_full": block_matcher_full,
    "matcher_labels": block_matcher_labels,
    "matcher_score": block_matcher_score,
    "lm_rounds": block_lm_rounds,
    "lm_labels": block_lm_labels,
    "lm_diagnosis": block_lm_diagnosis,
    "learnrisk_table": block_learnrisk_table,
    "kmedoids_table": block_kmedoids_table,
    "query_table": block_query_table,
    "match_table": block_match_table,
    "quality_report": block_quality_report,
    "quality_holdout": block_quality_holdout,
    "sessions_in": block_sessions_in,
    "session_replay": block_session_replay,
    "session_pooled": block_session_pooled,
    "first_match": block_first_match,
    "session_report": block_session_report,
    "session_before": block_session_before,
    "scale_query": block_scale_query,
    "scale_td": block_scale_td,
    "scale_stream": block_scale_stream,
}

_PLACEHOLDER = re.compile(r"\{\{(\w+)(?::([^}]*))?\}\}")
#: a computed block on a page: its placeholder and its text between an opening and a closing comment
_BLOCK = re.compile(r"<!-- \{\{(\w+)((?::[^}]*)?)\}\} -->.*?<!-- \{\{/\1\}\} -->", re.S)
HEADER = ("<!-- Between each pair of {{block}} / {{/block}} comments, the text is computed by "
          "`python benchmarks/make_results.py` from the records under benchmarks/results: edit the prose "
          "around the blocks, or rerun the benchmark, never a block. -->\n")


def template_of(text: str) -> str:
    """A page's template: its text with the header dropped and each computed block collapsed to
    its placeholder (``{{name}}`` or ``{{name:argument}}``)."""
    return _BLOCK.sub(lambda m: f"{{{{{m.group(1)}{m.group(2)}}}}}", text.removeprefix(HEADER))


def fill(template: str, ctx: dict, where: str = "") -> str:
    """The page of a template: each placeholder replaced by its block between its comments."""

    def sub(m: re.Match) -> str:
        name, arg = m.group(1), m.group(2) or ""
        if name not in BLOCKS:
            raise ResultsError(f"{where}: unknown block {{{{{name}}}}}; known: {sorted(BLOCKS)}.")
        tag = m.group(0)[2:-2]
        return f"<!-- {{{{{tag}}}}} -->\n{BLOCKS[name](arg, ctx)}\n<!-- {{{{/{name}}}}} -->"

    return HEADER + _PLACEHOLDER.sub(sub, template)


def render(rel: str, ctx: dict) -> str:
    """The page ``rel`` (relative to the repository root) rebuilt: its prose as it is, its blocks
    computed from the records."""
    path = ROOT / rel
    if not path.is_file():
        raise ResultsError(f"{_rel(path)} is missing: restore it with git (its prose is only there).")
    return fill(template_of(path.read_text()), {**ctx, "page": rel}, _rel(path))


def build_pages(al_dir: Path = AL, skip: list[str] = ()) -> dict[str, str]:
    """Every page but those of ``skip`` (path relative to the repository root -> text), in memory."""
    ctx = {"al_dir": al_dir, "summaries": summaries(al_dir)}
    return {out: render(out, ctx) for out in OUTPUTS if out not in skip}


# --------------------------------------------------------------------------- AL tables from raw/


def al_commands(al_dir: Path = AL) -> dict[str, list[str]]:
    """stem -> the ``bench_al`` arguments (with ``--report-only``) that wrote ``<stem>.md``."""
    out = {}
    for md in sorted(al_dir.glob("*.md")):
        m = re.search(r"_command_: `python benchmarks/bench_al\.py ([^`]*)`", md.read_text())
        if not m:
            continue
        args = shlex.split(m.group(1))
        if "--report-only" not in args:
            args.append("--report-only")
        out[md.stem] = args
    return out


def regenerate_al(tmp: Path, stems: list[str] | None = None) -> tuple[dict[str, list[str]], dict[str, Path]]:
    """Rerun ``bench_al --report-only`` for every AL table, each into its own folder under ``tmp``
    (with ``raw/`` linked there).

    Returns stem -> the files whose tables differ from the committed ones (the dated
    ``_command_`` / ``_machine_`` / ``_date_`` lines are not compared), and stem -> the folder
    holding its new files (named as bench_al names them, which a table renamed by hand, such as
    ``abt_buy_feature_variants_pre5``, is not).
    """
    if not (AL / "raw").is_dir():
        raise ResultsError(f"{_rel(AL / 'raw')} is missing: the raw records are not in the tree; restore "
                           "those of the committed tables with `git checkout afff963 -- benchmarks/results/al/raw` "
                           "(then `git rm -r --cached` them), or run the benchmarks.")
    if not os.environ.get("SKRISK_DATA"):
        raise ResultsError("SKRISK_DATA is not set: bench_al --report-only loads the datasets; "
                           "run with SKRISK_DATA=/path/to/the/DeepMatcher/data.")
    cache = AL / "cache"
    cache.mkdir(exist_ok=True)
    diffs, folders = {}, {}
    for stem, args in al_commands().items():
        if stems is not None and stem not in stems:
            continue
        print(f"bench_al --report-only: {stem}", file=sys.stderr, flush=True)
        out = tmp / stem
        out.mkdir()
        (out / "raw").symlink_to(AL / "raw", target_is_directory=True)
        (out / "cache").symlink_to(cache, target_is_directory=True)
        i = args.index("--out")
        args = [*args[:i + 1], str(out), *args[i + 2:]]
        res = subprocess.run([sys.executable, str(BENCH / "bench_al.py"), *args], cwd=ROOT,
                             capture_output=True, text=True)
        if res.returncode:
            raise ResultsError(f"bench_al.py {' '.join(args)} failed for {stem}.md:\n{res.stderr[-2000:]}")
        made = [f for f in out.glob("*.md")]
        if len(made) != 1:
            raise ResultsError(f"bench_al.py {' '.join(args)} wrote {len(made)} tables for {stem}.md, not one.")
        new = made[0].name.removesuffix(".md")
        folders[stem] = out
        bad = []
        if _split_meta(made[0].read_text())[0] != _split_meta((AL / f"{stem}.md").read_text())[0]:
            bad.append(f"{stem}.md")
        committed = AL / f"{stem}{ROUNDS}"
        if not committed.is_file():
            bad.append(f"{stem}{ROUNDS} (not committed)")
        elif gzip.decompress((out / f"{new}{ROUNDS}").read_bytes()) != gzip.decompress(committed.read_bytes()):
            bad.append(f"{stem}{ROUNDS}")
        if bad:
            diffs[stem] = bad
    return diffs, folders


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 listing the files that differ")
    ap.add_argument("--pages-only", action="store_true",
                    help="build the pages from the tracked summaries and AL tables as they are (the default)")
    ap.add_argument("--from-raw", action="store_true",
                    help="first rerun every AL table from the raw records under results/al/raw (with --check: "
                         "compare them)")
    args = ap.parse_args(argv)
    if args.pages_only and args.from_raw:
        ap.error("--pages-only and --from-raw exclude each other")
    try:
        differ: list[str] = []
        missing = [rel for rel in OUTPUTS if not (ROOT / rel).is_file()]
        if missing and not args.check:
            raise ResultsError(f"{', '.join(missing)}: missing; restore with git (a page's prose is only there).")
        if args.from_raw:
            with tempfile.TemporaryDirectory() as tmp:
                diffs, folders = regenerate_al(Path(tmp))
                for stem, files in diffs.items():
                    if args.check:
                        differ += [f"benchmarks/results/al/{f}" for f in files]
                        continue
                    out = folders[stem]
                    new = next(out.glob("*.md")).name.removesuffix(".md")
                    shutil.copyfile(out / f"{new}.md", AL / f"{stem}.md")
                    shutil.copyfile(out / f"{new}{ROUNDS}", AL / f"{stem}{ROUNDS}")
                    print(f"updated from raw/: {stem} ({', '.join(files)})")
        differ += missing
        for rel, text in build_pages(skip=missing).items():
            path = ROOT / rel
            if path.read_text() == text:
                continue
            if args.check:
                differ.append(rel)
            else:
                atomic_write_text(path, text)
                print(f"wrote {rel}")
    except ResultsError as exc:
        print(f"make_results: {exc}", file=sys.stderr)
        return 2
    if differ:
        print("These files differ from what the records give (run python benchmarks/make_results.py):",
              *differ, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
