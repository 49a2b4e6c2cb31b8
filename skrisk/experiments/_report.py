"""Summarising active-learning records: test F1 per budget, and the area under the mean curve."""

from __future__ import annotations

import numpy as np
import pandas as pd


__all__ = ["aulc", "curve_area", "per_budget"]


def per_budget(records: list[dict], *, low: float = 0.2, high: float = 0.8) -> pd.DataFrame:
    """Mean, quintiles and std of test F1 (and batch misprediction share) per dataset, strategy and
    budget of run records (one row per round), with the number of runs behind each."""
    df = pd.DataFrame(records)
    if df.empty:
        return df
    g = df.groupby(["dataset", "strategy", "round", "n_labelled"])
    out = g["f1"].agg(
        f1_mean="mean",
        f1_low=lambda s: s.quantile(low),
        f1_high=lambda s: s.quantile(high),
        f1_std="std",
        runs="count",
    )
    if "batch_mispredicted" in df:
        out["mispredicted_mean"] = g["batch_mispredicted"].mean()
        out["mispredicted_std"] = g["batch_mispredicted"].std()
    return out.reset_index()


def curve_area(summary: pd.DataFrame) -> pd.Series:
    """Area under the mean learning curve per strategy of a :func:`per_budget` summary (its
    ``f1_mean`` column), normalised by the labelled-set range."""
    res = {}
    for strat, part in summary.groupby("strategy"):
        part = part.sort_values("n_labelled")
        x, y = part["n_labelled"].to_numpy(float), part["f1_mean"].to_numpy(float)
        res[strat] = float(np.trapezoid(y, x) / (x[-1] - x[0])) if len(x) > 1 else float(y[0])
    return pd.Series(res, name="aulc")


def aulc(records: list[dict] | pd.DataFrame) -> pd.Series:
    """Area under the mean learning curve of each strategy, normalised by the labelled-set range.

    The learning curve is test F1 against the number of labelled pairs, averaged over the runs
    (seeds) at each budget; the area is divided by the range of budgets, so it is the curve's mean
    height (between 0 and 1). A strategy with a single budget gets its F1 there.

    Parameters
    ----------
    records : list of dict or DataFrame
        Round records of :func:`run_active_learning` (keys ``strategy``, ``n_labelled``, ``f1``
        and ``dataset``), of one dataset.

    Returns
    -------
    Series
        The area per strategy (index: the strategy names), named ``"aulc"``.

    Examples
    --------
    >>> from skrisk.experiments import aulc
    >>> recs = [{"dataset": "d", "strategy": "s", "n_labelled": n, "f1": f, "seed": 0}
    ...         for n, f in [(10, 0.5), (20, 0.7), (30, 0.9)]]
    >>> float(round(aulc(recs)["s"], 3))
    0.7
    """
    frame = pd.DataFrame(records)
    if frame.empty:
        return pd.Series(dtype=float, name="aulc")
    if "round" not in frame:
        frame = frame.assign(round=frame.groupby(["dataset", "strategy"])["n_labelled"].rank(method="dense"))
    return curve_area(per_budget(frame))
