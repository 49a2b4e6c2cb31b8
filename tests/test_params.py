"""Declared parameters (issue #28, item 4): one table per class, one checker, scikit-learn's words.

Tests the internals of ``skrisk._params`` on purpose (the checker is private to skrisk).
"""

from __future__ import annotations

import inspect
import numbers

import numpy as np
import pandas as pd
import pytest

from skrisk import LearnRisk, RiskSampler
from skrisk.strategies import BadgeSelector, KMedoidsSelector, TopKSelector
# internal on purpose: the parameter checker
from skrisk._params import HasMethods, Interval, Options, SubsetOf, validate_call, validate_params
from skrisk.data import PairEncoder, SimilarityFeatures
from skrisk.exceptions import InvalidParameterError
from skrisk.risk.research import LearnRiskEstimator


def _classes():
    from skrisk.active import ActiveLearner
    from skrisk.kmedoids import WeightedKMedoids
    from skrisk.matchers import FeatureMatcher, LMMatcher, RNNMatcher

    return [RiskSampler, KMedoidsSelector, BadgeSelector, TopKSelector, LearnRisk, LearnRiskEstimator, PairEncoder,
            SimilarityFeatures, RNNMatcher, LMMatcher, FeatureMatcher, WeightedKMedoids, ActiveLearner]


def _public_estimators():
    """Every public class of skrisk with scikit-learn's ``get_params``."""
    import importlib
    import pkgutil

    import skrisk

    found = set()
    for info in pkgutil.walk_packages(skrisk.__path__, "skrisk."):
        if "._" in info.name or ".tests" in info.name:
            continue  # a private module: its public classes are re-exported by a public one
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if isinstance(obj, type) and hasattr(obj, "get_params") and not name.startswith("_"):
                found.add(obj)
    return found


#: Arguments of ``__init__`` that are data, not parameters (``get_params`` leaves them out).
_DATA = {"ActiveLearner": {"X_training", "y_training"}}


def test_the_list_holds_every_public_estimator():
    missing = _public_estimators() - set(_classes())
    assert not missing, sorted(c.__name__ for c in missing)


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_every_class_declares_its_parameters_and_its_defaults_pass(cls):
    """As scikit-learn's ``check_param_validation``: the table's keys are the parameters."""
    table = cls._parameter_constraints
    signature = inspect.signature(cls.__init__).parameters
    own = {k for k, p in signature.items() if k != "self"
           and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)} - _DATA.get(cls.__name__, set())
    assert set(table) == own, (sorted(set(table) - own), sorted(own - set(table)))
    defaults = {k: p.default for k, p in signature.items() if p.default is not inspect.Parameter.empty}
    obj = cls.__new__(cls)
    for name in table:
        if name in defaults:
            setattr(obj, name, defaults[name])
    for name in set(table) - set(defaults):  # a required parameter (ActiveLearner's estimator)
        setattr(obj, name, LearnRisk())
    validate_params(obj)  # the defaults satisfy the table


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: KMedoidsSelector(preselect=0.5),
         "The 'preselect' parameter of KMedoidsSelector must be None or a float in the range [1, inf). "
         "Got 0.5 instead."),
        (lambda: KMedoidsSelector(weighting="lipshitz"),
         "The 'weighting' parameter of KMedoidsSelector must be a str among {'lipschitz', 'risk', 'unit'}. "
         "Got 'lipshitz' instead."),
        (lambda: RiskSampler(n_threads=True),
         "The 'n_threads' parameter of RiskSampler must be None or an int in the range [1, inf). "
         "Got True instead."),
        (lambda: KMedoidsSelector(distance_floor=float("nan")),
         "The 'distance_floor' parameter of KMedoidsSelector must be a str among {'auto'} or a float in the "
         "range [0, inf). Got nan instead."),
        (lambda: LearnRisk(theta=1.0),
         "The 'theta' parameter of LearnRisk must be a float in the range (0.5, 1). Got 1.0 instead."),
        (lambda: SimilarityFeatures(metrics="jaccard"),
         "The 'metrics' parameter of SimilarityFeatures must be None or a non-empty list of str among"),
        (lambda: PairEncoder(features=object()),
         "The 'features' parameter of PairEncoder must be None or an object implementing 'transform'."),
    ],
)
def test_one_message_style(make, message):
    with pytest.raises(InvalidParameterError) as info:
        validate_params(make())
    assert str(info.value).startswith(message), str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_constraints():
    assert Interval(numbers.Integral, 1, None).is_satisfied_by(np.int64(3))
    assert not Interval(numbers.Integral, 1, None).is_satisfied_by(True)
    assert not Interval(numbers.Real, 0, float("inf")).is_satisfied_by(float("inf"))
    assert str(Interval(numbers.Real, 0, 1, closed="right")) == "a float in the range (0, 1]"
    assert Options(str, {"a"}).is_satisfied_by("a") and not Options(str, {"a"}).is_satisfied_by(["a"])
    assert SubsetOf(("a", "b")).is_satisfied_by(["b"]) and not SubsetOf(("a", "b")).is_satisfied_by([])
    assert HasMethods(("fit",)).is_satisfied_by(LearnRisk())


