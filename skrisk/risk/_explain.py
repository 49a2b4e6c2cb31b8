"""Why LearnRisk gives a pair its risk, in words a person labelling it reads at a glance.

:class:`RiskExplanation` is what :meth:`skrisk.LearnRisk.explain` (and the research core's
``explain``) return. Its :attr:`~RiskExplanation.reasons` are the fired rules turned into
:class:`Reason` objects:

* **deduplicated**: rules over the same set of features pointing to the same class (``title_jaccard
  > 0.61 -> match`` and ``title_jaccard > 0.64 -> match``) are one reason; they describe the same
  fact about the pair;
* **ranked by contribution**: LearnRisk's mean is the weighted average
  ``mu = (sum_j w_j mu_j + g p) / W`` (``W = sum_j w_j + g``) of the fired rules' expectations
  ``mu_j`` and the matcher's probability ``p``. Its shift away from the matcher,
  ``mu - p = sum_j w_j (mu_j - p) / W``, splits exactly into one term per rule. The contribution of
  a rule is that term, signed so that a positive value moves the mean toward the class the matcher
  did *not* predict (it raises the risk) and a negative one toward the predicted class (it supports
  the matcher); a merged reason sums the terms of its rules. Reasons are sorted by the absolute
  contribution, largest first;
* **in words**: each condition is said through its similarity feature (``<attribute>_<metric>``
  of :class:`~skrisk.data.SimilarityFeatures`) and the pair's own values, e.g. "titles share 9 of
  10 words", "prices differ by 18 %: 19.99 vs 24.50", "numbers in the titles differ: dsc-w120 vs
  dsc-w130". Features of other names are said as ``name = value``.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["Reason", "RiskExplanation", "build_reasons", "describe_feature", "split_feature_name"]

_WORD_RE = re.compile(r"(?u)\b\w+\b")
_DIGIT_RE = re.compile(r"\d")
#: values up to this many characters are quoted in a reason's sentence
_SHORT_VALUE = 28


def _metrics() -> tuple[str, ...]:
    from ..data._similarity import ALL_METRICS

    return ALL_METRICS


def split_feature_name(name: str) -> tuple[str | None, str | None]:
    """``(attribute, metric)`` of a :class:`~skrisk.data.SimilarityFeatures` name, else ``(None, None)``.

    Examples
    --------
    >>> split_feature_name("title_jaccard_3gram")
    ('title', 'jaccard_3gram')
    >>> split_feature_name("x13")
    (None, None)
    """
    return _split_feature_name(str(name))


@functools.lru_cache(maxsize=4096)
def _split_feature_name(name: str) -> tuple[str | None, str | None]:
    for m in _metrics_longest_first():
        if name.endswith("_" + m) and len(name) > len(m) + 1:
            return name[: -len(m) - 1], m
    return None, None


@functools.lru_cache(maxsize=1)
def _metrics_longest_first() -> tuple[str, ...]:
    return tuple(sorted(_metrics(), key=len, reverse=True))


def _plural(attr: str) -> str:
    """A readable plural of an attribute name ("title" -> "titles", "address_1" -> "address_1 values")."""
    a = attr.replace("_", " ").strip()
    if not a or not re.fullmatch(r"[A-Za-z][A-Za-z ]*", a):
        return f"{attr} values"
    if re.search(r"(s|x|z|ch|sh)$", a):
        return a + "es"
    if re.search(r"[^aeiou]y$", a):
        return a[:-1] + "ies"
    return a + "s"


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return " ".join(str(value).split())


def _quoted(value: str, limit: int = _SHORT_VALUE) -> str:
    return value if len(value) <= limit else value[: limit - 3].rstrip() + "..."


def _digit_tokens(text: str) -> list[str]:
    """Whitespace tokens holding a digit, punctuation trimmed at their ends, in order, unique."""
    out: list[str] = []
    for tok in text.lower().split():
        tok = tok.strip(".,;:()[]{}\"'")
        if tok and _DIGIT_RE.search(tok) and tok not in out:
            out.append(tok)
    return out


def _side_missing(attr: str, left: str, right: str) -> str:
    if not left and not right:
        return f"{attr} is missing on both records"
    return f"{attr} is missing on the {'left' if not left else 'right'} record"


def _typed_words(metric: str, v: float, attr: str, pl: str) -> str | None:
    """A typed comparison's value in words (None for the generic metrics)."""
    yes = v >= 0.5
    one = attr.replace("_", " ").strip() or attr
    if metric == "exact":
        return f"{pl} are the same once standardised" if yes else f"{pl} differ once standardised"
    if metric == "exact_tf":
        return (f"{pl} agree on a rare value (1 in {10 ** v:,.0f} records)" if v > 0 else f"{pl} differ")
    if metric == "phonetic":
        return f"{pl} sound alike (Soundex)" if yes else f"{pl} sound different (Soundex)"
    if metric == "date_fields":
        return f"{one}: {round(v * 3)} of year, month and day agree"
    if metric == "day_month_swap":
        return f"{one}: day and month swapped" if yes else f"{one}: day and month not swapped"
    if metric == "years_apart":
        return f"{pl} are {round(v * 10)}{'+' if v >= 1 else ''} years apart" if v > 0 else f"{pl}: same year"
    if metric == "last_digits":
        return f"{pl} end in the same seven digits" if yes else f"{pl} differ in their last seven digits"
    if metric == "prefix":
        return f"{pl} start alike (first three characters)" if yes else f"{pl} start differently"
    if metric == "domain":
        return f"{one}: e-mail domains agree" if yes else f"{one}: e-mail domains differ"
    if metric == "name_swap":
        return (f"given and family names look swapped ({v:.0%} alike crossed)" if v >= 0.85
                else f"given and family names are not swapped ({v:.0%} alike crossed)")
    return None


