"""Readable reasons of LearnRisk's explanations: the wording, deduplication, ranking, real data."""

from __future__ import annotations

import re

import numpy as np
import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.risk._rules import Condition
from skrisk.risk import Reason, RiskExplanation, Rule
# internal on purpose: the reason texts, feature by feature
from skrisk.risk._explain import build_reasons, describe_feature, split_feature_name


# ----------------------------------------------------------------------------- wording
@pytest.mark.parametrize(
    "name, value, left, right, expected",
    [
        ("title_jaccard", 0.9, "sony dsc w120 digital camera silver 8mp 3x zoom new",
         "sony dsc w120 digital camera silver 8mp 3x zoom", "titles share 9 of 10 words"),
        ("title_jaccard", 0.2, "sony camera", "canon camera lens", "titles share 1 of 4 words: sony camera vs canon camera lens"),
        ("price_num_delta", 0.1837, "19.99", "24.50", "prices differ by 18%: 19.99 vs 24.50"),
        ("price_num_delta", 0.0, "19.99", "19.990", "prices are equal: 19.99"),
        ("name_num_diff", 1.0, "sony dsc-w120 camera", "sony dsc-w130 camera",
         "numbers in the names differ: dsc-w120 vs dsc-w130"),
        ("name_num_diff", 0.0, "sony dsc-w120 camera", "dsc-w120 silver", "numbers in the names agree: dsc-w120"),
        ("year_missing_diff", 1.0, "", "2001", "year is missing on the left record"),
        ("year_missing_diff", 0.0, "1999", "2001", "year is given on both records"),
        ("city_levenshtein", -1.0, "paris", "", "city is missing on the right record"),
        ("city_jaro_winkler", 1.0, "Paris", "paris", "cities are the same: Paris"),
        ("address_levenshtein", 0.8, "12 main st", "12 main street", "addresses are 80% alike letter by letter: 12 main st vs 12 main street"),
        ("x13", 0.6426, None, None, "x13 = 0.643"),
    ],
)
def test_sentences_read_at_a_glance(name, value, left, right, expected):
    assert describe_feature(name, value, left, right) == expected


def test_sentences_without_the_records_rest_on_the_value():
    assert describe_feature("title_jaccard", 0.5) == "titles share 50% of their words"
    assert describe_feature("title_jaccard", 0.5, low=True) == "titles share only 50% of their words"
    assert describe_feature("price_num_delta", 0.25) == "prices differ by 25%"
    assert describe_feature("title_num_diff", 1.0) == "numbers in the titles differ"
    assert describe_feature("title_tfidf_cosine", -1.0) == "title is missing on one record or both"


def test_long_values_are_quoted_in_part_and_odd_names_stay_readable():
    text = describe_feature("descr_num_diff", 1.0, "model " + "x1 " * 30, "model y2")
    assert len(text) < 120
    assert describe_feature("addr_1_levenshtein", 0.5) == "addr_1 values are 50% alike letter by letter"
    assert split_feature_name("addr_1_jaccard_3gram") == ("addr_1", "jaccard_3gram")


# ----------------------------------------------------------------------------- dedup and ranking
def _rules():
    a_hi = Rule((Condition(0, "title_jaccard", ">", 0.6),), 1)
    a_hi2 = Rule((Condition(0, "title_jaccard", ">", 0.7),), 1)  # same feature and class: merged
    b_lo = Rule((Condition(1, "price_num_delta", ">", 0.1),), 0)
    a_lo = Rule((Condition(0, "title_jaccard", "<=", 0.95),), 0)  # same feature, other class: kept
    return [a_hi, a_hi2, b_lo, a_lo]


def test_rules_over_the_same_features_and_class_are_one_reason_ranked_by_contribution():
    rules = _rules()
    w = np.array([0.5, 0.4, 2.0, 0.1])
    mu = np.array([0.95, 0.97, 0.05, 0.2])
    p, g = 0.8, 1.0  # the matcher says match
    reasons = build_reasons(
        rules, [0, 1, 2, 3], weights=w, expectations=mu, coverage=[10, 8, 30, 5], matcher_weight=g,
        probability=p, features=[0.9, 0.2], values={"title": ("a b c", "a b c d"), "price": ("10", "12.5")},
    )
    assert [r.direction for r in reasons] == ["non-match", "match", "non-match"]
    assert reasons[0].text == "prices differ by 20%: 10 vs 12.5" and reasons[0].raises_risk
    merged = reasons[1]
    assert len(merged.rules) == 2 and merged.feature == "title_jaccard" and not merged.raises_risk
    assert (merged.left_value, merged.right_value) == ("a b c", "a b c d")
    # contributions split the shift of the mean exactly: mu - p = sum_j w_j (mu_j - p) / W
    W = g + w.sum()
    mean = (w @ mu + g * p) / W
    assert sum(r.weight for r in reasons) == pytest.approx(-(mean - p))
    assert [abs(r.weight) for r in reasons] == sorted((abs(r.weight) for r in reasons), reverse=True)


