"""Tests of SimilarityFeatures: hand-computed values, oracles, input forms, errors, sklearn checks."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import JaroWinkler
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

# internal on purpose: chunk sizes and the number tokeniser
import skrisk.data._similarity as simmod
import skrisk.data._token_sets as setsmod
from skrisk.data._similarity import SIMILARITY_METRICS
from skrisk.data import SimilarityFeatures

def _frame(left, right, attr="a"):
    return pd.DataFrame({f"left_{attr}": left, f"right_{attr}": right})


def _one(metric, left, right):
    X = _frame(left, right)
    return SimilarityFeatures(metrics=[metric]).fit_transform(X)[:, 0]


# ---------------------------------------------------------------- hand-computed values
def test_word_jaccard():
    np.testing.assert_allclose(_one("jaccard", ["a b c", "x"], ["b c d", "x"]), [0.5, 1.0])


def test_char_3gram_jaccard():
    # " abc " -> {" ab", "abc", "bc "}; " abd " -> {" ab", "abd", "bd "}: 1 shared of 5
    np.testing.assert_allclose(_one("jaccard_3gram", ["abc"], ["abd"]), [0.2], rtol=1e-6)


def test_levenshtein_and_jaro_winkler():
    np.testing.assert_allclose(_one("levenshtein", ["kitten"], ["sitting"]), [1 - 3 / 7], rtol=1e-6)
    np.testing.assert_allclose(_one("jaro_winkler", ["martha"], ["marhta"]), [0.9611111], rtol=1e-6)


def test_tfidf_cosine():
    out = _one("tfidf_cosine", ["red apple", "red apple", "pear"], ["red apple", "green kiwi", "pear tree"])
    assert out[0] == pytest.approx(1.0, abs=1e-6)
    assert out[1] == pytest.approx(0.0, abs=1e-6)
    assert 0.0 < out[2] < 1.0


def test_monge_elkan_hand_value():
    # A = {paul, johnson}, B = {johnson, paule}: ME(A,B) = (jw(paul,paule) + 1) / 2 = ME(B,A)
    expected = (JaroWinkler.normalized_similarity("paul", "paule") + 1) / 2
    np.testing.assert_allclose(_one("monge_elkan", ["paul johnson"], ["johnson paule"]), [expected], rtol=1e-6)


def _me_reference(a: str, b: str) -> float:
    ta, tb = a.split(), b.split()
    if not ta or not tb:
        return 0.0
    ab = np.mean([max(JaroWinkler.normalized_similarity(x, y) for y in tb) for x in ta])
    ba = np.mean([max(JaroWinkler.normalized_similarity(y, x) for x in ta) for y in tb])
    return 0.5 * (ab + ba)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(*[st.lists(st.text("ab1é9 ", min_size=1, max_size=6).map(str.strip).filter(bool),
                                     max_size=4).map(" ".join)] * 2), min_size=1, max_size=12))
def test_monge_elkan_of_any_tokens_matches_brute_force(pairs):
    """Token pairs that share no character are not scored (their Jaro-Winkler is 0): letters,
    digits and accents mixed, any numbers of tokens per side, the same values as a double loop."""
    left, right = [p[0] for p in pairs], [p[1] for p in pairs]
    got = _one("monge_elkan", left, right)
    want = [(_me_reference(a, b) if a and b else -1.0) for a, b in zip(left, right)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chunk", [7, 1_000_000])
def test_monge_elkan_matches_brute_force(beer, monkeypatch, chunk):
    """The vectorised, chunked Monge-Elkan equals a per-pair double loop (any chunk size)."""
    monkeypatch.setattr(simmod, "_ME_CHUNK", chunk)
    frame = beer.to_frame()
    # Beer names are words separated by spaces; use the same tokens as the reference
    left = frame["left_Beer_Name"].str.replace(r"[^\w\s]", " ", regex=True).to_numpy()
    right = frame["right_Beer_Name"].str.replace(r"[^\w\s]", " ", regex=True).to_numpy()
    got = _one("monge_elkan", left, right)
    want = [_me_reference(a, b) for a, b in zip(left, right)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_num_delta_and_numeric_detection():
    X = _frame(["10", "$ 1,000", "1996.0", "7.50 %", ""], ["8", "500", "1996", "5 %", "3"], attr="price")
    sf = SimilarityFeatures(metrics=["num_delta"]).fit(X)
    assert sf.numeric_attributes_ == ["price"]
    np.testing.assert_allclose(sf.transform(X)[:, 0], [0.2, 0.5, 0.0, 2.5 / 7.5, -1.0], rtol=1e-6)
    text = _frame(["red apple", "pear"], ["10", "kiwi"])
    sf = SimilarityFeatures(metrics=["jaccard", "num_delta"]).fit(text)
    assert sf.numeric_attributes_ == []
    assert sf.get_feature_names_out().tolist() == ["a_jaccard"]


def test_num_diff_flags_conflicting_numbers_only():
    left = ["1994", "1996", "lg 24 lds4821ww", "canon eos 40d", "no numbers", "310/246 -1501"]
    right = ["1995.0", "1996.0", "lg lds4821ww", "canon eos 50d", "7", "310-246-1501"]
    np.testing.assert_array_equal(_one("num_diff", left, right), [1, 0, 0, 1, 0, 0])


def test_missing_values():
    X = _frame(["abc", None, np.nan, "", "x"], ["abc", "abc", np.nan, "", "NaN"])
    sf = SimilarityFeatures().fit(X)
    out = sf.transform(X)
    names = sf.get_feature_names_out().tolist()
    sims = [i for i, n in enumerate(names) if "diff" not in n]
    assert (out[0, sims] == 1).all()
    assert (out[1:4, sims] == -1).all()
    assert (out[4, sims] != -1).all()  # the text "NaN" is data (issue #15), like PairDataset.texts
    np.testing.assert_array_equal(out[:, names.index("a_missing_diff")], [0, 1, 0, 0, 0])
    flags = [i for i, n in enumerate(names) if "diff" in n]
    assert set(np.unique(out[:, flags])) <= {0.0, 1.0}


def test_attribute_without_tokens():
    X = _frame(["", ""], ["", ""])
    out = SimilarityFeatures(metrics=["tfidf_cosine", "missing_diff"]).fit_transform(X)
    np.testing.assert_array_equal(out, [[-1, 0], [-1, 0]])


# ---------------------------------------------------------------- input forms and layout
def test_input_forms_agree(fodors):
    frame = fodors.to_frame()
    sf = SimilarityFeatures(metrics=["jaccard", "levenshtein", "num_diff"])
    a = sf.fit(fodors).transform(fodors)
    b = SimilarityFeatures(metrics=["jaccard", "levenshtein", "num_diff"]).fit_transform(frame)
    c = SimilarityFeatures(metrics=["jaccard", "levenshtein", "num_diff"]).fit_transform(frame.to_numpy())
    shuffled = frame[list(frame.columns[::-1])]  # right_ columns first: pairing is by name
    d = SimilarityFeatures(metrics=["jaccard", "levenshtein", "num_diff"]).fit_transform(shuffled)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert sorted(map(tuple, a.T.tolist())) == sorted(map(tuple, d.T.tolist()))
    assert a.dtype == np.float32 and a.shape == (len(fodors), 3 * len(fodors.attributes))


def test_feature_names_and_metric_subset(beer):
    full = SimilarityFeatures().fit(beer)
    names = full.get_feature_names_out().tolist()
    assert names[:8] == [f"Beer_Name_{m}" for m in SIMILARITY_METRICS if m != "num_delta"]
    assert "ABV_num_delta" in names and full.numeric_attributes_ == ["ABV"]
    X = full.transform(beer)
    sub = SimilarityFeatures(metrics=["missing_diff", "levenshtein"], attributes=["Style"]).fit(beer)
    assert sub.get_feature_names_out().tolist() == ["Style_levenshtein", "Style_missing_diff"]
    cols = [names.index("Style_levenshtein"), names.index("Style_missing_diff")]
    np.testing.assert_array_equal(sub.transform(beer), X[:, cols])


def test_rows_are_independent(fodors):
    """Row order and subsets do not change a pair's features (the TF-IDF model is fixed in fit)."""
    sf = SimilarityFeatures().fit(fodors)
    full = sf.transform(fodors)
    idx = np.random.default_rng(0).permutation(len(fodors))[:50]
    np.testing.assert_allclose(sf.transform(fodors.subset(idx)), full[idx], rtol=1e-6)


