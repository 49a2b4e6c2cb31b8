"""Learning curves of active-learning runs: mean over seeds with 20th-80th percentile error bars.

Used by ``skrisk demo``, ``skrisk run`` and the benchmark scripts. matplotlib is imported only when
a figure is drawn, and without ``pyplot`` when no axes are given (so it works headless and does not
touch the backend of a notebook).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["summarise_curves", "plot_learning_curves"]


def _frame(records: pd.DataFrame | Iterable[dict]) -> pd.DataFrame:
    df = records.copy() if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    if len(df) == 0:
        raise ValueError("No records to summarise: run at least one round first.")
    return df


def summarise_curves(
    records: pd.DataFrame | Iterable[dict],
    *,
    x: str = "n_labelled",
    y: str = "f1",
    by: str = "strategy",
    quantiles: tuple[float, float] = (0.2, 0.8),
) -> pd.DataFrame:
    """Mean and quantiles of ``y`` over seeds, per ``by`` group and ``x`` value.

    Parameters
    ----------
    records : DataFrame or iterable of dict
        One row per (strategy, seed, round), e.g. the records of
        :func:`~skrisk.experiments.run_active_learning`.
    x, y, by : str
        Columns of the x value, the metric and the grouping (the curve).
    quantiles : (float, float), default=(0.2, 0.8)
        Lower and upper quantile of the error bars (the lower and upper quintile).

    Returns
    -------
    DataFrame
        Columns ``by``, ``x``, ``mean``, ``lower``, ``upper``, ``n`` (number of seeds), sorted.

    Examples
    --------
    >>> recs = [{"strategy": "risk", "seed": s, "n_labelled": n, "f1": f}
    ...         for s, n, f in [(0, 10, 0.5), (1, 10, 0.7), (0, 20, 0.8), (1, 20, 0.9)]]
    >>> summarise_curves(recs)[["n_labelled", "mean", "n"]].round(3).to_numpy().tolist()
    [[10.0, 0.6, 2.0], [20.0, 0.85, 2.0]]
    """
    df = _frame(records)
    for col in (x, y, by):
        if col not in df.columns:
            raise KeyError(f"The records have no column {col!r}; their columns are {list(df.columns)}.")
    lo, hi = quantiles
    if not 0 <= lo <= hi <= 1:
        raise ValueError(f"quantiles must satisfy 0 <= lower <= upper <= 1, got {quantiles!r}.")
    df = df.dropna(subset=[y])  # e.g. no batch was queried after the last round
    g = df.groupby([by, x], sort=True)[y]
    out = pd.DataFrame(
        {
            "mean": g.mean(),
            "lower": g.quantile(lo),
            "upper": g.quantile(hi),
            "n": g.count(),
        }
    ).reset_index()
    return out


def plot_learning_curves(
    records: pd.DataFrame | Iterable[dict],
    path: str | os.PathLike | None = None,
    *,
    x: str = "n_labelled",
    y: str = "f1",
    by: str = "strategy",
    title: str | None = None,
    xlabel: str = "labelled pairs",
    ylabel: str = "test F1",
    order: Sequence[str] | None = None,
    labels: dict[str, str] | None = None,
    quantiles: tuple[float, float] = (0.2, 0.8),
    ax: Any = None,
    dpi: int = 120,
) -> Any:
    """Draw learning curves: the mean over seeds with error bars from the lower to the upper quintile.

    Parameters
    ----------
    records : DataFrame or iterable of dict
        One row per (strategy, seed, round).
    path : path-like, optional
        Save the figure there (PNG, SVG or PDF by suffix).
    x, y, by : str
        Columns of the x value, the metric and the curve.
    title, xlabel, ylabel : str
        Axis texts; the default labels carry their units (pairs, F1 on the test split).
    order : sequence of str, optional
        Curve order in the legend (default: sorted).
    labels : dict, optional
        Legend names per curve value (e.g. ``{"risk": "risk sampling"}``).
    quantiles : (float, float), default=(0.2, 0.8)
        Error-bar quantiles over seeds.
    ax : matplotlib Axes, optional
        Draw into it (e.g. in a notebook); otherwise a new figure is made without ``pyplot``.
    dpi : int, default=120
        Resolution of the saved figure.

    Returns
    -------
    matplotlib.figure.Figure
    """
    summary = summarise_curves(records, x=x, y=y, by=by, quantiles=quantiles)
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7.0, 4.5))
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    groups = list(order) if order is not None else sorted(summary[by].unique(), key=str)
    markers = "osD^vP*X"
    n_max = int(summary["n"].max())
    span = float(summary[x].max() - summary[x].min()) or 1.0
    for i, name in enumerate(groups):
        part = summary[summary[by] == name]
        if len(part) == 0:
            continue
        # a small horizontal dodge keeps overlapping error bars of different curves apart
        dodge = (i - (len(groups) - 1) / 2) * 0.006 * span
        xs, ms = part[x].to_numpy(float) + dodge, part["mean"].to_numpy(float)
        err = np.vstack([ms - part["lower"].to_numpy(float), part["upper"].to_numpy(float) - ms])
        n_seeds = int(part["n"].max())
        label = (labels or {}).get(name, str(name))
        label += f" ({n_seeds} seed{'s' if n_seeds != 1 else ''})"
        ax.errorbar(xs, ms, yerr=np.clip(err, 0, None), marker=markers[i % len(markers)], ms=5, capsize=3,
                    lw=1.6, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        # long titles (dataset, matcher, settings, runs) wrap instead of running off the figure
        ax.set_title(textwrap.fill(title, width=72), fontsize="medium")
    ax.grid(True, alpha=0.3)
    lo, hi = (round(100 * q) for q in quantiles)
    ax.legend(loc="lower right", title=(f"mean, bars: {lo}th-{hi}th percentile" if n_max > 1 else None),
              fontsize="small", title_fontsize="small")
    fig.tight_layout()
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        import io

        from .._fileio import atomic_write_bytes

        buf = io.BytesIO()  # saved atomically, never through a link
        fig.savefig(buf, dpi=dpi, format=path.suffix.lstrip(".").lower() or "png")
        atomic_write_bytes(path, buf.getvalue())
    return fig
