"""Checks of the structures a model file holds, before anything runs on them.

skops refuses untrusted types, but a file built only from trusted types can still hold arrays
that native code indexes without bounds checks: a scikit-learn tree whose child index is
``2**40`` or whose feature index is ``10**9`` makes prediction read outside memory (SIGSEGV),
children that point back to a parent make it loop forever, and a LearnRisk rule with the
threshold ``"abc"`` fails deep inside numpy. :func:`check_model_parts` walks every object the
file's ``estimators.skops`` holds and checks, before any of them is used:

* every :class:`sklearn.tree._tree.Tree` (decision trees, and the trees of forests, extra trees
  and gradient boosting): at most :data:`MAX_TREE_NODES` nodes (and
  :data:`MAX_TOTAL_TREE_NODES` in all), each internal node's children are two distinct nodes
  *after* it (scikit-learn's depth-first layout: so they are in range and there is no cycle),
  its feature index is in ``[0, n_features)`` and its threshold a finite number, leaves have
  both children ``-1``, and the tree reads as many features as the estimator holding it says
  (``n_features_in_``), which for forests and gradient boosting is the ensemble's own;
* every LearnRisk rule: at most :data:`MAX_RULES` rules of at most
  :data:`MAX_RULE_CONDITIONS` conditions, each condition's feature an integer index of the
  risk features, its operator ``"<="`` or ``">"``, its threshold a finite number, the rule's
  label 0 or 1; the fitted per-rule and per-bin arrays as long as the rules and bins and finite;
  the number of bins (at most :data:`MAX_RISK_BINS`), ``theta`` in (0, 1), the input width
  and the probability's column in it, the weight function and scales finite; and a
  :class:`~skrisk.LearnRisk`'s own ``rules_`` (the rules its reasons name) the very rules its
  risk model scores with.

A model that fails a check is refused with a :class:`~skrisk.exceptions.DataError` naming the
file, the object, the node or rule and what is wrong. The limits fit a real model by a wide
margin (a random forest of 100 trees on tens of thousands of training pairs holds about 10**5
nodes in all).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import DataError

__all__ = ["MAX_RISK_BINS", "MAX_RULES", "MAX_RULE_CONDITIONS", "MAX_TOTAL_TREE_NODES", "MAX_TREE_NODES", "check_model_parts"]

#: Nodes one tree of a model file may hold.
MAX_TREE_NODES = 2**24
#: Tree nodes a model file may hold in all.
MAX_TOTAL_TREE_NODES = 2**26
#: LearnRisk rules a model file may hold.
MAX_RULES = 1_000_000
#: Conditions one LearnRisk rule may hold.
MAX_RULE_CONDITIONS = 1_000
_TREE_LEAF = -1
_TREE_TYPE = "sklearn.tree._tree.Tree"  # named, not imported: scikit-learn's private module
_MAX_OBJECTS = 10_000_000  # objects walked: a graph larger than any real model is refused


class _Walk:
    def __init__(self, file: Path) -> None:
        self.file = file
        self.nodes = 0
        self.seen: set[int] = set()

    def fail(self, where: str, what: str) -> DataError:
        return DataError(
            f"{self.file}: {where} {what}. The file was refused before anything used it: it is "
            "damaged or was crafted; train and save the model again (MatchModel.save)."
        )


def _children(obj: Any) -> list[tuple[str, Any]]:
    """The attributes / items of ``obj`` to walk, named."""
    if isinstance(obj, Mapping):
        return [(f"[{k!r}]", v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        return [(f"[{i}]", v) for i, v in enumerate(obj.ravel())] if obj.dtype == object else []
    if isinstance(obj, (str, bytes, int, float, complex, bool, type(None), np.generic, type)):
        return []
    d = getattr(obj, "__dict__", None)
    return [(f".{k}", v) for k, v in d.items()] if isinstance(d, dict) else []


def _n_features_in(obj: Any) -> int | None:
    n = getattr(obj, "__dict__", {}).get("n_features_in_") if hasattr(obj, "__dict__") else None
    return int(n) if isinstance(n, (int, np.integer)) and not isinstance(n, bool) else None


def _is_tree_ensemble(obj: Any) -> bool:
    """Forests and gradient boosting predict with their trees' inputs unchecked (``check_input=False``)."""
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        IsolationForest,
        RandomForestClassifier,
        RandomForestRegressor,
        RandomTreesEmbedding,
    )

    return isinstance(obj, (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                            GradientBoostingRegressor, IsolationForest, RandomForestClassifier,
                            RandomForestRegressor, RandomTreesEmbedding))