def test_features_separate_matches(fodors):
    """A scaled logistic regression on the features matches Fodors-Zagats almost perfectly."""
    sf = SimilarityFeatures(metrics=["jaccard", "jaro_winkler", "tfidf_cosine", "num_diff"])
    train, test = fodors.split("train"), fodors.split("test")
    model = make_pipeline(sf, StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(train.to_frame(), train.y)
    assert f1_score(test.y, model.predict(test.to_frame())) >= 0.9


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "params, exc, match",
    [
        ({"metrics": ["jacard"]}, ValueError, r"must be None or a non-empty list of str among \{'jaccard', "),
        ({"metrics": []}, ValueError, r"Got \[\] instead"),
        ({"metrics": "jaccard"}, TypeError, "The 'metrics' parameter of SimilarityFeatures .* Got 'jaccard' instead"),
        ({"attributes": ["nope"]}, ValueError, "not in the input"),
        ({"n_jobs": 0}, ValueError, "n_jobs"),
    ],
)
def test_bad_parameters(params, exc, match):
    with pytest.raises(exc, match=match):
        SimilarityFeatures(**params).fit(_frame(["a"], ["b"]))


def test_bad_inputs():
    with pytest.raises(ValueError, match="no partner"):
        SimilarityFeatures().fit(pd.DataFrame({"left_a": ["x"], "right_b": ["y"]}))
    with pytest.raises(ValueError, match="no partner"):
        SimilarityFeatures().fit(pd.DataFrame({"left_a": ["x"], "right_a": ["y"], "label": [1]}))
    with pytest.raises(ValueError, match="even number"):
        SimilarityFeatures().fit(np.array([["a", "b", "c"]], dtype=object))
    with pytest.raises(NotFittedError):
        SimilarityFeatures().transform(_frame(["a"], ["b"]))
    sf = SimilarityFeatures().fit(_frame(["a"], ["b"]))
    with pytest.raises(ValueError, match="feature names"):
        sf.transform(_frame(["a"], ["b"], attr="z"))


