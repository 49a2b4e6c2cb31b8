"""One registry of strategy names for every experiment: ``skrisk run``, ``skrisk demo``, the benchmarks.

Names
-----
``"risk"`` is skrisk's default :class:`~skrisk.strategies.RiskSampler` (k-medoids over the
``2 * n_instances`` riskiest pool pairs from the second query on; risk-weighted BADGE with
:class:`~skrisk.matchers.LMMatcher`), ``"risk_paper"`` the paper's method (weighted k-medoids
over the whole pool at every query), then the paper's six baselines. Variants of risk sampling
are registered as :class:`StrategyFactory` objects of their own beside these (the benchmarks
keep theirs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from sklearn.base import clone

from ..risk import LearnRisk
from ..strategies import (
    KMedoidsSelector,
    RiskSampler,
    badge_sampling,
    bald_sampling,
    coreset_sampling,
    egl_sampling,
    entropy_sampling,
    random_sampling,
    risk_sampling,
)

if TYPE_CHECKING:  # pragma: no cover
    from ._loop import ALTask

__all__ = ["STRATEGIES", "StrategyFactory", "make_strategy"]


@dataclass(frozen=True)
class StrategyFactory:
    """How to build one named strategy for a task.

    Parameters
    ----------
    description : str
        What the strategy does (and, for a variant, what it changes).
    function : callable, optional
        A stateless strategy function, returned as is.
    selector : selector or "auto", default="auto"
        The selector of a :class:`~skrisk.strategies.RiskSampler` (``function`` is then None).

    Examples
    --------
    >>> from skrisk.experiments import STRATEGIES
    >>> STRATEGIES["risk_paper"].selector
    KMedoidsSelector(preselect=None)
    >>> STRATEGIES["entropy"].function.__name__
    'entropy_sampling'
    >>> STRATEGIES["risk_paper"].standalone().keywords
    {'selector': KMedoidsSelector(preselect=None)}
    """

    description: str
    function: Callable[..., Any] | None = None
    selector: Any = "auto"

    def __call__(
        self,
        task: "ALTask",
        *,
        valid_ratio: float = 1.0,
        risk: LearnRisk | None = None,
        random_state: int | None = 0,
    ) -> Callable[..., Any]:
        """The strategy for ``task``: a fresh RiskSampler ranking on the task's validation split, or
        the strategy function (which ignores the other arguments)."""
        if self.function is not None:
            return self.function
        selector = self.selector if isinstance(self.selector, str) else clone(self.selector)
        return RiskSampler(task.rows(task.valid), task.y[task.valid], risk=risk, selector=selector,
                           valid_ratio=valid_ratio, random_state=random_state)

    def standalone(self) -> Callable[..., Any]:
        """The strategy without a task, as a plain modAL strategy function.

        ``function`` itself, or :func:`~skrisk.strategies.risk_sampling` with ``selector``
        (a fresh RiskSampler per call, without validation pairs: its risk weights are ranked on
        the labelled pairs' out-of-fold probabilities).

        Returns
        -------
        callable
            ``strategy(learner, X_pool, n_instances=1, *, random_state=None) -> (positions, scores)``.
        """
        if self.function is not None:
            return self.function
        if isinstance(self.selector, str):
            return risk_sampling
        return partial(risk_sampling, selector=self.selector)


def _risk(description: str, selector: Any = "auto") -> StrategyFactory:
    return StrategyFactory(description, selector=selector)


_REGISTRY: dict[str, StrategyFactory] = {
    "risk": _risk("skrisk's default RiskSampler: weighted k-medoids over the 2 * n_instances riskiest pool "
                  "pairs once more than n_instances pairs are labelled, over the whole pool before; "
                  "risk-weighted BADGE with LMMatcher (selector='auto')"),
    "risk_paper": _risk("the paper's risk sampling: weighted k-medoids over the whole pool at every query",
                        KMedoidsSelector(preselect=None)),
    "random": StrategyFactory("uniform random pairs", random_sampling),
    "entropy": StrategyFactory("highest predictive entropy", entropy_sampling),
    "bald": StrategyFactory("BALD with MC dropout (entropy for models without dropout)", bald_sampling),
    "coreset": StrategyFactory("core-set (greedy k-center on the matcher's representation)", coreset_sampling),
    "egl": StrategyFactory("expected gradient length", egl_sampling),
    "badge": StrategyFactory("BADGE (k-means++ on gradient embeddings)", badge_sampling),
}

#: Strategy name -> :class:`StrategyFactory`, read-only. ``STRATEGIES[name](task, random_state=seed)``
#: builds the strategy for an ``ALTask``.
STRATEGIES: Mapping[str, StrategyFactory] = MappingProxyType(_REGISTRY)

def make_strategy(
    name: str,
    task: "ALTask",
    *,
    valid_ratio: float = 1.0,
    risk: LearnRisk | None = None,
    random_state: int | None = 0,
) -> Callable[..., Any]:
    """The strategy registered as ``name`` (see :data:`STRATEGIES`) for ``task``.

    Parameters
    ----------
    name : str
        A name of :data:`STRATEGIES`.
    task : ALTask
        The task; risk sampling ranks its risk on the task's validation split.
    valid_ratio : float, default=1.0
        Share of the validation split LearnRisk ranks on (the paper's Fig. 5).
    risk : LearnRisk, optional
        The risk model of risk sampling (e.g. ``LearnRisk(epochs=300)``); None: ``LearnRisk()``.
    random_state : int, default=0
        Seeds the RiskSampler.

    Returns
    -------
    callable
        ``strategy(learner, X_pool, n_instances=1, *, random_state=None) -> (positions, scores)``.

    Raises
    ------
    ValueError
        An unknown name; the message lists the known ones.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}; known: {', '.join(STRATEGIES)}.")
    return STRATEGIES[name](task, valid_ratio=valid_ratio, risk=risk, random_state=random_state)