def _check_tree(tree: Any, where: str, n_expected: int | None, walk: _Walk) -> None:
    n = int(tree.node_count)
    if not 1 <= n <= MAX_TREE_NODES:
        raise walk.fail(where, f"has {n} nodes, outside [1, {MAX_TREE_NODES}]")
    walk.nodes += n
    if walk.nodes > MAX_TOTAL_TREE_NODES:
        raise walk.fail(where, f"brings the model's tree nodes to {walk.nodes}, more than the {MAX_TOTAL_TREE_NODES} a model may hold")
    n_features = int(tree.n_features)
    if n_expected is not None and n_features != n_expected:
        raise walk.fail(where, f"reads {n_features} features but the estimator holding it takes {n_expected}")
    left = np.asarray(tree.children_left, dtype=np.int64)
    right = np.asarray(tree.children_right, dtype=np.int64)
    feature = np.asarray(tree.feature, dtype=np.int64)
    threshold = np.asarray(tree.threshold)
    idx = np.arange(n)
    leaf = left == _TREE_LEAF
    bad = np.flatnonzero(leaf != (right == _TREE_LEAF))
    if bad.size:
        raise walk.fail(where, f"node {bad[0]} has one child ({left[bad[0]]}, {right[bad[0]]}): a node has two or none")
    inner = ~leaf
    bad = np.flatnonzero(inner & ~((left > idx) & (left < n) & (right > idx) & (right < n) & (left != right)))
    if bad.size:
        i = bad[0]
        raise walk.fail(
            where, f"node {i} has the children {left[i]} and {right[i]}; children must be two distinct nodes "
            f"after their parent and below the node count {n} (an index out of range crashes prediction, "
            "one that points back loops forever)"
        )
    bad = np.flatnonzero(inner & ~((feature >= 0) & (feature < n_features)))
    if bad.size:
        raise walk.fail(where, f"node {bad[0]} splits on feature {feature[bad[0]]}, outside [0, {n_features})")
    if threshold.dtype.kind != "f":
        raise walk.fail(where, f"holds thresholds of dtype {threshold.dtype}, not floats")
    bad = np.flatnonzero(inner & ~np.isfinite(threshold))
    if bad.size:
        raise walk.fail(where, f"node {bad[0]} has the threshold {threshold[bad[0]]}, not a finite number")
    value = np.asarray(tree.value)
    if value.dtype.kind != "f" or not np.isfinite(value).all():
        raise walk.fail(where, "holds leaf values that are not finite numbers")


def _finite_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) and math.isfinite(float(v))


def _check_condition(c: Any, where: str, n_features: int | None, walk: _Walk) -> None:
    from ..risk._rules import Condition

    if not isinstance(c, Condition):
        raise walk.fail(where, f"is a {type(c).__name__}, not a Condition")
    f = c.feature
    if not isinstance(f, (int, np.integer)) or isinstance(f, bool) or f < 0 or (n_features is not None and f >= n_features):
        raise walk.fail(where, f"reads feature {f!r}, not an index in [0, {n_features if n_features is not None else 'n'})")
    if c.op not in ("<=", ">"):
        raise walk.fail(where, f"has the operator {c.op!r}, not '<=' or '>'")
    if not _finite_number(c.threshold):
        raise walk.fail(where, f"has the threshold {c.threshold!r}, not a finite number")
    if not isinstance(c.name, str):
        raise walk.fail(where, f"is named {c.name!r}, not a string")