# ---------------------------------------------------------------- sklearn estimator checks
# SimilarityFeatures declares its input as PairEncoder does: a pair frame of text (two_d_array
# False, string True). scikit-learn 1.9's common checks generate numeric 2-D data and skip such an
# estimator with a SkipTestWarning, as they skip its own text vectorizers; what those checks test
# (params untouched, clone, pickle, dtype, row order and subsets) is tested on numeric pairs with an
# even number of columns below, and on pair frames throughout this file.
def test_input_is_declared_like_pair_encoders():
    from sklearn.utils import get_tags

    from skrisk.data import PairEncoder

    sf, pe = get_tags(SimilarityFeatures()).input_tags, get_tags(PairEncoder()).input_tags
    assert (sf.two_d_array, sf.string) == (pe.two_d_array, pe.string) == (False, True)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
@parametrize_with_checks([SimilarityFeatures()])
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_sklearn_behaviour_on_even_columns():
    """What the skipped generic checks test, on numeric data with an even number of columns."""
    import pickle

    from sklearn.base import clone

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4)).round(3)
    sf = SimilarityFeatures(metrics=["levenshtein", "num_delta", "num_diff"])
    params = sf.get_params()
    out = sf.fit_transform(X)
    assert sf.get_params() == params
    np.testing.assert_array_equal(out, clone(sf).fit(X).transform(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(sf)).transform(X), out)
    assert out.dtype == np.float32 and out.shape == (30, 2 * 3)
    perm = rng.permutation(30)
    np.testing.assert_array_equal(sf.transform(X[perm]), out[perm])