def test_short_text_keeps_the_strongest_and_counts_the_rest():
    exp = RiskExplanation(
        probability=0.8, predicted_label=1, bin={}, risk=0.6, theta=0.9,
        reasons=[Reason(f"reason {i}", 0.1 * (5 - i), f"f{i}", "match") for i in range(5)],
    )
    lines = exp.short_text(k=3).splitlines()
    assert lines[0].startswith("Matcher says MATCH") and len(lines) == 5
    assert lines[1:4] == [f"- reason {i} (suggests match)" for i in range(3)]
    assert "2 more" in lines[4]


# ----------------------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def fitted_abt_buy(data_home):
    from skrisk import LearnRisk
    from skrisk.data import SimilarityFeatures
    from skrisk.datasets import load_deepmatcher
    from skrisk.matchers import FeatureMatcher

    ds = load_deepmatcher("abt_buy", data_home)
    rng = np.random.RandomState(0)
    tr = ds.split("train")
    va = ds.split("valid")
    tr = tr.subset(rng.choice(len(tr), 500, replace=False))
    va = va.subset(rng.choice(len(va), 300, replace=False))
    sf = SimilarityFeatures(metrics=["jaccard", "levenshtein", "num_delta", "num_diff", "missing_diff"])
    F_tr = sf.fit_transform(tr.to_frame())
    F_va = sf.transform(va.to_frame())
    model = LearnRisk(FeatureMatcher(random_state=0), feature_names=sf.get_feature_names_out(), epochs=20,
                      random_state=0).fit(F_tr, tr.y, X_valid=F_va, y_valid=va.y)
    return model, F_va, va


def test_explain_on_abt_buy_gives_ranked_readable_reasons_with_the_records_values(fitted_abt_buy):
    model, F, va = fitted_abt_buy
    frame = va.to_frame()
    risk = model.predict_risk(F)
    seen_reasons = 0
    for i in np.argsort(-risk)[:15]:
        exp = model.explain(F, int(i), pairs=frame)
        assert isinstance(exp, RiskExplanation)
        texts = [r.text for r in exp.reasons]
        assert len(texts) == len(set((r.features, r.direction) for r in exp.reasons))  # deduplicated
        assert all(not re.search(r"\bx\d+\b", t) for t in texts)  # feature names, never x13
        assert len(exp.reasons) <= len(exp.rules)
        if exp.reasons:
            seen_reasons += 1
            sign = -1.0 if exp.predicted_label == 1 else 1.0
            assert sum(r.weight for r in exp.reasons) == pytest.approx(sign * (exp.mean - exp.probability), abs=1e-6)
            for r in exp.reasons:
                if r.attribute is not None:  # the records' own values travel with the reason
                    assert r.left_value == " ".join(str(frame[f"left_{r.attribute}"].iloc[i]).split()) or (
                        r.left_value == "" and frame[f"left_{r.attribute}"].iloc[i] in ("", None))
        short = exp.short_text(k=3).splitlines()
        assert len(short) <= 5 and "->" not in "\n".join(short)
    assert seen_reasons >= 5
    # without the records the reasons still read in words, from the feature values
    i = int(np.argmax(risk))
    bare = model.explain(F, i)
    assert [r.features for r in bare.reasons] == [r.features for r in model.explain(F, i, pairs=frame).reasons]


def test_explain_rejects_records_that_do_not_line_up(fitted_abt_buy):
    model, F, va = fitted_abt_buy
    with pytest.raises(ValueError, match="rows for"):
        model.explain(F, 0, pairs=va.to_frame().iloc[:3])
    with pytest.raises(ValueError, match="left value, right value"):
        model.explain(F, 0, pairs={"name": "only one value"})
