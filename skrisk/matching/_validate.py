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
  risk model scores with; no rule held twice, each condition named after the feature it reads,
  and the fitted arrays and numbers in the ranges training gives (weights >= 0, relative
  standard deviations in [0, 1], expectations shares of matches, ``theta`` in (0.5, 1), a CPU
  or CUDA device);
* every tree ensemble lists 1 to :data:`MAX_ESTIMATORS` estimators (a tree listed twice counts
  twice); a :class:`~skrisk.matchers.FeatureMatcher` and its classifier have the classes
  ``[0, 1]`` and the classifier predicts probabilities; a fitted ``StandardScaler`` holds finite
  means and positive scales, one per feature; an RNN pipeline's ``PairEncoder`` keeps at most
  :data:`MAX_TOKENS` tokens of a value and maps its tokens to ids of its vocabulary.

After the matcher is built, :func:`check_rnn_pipeline` holds the encoder to the model's
attributes and to the features the RNN reads, and :func:`check_matcher_width` a FeatureMatcher on
precomputed features to the similarity features' width.

A model that fails a check is refused with a :class:`~skrisk.exceptions.DataError` naming the
file, the object, the node or rule and what is wrong. The limits fit a real model by a wide
margin (a random forest of 100 trees on tens of thousands of training pairs holds about 10**5
nodes in all).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import DataError

__all__ = ["MAX_ESTIMATORS", "MAX_RISK_BINS", "MAX_RULES", "MAX_RULE_CONDITIONS", "MAX_TOKENS", "MAX_TOTAL_TREE_NODES",
           "MAX_TREE_NODES", "check_matcher_width", "check_model_parts", "check_rnn_pipeline"]

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
        if isinstance(rule, Rule) and isinstance(rule.conditions, tuple) and n_features is not None:
            for k, c in enumerate(rule.conditions):
                f = getattr(c, "feature", None)
                if isinstance(f, (int, np.integer)) and 0 <= f < n_features and getattr(c, "name", None) != str(names[f]):
                    raise walk.fail(f"{at}, condition {k},", f"is named {c.name!r} but reads feature {f}, "
                                                             f"{str(names[f])!r}: the reasons shown would name another feature")
        if not isinstance(rule, Rule):
            raise walk.fail(at, f"is a {type(rule).__name__}, not a Rule")
        if rule.label not in (0, 1) or isinstance(rule.label, bool):
            raise walk.fail(at, f"has the label {rule.label!r}, not 0 or 1")
        conds = rule.conditions
        if not isinstance(conds, tuple) or not 1 <= len(conds) <= MAX_RULE_CONDITIONS:
            raise walk.fail(at, f"holds {type(conds).__name__} conditions, not a tuple of 1 to {MAX_RULE_CONDITIONS}")
        for k, c in enumerate(conds):
            _check_condition(c, f"{at}, condition {k},", n_features, walk)
    seen: dict = {}
    for j, rule in enumerate(rules):
        first = seen.setdefault(rule, j)
        if first != j:  # training keeps one copy of a rule: a repeat would count its weight twice
            raise walk.fail(f"{where}.rules_[{j}]", f"repeats rule {first} ({rule}): each rule is held once")
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
        low, high, closed_low, missing = _RISK_RANGES[name]
        ok = (arr >= low if closed_low else arr > low) & (arr <= high)
        if missing is not None:
            ok |= arr == missing
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            span = f"{'[' if closed_low else '('}{low:g}, {high:g}{']' if high != np.inf else ')'}"
            raise walk.fail(f"{where}.{name}", f"holds values outside {span}{f' (or {missing:g}: no pair)' if missing is not None else ''}, "
                                               f"first {arr[k]!r} at {k}, which no training gives")


#: What training gives for each fitted array of a LearnRisk model: (low, high, low included,
#: the value that marks "no pair" or None). Weights are kept >= 0 and relative standard
#: deviations in [0.1, 0.9] by its projections; expectations are shares of matches.
_RISK_RANGES = {
    "rule_weights_": (0.0, np.inf, True, None), "rule_rsd_": (0.0, 1.0, True, None),
    "bin_rsd_": (0.0, 1.0, True, None), "rule_expectations_": (0.0, 1.0, True, None),
    "bin_expectations_": (0.0, 1.0, True, -1.0), "rule_coverage_": (0.0, np.inf, True, None),
    "bin_counts_": (0.0, np.inf, True, None), "rsd_base_": (0.0, 1.0, False, None),
}