def _check_rules(est: Any, where: str, walk: _Walk) -> None:
    from ..risk import Rule

    rules = est.__dict__.get("rules_")
    if rules is None:
        return
    if not isinstance(rules, list) or len(rules) > MAX_RULES:
        raise walk.fail(f"{where}.rules_", f"is a {type(rules).__name__} of {len(rules) if hasattr(rules, '__len__') else '?'} items, not a list of at most {MAX_RULES} rules")
    names = est.__dict__.get("feature_names_")
    n_features = len(names) if names is not None and hasattr(names, "__len__") else None
    for j, rule in enumerate(rules):
        at = f"{where}.rules_[{j}]"
        if not isinstance(rule, Rule):
            raise walk.fail(at, f"is a {type(rule).__name__}, not a Rule")
        if rule.label not in (0, 1) or isinstance(rule.label, bool):
            raise walk.fail(at, f"has the label {rule.label!r}, not 0 or 1")
        conds = rule.conditions
        if not isinstance(conds, tuple) or not 1 <= len(conds) <= MAX_RULE_CONDITIONS:
            raise walk.fail(at, f"holds {type(conds).__name__} conditions, not a tuple of 1 to {MAX_RULE_CONDITIONS}")
        for k, c in enumerate(conds):
            _check_condition(c, f"{at}, condition {k},", n_features, walk)
    J = len(rules)
    n_bins = est.__dict__.get("n_bins")
    for name, size in (("rule_weights_", J), ("rule_rsd_", J), ("rule_expectations_", J), ("rule_coverage_", J),
                       ("bin_rsd_", n_bins), ("bin_expectations_", n_bins), ("bin_counts_", n_bins),
                       ("rsd_base_", J + int(n_bins) if isinstance(n_bins, (int, np.integer)) else None)):
        if name not in est.__dict__:
            continue
        arr = est.__dict__[name]
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu" or arr.ndim != 1 or (
            isinstance(size, int) and arr.shape[0] != size
        ):
            raise walk.fail(f"{where}.{name}", f"is not a numeric vector of length {size}")
        if not np.isfinite(arr).all():
            raise walk.fail(f"{where}.{name}", "holds values that are not finite numbers")


#: Probability bins a LearnRisk model of a file may hold.
MAX_RISK_BINS = 1_000_000


def _check_risk_scalars(est: Any, where: str, walk: _Walk) -> None:
    """The fitted numbers of a LearnRiskEstimator beside its rules: the bins, theta, the width of
    its input and where the probability sits in it, the weight function and the scales."""
    d = est.__dict__
    if "rules_" not in d:
        return
    n_bins = d.get("n_bins")
    if not isinstance(n_bins, (int, np.integer)) or isinstance(n_bins, bool) or not 1 <= n_bins <= MAX_RISK_BINS:
        raise walk.fail(f"{where}.n_bins", f"is {n_bins!r}, not an int in [1, {MAX_RISK_BINS}]")
    theta = d.get("theta")
    if not _finite_number(theta) or not 0.0 < float(theta) < 1.0:
        raise walk.fail(f"{where}.theta", f"is {theta!r}, not a number in (0, 1)")
    names = d.get("feature_names_")
    n_in = d.get("n_features_in_")
    if names is None or not hasattr(names, "__len__") or not isinstance(n_in, (int, np.integer)) \
            or isinstance(n_in, bool) or n_in != len(names) + 1:
        raise walk.fail(f"{where}.n_features_in_", f"is {n_in!r}, not the {len(names) + 1 if hasattr(names, '__len__') else 'n + 1'} "
                                                  "columns of its features and the probability")
    at = d.get("proba_index_")
    if not isinstance(at, (int, np.integer)) or isinstance(at, bool) or not 0 <= at < n_in:
        raise walk.fail(f"{where}.proba_index_", f"is {at!r}, not a column index in [0, {n_in})")
    wf = d.get("weight_function_")
    if not isinstance(wf, (tuple, list)) or len(wf) != 2 or not all(_finite_number(v) for v in wf):
        raise walk.fail(f"{where}.weight_function_", f"is {wf!r}, not two finite numbers")
    if "rank_scale_" in d and not _finite_number(d["rank_scale_"]):
        raise walk.fail(f"{where}.rank_scale_", f"is {d['rank_scale_']!r}, not a finite number")