def describe_feature(
    name: str, value: float, left: Any = None, right: Any = None, *, have_values: bool | None = None,
    low: bool = False,
) -> str:
    """One sentence about one similarity feature of one pair.

    Parameters
    ----------
    name : str
        The feature's name (``<attribute>_<metric>`` for :class:`~skrisk.data.SimilarityFeatures`).
    value : float
        The pair's value of the feature.
    left, right : object, optional
        The two records' values of the feature's attribute (raw cells); used to count words and
        quote values. Without them the sentence rests on ``value`` alone.
    have_values : bool, optional
        Whether ``left`` / ``right`` were given (default: either is not None).
    low : bool, default=False
        The rule tests for a low similarity (``<=``): the sentence says "only".

    Returns
    -------
    str

    Examples
    --------
    >>> describe_feature("title_jaccard", 0.9, "sony dsc w120 digital camera silver 8mp 3x zoom new",
    ...                  "sony dsc w120 digital camera silver 8mp 3x zoom")
    'titles share 9 of 10 words'
    >>> describe_feature("price_num_delta", 0.1837, "19.99", "24.50")
    'prices differ by 18%: 19.99 vs 24.50'
    >>> describe_feature("title_num_diff", 1.0, "sony dsc-w120 camera", "sony dsc-w130 camera")
    'numbers in the titles differ: dsc-w120 vs dsc-w130'
    >>> describe_feature("year_missing_diff", 1.0, "", "2001")
    'year is missing on the left record'
    >>> describe_feature("a", 0.8234)
    'a = 0.823'
    """
    attr, metric = split_feature_name(name)
    v = float(value)
    if attr is None or metric is None:
        return f"{name} = {v:.3g}"
    have = (left is not None or right is not None) if have_values is None else have_values
    lv, rv = _text(left), _text(right)
    pl = _plural(attr)
    if metric == "missing_diff":
        if v >= 0.5:
            return _side_missing(attr, lv, rv) if have else f"{attr} is missing on one record"
        if have and not lv and not rv:
            return f"{attr} is missing on both records"
        return f"{attr} is given on both records" if have else f"{attr} is given on both or neither record"
    if metric == "num_diff":
        if v >= 0.5:
            if have:
                lt, rt = _digit_tokens(lv), _digit_tokens(rv)
                lo = [t for t in lt if t not in rt] or lt
                ro = [t for t in rt if t not in lt] or rt
                return f"numbers in the {pl} differ: {_quoted(' '.join(lo[:3]))} vs {_quoted(' '.join(ro[:3]))}"
            return f"numbers in the {pl} differ"
        if have:
            common = [t for t in _digit_tokens(lv) if t in _digit_tokens(rv)]
            if common:
                return f"numbers in the {pl} agree: {_quoted(' '.join(common[:3]))}"
        return f"no conflicting numbers in the {pl}"
    if v < 0:  # the sentinel of a missing value
        return _side_missing(attr, lv, rv) if have else f"{attr} is missing on one record or both"
    if have and lv and lv.lower() == rv.lower():
        return f"{pl} are the same: {_quoted(lv)}"
    if metric == "num_delta":
        if v == 0:
            return f"{pl} are equal: {_quoted(lv)}" if have else f"{pl} are equal"
        tail = f": {_quoted(lv)} vs {_quoted(rv)}" if have else ""
        return f"{pl} differ by {v:.0%}{tail}"
    typed = _typed_words(metric, v, attr, pl)
    if typed is not None:
        tail = f": {lv} vs {rv}" if have and lv and rv and max(len(lv), len(rv)) <= _SHORT_VALUE else ""
        return typed + tail
    only = "only " if low else ""
    if metric == "jaccard" and have:
        lw, rw = set(_WORD_RE.findall(lv.lower())), set(_WORD_RE.findall(rv.lower()))
        if lw | rw:
            text = f"{pl} share {only}{len(lw & rw)} of {len(lw | rw)} words"
        else:
            text = f"{pl} share {only}{v:.0%} of their words"
    else:
        text = {
            "jaccard": f"{pl} share {only}{v:.0%} of their words",
            "jaccard_3gram": f"{pl} share {only}{v:.0%} of their 3-letter pieces",
            "levenshtein": f"{pl} are {only}{v:.0%} alike letter by letter",
            "jaro_winkler": f"{pl} are {only}{v:.0%} alike in spelling (Jaro-Winkler)",
            "tfidf_cosine": f"{pl} agree {only}{v:.0%} on their rarer words (TF-IDF cosine)",
            "monge_elkan": f"{pl} are {only}{v:.0%} alike word by word (Monge-Elkan)",
        }.get(metric, f"{name} = {v:.3g}")
    if have and lv and rv and max(len(lv), len(rv)) <= _SHORT_VALUE:
        text += f": {lv} vs {rv}"
    return text