#: Probability bins a LearnRisk model of a file may hold.
MAX_RISK_BINS = 1_000_000
#: The device names torch reads as the CPU or a CUDA device (index optional).
_PLAIN_DEVICE = re.compile(r"(cpu|cuda)(:[0-9]+)?")


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
    if not _finite_number(theta) or not 0.5 < float(theta) < 1.0:  # LearnRisk's own constraint
        raise walk.fail(f"{where}.theta", f"is {theta!r}, not a number in (0.5, 1)")
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
    if not isinstance(wf, (tuple, list)) or len(wf) != 2 or not all(_finite_number(v) and v >= 0 for v in wf):
        raise walk.fail(f"{where}.weight_function_", f"is {wf!r}, not two numbers >= 0 (training keeps them so)")
    dev = d.get("device")
    if isinstance(dev, str) and _PLAIN_DEVICE.fullmatch(dev):  # the usual names, read without torch
        kind = dev.split(":", 1)[0]
    else:
        try:
            import torch

            kind = torch.device(dev).type if isinstance(dev, (str, torch.device)) else None
        except (RuntimeError, TypeError, ValueError):
            kind = None
    if kind not in ("cpu", "cuda"):
        raise walk.fail(f"{where}.device", f"is {dev!r}, not 'cpu' or a CUDA device (the risk model scores there)")
    if "rank_scale_" in d and not _finite_number(d["rank_scale_"]):
        raise walk.fail(f"{where}.rank_scale_", f"is {d['rank_scale_']!r}, not a finite number")


#: Estimators one ensemble of a model file may hold (prediction runs every one of them).
MAX_ESTIMATORS = 10_000
#: Tokens an RNN pipeline's encoder may keep of one attribute value.
MAX_TOKENS = 10_000


def _check_ensemble(obj: Any, where: str, walk: _Walk) -> None:
    """A fitted tree ensemble lists 1 to :data:`MAX_ESTIMATORS` estimators (a tree listed twice is
    run twice: the references count, not the distinct trees)."""
    est = obj.__dict__.get("estimators_")
    if est is None:
        return
    n = int(est.size) if isinstance(est, np.ndarray) else len(est) if hasattr(est, "__len__") else -1
    if not 1 <= n <= MAX_ESTIMATORS:
        raise walk.fail(f"{where}.estimators_", f"holds {n} estimators, not 1 to {MAX_ESTIMATORS}")


def _check_classifier(obj: Any, where: str, walk: _Walk) -> None:
    """A FeatureMatcher: its classes and its classifier's are (0, 1) in that order (a match's
    probability is the second column), and its classifier predicts probabilities."""
    from ..matchers import FeatureMatcher

    if not isinstance(obj, FeatureMatcher) or "classifier_" not in obj.__dict__:
        return
    clf = obj.__dict__["classifier_"]
    for at, holder in ((where, obj), (f"{where}.classifier_", clf)):
        classes = getattr(holder, "__dict__", {}).get("classes_")
        if holder is obj or classes is not None:
            listed = np.asarray(classes).tolist() if classes is not None else None
            if listed != [0, 1]:
                raise walk.fail(f"{at}.classes_", f"is {listed!r}, not [0, 1] (non-match, match): the match "
                                                  "probabilities would be read from another column")
    if not callable(getattr(clf, "predict_proba", None)):
        raise walk.fail(f"{where}.classifier_", f"is a {type(clf).__name__}, which has no predict_proba")


def _check_scaler(obj: Any, where: str, walk: _Walk) -> None:
    """A fitted StandardScaler: finite means, positive scales, one of each per input feature."""
    from sklearn.preprocessing import StandardScaler

    if not isinstance(obj, StandardScaler) or "n_features_in_" not in obj.__dict__:
        return
    n = obj.__dict__["n_features_in_"]
    for name, positive in (("mean_", False), ("scale_", True), ("var_", False)):
        arr = obj.__dict__.get(name)
        if arr is None:
            continue
        a = np.asarray(arr)
        if a.dtype.kind not in "fiu" or a.shape != (n,) or not np.isfinite(a).all() or (positive and (a <= 0).any()):
            raise walk.fail(f"{where}.{name}", f"is not {n} finite{' positive' if positive else ''} numbers, one per "
                                               "feature the scaler takes")