def _check_learnrisk(obj: Any, where: str, walk: _Walk) -> None:
    """A LearnRisk's own ``rules_`` (what it reports) are its risk model's rules, the ones it scores with."""
    from ..risk import LearnRisk
    from ..risk.research import LearnRiskEstimator

    if not isinstance(obj, LearnRisk) or "rules_" not in obj.__dict__:
        return
    inner = obj.__dict__.get("risk_model_")
    rules = obj.__dict__["rules_"]
    if inner is not None and not isinstance(inner, LearnRiskEstimator):
        raise walk.fail(f"{where}.risk_model_", f"is a {type(inner).__name__}, not a LearnRiskEstimator")
    expected = [] if inner is None else inner.__dict__.get("rules_")
    if inner is not None:
        _check_risk_scalars(inner, f"{where}.risk_model_", walk)
        _check_rules(inner, f"{where}.risk_model_", walk)
    if not isinstance(rules, list) or not isinstance(expected, list) or len(rules) != len(expected):
        raise walk.fail(f"{where}.rules_", f"holds {len(rules) if hasattr(rules, '__len__') else '?'} rules, but its "
                                          f"risk model scores with {len(expected) if hasattr(expected, '__len__') else '?'}")
    for j, (a, b) in enumerate(zip(rules, expected)):
        if a != b:
            feats = [getattr(c, "feature", "?") for c in getattr(a, "conditions", ())]
            theirs = [getattr(c, "feature", "?") for c in getattr(b, "conditions", ())]
            raise walk.fail(f"{where}.rules_[{j}]", f"(conditions on the features {feats}) differs from rule {j} of its "
                                                   f"risk model (features {theirs}), the rule that gives the risk: the "
                                                   "reasons shown would not be the ones scored")


def check_model_parts(parts: Any, file: Path) -> None:
    """Check every tree and rule inside the loaded parts of a model file (see the module docstring).

    Parameters
    ----------
    parts : object
        What ``estimators.skops`` held (the features, the matcher, the risk model).
    file : pathlib.Path
        The model file, named in the errors.

    Raises
    ------
    DataError
        A structure that would crash, hang or mislead prediction; the message names the file,
        the object path and the node or rule.
    """
    from ..risk.research import LearnRiskEstimator
    from ..risk._rules import Condition

    walk = _Walk(file)
    # (object, where, n_features_in_ of the nearest estimator, whether that one is a tree ensemble)
    stack: list[tuple[Any, str, int | None, bool]] = [(parts, "estimators.skops", None, False)]
    while stack:
        obj, where, n_in, in_ensemble = stack.pop()
        if id(obj) in walk.seen:
            continue
        walk.seen.add(id(obj))
        if len(walk.seen) > _MAX_OBJECTS:
            raise walk.fail("estimators.skops", f"holds more than {_MAX_OBJECTS} objects")
        if f"{type(obj).__module__}.{type(obj).__qualname__}" == _TREE_TYPE:
            _check_tree(obj, where, n_in, walk)
            continue
        own = _n_features_in(obj)
        if own is not None and in_ensemble and n_in is not None and own != n_in:
            raise walk.fail(where, f"takes {own} features inside an ensemble that takes {n_in}")
        _check_learnrisk(obj, where, walk)
        if isinstance(obj, LearnRiskEstimator):
            _check_risk_scalars(obj, where, walk)
            _check_rules(obj, where, walk)
        elif isinstance(obj, Condition):  # a rule's condition held elsewhere (LearnRisk.rules_)
            _check_condition(obj, where, None, walk)
        ensemble = _is_tree_ensemble(obj)
        for name, child in _children(obj):
            if own is not None:
                stack.append((child, where + name, own, ensemble))
            else:
                stack.append((child, where + name, n_in, in_ensemble))
