"""One registry of strategy names for every experiment: ``skrisk run``, ``skrisk demo``, the benchmarks.

Names
-----
``"risk"`` is skrisk's default :class:`~skrisk.strategies.RiskSampler` (k-medoids over the
``2 * n_instances`` riskiest pool pairs from the second query on; risk-weighted BADGE with
:class:`~skrisk.matchers.LMMatcher`), ``"risk_kmedoids"`` the k-medoids for every matcher (what
``"risk"`` was for the language model before issue #27), ``"risk_paper"`` the paper's
method (weighted k-medoids over the whole pool at every query), then the six baselines of the paper
and variants of risk sampling named for what they change.

Benchmark records and tables use these names too (``benchmarks/bench_al.py --strategies``).
Records written before they did (without ``"names": "registry"``) called the paper's method
``risk`` and the default ``risk_pre2w``: ``benchmarks/tools/rename_records.py`` renames them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..strategies import (
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
    sampler_params : mapping, optional
        Parameters of a :class:`~skrisk.strategies.RiskSampler` (``function`` is then None); the
        sampler's defaults for every parameter not named here.

    Examples
    --------
    >>> from skrisk.experiments import STRATEGIES
    >>> STRATEGIES["risk_paper"].sampler_params
    {'selection': 'kmedoids', 'weighting': 'lipschitz', 'preselect': None}
    >>> STRATEGIES["entropy"].function.__name__
    'entropy_sampling'
    >>> STRATEGIES["risk_paper"].standalone().keywords
    {'selection': 'kmedoids', 'weighting': 'lipschitz', 'preselect': None}
    """

    description: str
    function: Callable[..., Any] | None = None
    sampler_params: Mapping[str, Any] = field(default_factory=dict)

    def __call__(
        self,
        task: "ALTask",
        *,
        valid_ratio: float = 1.0,
        risk_params: dict | None = None,
        random_state: int | None = 0,
    ) -> Callable[..., Any]:
        """The strategy for ``task``: a fresh RiskSampler ranking on the task's validation split, or
        the strategy function (which ignores the other arguments)."""
        if self.function is not None:
            return self.function
        return RiskSampler(
            task.rows(task.valid),
            task.y[task.valid],
            valid_ratio=valid_ratio,
            risk_params=risk_params,
            random_state=random_state,
            **dict(self.sampler_params),
        )

    def standalone(self) -> Callable[..., Any]:
        """The strategy without a task, as a plain modAL strategy function.

        ``function`` itself, or :func:`~skrisk.strategies.risk_sampling` with ``sampler_params``
        (a fresh RiskSampler per call, without validation pairs: its risk weights are ranked on
        the labelled pairs' out-of-fold probabilities).

        Returns
        -------
        callable
            ``strategy(learner, X_pool, n_instances=1, *, random_state=None) -> (positions, scores)``.
        """
        if self.function is not None:
            return self.function
        if not self.sampler_params:
            return risk_sampling
        return partial(risk_sampling, **dict(self.sampler_params))


def _risk(description: str, **params: Any) -> StrategyFactory:
    return StrategyFactory(description, sampler_params=params)