def test_checked_when_used_never_in_init():
    selector = KMedoidsSelector(preselect=0)  # sklearn: no validation in __init__
    assert selector.preselect == 0
    with pytest.raises(ValueError, match="The 'preselect' parameter of KMedoidsSelector"):
        selector.select(np.zeros(3), np.zeros((3, 1), np.float32), np.zeros((1, 1), np.float32), 1)


def _fits():
    from sklearn.linear_model import LogisticRegression

    from skrisk.active import ActiveLearner
    from skrisk.kmedoids import WeightedKMedoids
    from skorch.helper import SliceDict

    from skrisk.matchers import FeatureMatcher, RNNMatcher

    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    X = np.clip(0.3 + 0.4 * y[:, None] + 0.3 * rng.standard_normal((40, 2)), 0, 1)
    frame = pd.DataFrame({"left_name": ["acme corp", "globex"] * 20, "right_name": ["acme", None] * 20})
    return [
        (FeatureMatcher(LogisticRegression()), lambda m: m.fit(X, y)),
        (WeightedKMedoids(2, device="cpu"), lambda m: m.fit(X)),
        (LearnRisk(LogisticRegression(), epochs=2, random_state=0), lambda m: m.fit(X, y)),
        (LearnRiskEstimator(epochs=2, random_state=0), lambda m: m.fit(X, y, X_train=X, y_train=y)),
        (ActiveLearner(LogisticRegression()), lambda m: m.fit(X, y)),
        (PairEncoder(max_length=3), lambda m: m.fit(frame)),
        (SimilarityFeatures(metrics=["jaccard"]), lambda m: m.fit(frame)),
        (RNNMatcher(hidden_size=4, classifier_size=4, max_epochs=1, device="cpu", random_state=0),
         lambda m: m.fit(SliceDict(tokens=rng.integers(2, 20, size=(40, 2, 5))), y)),
    ]


@pytest.mark.parametrize("model, fit", _fits(), ids=[type(m).__name__ for m, _ in _fits()])
def test_fit_checks_the_table_once(model, fit, monkeypatch):
    # internal on purpose: counts the checks of each parameter
    import skrisk._params as params

    seen = []
    check = params._check

    def counted(name, value, constraints, owner):
        seen.append((owner, name))
        return check(name, value, constraints, owner)

    monkeypatch.setattr(params, "_check", counted)
    fit(model)
    first = next(iter(type(model)._parameter_constraints))
    assert seen.count((type(model).__name__, first)) == 1, seen


@validate_call({"k": [Interval(numbers.Integral, 1, None)], "how": [Options(str, {"a", "b"})]})
def _top(values, k=1, *, how="a", **extra):
    return sorted(values)[-k:]


def test_validate_call_checks_arguments_by_name():
    assert _top([3, 1, 2], 2) == [2, 3] and _top([3, 1, 2], k=np.int64(1), how="b", other=1) == [3]
    with pytest.raises(InvalidParameterError) as info:
        _top([3, 1, 2], True)  # positional, and a bool is no int
    assert str(info.value) == "The 'k' parameter of _top must be an int in the range [1, inf). Got True instead."
    with pytest.raises(InvalidParameterError, match=r"The 'how' parameter of _top must be a str among \{'a', 'b'\}"):
        _top([1], how="c")
    with pytest.raises(TypeError, match="unexpected keyword|positional"):
        _top([1], 1, "a")  # Python's own error for a call that does not bind
    assert _top.__name__ == "_top" and set(_top._parameter_constraints) == {"k", "how"}


def test_validate_call_checks_its_defaults_and_refuses_an_unknown_name():
    @validate_call({"k": [Interval(numbers.Integral, 1, None)]})
    def bad_default(k=0):
        return k

    with pytest.raises(InvalidParameterError, match="The 'k' parameter of .*bad_default must be an int"):
        bad_default()
    with pytest.raises(ValueError, match=r"name no parameter of it: \['n'\]"):
        validate_call({"n": [None]})(lambda k: k)
