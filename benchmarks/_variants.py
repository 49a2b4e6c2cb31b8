"""The benchmarks' variants of risk sampling, registered beside skrisk's strategies.

``skrisk.experiments.STRATEGIES`` holds skrisk's default (``risk``), the paper's method
(``risk_paper``) and the paper's six baselines; the variants measured against them (the ablations
of the paper's method, other preselections, the language model's k-medoids) live here, named as
their records are. Variants measured and removed from the library in 0.2.0 (``risk_cold``,
``risk_mix``, ``risk_nrm``, ``risk_oof``, ``risk_kcenter``, ``risk_kcenter2w``, ``risk_kcenter5u``)
keep their records and tables; they cannot be rerun on this code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable

from skrisk import LearnRisk
from skrisk.experiments import STRATEGIES
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' own modules (_lab)
from _lab import StrategyFactory
from skrisk.strategies import BadgeSelector, KMedoidsSelector, TopKSelector

VARIANTS: dict[str, StrategyFactory] = {
    "risk_kmedoids": StrategyFactory("the default's k-medoids selection for every matcher, LMMatcher included",
                                     selector=KMedoidsSelector()),
    # ablations of the paper's method
    "risk_topk": StrategyFactory("the n_instances riskiest pairs (risk ranking alone, no k-medoids)",
                                 selector=TopKSelector()),
    "kmedoids_unit": StrategyFactory("the paper's k-medoids with unit weights (no risk at all)",
                                     selector=KMedoidsSelector(weighting="unit", preselect=None)),
    "risk_nodist": StrategyFactory("the paper's k-medoids weighted by the risk alone (no distance term of eq. 6)",
                                   selector=KMedoidsSelector(weighting="risk", preselect=None)),
    # preselect m * n_instances riskiest pairs from the first query on
    **{f"risk_pre{m}": StrategyFactory(f"k-medoids over the {m} * n_instances riskiest pairs at every query",
                                       selector=KMedoidsSelector(preselect=m, preselect_after=0))
       for m in (2, 3, 5, 10)},
    "risk_topk_lip": StrategyFactory("the n_instances largest Lipschitz weights (eq. 6), no k-medoids",
                                     selector=TopKSelector(weighting="lipschitz")),
    # the default with another preselection factor, a capped k-medoids stage, or no distance term
    **{f"risk_pre{m}w": StrategyFactory(f"the default with {m} * n_instances preselected pairs",
                                        selector=KMedoidsSelector(preselect=m)) for m in (3, 5)},
    "risk_cap2k": StrategyFactory("the default with the k-medoids stage on a 2,000-pair weight-stratified "
                                  "sample of the pool (max_pool=2000)", selector=KMedoidsSelector(max_pool=2000)),
    "risk_badge": StrategyFactory("risk-weighted BADGE: k-means++ seeding on the whole pool's gradient "
                                  "embeddings, each draw weighted by the pair's risk", selector=BadgeSelector()),
    "risk_pre2w_nodist": StrategyFactory("the default with the risk alone as k-medoids weights (no distance term)",
                                         selector=KMedoidsSelector(weighting="risk")),
}

#: Every name a benchmark runs: skrisk's strategies and the variants.
REGISTRY = MappingProxyType({**STRATEGIES, **VARIANTS})


def make_strategy(name: str, task: Any, *, valid_ratio: float = 1.0, risk: LearnRisk | None = None,
                  random_state: int | None = 0) -> Callable[..., Any]:
    """The strategy registered as ``name`` in :data:`REGISTRY` for ``task``."""
    if name not in REGISTRY:
        raise ValueError(f"Unknown strategy {name!r}; known: {', '.join(REGISTRY)}.")
    return REGISTRY[name](task, valid_ratio=valid_ratio, risk=risk, random_state=random_state)
