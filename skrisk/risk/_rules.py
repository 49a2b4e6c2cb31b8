"""One-sided decision-tree rules: LearnRisk's risk features.

The generator follows ``../shared/docs/learnrisk.md`` section 1 (the public research code's
``ratree``/``rules_process``), but computes the class-weighted Gini stump directly from sorted
cumulative counts instead of reading scikit-learn's ``tree_.value`` (which holds weighted fractions
since scikit-learn 1.4.1, silently breaking the research code's "divide by W" trick).

Complexity: the columns are argsorted once (``O(n m log n)``); every tree node then costs
``O(n m)`` (one masked pass over the presorted columns, both orientations at once). With depth 2
there are at most ``1 + 4 m`` nodes, so about ``O(n m^2)`` in total; memory ``O(n m)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["Condition", "Rule", "generate_rules", "clean_rules", "rule_activations"]

MATCH, UNMATCH = 1, 0
_CLASS_NAME = {MATCH: "match", UNMATCH: "unmatch"}


@dataclass(frozen=True)
class Condition:
    """One test ``feature <= threshold`` or ``feature > threshold`` on one similarity feature.

    Parameters
    ----------
    feature : int
        Column index of the feature in the feature matrix (the probability column excluded).
    name : str
        Feature name, used for printing.
    op : {"<=", ">"}
        The comparison.
    threshold : float
        The split point (a midpoint between two training values).
    """

    feature: int
    name: str
    op: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.name} {self.op} {self.threshold:.4g}"

    def holds(self, X: npt.NDArray[np.floating]) -> npt.NDArray[np.bool_]:
        """Whether the condition holds for every row of ``X`` (vectorised)."""
        col = X[:, self.feature]
        return col <= self.threshold if self.op == "<=" else col > self.threshold


@dataclass(frozen=True)
class Rule:
    """A conjunction of conditions pointing to one class: ``c1 && c2 -> match``.

    Parameters
    ----------
    conditions : tuple of Condition
        All must hold for the rule to fire.
    label : {0, 1}
        The class the rule indicates (1 = match, 0 = unmatch).
    n_unmatch, n_match : int
        Unweighted counts of training non-matches / matches in the rule's leaf when it was grown.
    gini : float
        Unweighted Gini impurity of that leaf.

    Examples
    --------
    >>> r = Rule((Condition(0, "title_jaccard", "<=", 0.31),), label=0, n_unmatch=120, n_match=0, gini=0.0)
    >>> str(r)
    'title_jaccard <= 0.31 -> unmatch'
    """

    conditions: tuple[Condition, ...]
    label: int
    n_unmatch: int = 0
    n_match: int = 0
    gini: float = 0.0
    _key: tuple = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        key = (self.label, frozenset((c.feature, c.op, c.threshold) for c in self.conditions))
        object.__setattr__(self, "_key", key)

    @property
    def class_name(self) -> str:
        """``"match"`` or ``"unmatch"``."""
        return _CLASS_NAME[self.label]

    def __str__(self) -> str:
        return " && ".join(str(c) for c in self.conditions) + f" -> {self.class_name}"

    def __len__(self) -> int:
        return len(self.conditions)

    def apply(self, X: npt.NDArray[np.floating]) -> npt.NDArray[np.bool_]:
        """Boolean mask of the rows of ``X`` that fire the rule (all conditions hold)."""
        out = np.ones(X.shape[0], dtype=bool)
        for c in self.conditions:
            out &= c.holds(X)
        return out


# ----------------------------------------------------------------------------- stump search
def _best_stumps(
    vals: npt.NDArray[np.float64], lab: npt.NDArray[np.bool_], weights: Sequence[tuple[float, float]]
) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]]:
    """Best class-weighted Gini split position per feature, for several class weightings.

    ``vals`` (m, k) holds each feature's values of the node's k pairs in ascending order and
    ``lab`` (m, k) the matching "is a match" flags. For each ``(w_unmatch, w_match)`` returns
    ``(pos, ok)``: the split goes between sorted positions ``pos`` and ``pos + 1``; ``ok`` is False
    where the feature is constant on the node. Ties go to the lowest threshold (like CART's scan).
    """
    cm = np.cumsum(lab, axis=1, dtype=np.float64)[:, :-1]  # matches left of each cut
    k = vals.shape[1]
    cu = np.arange(1, k, dtype=np.float64)[None, :] - cm  # unmatches left
    tm, tu = cm[:, -1:] + lab[:, -1:], (k - 1) - cm[:, -1:] + (~lab[:, -1:])
    valid = vals[:, 1:] > vals[:, :-1]
    out = []
    for wu, wm in weights:
        a_l, b_l = wu * cu, wm * cm
        a_r, b_r = wu * (tu - cu), wm * (tm - cm)
        n_l, n_r = a_l + b_l, a_r + b_r
        # n * gini = n - (a^2 + b^2) / n  (weighted); minimise the children's sum
        with np.errstate(divide="ignore", invalid="ignore"):
            crit = (n_l - (a_l**2 + b_l**2) / n_l) + (n_r - (a_r**2 + b_r**2) / n_r)
        crit = np.where(valid, crit, np.inf)
        pos = np.argmin(crit, axis=1)
        out.append((pos, valid.any(axis=1)))
    return out


def _gini(n_u: float, n_m: float) -> float:
    n = n_u + n_m
    return 0.0 if n == 0 else 1.0 - (n_u / n) ** 2 - (n_m / n) ** 2


class _Grower:
    """Recursive one-sided tree growth over presorted columns (see module docstring)."""

    def __init__(
        self,
        X: npt.NDArray[np.float64],
        y: npt.NDArray[np.bool_],
        names: list[str],
        is_diff: npt.NDArray[np.bool_],
        max_depth: int,
        match_gini: float,
        unmatch_gini: float,
        class_weight: float,
    ) -> None:
        self.X, self.y, self.names, self.is_diff = X, y, names, is_diff
        self.max_depth, self.class_weight = max_depth, class_weight
        self.tau = {MATCH: match_gini, UNMATCH: unmatch_gini}
        self.order = np.argsort(X, axis=0, kind="stable").T  # (m, n)
        self.sorted_vals = np.take_along_axis(X, self.order.T, axis=0).T  # (m, n)
        self.rules: list[Rule] = []

    def grow(self, mask: npt.NDArray[np.bool_], path: tuple[Condition, ...], depth: int) -> None:
        n_node = int(mask.sum())
        y_node = self.y[mask]
        if n_node < 2 or y_node.all() or not y_node.any():
            return  # CART does not split a pure (or single-pair) node
        used_diff = {c.feature for c in path if self.is_diff[c.feature]}
        feats = np.array([j for j in range(self.X.shape[1]) if j not in used_diff], dtype=np.intp)
        if feats.size == 0:
            return
        order = self.order[feats]
        in_node = mask[order]  # (m', n); each row has exactly n_node True entries
        idx = order[in_node].reshape(len(feats), n_node)
        vals = self.sorted_vals[feats][in_node].reshape(len(feats), n_node)
        lab = self.y[idx]
        w = self.class_weight
        results = _best_stumps(vals, lab, [(w, 1.0), (1.0, w)])  # seek pure match, pure unmatch
        for pos, ok in results:
            for f_i in np.flatnonzero(ok):
                f = int(feats[f_i])
                p = int(pos[f_i])
                lo, hi = vals[f_i, p], vals[f_i, p + 1]
                t = (lo + hi) / 2.0
                if t == hi or not np.isfinite(t):  # CART's guard for float rounding
                    t = lo
                n_m_left = int(lab[f_i, : p + 1].sum())
                n_u_left = p + 1 - n_m_left
                n_m_right = int(lab[f_i].sum()) - n_m_left
                n_u_right = n_node - (p + 1) - n_m_right
                children = (
                    (Condition(f, self.names[f], "<=", float(t)), n_u_left, n_m_left),
                    (Condition(f, self.names[f], ">", float(t)), n_u_right, n_m_right),
                )
                pending = []
                for cond, n_u, n_m in children:
                    cls = MATCH if n_m > n_u else UNMATCH
                    g = _gini(n_u, n_m)
                    if g < self.tau[cls]:
                        self.rules.append(Rule(path + (cond,), cls, n_u, n_m, g))
                    else:
                        pending.append(cond)
                if len(pending) == 1 and depth < self.max_depth:
                    cond = pending[0]
                    child_mask = mask & cond.holds(self.X)
                    self.grow(child_mask, path + (cond,), depth + 1)


# ----------------------------------------------------------------------------- cleaning
def _tighten(rule: Rule) -> Rule:
    """Merge repeated conditions on one feature and operator into the tightest one."""
    best: dict[tuple[int, str], Condition] = {}
    for c in rule.conditions:
        key = (c.feature, c.op)
        old = best.get(key)
        if old is None or (c.op == "<=" and c.threshold < old.threshold) or (
            c.op == ">" and c.threshold > old.threshold
        ):
            best[key] = c
    conds = tuple(sorted(best.values(), key=lambda c: (c.feature, c.op)))
    if len(conds) == len(rule.conditions):
        conds = tuple(c for c in rule.conditions if best[(c.feature, c.op)] is c)
    return Rule(conds, rule.label, rule.n_unmatch, rule.n_match, rule.gini)


def clean_rules(rules: Sequence[Rule], n_features: int) -> list[Rule]:
    """Tighten, deduplicate and drop dominated rules (learnrisk.md section 1.4).

    A rule ``r1`` dominates a rule ``r2`` of the same class when every condition of ``r1`` is
    implied by a condition of ``r2`` on the same feature and operator (``a > 0.7`` dominates
    ``a > 0.8``; ``a <= 0.4`` dominates ``a <= 0.3``; a subset of conditions dominates). Then
    ``r2`` fires only where ``r1`` fires and is dropped. Order of first appearance is kept.

    Parameters
    ----------
    rules : sequence of Rule
    n_features : int
        Number of feature columns the rules refer to.

    Returns
    -------
    list of Rule

    Examples
    --------
    >>> a = Rule((Condition(0, "a", ">", 0.7),), 1)
    >>> b = Rule((Condition(0, "a", ">", 0.8), Condition(1, "b", "<=", 0.2)), 1)
    >>> [str(r) for r in clean_rules([b, a], n_features=2)]
    ['a > 0.7 -> match']
    """
    seen: set = set()
    uniq: list[Rule] = []
    for r in rules:
        t = _tighten(r)
        if t._key not in seen:
            seen.add(t._key)
            uniq.append(t)
    if not uniq:
        return []
    # box representation: lower bounds (">") and upper bounds ("<=") per feature
    J = len(uniq)
    lo = np.full((J, n_features), -np.inf)
    hi = np.full((J, n_features), np.inf)
    for j, r in enumerate(uniq):
        for c in r.conditions:
            if c.op == ">":
                lo[j, c.feature] = c.threshold
            else:
                hi[j, c.feature] = c.threshold
    labels = np.array([r.label for r in uniq])
    keep = np.ones(J, dtype=bool)
    for j in range(J):  # loop over rules (not pairs); each step vectorised over all rules
        dominated = (
            (labels == labels[j])
            & np.all(lo[j] <= lo, axis=1)
            & np.all(hi[j] >= hi, axis=1)
        )
        dominated[j] = False
        keep &= ~dominated
    return [r for r, k in zip(uniq, keep) if k]


# ----------------------------------------------------------------------------- public API
def rule_activations(rules: Sequence[Rule], X: npt.NDArray[np.floating]) -> npt.NDArray[np.bool_]:
    """Boolean matrix ``(n_pairs, n_rules)``: which rule fires on which pair.

    Each distinct condition is evaluated once over all pairs; rules are then ANDs of columns.

    Examples
    --------
    >>> import numpy as np
    >>> r = Rule((Condition(0, "a", "<=", 0.5),), 0)
    >>> rule_activations([r], np.array([[0.2], [0.9]])).ravel().tolist()
    [True, False]
    """
    # column-major: every condition reads one feature column, every rule writes one column
    X = np.asfortranarray(X)
    out = np.zeros((X.shape[0], len(rules)), dtype=bool, order="F")
    cache: dict[tuple[int, str, float], npt.NDArray[np.bool_]] = {}
    for j, r in enumerate(rules):
        col = np.ones(X.shape[0], dtype=bool)
        for c in r.conditions:
            key = (c.feature, c.op, c.threshold)
            if key not in cache:
                cache[key] = c.holds(X)
            col &= cache[key]
        out[:, j] = col
    return out


def generate_rules(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    feature_names: Sequence[str] | None = None,
    max_depth: int = 2,
    match_gini: float = 0.01,
    unmatch_gini: float = 1e-4,
    class_weight: float = 1000.0,
    min_coverage: int = 5,
    diff_marker: str = "diff",
) -> list[Rule]:
    """Generate cleaned one-sided decision-tree rules from labelled pairs.

    For every feature as the root and for both orientations (class weights ``unmatch:match`` =
    ``W:1`` seeking pure matches, ``1:W`` seeking pure non-matches) a CART Gini stump is fitted.
    A child whose unweighted Gini is below the threshold of its majority class becomes a rule; if
    exactly one child is decided, the other is grown further (depth < ``max_depth``) with the
    same search over all features; features whose name contains ``diff_marker`` appear at most
    once per rule. The rules are then tightened, deduplicated, cleared of dominated rules and of
    rules covering fewer than ``min_coverage`` of the given pairs.

    Parameters
    ----------
    X : array-like of shape (n_pairs, n_features)
        Similarity features of the labelled (training) pairs; no NaN.
    y : array-like of shape (n_pairs,)
        Labels, 1 = match, 0 = non-match.
    feature_names : sequence of str, default=None
        Names for printing (``x0, x1, ...`` if None).
    max_depth : int, default=2
        Maximum number of conditions per rule.
    match_gini, unmatch_gini : float, default=0.01, 1e-4
        A leaf whose majority is match (non-match) becomes a rule when its Gini is below this.
    class_weight : float, default=1000.0
        ``W``: the weight of the class the orientation seeks to isolate the other from.
    min_coverage : int, default=5
        Rules covering fewer of the given pairs are dropped.
    diff_marker : str, default="diff"
        Features whose name contains it are used at most once per rule.

    Returns
    -------
    list of Rule

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.1], [0.2], [0.3], [0.4], [0.6], [0.7], [0.8], [0.9]] * 2)
    >>> y = np.array([0, 0, 0, 0, 1, 1, 1, 1] * 2)
    >>> [str(r) for r in generate_rules(X, y, feature_names=["title_jaccard"])]
    ['title_jaccard <= 0.5 -> unmatch', 'title_jaccard > 0.5 -> match']
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_pairs, n_features), got shape {X.shape}.")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}.")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must hold 0 (non-match) and 1 (match) labels only.")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values: encode missing similarities with a sentinel (-1).")
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(X.shape[1])]
    if len(names) != X.shape[1]:
        raise ValueError(f"feature_names has {len(names)} names for {X.shape[1]} columns.")
    is_diff = np.array([diff_marker in n for n in names], dtype=bool) if diff_marker else np.zeros(len(names), bool)
    if X.shape[0] == 0 or X.shape[1] == 0:
        return []
    grower = _Grower(X, y.astype(bool), names, is_diff, max_depth, match_gini, unmatch_gini, class_weight)
    grower.grow(np.ones(X.shape[0], dtype=bool), (), 1)
    rules = clean_rules(grower.rules, X.shape[1])
    if rules and min_coverage > 0:
        cover = rule_activations(rules, X).sum(axis=0)
        rules = [r for r, c in zip(rules, cover) if c >= min_coverage]
    return rules
