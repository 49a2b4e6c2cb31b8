"""The simulated-oracle experiment runner shared by the benchmarks and the command line."""

from ._loop import ALTask, initial_labelled_set, read_results, run_active_learning

__all__ = ["ALTask", "initial_labelled_set", "read_results", "run_active_learning"]
