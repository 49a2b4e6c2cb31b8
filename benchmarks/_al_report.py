"""The active-learning benchmark's tables and figures: Markdown tables per budget and the plots.

Beside ``bench_al.py`` and ``bench_risk_quality.py``; built on the summaries of
``skrisk.experiments`` (``per_budget``, ``curve_area``) and its plots.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import sys
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import atomic_write_text
from _lab import RECORD_ONLY_KEYS
from _lab import plot_learning_curves
from _lab import curve_area, per_budget

__all__ = ["markdown_table", "write_outputs"]


def markdown_table(summary: pd.DataFrame, *, value: str = "f1", area: bool = True) -> str:
    """``value`` per budget per strategy (mean ± std over runs), plus the area under the curve.

    ``runs`` counts the runs behind the cells (a range when later rounds have fewer, e.g. in a
    report of runs still going).

    ``value="f1"``: test F1 (Fig. 3); ``value="mispredicted"``: the share of the batch queried at
    that budget that the matcher mispredicted (Fig. 4; no batch follows the last round).
    """
    if summary.empty:
        return "(no results)\n"
    mean, std = f"{value}_mean", f"{value}_std"
    summary = summary.dropna(subset=[mean])
    budgets = sorted(summary["n_labelled"].unique())
    areas = curve_area(summary.assign(f1_mean=summary[mean]))
    header = "| strategy | runs | " + " | ".join(str(b) for b in budgets) + (" | AULC |" if area else " | mean |")
    sep = "|---" * (len(budgets) + 3) + "|"
    lines = [header, sep]
    order = sorted(summary["strategy"].unique(), key=lambda s: -areas[s])
    for strat in order:
        part = summary[summary["strategy"] == strat].set_index("n_labelled")
        cells = []
        for b in budgets:
            if b in part.index:
                row = part.loc[b]
                sd = 0.0 if np.isnan(row[std]) else row[std]
                cells.append(f"{row[mean]:.3f} ± {sd:.3f}")
            else:
                cells.append("")
        last = areas[strat] if area else float(part[mean].mean())
        runs = part["runs"].astype(int)
        n_runs = str(runs.max()) if runs.min() == runs.max() else f"{runs.min()}-{runs.max()}"
        lines.append(f"| {strat} | {n_runs} | " + " | ".join(cells) + f" | {last:.3f} |")
    return "\n".join(lines) + "\n"


def write_outputs(records: list[dict], out: Path, stem: str, title: str) -> dict[str, Path]:
    """CSV of all rounds, summary CSV, Markdown tables and PNG figures.

    ``<stem>.png``: test F1 against labels (Fig. 3); ``<stem>_mispredicted.png``: the share of
    each queried batch that the matcher mispredicted (Fig. 4). ``<stem>.md`` holds both tables.
    """
    out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(records).drop(columns=list(RECORD_ONLY_KEYS), errors="ignore")
    paths = {"rounds": out / f"{stem}_rounds.csv", "summary": out / f"{stem}_summary.csv",
             "table": out / f"{stem}.md", "png": out / f"{stem}.png"}
    atomic_write_text(paths["rounds"], df.to_csv(index=False))  # numbers and strategy names: format kept
    summ = per_budget(records)
    atomic_write_text(paths["summary"], summ.to_csv(index=False))
    text = f"### {title}\n\nTest F1 (mean ± std over runs) per labelled-set size:\n\n" + markdown_table(summ)
    plot_learning_curves(records, paths["png"], title=title)
    if "batch_mispredicted" in df and df["batch_mispredicted"].notna().any():
        text += ("\nShare of the batch queried at each size that the current matcher mispredicts:\n\n"
                 + markdown_table(summ, value="mispredicted", area=False))
        paths["mispredicted_png"] = out / f"{stem}_mispredicted.png"
        plot_learning_curves(df, paths["mispredicted_png"], y="batch_mispredicted", title=title,
                             ylabel="share of the queried batch mispredicted")
    atomic_write_text(paths["table"], text)
    return paths