def test_num_delta_no_number_is_missing_and_big_or_exponent_values_compare():
    """Issue #29: a value without a number is missing, not equal; 400 digits and 1e5 parse."""
    big = "9" * 400
    X = _frame(["n/a", big, "1e5", "12", "5", "2.5E-3", big, "7", "8"],
               ["5", "1", "100000", "n/a", "", "0.0025", big, "7", "6"], attr="price")
    sf = SimilarityFeatures(metrics=["num_delta"]).fit(X)
    assert sf.numeric_attributes_ == ["price"]
    out = sf.transform(X)[:, 0]
    np.testing.assert_allclose(out, [-1.0, 1.0, 0.0, -1.0, -1.0, 0.0, 0.0, 0.0, 0.25], atol=1e-6)


# ---------------------------------------------------------------- the fast path against a per-pair oracle
def _oracle(sf, attr, left, right):
    """Every feature of one attribute for one pair, computed the slow, obvious way (per pair,
    sklearn's own hashing vectorizers and TF-IDF model, rapidfuzz one pair at a time)."""
    import re

    from rapidfuzz.distance import Levenshtein
    from sklearn.feature_extraction.text import HashingVectorizer

    def hashed(analyzer, text, **kw):
        hv = HashingVectorizer(analyzer=analyzer, n_features=2**20, lowercase=False, alternate_sign=False,
                               norm=None, binary=True, **kw)
        return set(hv.transform([text]).indices.tolist())

    def jac(a, b):
        return len(a & b) / len(a | b) if a | b else float(left == right)

    def number(text):
        m = re.search(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text))
        return float(m.group(0)) if m else None

    out = {}
    word = dict(token_pattern=r"(?u)\b\w+\b")
    out["jaccard"] = jac(hashed("word", left, **word), hashed("word", right, **word))
    out["jaccard_3gram"] = jac(hashed("char_wb", left, ngram_range=(3, 3)), hashed("char_wb", right, ngram_range=(3, 3)))
    out["levenshtein"] = Levenshtein.normalized_similarity(left, right)
    out["jaro_winkler"] = JaroWinkler.normalized_similarity(left, right)
    vec = sf.tfidf_.get(attr)
    out["tfidf_cosine"] = 0.0 if vec is None else float((vec.transform([left]) @ vec.transform([right]).T).toarray()[0, 0])
    ta, tb = re.findall(r"(?u)\b\w+\b", left), re.findall(r"(?u)\b\w+\b", right)
    if ta and tb:
        ab = np.mean([max(JaroWinkler.normalized_similarity(x, y) for y in tb) for x in ta])
        ba = np.mean([max(JaroWinkler.normalized_similarity(x, y) for x in ta) for y in tb])
        out["monge_elkan"] = 0.5 * (ab + ba)
    else:
        out["monge_elkan"] = 0.0
    x, y = number(left), number(right)
    if x is None or y is None:
        out["num_delta"] = -1.0
    elif np.isinf(x) or np.isinf(y):
        out["num_delta"] = 0.0 if x == y else 1.0
    else:
        out["num_delta"] = abs(x - y) / max(abs(x), abs(y)) if max(abs(x), abs(y)) > 0 else 0.0
    na, nb = hashed(simmod._number_tokens, left), hashed(simmod._number_tokens, right)
    out["num_diff"] = float(bool(na) and bool(nb) and not na <= nb and not nb <= na)
    out["missing_diff"] = float((left == "") != (right == ""))
    if left == "" or right == "":
        for m in out:
            if m not in ("num_diff", "missing_diff"):
                out[m] = -1.0
    return out