def _check_encoder(obj: Any, where: str, walk: _Walk) -> None:
    """An RNN pipeline's PairEncoder: a bounded token length, a vocabulary of ids in range."""
    from ..data._tokenize import PairEncoder, Vocabulary

    if not isinstance(obj, PairEncoder) or "vocabulary_" not in obj.__dict__:
        return
    L = obj.__dict__.get("max_length")
    if not isinstance(L, (int, np.integer)) or isinstance(L, bool) or not 1 <= L <= MAX_TOKENS:
        raise walk.fail(f"{where}.max_length", f"is {L!r}, not an int in [1, {MAX_TOKENS}] (the tokens kept of "
                                               "each value; the encoder allocates that many per value)")
    vocab = obj.__dict__["vocabulary_"]
    itos = getattr(vocab, "itos", None)
    stoi = getattr(vocab, "stoi", None)
    if not isinstance(vocab, Vocabulary) or not isinstance(itos, list) or not isinstance(stoi, dict):
        raise walk.fail(f"{where}.vocabulary_", f"is a {type(vocab).__name__}, not a Vocabulary")
    n = len(itos)
    bad = [t for t, i in stoi.items() if not isinstance(t, str) or not isinstance(i, (int, np.integer))
           or isinstance(i, bool) or not 0 <= i < n]
    if bad:
        raise walk.fail(f"{where}.vocabulary_", f"maps {len(bad)} token(s) to ids outside [0, {n}), first "
                                                f"{bad[0]!r} -> {stoi[bad[0]]!r}")


def check_rnn_pipeline(pipeline: Any, attributes: list[str], file: Path) -> None:
    """The encoder of a loaded RNN pipeline against the model's attributes and the RNN it feeds.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        Steps before the RNNMatcher, then the loaded RNNMatcher.
    attributes : list of str
        The model's attributes (``model.json``).
    file : pathlib.Path
        The model file, named in the errors.

    Raises
    ------
    DataError
        The encoder reads other attributes, or gives the RNN another number of features.
    """
    from ..data._tokenize import PairEncoder

    walk = _Walk(file)
    rnn = pipeline.steps[-1][1]
    for name, step in pipeline.steps[:-1]:
        if not isinstance(step, PairEncoder):
            continue
        where = f"estimators.skops['matcher'] step {name!r}"
        attrs = [str(a) for a in getattr(step, "attributes_", [])]
        if attrs != list(attributes):
            raise walk.fail(where, f"encodes the attributes {attrs}, but the model's are {list(attributes)}: "
                                   "the parts come from different models")
        want = int(rnn.module_dims_["n_features"])
        feats = getattr(step, "features_", None)
        if want:
            try:
                got = None if feats is None else len(feats.get_feature_names_out())
            except (AttributeError, TypeError, ValueError):
                got = None
            if got != want:
                raise walk.fail(where, f"gives {'no' if got is None else got} similarity features, but the RNN "
                                       f"reads {want} (rnn/config.json module_dims['n_features'])")


def check_matcher_width(matcher: Any, features: Any, file: Path) -> None:
    """A FeatureMatcher on precomputed features takes as many as the model's similarity features give.

    Raises
    ------
    DataError
        Naming both widths.
    """
    from ..matchers import FeatureMatcher

    if not isinstance(matcher, FeatureMatcher) or getattr(matcher, "input_kind_", None) != "matrix":
        return
    try:
        width = len(features.get_feature_names_out())
    except (AttributeError, TypeError, ValueError):
        return
    n_in = getattr(matcher, "n_features_in_", None)
    if n_in != width:
        raise _Walk(file).fail("estimators.skops['matcher']", f"reads {n_in!r} features, but the similarity "
                                                              f"features give {width}: the parts come from different models")


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
        if ensemble:
            _check_ensemble(obj, where, walk)
        _check_classifier(obj, where, walk)
        _check_scaler(obj, where, walk)
        _check_encoder(obj, where, walk)
        for name, child in _children(obj):
            if own is not None:
                stack.append((child, where + name, own, ensemble))
            else:
                stack.append((child, where + name, n_in, in_ensemble))
