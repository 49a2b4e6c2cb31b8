"""Building benchmark tasks and strategies, and summarising active-learning results.

Shared by ``benchmarks/bench_al.py`` and ``skrisk run``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..data import PairDataset, SimilarityFeatures, load_deepmatcher, load_febrl
from ..strategies import STRATEGIES, RiskSampler
from ._loop import ALTask

__all__ = [
    "load_task",
    "make_strategy",
    "make_matcher_factory",
    "summarise",
    "markdown_table",
    "STRATEGY_NAMES",
    "ABLATIONS",
]

STRATEGY_NAMES = ["risk", "random", "entropy", "bald", "coreset", "egl", "badge"]

#: Ablations of risk sampling: name -> RiskSampler parameters.
ABLATIONS: dict[str, dict[str, Any]] = {
    "risk_topk": {"selection": "topk", "weighting": "risk"},  # risk ranking alone
    "kmedoids_unit": {"selection": "kmedoids", "weighting": "unit"},  # k-medoids on unit weights
    "risk_nodist": {"selection": "kmedoids", "weighting": "risk"},  # no distance term in eq. 6
}


def load_dataset(name: str, data_home: str | None = None, random_state: int = 0) -> PairDataset:
    """A named DeepMatcher dataset, a dataset folder, or ``"febrl"`` (embedded, no download)."""
    if name.lower() in ("febrl", "febrl4"):
        return load_febrl(random_state=random_state)
    return load_deepmatcher(name, data_home)


def load_task(
    name: str,
    *,
    matcher: str = "feature",
    data_home: str | None = None,
    dataset: PairDataset | None = None,
    encoder_params: dict | None = None,
) -> ALTask:
    """An :class:`ALTask` over a dataset's train (pool), valid and test splits.

    ``matcher="feature"``: X is the similarity-feature matrix (fitted once on all pairs' text,
    which uses no labels). ``matcher="rnn"``: X is the hybrid encoding ``SliceDict(tokens=...,
    features=...)`` of :class:`~skrisk.data.PairEncoder`.
    """
    ds = dataset if dataset is not None else load_dataset(name, data_home)
    frame = ds.to_frame()
    if matcher == "feature":
        X: Any = SimilarityFeatures().fit_transform(frame).astype(np.float32)
    elif matcher == "rnn":
        from ..data import PairEncoder

        X = PairEncoder(**{"features": True, **(encoder_params or {})}).fit_transform(frame)
    else:
        raise ValueError(f"matcher must be 'feature' or 'rnn', got {matcher!r}.")
    return ALTask(
        X=X,
        y=ds.y(),
        pool=ds.split_positions("train"),
        valid=ds.split_positions("valid"),
        test=ds.split_positions("test"),
        name=ds.name,
    )


def make_matcher_factory(kind: str = "feature", **params: Any) -> Callable[[int], Any]:
    """``seed -> fresh unfitted matcher``; the same seed gives every strategy the same initialisation."""
    if kind == "feature":
        from ..matchers import FeatureMatcher

        return lambda seed: FeatureMatcher(random_state=seed, **params)
    if kind == "rnn":
        from ..matchers import RNNMatcher

        return lambda seed: RNNMatcher(random_state=seed, **params)
    raise ValueError(f"matcher must be 'feature' or 'rnn', got {kind!r}.")


def make_strategy(
    name: str,
    task: ALTask,
    *,
    valid_ratio: float = 1.0,
    risk_params: dict | None = None,
    random_state: int = 0,
) -> Callable[..., Any]:
    """A strategy by name: the seven of the paper, or a risk-sampling ablation."""
    if name == "risk" or name in ABLATIONS:
        return RiskSampler(
            task.rows(task.valid),
            task.y[task.valid],
            valid_ratio=valid_ratio,
            risk_params=risk_params,
            random_state=random_state,
            **ABLATIONS.get(name, {}),
        )
    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}; known: {sorted([*STRATEGIES, *ABLATIONS])}.")
    return STRATEGIES[name]


def summarise(records: list[dict], *, low: float = 0.2, high: float = 0.8) -> pd.DataFrame:
    """Mean and quintile spread of test F1 (and batch misprediction share) per strategy and budget."""
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
    return out.reset_index()


def aulc(summary: pd.DataFrame) -> pd.Series:
    """Area under the mean learning curve per strategy, normalised by the labelled-set range."""
    res = {}
    for strat, part in summary.groupby("strategy"):
        part = part.sort_values("n_labelled")
        x, y = part["n_labelled"].to_numpy(float), part["f1_mean"].to_numpy(float)
        res[strat] = float(np.trapezoid(y, x) / (x[-1] - x[0])) if len(x) > 1 else float(y[0])
    return pd.Series(res, name="aulc")


def markdown_table(summary: pd.DataFrame) -> str:
    """F1 per budget per strategy (mean ± std over runs) plus the area under the learning curve."""
    if summary.empty:
        return "(no results)\n"
    budgets = sorted(summary["n_labelled"].unique())
    areas = aulc(summary)
    header = "| strategy | " + " | ".join(str(b) for b in budgets) + " | AULC |"
    sep = "|---" * (len(budgets) + 2) + "|"
    lines = [header, sep]
    order = sorted(summary["strategy"].unique(), key=lambda s: -areas[s])
    for strat in order:
        part = summary[summary["strategy"] == strat].set_index("n_labelled")
        cells = []
        for b in budgets:
            if b in part.index:
                row = part.loc[b]
                std = 0.0 if np.isnan(row["f1_std"]) else row["f1_std"]
                cells.append(f"{row['f1_mean']:.3f} ± {std:.3f}")
            else:
                cells.append("")
        lines.append(f"| {strat} | " + " | ".join(cells) + f" | {areas[strat]:.3f} |")
    return "\n".join(lines) + "\n"


def write_outputs(records: list[dict], out: Path, stem: str, title: str) -> dict[str, Path]:
    """CSV of all rounds, summary CSV, Markdown table and learning-curve PNG."""
    out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(records).drop(columns=["labelled", "next_labelled"], errors="ignore")
    paths = {"rounds": out / f"{stem}_rounds.csv", "summary": out / f"{stem}_summary.csv",
             "table": out / f"{stem}.md", "png": out / f"{stem}.png"}
    df.to_csv(paths["rounds"], index=False)
    summ = summarise(records)
    summ.to_csv(paths["summary"], index=False)
    paths["table"].write_text(f"### {title}\n\n" + markdown_table(summ))
    from ._plot import plot_learning_curves

    plot_learning_curves(records, paths["png"], title=title)
    return paths