@pytest.mark.parametrize("name", ["abt_buy", "dblp_scholar", "beer"])
def test_fast_path_equals_per_pair_oracle(data_home, name):
    """transform (pair frames) and encode + transform_encoded (tables encoded once) give, on real
    data, the features a per-pair computation gives, to 1e-6."""
    from skrisk.datasets import load_deepmatcher

    ds = load_deepmatcher(name, data_home)
    sample = ds.subset(np.random.default_rng(0).choice(len(ds), 150, replace=False))
    frame = sample.to_frame()
    sf = SimilarityFeatures().fit(ds.to_frame())
    got = sf.transform(frame)
    enc_l, enc_r = sf.encode(ds.left), sf.encode(ds.right)
    lpos = ds.left.index.astype(str).get_indexer(sample.pairs["left_id"].astype(str))
    rpos = ds.right.index.astype(str).get_indexer(sample.pairs["right_id"].astype(str))
    np.testing.assert_allclose(sf.transform_encoded(enc_l, enc_r, lpos, rpos, n_jobs=2), got, atol=1e-6)
    names = sf.get_feature_names_out().tolist()
    for a in sf.attributes_:
        for i, (lv, rv) in enumerate(zip(frame[f"left_{a}"], frame[f"right_{a}"])):
            want = _oracle(sf, a, lv, rv)
            for m, v in want.items():
                if f"{a}_{m}" in names:
                    assert got[i, names.index(f"{a}_{m}")] == pytest.approx(v, abs=1e-6), (a, m, lv, rv)


@pytest.mark.parametrize("name", ["abt_buy", "beer"])
def test_fit_transform_of_a_pair_dataset_equals_its_pair_frame(data_home, name):
    """fit_transform(PairDataset) fits on its records' distinct values and transforms from the
    tables encoded once (a labelling session's candidates): the fitted state and the features
    of the pair frame path, to 1e-6, on the shared data and on one table (dedup)."""
    from skrisk.data import PairDataset
    from skrisk.datasets import load_deepmatcher

    ds = load_deepmatcher(name, data_home)
    ids = ds.left.index.astype(str)
    one = PairDataset(ds.left, ds.left, pd.DataFrame({"left_id": ids[:40:2], "right_id": ids[1:40:2],
                                                      "label": np.int8(-1), "split": "pool"}))
    for d in (ds, one):
        slow = SimilarityFeatures().fit(d.to_frame())
        fast = SimilarityFeatures()
        got = fast.fit_transform(d)
        np.testing.assert_allclose(got, slow.transform(d.to_frame()), atol=1e-6)
        assert fast.numeric_attributes_ == slow.numeric_attributes_
        assert {a: sorted(v.vocabulary_) for a, v in fast.tfidf_.items() if v is not None} == \
            {a: sorted(v.vocabulary_) for a, v in slow.tfidf_.items() if v is not None}
        assert list(fast.feature_names_in_) == list(slow.feature_names_in_)


def test_encode_in_chunks_gives_the_same_sets_and_features(monkeypatch):
    """encode hashes the distinct values a chunk at a time (memory bounded on a million distinct
    addresses): chunks of 2 values give the very sets and features of one chunk."""
    values = ["12 main st", "12 main street", "", "7 oak ave 3b", "oak", "1,299.00 main", "st 12", "n/a"]
    table = pd.DataFrame({"a": values})
    sf = SimilarityFeatures().fit(_frame(values, values[::-1]))
    whole = sf.encode(table)
    monkeypatch.setattr(setsmod, "_ENCODE_CHUNK", 2)
    parts = sf.encode(table)
    for m, sets in whole.values["a"].sets.items():
        got = parts.values["a"].sets[m]
        np.testing.assert_array_equal(got.sizes, sets.sizes)
        everything = np.arange(len(values))
        assert got.strings_of(everything).tolist() == sets.strings_of(everything).tolist(), m
    lp, rp = np.repeat(np.arange(len(values)), len(values)), np.tile(np.arange(len(values)), len(values))
    np.testing.assert_array_equal(sf.transform_encoded(parts, parts, lp, rp), sf.transform_encoded(whole, whole, lp, rp))