@dataclass(frozen=True)
class Reason:
    """One reason for a pair's risk: a fired rule (or several alike ones) in words.

    Attributes
    ----------
    text : str
        The sentence about the pair, e.g. "titles share 9 of 10 words".
    weight : float
        The contribution to the risk (see the module docstring): the shift of LearnRisk's mean
        toward the class the matcher did not predict; positive raises the risk, negative
        supports the matcher.
    feature : str
        The name of the rule's first feature.
    direction : {"match", "non-match"}
        The class the rule points to.
    features : tuple of str
        All features the rule tests.
    attribute : str or None
        The attribute of ``feature`` (None when it is not a similarity feature's name).
    left_value, right_value : str or None
        The two records' values of ``attribute`` (None when they were not given).
    rules : tuple of str
        The merged rules' texts (conditions with thresholds), best first.
    expectation : float
        The match rate of the training pairs covered by the first rule.
    train_pairs : int
        How many training pairs the first rule covers.
    """

    text: str
    weight: float
    feature: str
    direction: str
    features: tuple[str, ...] = ()
    attribute: str | None = None
    left_value: str | None = None
    right_value: str | None = None
    rules: tuple[str, ...] = ()
    expectation: float = float("nan")
    train_pairs: int = 0

    @property
    def raises_risk(self) -> bool:
        """Whether the reason argues against the matcher's label."""
        return self.weight > 0

    def __str__(self) -> str:
        return f"{self.text} (suggests {self.direction})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary of all fields."""
        return {
            "text": self.text, "weight": self.weight, "feature": self.feature, "direction": self.direction,
            "features": list(self.features), "attribute": self.attribute, "left_value": self.left_value,
            "right_value": self.right_value, "rules": list(self.rules), "expectation": self.expectation,
            "train_pairs": self.train_pairs,
        }


def short_text(reasons: Sequence[Reason] | Sequence[Mapping[str, Any]], k: int = 3) -> str:
    """The first ``k`` reasons, one line each (``"- text (suggests match)"``), and how many more.

    Accepts :class:`Reason` objects or their ``to_dict()`` form (as a labelling journal stores them).
    """
    lines = []
    for r in list(reasons)[: max(0, k)]:
        text, direction = (r.text, r.direction) if isinstance(r, Reason) else (r["text"], r["direction"])
        lines.append(f"- {text} (suggests {direction})")
    rest = len(reasons) - len(lines)
    if rest > 0:
        lines.append(f"  ... and {rest} more reason(s)")
    return "\n".join(lines)


