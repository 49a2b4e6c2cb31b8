"""The simulated-oracle experiment runner shared by the benchmarks and the command line."""

from ._demo import DemoSettings, build_task, run_demo, run_experiment
from ._loop import (
    ALTask,
    RunWriteError,
    initial_labelled_set,
    read_results,
    recorded_rounds,
    run_active_learning,
)
from ._plot import plot_learning_curves, summarize_curves

__all__ = [
    "ALTask",
    "DemoSettings",
    "RunWriteError",
    "build_task",
    "initial_labelled_set",
    "plot_learning_curves",
    "read_results",
    "recorded_rounds",
    "run_active_learning",
    "run_demo",
    "run_experiment",
    "summarize_curves",
]