@pytest.mark.parametrize("name", ["abt_buy", "dblp_scholar"])
def test_narrow_and_wide_token_sets_give_the_same_overlaps(data_home, name, monkeypatch):
    """Token sets of up to _SET_WIDTH elements are compared as rows of codes (numpy), wider ones
    as code-point strings (rapidfuzz LCSseq): with every set wide, with some and with none, the
    features of real pairs (titles of 3 to 100+ 3-grams, mixed narrow/wide pairs) are equal."""
    from skrisk.datasets import load_deepmatcher

    ds = load_deepmatcher(name, data_home)
    sample = ds.subset(np.random.default_rng(1).choice(len(ds), 400, replace=False))
    lpos = ds.left.index.astype(str).get_indexer(sample.pairs["left_id"].astype(str))
    rpos = ds.right.index.astype(str).get_indexer(sample.pairs["right_id"].astype(str))
    sf = SimilarityFeatures(metrics=["jaccard", "jaccard_3gram", "num_diff"]).fit(sample.to_frame())
    runs = {}
    for width in (0, 6, 1000):
        monkeypatch.setattr(setsmod, "_SET_WIDTH", width)
        monkeypatch.setattr(setsmod, "_OVERLAP_BLOCK", 7)
        enc_l, enc_r = sf.encode(ds.left), sf.encode(ds.right)
        kinds = {m: v.wide.mean() for a in sf.attributes_ for m, v in enc_l.values[a].sets.items()}
        runs[width] = (sf.transform_encoded(enc_l, enc_r, lpos, rpos), kinds)
    assert max(runs[0][1].values()) > 0.5 and min(runs[1000][1].values()) == 0  # all wide / all narrow
    assert 0 < runs[6][1]["jaccard_3gram"] < 1 or name != "abt_buy"  # a mix on product titles
    np.testing.assert_array_equal(runs[6][0], runs[0][0])
    np.testing.assert_array_equal(runs[1000][0], runs[0][0])
    np.testing.assert_allclose(runs[0][0], sf.transform(sample.to_frame()), atol=1e-6)


def test_astral_characters_are_compared_and_lone_surrogates_refused_by_name():
    """A character beyond the BMP is text like any other (both paths agree). A lone surrogate
    (only the Python API gives one) is refused with the attribute and the fix: pandas' hashing
    merges distinct such strings silently (pd.factorize(["\\ud800", "\\udfff"]) -> one value)."""
    left, right = ["caf\u00e9 \U0001F600x", "plain"], ["cafe \U0001F600x", "\U0001F600"]
    sf = SimilarityFeatures()
    got = sf.fit_transform(_frame(left, right))
    assert np.isfinite(got).all() and got[0, sf.get_feature_names_out().tolist().index("a_monge_elkan")] > 0.5
    enc = sf.encode(pd.DataFrame({"a": left + right}))
    np.testing.assert_allclose(sf.transform_encoded(enc, enc, [0, 1], [2, 3]), got, atol=1e-6)
    bad = _frame(["ab\udc80c street", "x"], ["\ud800", "\udfff"], attr="name")
    for call in (lambda: SimilarityFeatures().fit(bad), lambda: sf.transform(_frame(["\udfff"], ["x"])),
                 lambda: sf.encode(pd.DataFrame({"a": ["ok", "\ud800"]}))):
        with pytest.raises(ValueError, match=r"Attribute '(name|a)' holds a text with a lone surrogate.*"
                                             r"encode\('utf-8', 'replace'\)"):
            call()
    nul = _frame(["a\x00b", "a"], ["x", "y"], attr="name")  # pandas' factorize would merge the two
    for call in (lambda: SimilarityFeatures().fit(nul), lambda: sf.encode(pd.DataFrame({"a": ["a", "a\x00b"]}))):
        with pytest.raises(ValueError, match=r"Attribute '(name|a)' holds a text with a NUL character.*replace"):
            call()