def build_reasons(
    rules: Sequence[Any],
    fired: Sequence[int],
    *,
    weights: npt.ArrayLike,
    expectations: npt.ArrayLike,
    coverage: npt.ArrayLike,
    matcher_weight: float,
    probability: float,
    features: npt.ArrayLike,
    feature_names: Sequence[str] | None = None,
    values: Mapping[str, tuple[Any, Any]] | None = None,
) -> list[Reason]:
    """Deduplicated, ranked reasons of one pair from its fired rules.

    Parameters
    ----------
    rules : sequence of Rule
        All rules of the risk model.
    fired : sequence of int
        Indices of the rules that fire on the pair.
    weights, expectations, coverage : array-like of shape (n_rules,)
        The rules' learned weights, expectations (match rates) and training-pair counts.
    matcher_weight : float
        ``g(p)``, the weight of the matcher's own output.
    probability : float
        The matcher's match probability ``p``.
    features : array-like of shape (n_features,)
        The pair's similarity features.
    feature_names : sequence of str, optional
        Names of the features (default: the names the rules carry).
    values : mapping of str to (left, right), optional
        The two records' raw values per attribute.

    Returns
    -------
    list of Reason
        Sorted by absolute contribution, largest first.
    """
    from ..matchers._base import match_labels

    w = np.asarray(weights, dtype=np.float64)
    mu = np.asarray(expectations, dtype=np.float64)
    cov = np.asarray(coverage)
    x = np.asarray(features, dtype=np.float64).ravel()
    fired = [int(j) for j in fired]
    total = float(matcher_weight) + float(w[fired].sum()) if fired else float(matcher_weight)
    sign = -1.0 if int(match_labels([probability])[0]) == 1 else 1.0
    groups: dict[tuple, list[tuple[float, int]]] = {}
    for j in fired:
        r = rules[j]
        c = sign * float(w[j]) * (float(mu[j]) - probability) / total if total > 0 else 0.0
        key = (tuple(sorted({cond.feature for cond in r.conditions})), int(r.label))
        groups.setdefault(key, []).append((c, j))
    vals = dict(values or {})
    out: list[Reason] = []
    for (feats, label), members in groups.items():
        members.sort(key=lambda t: -abs(t[0]))
        best = rules[members[0][1]]
        names = []
        for cond in best.conditions:
            nm = feature_names[cond.feature] if feature_names is not None and cond.feature < len(feature_names) else cond.name
            if nm not in names:
                names.append(nm)
        by_feature: dict[str, int] = {}
        low: dict[str, bool] = {}
        for cond in best.conditions:
            nm = feature_names[cond.feature] if feature_names is not None and cond.feature < len(feature_names) else cond.name
            by_feature.setdefault(nm, cond.feature)
            low[nm] = low.get(nm, True) and cond.op == "<="
        parts = []
        for nm in names:
            attr, _ = split_feature_name(nm)
            lr = vals.get(attr) if attr is not None else None
            val = x[by_feature[nm]] if by_feature[nm] < x.size else float("nan")
            if lr is None:
                parts.append(describe_feature(nm, val, low=low[nm]))
            else:
                parts.append(describe_feature(nm, val, lr[0], lr[1], have_values=True, low=low[nm]))
        uniq_parts = list(dict.fromkeys(parts))
        attr0, _ = split_feature_name(names[0])
        lr0 = vals.get(attr0) if attr0 is not None else None
        out.append(
            Reason(
                text="; ".join(uniq_parts),
                weight=float(sum(c for c, _ in members)),
                feature=names[0],
                direction="match" if label == 1 else "non-match",
                features=tuple(names),
                attribute=attr0,
                left_value=None if lr0 is None else _text(lr0[0]),
                right_value=None if lr0 is None else _text(lr0[1]),
                rules=tuple(_rule_text(rules[j], feature_names) for _, j in members),
                expectation=float(mu[members[0][1]]),
                train_pairs=int(cov[members[0][1]]),
            )
        )
    out.sort(key=lambda r: (-abs(r.weight), r.text))
    return out


