"""Simulated-oracle active-learning experiments: one path for the benchmarks, ``skrisk run`` and
``skrisk demo``.

:func:`build_task` turns a labelled dataset into an :class:`ALTask`; :data:`STRATEGIES` names every
strategy (``"risk"``: skrisk's default, ``"risk_paper"``: the paper's method, the baselines and the
variants); :func:`run_active_learning` runs one session and records its rounds; :func:`summarize_curves`,
:func:`markdown_table` and :func:`plot_learning_curves` report them.

Examples
--------
>>> from skrisk.datasets import make_pairs
>>> from skrisk.experiments import build_task, make_matcher_factory, make_strategy, run_active_learning
>>> task = build_task(make_pairs(200, random_state=0))
>>> records = run_active_learning(task, make_strategy("entropy", task), make_matcher_factory("feature"),
...                               n_seed=10, n_instances=5, n_rounds=3, seed=0)
>>> [r["n_labelled"] for r in records]
[10, 15, 20]
"""

from ._demo import DemoSettings, febrl_task, run_demo, run_experiment
from ._env import environment, machine_line
from ._loop import (
    ALTask,
    RunWriteError,
    format_record,
    initial_labelled_set,
    read_results,
    recorded_rounds,
    run_active_learning,
)
from ._plot import plot_learning_curves, summarize_curves
from ._registry import STRATEGIES, StrategyFactory, make_strategy
from ._report import aulc, markdown_table, write_outputs
from ._tasks import MATCHERS, build_task, load_dataset, make_matcher_factory, matcher_fit_kwargs

__all__ = [
    "ALTask",
    "DemoSettings",
    "MATCHERS",
    "RunWriteError",
    "STRATEGIES",
    "StrategyFactory",
    "aulc",
    "build_task",
    "environment",
    "febrl_task",
    "format_record",
    "initial_labelled_set",
    "load_dataset",
    "machine_line",
    "make_matcher_factory",
    "make_strategy",
    "markdown_table",
    "matcher_fit_kwargs",
    "plot_learning_curves",
    "read_results",
    "recorded_rounds",
    "run_active_learning",
    "run_demo",
    "run_experiment",
    "summarize_curves",
    "write_outputs",
]