def test_encode_and_transform_encoded_refuse_bad_input():
    X = _frame(["acme corp", "globex"], ["acme co", "initech"], attr="name")
    sf = SimilarityFeatures(metrics=["jaccard"]).fit(X)
    table = pd.DataFrame({"name": ["acme corp", "globex"]})
    with pytest.raises(ValueError, match=r"lacks the attribute column\(s\) \['name'\]"):
        sf.encode(pd.DataFrame({"title": ["x"]}))
    with pytest.raises(TypeError, match="DataFrame"):
        sf.encode(table.to_numpy())
    enc = sf.encode(table)
    with pytest.raises(IndexError, match="right_pos holds positions outside 0..1"):
        sf.transform_encoded(enc, enc, [0], [2])
    with pytest.raises(ValueError, match="differ in length"):
        sf.transform_encoded(enc, enc, [0, 1], [0])
    with pytest.raises(ValueError, match="n_jobs"):
        sf.transform_encoded(enc, enc, [0], [1], n_jobs=0)
    np.testing.assert_array_equal(sf.transform_encoded(enc, enc, [1], [1]), [[1.0]])


def test_workers_give_the_same_features(monkeypatch):
    """Any n_jobs gives the very same numbers as one thread (issue #26), on person records (names,
    dates, addresses with numbers, missing values)."""
    from skrisk.data import PairDataset, block
    from skrisk.datasets import make_person_table

    # threads are capped at the CPUs: 2 and 3 threads even on a small machine
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    table, _ = make_person_table(8000, random_state=0)
    table.index = table.index.astype(str)
    pairs = block(table, None).pairs  # enough pairs for blocks of pairs on threads
    lpos, rpos = table.index.get_indexer(pairs["left_id"]), table.index.get_indexer(pairs["right_id"])
    sf = SimilarityFeatures().fit(pd.DataFrame({**{f"left_{a}": table[a].to_numpy(object) for a in table.columns},
                                                **{f"right_{a}": table[a].to_numpy(object) for a in table.columns}}))
    enc = sf.encode(table)
    one = sf.transform_encoded(enc, enc, lpos, rpos, n_jobs=1)
    assert one.shape == (len(pairs), len(sf.get_feature_names_out())) and len(pairs) > 50_000
    for n_jobs in (2, 3, -1):
        np.testing.assert_array_equal(sf.transform_encoded(enc, enc, lpos, rpos, n_jobs=n_jobs), one)


def test_a_part_scored_with_the_whole_tables_value_counts_has_the_whole_tables_features():
    from skrisk.data import PairDataset, block
    from skrisk.datasets import make_person_table
    from skrisk.pools import ChunkScorer

    table, links = make_person_table(3000, random_state=4)
    pairs = block(table, None, true_links=links).pairs
    frame = PairDataset.from_table(table, pairs.iloc[:400], split="train", name="p").to_frame()
    sf = SimilarityFeatures(types="auto").fit(frame)
    tf = [n for n in sf.get_feature_names_out() if n.endswith("_exact_tf")]
    assert tf
    parts = [table.iloc[:1000], table.iloc[1000:]]
    counts = [sf.value_counts(p) for p in parts]
    whole = sf.value_counts(table)
    for a in whole:
        pd.testing.assert_series_equal(counts[0][a].add(counts[1][a], fill_value=0).astype(np.int64), whole[a],
                                       check_names=False)
    inside = pairs[pairs["left_id"].isin(parts[0].index) & pairs["right_id"].isin(parts[0].index)].iloc[:300]
    assert len(inside) > 50
    F_whole = ChunkScorer(table, features=sf, matcher=_ProbaStub()).feature_matrix(inside)
    F_part = ChunkScorer(parts[0], features=sf, matcher=_ProbaStub()).feature_matrix(inside)
    F_given = ChunkScorer(parts[0], features=sf, matcher=_ProbaStub(), value_counts=whole).feature_matrix(inside)
    np.testing.assert_array_equal(F_given, F_whole)
    col = list(sf.get_feature_names_out()).index(tf[0])
    assert not np.array_equal(F_part[:, col], F_whole[:, col])  # the part's own frequencies differ


class _ProbaStub:
    """A matcher the scorer accepts; feature_matrix never calls it."""

    def predict_proba(self, X):
        return np.tile([0.5, 0.5], (len(X), 1))
