"""Simulated-oracle active-learning experiments: the path of ``skrisk run``, ``skrisk demo`` and
the benchmarks.

:func:`build_task` splits a labelled dataset into pool, validation and test pairs;
:data:`STRATEGIES` names the strategies (``"risk"``: skrisk's default, ``"risk_paper"``: the
paper's method, and the paper's six baselines), each built for a task by calling it;
:func:`run_active_learning` runs one session with the labels as the oracle and records its
rounds; :func:`aulc` scores a strategy's learning curve over those rounds by its mean height.

Examples
--------
>>> from skrisk.datasets import make_pairs
>>> from skrisk.experiments import STRATEGIES, build_task, run_active_learning
>>> from skrisk.matchers import FeatureMatcher
>>> task = build_task(make_pairs(200, random_state=0))
>>> records = run_active_learning(task, STRATEGIES["entropy"](task), lambda seed: FeatureMatcher(random_state=seed),
...                               n_seed=10, n_instances=5, n_rounds=3, seed=0)
>>> [r["n_labelled"] for r in records]
[10, 15, 20]
"""

from ._loop import run_active_learning
from ._registry import STRATEGIES
from ._report import aulc
from ._tasks import build_task

__all__ = ["aulc", "build_task", "run_active_learning", "STRATEGIES"]