def _rule_text(rule: Any, feature_names: Sequence[str] | None) -> str:
    """The rule's text with ``feature_names`` (when given) instead of the names it carries."""
    if feature_names is None:
        return str(rule)
    conds = []
    for c in rule.conditions:
        nm = feature_names[c.feature] if c.feature < len(feature_names) else c.name
        conds.append(f"{nm} {c.op} {c.threshold:.4g}")
    return " && ".join(conds) + f" -> {rule.class_name}"


@dataclass
class RiskExplanation:
    """Why LearnRisk gives one pair its risk; ``str()`` is the text for a person labelling it.

    Attributes
    ----------
    probability : float
        The matcher's match probability ``p``.
    predicted_label : int
        ``1[p > 0.5]`` (``match_labels``).
    bin : dict
        The matcher-output feature: ``index``, ``low``, ``high``, ``train_pairs``, ``train_match_rate``
        (``None`` when fewer than ``min_coverage`` training pairs fell in the bin), ``weight`` (``g(p)``),
        ``rsd`` (learned relative standard deviation).
    rules : list of dict
        Fired rules sorted by weight: ``rule`` (text), ``label``, ``weight``, ``expectation``
        (match rate of the covered training pairs), ``train_pairs``, ``rsd``, ``share`` (weight
        share in the aggregated mean).
    mean, std : float
        Mean and standard deviation of the pair's (untruncated) normal.
    risk : float
        Value-at-Risk at confidence ``theta``.
    theta : float
        The confidence.
    reasons : list of Reason
        The fired rules deduplicated, ranked by their contribution to the shift of LearnRisk's
        mean away from the matcher's probability (largest first), and said in words.
    """

    probability: float
    predicted_label: int
    bin: dict[str, Any]
    rules: list[dict[str, Any]] = field(default_factory=list)
    mean: float = 0.0
    std: float = 0.0
    risk: float = 0.0
    theta: float = 0.9
    reasons: list[Reason] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dictionary of all fields."""
        return {
            "probability": self.probability,
            "predicted_label": self.predicted_label,
            "bin": dict(self.bin),
            "rules": [dict(r) for r in self.rules],
            "mean": self.mean,
            "std": self.std,
            "risk": self.risk,
            "theta": self.theta,
            "reasons": [r.to_dict() for r in self.reasons],
        }

    def summary(self) -> str:
        """One line: the matcher's label and probability, the risk and what it means."""
        lab = "MATCH" if self.predicted_label == 1 else "NON-MATCH"
        if self.predicted_label == 1:
            what = f"with {self.theta:.0%} confidence p(match) is at least {1 - self.risk:.3f}"
        else:
            what = f"with {self.theta:.0%} confidence p(match) is at most {self.risk:.3f}"
        return f"Matcher says {lab} with p(match) = {self.probability:.3f}; risk {self.risk:.3f} ({what})."

    def short_text(self, k: int = 3) -> str:
        """The summary line and the ``k`` strongest reasons, one line each.

        Parameters
        ----------
        k : int, default=3

        Returns
        -------
        str
        """
        body = short_text(self.reasons, k) if self.reasons else "- no rule fires: the risk rests on the matcher alone"
        return self.summary() + "\n" + body

    def __str__(self) -> str:
        b = self.bin
        rate = (
            f"{b['train_match_rate']:.0%} matches among {b['train_pairs']} training pairs"
            if b["train_match_rate"] is not None
            else f"only {b['train_pairs']} training pairs: no expectation"
        )
        lines = [
            self.summary(),
            f"The matcher's p(match) is in bin {b['index']} [{b['low']:.2f}, {b['high']:.2f}): {rate}.",
        ]
        if self.reasons:
            lines.append(
                f"{len(self.reasons)} reason(s) from {len(self.rules)} fired rule(s), strongest first "
                "(+ raises the risk, - supports the matcher):"
            )
            for r in self.reasons:
                lines.append(f"  {'+' if r.weight > 0 else '-'} {r}   [weight {r.weight:+.3f}: {r.rules[0]}]")
        else:
            lines.append("No rule fires: the distribution rests on the matcher's output alone.")
        lines.append(
            f"Match probability ~ N(mean={self.mean:.3f}, std={self.std:.3f}) truncated to [0, 1]; "
            f"risk = VaR at theta={self.theta:g}."
        )
        return "\n".join(lines)