_REGISTRY: dict[str, StrategyFactory] = {
    "risk": _risk("skrisk's default RiskSampler: weighted k-medoids over the 2 * n_instances riskiest pool "
                  "pairs once more than n_instances pairs are labelled, over the whole pool before; "
                  "risk-weighted BADGE with LMMatcher (selection='auto')"),
    "risk_kmedoids": _risk("the default's k-medoids selection for every matcher, LMMatcher included "
                           "(selection='kmedoids': the default of every matcher before issue #27)",
                           selection="kmedoids"),
    "risk_paper": _risk("the paper's risk sampling: weighted k-medoids over the whole pool at every query",
                        selection="kmedoids", weighting="lipschitz", preselect=None),
    "random": StrategyFactory("uniform random pairs", random_sampling),
    "entropy": StrategyFactory("highest predictive entropy", entropy_sampling),
    "bald": StrategyFactory("BALD with MC dropout (entropy for models without dropout)", bald_sampling),
    "coreset": StrategyFactory("core-set (greedy k-center on the matcher's representation)", coreset_sampling),
    "egl": StrategyFactory("expected gradient length", egl_sampling),
    "badge": StrategyFactory("BADGE (k-means++ on gradient embeddings)", badge_sampling),
    # ablations of the paper's method
    "risk_topk": _risk("the n_instances riskiest pairs (risk ranking alone, no k-medoids)",
                       selection="topk", weighting="risk"),
    "kmedoids_unit": _risk("the paper's k-medoids with unit weights (no risk at all)",
                           selection="kmedoids", weighting="unit", preselect=None),
    "risk_nodist": _risk("the paper's k-medoids weighted by the risk alone (no distance term of eq. 6)",
                         selection="kmedoids", weighting="risk", preselect=None),
    # variants: preselect m * n_instances riskiest pairs from the first query on
    **{f"risk_pre{m}": _risk(f"k-medoids over the {m} * n_instances riskiest pairs at every query",
                             selection="kmedoids", preselect=m, preselect_after=0) for m in (2, 3, 5, 10)},
    "risk_topk_lip": _risk("the n_instances largest Lipschitz weights (eq. 6) among the default's "
                           "preselected pairs, no k-medoids", selection="topk"),
    # variants of the default: another preselection factor, or no distance term
    **{f"risk_pre{m}w": _risk(f"the default with {m} * n_instances preselected pairs",
                              selection="kmedoids", preselect=m, preselect_after="batch") for m in (3, 5)},
    # the default with its whole-pool k-medoids stage capped far below the pool (issue #19: what
    # the sample of benchmarks/bench_scale.py costs in label efficiency on a pool that fits)
    "risk_cap2k": _risk("the default with the k-medoids stage on a 2,000-pair weight-stratified sample "
                        "of the pool (max_kmedoids_pool=2000)", selection="kmedoids",
                        max_kmedoids_pool=2000),
    # issue #27: candidates for neural matchers, measured and not adopted. The variants of the
    # default name selection="kmedoids": they change the k-medoids default (the language model's
    # records of risk_cold, risk_mix, risk_pre5w and risk_oof predate LMMatcher's BADGE default)
    "risk_cold": _risk("the default with a diverse first query for every matcher (cold_start='diverse': "
                       "unit-weight k-medoids of the whole pool while at most n_instances pairs are labelled)",
                       selection="kmedoids", cold_start="diverse"),
    "risk_mix": _risk("the default with half of each batch spread over the whole pool (diversity=0.5: "
                      "unit-weight k-medoids with the labelled pairs and the risk half fixed)",
                      selection="kmedoids", diversity=0.5),
    "risk_badge": _risk("risk-weighted BADGE: k-means++ seeding on the whole pool's gradient embeddings, each "
                        "draw weighted by the pair's risk (selection='badge', weighting='risk')",
                        selection="badge", weighting="risk", preselect=None),
    "risk_oof": _risk("the default with LearnRisk's expectations from out-of-fold probabilities of the labelled "
                      "pairs on 3 folds for every matcher (labelled_proba='oof', cv=3)", selection="kmedoids",
                      labelled_proba="oof", cv=3),
    "risk_nrm": _risk("the default with a diverse batch when LearnRisk has no risk model (no_risk_model='diverse': "
                      "unit-weight k-medoids of the whole pool when the matcher predicts every ranking pair correctly)",
                      selection="kmedoids", no_risk_model="diverse"),
    # issue #27, tenth session: risk-weighted k-center (core-set's greedy, each step the largest
    # risk * distance to the nearest centre), measured against core-set's lead
    "risk_kcenter": _risk("risk-weighted core-set: greedy k-center over the whole pool with the labelled pairs as "
                          "centres, each step the largest risk * distance (selection='kcenter', weighting='risk')",
                          selection="kcenter", weighting="risk", preselect=None),
    "risk_kcenter2w": _risk("the default's preselection (2 * n_instances riskiest once more than n_instances are "
                            "labelled) with risk-weighted k-center instead of k-medoids (selection='kcenter')",
                            selection="kcenter", weighting="risk"),
    "risk_kcenter5u": _risk("core-set's k-center over the 5 * n_instances riskiest pool pairs once more than "
                            "n_instances are labelled, the whole pool before (selection='kcenter', weighting='unit', "
                            "preselect=5)", selection="kcenter", weighting="unit", preselect=5),
    "risk_pre2w_nodist": _risk("the default with the risk alone as k-medoids weights (no distance term)",
                               selection="kmedoids", preselect=2, preselect_after="batch", weighting="risk"),
}

#: Strategy name -> :class:`StrategyFactory`, read-only. ``STRATEGIES[name](task, random_state=seed)``
#: builds the strategy for an :class:`~skrisk.experiments.ALTask`.
STRATEGIES: Mapping[str, StrategyFactory] = MappingProxyType(_REGISTRY)

def make_strategy(
    name: str,
    task: "ALTask",
    *,
    valid_ratio: float = 1.0,
    risk_params: dict | None = None,
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
    risk_params : dict, optional
        LearnRisk parameters (e.g. ``{"epochs": 300}``).
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
    return STRATEGIES[name](task, valid_ratio=valid_ratio, risk_params=risk_params, random_state=random_state)
