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
from ._env import environment, machine_line
from ._loop import RECORD_ONLY_KEYS, ALTask

__all__ = [
    "load_task",
    "make_strategy",
    "make_matcher_factory",
    "summarise",
    "markdown_table",
    "STRATEGY_NAMES",
    "ABLATIONS",
    "VARIANTS",
    "environment",
    "machine_line",
]

STRATEGY_NAMES = ["risk", "random", "entropy", "bald", "coreset", "egl", "badge"]

#: Ablations of risk sampling: name -> RiskSampler parameters.
ABLATIONS: dict[str, dict[str, Any]] = {
    "risk_topk": {"selection": "topk", "weighting": "risk"},  # risk ranking alone
    "kmedoids_unit": {"selection": "kmedoids", "weighting": "unit", "preselect": None},  # no risk
    "risk_nodist": {"selection": "kmedoids", "weighting": "risk", "preselect": None},  # no distance term
}

#: Variants of risk sampling measured as improvements: name -> RiskSampler parameters.
VARIANTS: dict[str, dict[str, Any]] = {
    # k-medoids over the top m*b risks at every query
    **{f"risk_pre{m}": {"preselect": m, "preselect_after": 0} for m in (2, 3, 5, 10)},
    "risk_topk_lip": {"selection": "topk"},  # top-b Lipschitz weights (eq. 6), no k-medoids
    # the same from the second query on; the whole pool while |L| <= b (RiskSampler's default: m = 2)
    **{f"risk_pre{m}w": {"preselect": m, "preselect_after": "batch"} for m in (2, 3, 5)},
    # the same with the risk alone as k-medoids weights (no distance term of eq. 6)
    "risk_pre2w_nodist": {"preselect": 2, "preselect_after": "batch", "weighting": "risk"},
}
#: "risk" is the paper's method whatever RiskSampler's defaults become, so results stay comparable.
_RISK_PARAMS = {"risk": {"selection": "kmedoids", "weighting": "lipschitz", "preselect": None}, **ABLATIONS, **VARIANTS}


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
    cache_dir: str | Path | None = None,
) -> ALTask:
    """An :class:`ALTask` over a dataset's train (pool), valid and test splits.

    ``matcher="feature"``: X is the similarity-feature matrix (fitted once on all pairs' text,
    which uses no labels). ``matcher="rnn"``: X is the hybrid encoding ``SliceDict(tokens=...,
    features=...)`` of :class:`~skrisk.data.PairEncoder`, with FastText vectors trained on the
    tables' own text (dimension 100, 5 epochs, seed 0) and token sequences of at most 20 per
    attribute, the settings of ``benchmarks/bench_matcher.py`` (``encoder_params`` overrides
    them). ``cache_dir``: keep the encoded matrix there (one ``.npz`` per dataset and matcher),
    so parallel or resumed runs skip FastText training and encoding.
    """
    if matcher not in ("feature", "rnn"):
        raise ValueError(f"matcher must be 'feature' or 'rnn', got {matcher!r}.")
    ds = dataset if dataset is not None else load_dataset(name, data_home)
    cache = None
    if cache_dir is not None and not encoder_params:
        cache = Path(cache_dir) / f"{ds.name}_{matcher}_{len(ds)}.npz"
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            X: Any = z["X"] if matcher == "feature" else _slicedict(z["tokens"], z["features"])
    else:
        X = _encode(ds, matcher, encoder_params)
        if cache is not None:
            _write_cache(cache, X, matcher)
    return ALTask(
        X=X,
        y=ds.y(),
        pool=ds.split_positions("train"),
        valid=ds.split_positions("valid"),
        test=ds.split_positions("test"),
        name=ds.name,
    )


def _write_cache(cache: Path, X: Any, matcher: str) -> None:
    """Write the encoded task atomically through a unique temporary file, so that processes
    encoding the same task at once (``bench_al.py --jobs``) never share a temporary name."""
    import io

    from .._fileio import atomic_write_bytes

    buf = io.BytesIO()
    if matcher == "feature":
        np.savez(buf, X=X)
    else:
        np.savez(buf, tokens=X["tokens"], features=X["features"])
    cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(cache, buf.getvalue(), on_error=lambda path, exc: OSError(
        exc.errno, f"Cannot write the task cache {path}: {exc.strerror or exc}. Free disk space or make "
        f"{path.parent} writable, or pass another --out folder"))


def _slicedict(tokens: np.ndarray, features: np.ndarray) -> Any:
    from skorch.helper import SliceDict

    return SliceDict(tokens=tokens, features=features)


def _encode(ds: PairDataset, matcher: str, encoder_params: dict | None) -> Any:
    frame = ds.to_frame()
    if matcher == "feature":
        return SimilarityFeatures().fit_transform(frame).astype(np.float32)
    from ..data import PairEncoder
    from ..data._embeddings import train_fasttext

    params: dict[str, Any] = {"max_length": 20, "features": SimilarityFeatures(), **(encoder_params or {})}
    if params.get("vocabulary") is None:
        params["vocabulary"] = train_fasttext(ds, dim=100, epochs=5, random_state=0)
    return PairEncoder(**params).fit_transform(frame)


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
    if name in _RISK_PARAMS:
        return RiskSampler(
            task.rows(task.valid),
            task.y[task.valid],
            valid_ratio=valid_ratio,
            risk_params=risk_params,
            random_state=random_state,
            **_RISK_PARAMS[name],
        )
    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}; known: {sorted([*STRATEGIES, *_RISK_PARAMS])}.")
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
        out["mispredicted_std"] = g["batch_mispredicted"].std()
    return out.reset_index()


def aulc(summary: pd.DataFrame) -> pd.Series:
    """Area under the mean learning curve per strategy, normalised by the labelled-set range."""
    res = {}
    for strat, part in summary.groupby("strategy"):
        part = part.sort_values("n_labelled")
        x, y = part["n_labelled"].to_numpy(float), part["f1_mean"].to_numpy(float)
        res[strat] = float(np.trapezoid(y, x) / (x[-1] - x[0])) if len(x) > 1 else float(y[0])
    return pd.Series(res, name="aulc")


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
    areas = aulc(summary.assign(f1_mean=summary[mean]))
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
    from ._plot import plot_learning_curves

    out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(records).drop(columns=list(RECORD_ONLY_KEYS), errors="ignore")
    paths = {"rounds": out / f"{stem}_rounds.csv", "summary": out / f"{stem}_summary.csv",
             "table": out / f"{stem}.md", "png": out / f"{stem}.png"}
    df.to_csv(paths["rounds"], index=False)
    summ = summarise(records)
    summ.to_csv(paths["summary"], index=False)
    text = f"### {title}\n\nTest F1 (mean ± std over runs) per labelled-set size:\n\n" + markdown_table(summ)
    plot_learning_curves(records, paths["png"], title=title)
    if "batch_mispredicted" in df and df["batch_mispredicted"].notna().any():
        text += ("\nShare of the batch queried at each size that the current matcher mispredicts:\n\n"
                 + markdown_table(summ, value="mispredicted", area=False))
        paths["mispredicted_png"] = out / f"{stem}_mispredicted.png"
        plot_learning_curves(df, paths["mispredicted_png"], y="batch_mispredicted", title=title,
                             ylabel="share of the queried batch mispredicted")
    paths["table"].write_text(text)
    return paths
