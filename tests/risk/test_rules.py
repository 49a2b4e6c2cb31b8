"""One-sided decision-tree rules: hand-made data with known splits, cleaning, domination."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.risk._rules import Condition, clean_rules, generate_rules, rule_activations
from skrisk.risk import Rule
# internal on purpose: the rule search kernel
from skrisk.risk._rules import _best_stumps


def _strs(rules):
    return [str(r) for r in rules]


def test_single_feature_perfect_split_gives_both_rules():
    X = np.array([[0.1], [0.2], [0.3], [0.4], [0.6], [0.7], [0.8], [0.9]] * 3)
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1] * 3)
    rules = generate_rules(X, y, feature_names=["title_jaccard"])
    assert _strs(rules) == ["title_jaccard <= 0.5 -> unmatch", "title_jaccard > 0.5 -> match"]
    r_u, r_m = rules
    assert (r_u.n_unmatch, r_u.n_match, r_u.gini) == (12, 0, 0.0)
    assert (r_m.n_unmatch, r_m.n_match, r_m.label) == (0, 12, 1)


def test_one_sided_split_grows_second_level_with_known_thresholds():
    # f0 <= 0.25 is pure unmatch; above it, f1 > 0.55 is pure match and f1 <= 0.55 pure unmatch.
    rng = np.random.default_rng(0)
    n = 400
    f0 = rng.uniform(0, 1, n)
    f1 = rng.uniform(0, 1, n)
    y = ((f0 > 0.25) & (f1 > 0.55)).astype(int)
    rules = generate_rules(np.column_stack([f0, f1]), y, feature_names=["a", "b"], min_coverage=1)
    texts = _strs(rules)
    t0 = (f0[f0 <= 0.25].max() + f0[f0 > 0.25].min()) / 2
    assert f"a <= {t0:.4g} -> unmatch" in texts
    m = [r for r in rules if r.label == 1]
    assert m, texts
    # every match rule is exactly the pure region: conditions on a > ~0.25 and b > ~0.55
    for r in m:
        fired = r.apply(np.column_stack([f0, f1]))
        assert y[fired].all()
    assert any(len(r) == 2 for r in m)
    # every rule is pure on its training pairs (thresholds 0.01 / 1e-4)
    A = rule_activations(rules, np.column_stack([f0, f1]))
    for j, r in enumerate(rules):
        assert (y[A[:, j]] == r.label).all(), str(r)


def test_stump_matches_weighted_cart_threshold():
    """Our stump picks the same threshold as a class-weighted sklearn stump (tree_.value unused)."""
    rng = np.random.default_rng(1)
    x = np.round(rng.uniform(0, 1, 300), 2)
    y = (x + 0.3 * rng.standard_normal(300) > 0.6).astype(bool)
    order = np.argsort(x, kind="stable")
    vals, lab = x[order][None, :], y[order][None, :]
    for wu, wm in [(1000.0, 1.0), (1.0, 1000.0), (1.0, 1.0)]:
        (pos,), ok = _best_stumps(vals, lab, [(wu, wm)])[0]
        ours = (vals[0, pos] + vals[0, pos + 1]) / 2
        tree = DecisionTreeClassifier(max_depth=1, class_weight={0: wu, 1: wm}, random_state=0)
        tree.fit(x[:, None], y.astype(int))
        assert ours == pytest.approx(tree.tree_.threshold[0], abs=1e-6)  # sklearn: float32
        # the research code's pitfall: tree_.value holds weighted fractions in sklearn >= 1.4.1,
        # so "divide by W" would give wrong counts; our counts come from the data directly.
        left = x <= ours
        rule = generate_rules(x[:, None], y.astype(int), min_coverage=0, max_depth=1)
        for r in rule:
            fired = r.apply(x[:, None])
            assert (r.n_unmatch, r.n_match) == ((~y[fired]).sum(), y[fired].sum())
        assert tree.tree_.value[1].sum() == pytest.approx(1.0)  # fractions, not counts
        del left


def test_diff_feature_used_once_per_rule():
    # the only way to purify the right child twice would be to reuse the diff flag
    rng = np.random.default_rng(2)
    n = 300
    d = rng.integers(0, 2, n).astype(float)
    s = rng.uniform(0, 1, n)
    y = ((d == 0) & (s > 0.5)).astype(int)
    y[(d == 0) & (s > 0.5) & (rng.uniform(size=n) < 0.5)] = 0  # impure, so children continue
    rules = generate_rules(np.column_stack([d, s]), y, feature_names=["year_diff", "title_sim"],
                           min_coverage=1)
    for r in rules:
        assert sum(c.name == "year_diff" for c in r.conditions) <= 1, str(r)
    assert "year_diff > 0.5 -> unmatch" in _strs(rules)


def test_max_depth_one_gives_single_conditions():
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (200, 3))
    y = ((X[:, 0] > 0.3) & (X[:, 1] > 0.5)).astype(int)
    rules = generate_rules(X, y, max_depth=1, min_coverage=1)
    assert rules and all(len(r) == 1 for r in rules)
    deeper = generate_rules(X, y, max_depth=2, min_coverage=1)
    assert any(len(r) == 2 for r in deeper)


def test_min_coverage_drops_rare_rules():
    X = np.array([[0.0]] * 3 + [[1.0]] * 50)
    y = np.array([1] * 3 + [0] * 50)
    assert _strs(generate_rules(X, y, min_coverage=1)) == ["x0 <= 0.5 -> match", "x0 > 0.5 -> unmatch"]
    assert _strs(generate_rules(X, y, min_coverage=5)) == ["x0 > 0.5 -> unmatch"]


def test_pure_or_constant_data_gives_no_rules():
    X = np.random.default_rng(0).uniform(size=(20, 2))
    assert generate_rules(X, np.zeros(20, int)) == []
    assert generate_rules(np.ones((20, 2)), np.r_[np.zeros(10, int), np.ones(10, int)]) == []


def test_clean_tightens_dedups_and_drops_dominated():
    a7 = Condition(0, "a", ">", 0.7)
    a8 = Condition(0, "a", ">", 0.8)
    a4 = Condition(0, "a", "<=", 0.4)
    a3 = Condition(0, "a", "<=", 0.3)
    b2 = Condition(1, "b", "<=", 0.2)
    rules = [
        Rule((a7, a8), 1),          # tightened to a > 0.8
        Rule((a8,), 1),             # duplicate of the tightened one
        Rule((a8, b2), 1),          # dominated by a > 0.8 (subset of its conditions)
        Rule((a3,), 0),             # dominated by a <= 0.4 (looser threshold)
        Rule((a4,), 0),
        Rule((a4,), 1),             # other class: kept
        Rule((a4, a7), 0),          # interval, not tightened: dominated by a <= 0.4
    ]
    out = _strs(clean_rules(rules, n_features=2))
    assert out == ["a > 0.8 -> match", "a <= 0.4 -> unmatch", "a <= 0.4 -> match"]


def test_rule_text_and_activations():
    r = Rule((Condition(0, "title_jaccard", "<=", 0.31), Condition(2, "year_diff", ">", 0.5)), 0)
    assert str(r) == "title_jaccard <= 0.31 && year_diff > 0.5 -> unmatch"
    X = np.array([[0.2, 9, 1.0], [0.2, 9, 0.0], [0.5, 9, 1.0]])
    np.testing.assert_array_equal(rule_activations([r], X)[:, 0], [True, False, False])
    assert rule_activations([], X).shape == (3, 0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(X=np.ones((3, 2)), y=np.array([0, 1, 2])), "0 \\(non-match\\) and 1"),
        (dict(X=np.array([[np.nan], [1.0]]), y=np.array([0, 1])), "sentinel"),
        (dict(X=np.ones(3), y=np.array([0, 1, 1])), "2-D"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        generate_rules(**kwargs)
