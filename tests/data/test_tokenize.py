"""Tokeniser, vocabulary and the padded pair encoding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from skorch.helper import SliceDict

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._tokenize import PAD_ID, UNK_ID, Vocabulary, tokenize
from skrisk.data import PairEncoder, SimilarityFeatures


def test_tokenize():
    assert tokenize("Sony DSC-W120, 8.1MP  o'Reilly") == ["sony", "dsc-w120", "8.1mp", "o'reilly"]
    assert tokenize("1996.0") == ["1996.0"]
    assert tokenize(None) == [] and tokenize(float("nan")) == [] and tokenize("") == []
    assert tokenize("  --- ") == []
    assert tokenize(1996.0) == ["1996"]


def test_vocabulary():
    v = Vocabulary.from_texts(["b a", "a c", None], min_freq=1)
    assert v.itos[:2] == ["<pad>", "<unk>"] and v.stoi["<pad>"] == PAD_ID and v.stoi["<unk>"] == UNK_ID
    assert v.itos[2] == "a"  # most frequent first, ties alphabetical
    assert v.ids(["a", "zzz"]).tolist() == [2, UNK_ID]
    assert Vocabulary.from_texts(["b a", "a c"], min_freq=2).itos == ["<pad>", "<unk>", "a"]
    assert len(Vocabulary.from_texts(["b a c"], max_size=1)) == 3
    assert Vocabulary(v.to_list()) == v
    with pytest.raises(ValueError, match="min_freq"):
        Vocabulary.from_texts(["a"], min_freq=0)
    with pytest.raises(TypeError, match="str"):
        Vocabulary([1, 2])


def test_pair_encoder_layout(fodors):
    frame = fodors.to_frame()
    enc = PairEncoder(max_length=5).fit(frame)
    out = enc.transform(frame)
    assert isinstance(out, SliceDict) and sorted(out) == ["tokens"]  # one output type, no features
    X = out["tokens"]
    A = len(fodors.attributes)
    assert X.dtype == np.int64 and X.shape == (len(frame), 2 * A, 5)
    assert enc.attributes_ == fodors.attributes
    assert list(enc.get_feature_names_out()) == list(frame.columns)
    # left attribute k is sequence k, right attribute k is sequence A + k
    row = 3
    for k, a in enumerate(fodors.attributes):
        for side, j in (("left", k), ("right", A + k)):
            toks = tokenize(frame.loc[row, f"{side}_{a}"])[:5]
            ids = X[row, j]
            assert ids[: len(toks)].tolist() == enc.vocabulary_.ids(toks).tolist()
            assert (ids[len(toks):] == 0).all()
    # rows are independent: a subset encodes to the same rows
    np.testing.assert_array_equal(enc.transform(frame.iloc[[5, 1]])["tokens"], X[[5, 1]])
    np.testing.assert_array_equal(out[[5, 1]]["tokens"], X[[5, 1]])  # sklearn-style row slicing


def test_pair_encoder_unseen_tokens_and_empty_values():
    X = pd.DataFrame({"left_name": ["acme corp", "", None], "right_name": ["acme zzz", "x", "acme"]})
    enc = PairEncoder(max_length=3, vocabulary=["acme", "corp"]).fit(X)
    out = enc.transform(X)["tokens"]
    assert out[0, 1].tolist() == [2, UNK_ID, 0]
    assert (out[1, 0] == 0).all() and (out[2, 0] == 0).all()


def test_pair_encoder_fixed_vocabulary_is_fold_independent(fodors):
    frame = fodors.to_frame()
    vocab = Vocabulary.from_texts(frame.to_numpy().ravel())
    a = PairEncoder(vocabulary=vocab).fit(frame.iloc[:100]).transform(frame.iloc[200:260])
    b = PairEncoder(vocabulary=vocab).fit(frame.iloc[100:200]).transform(frame.iloc[200:260])
    np.testing.assert_array_equal(a["tokens"], b["tokens"])


def test_pair_encoder_with_features(beer):
    frame = beer.to_frame()
    enc = PairEncoder(max_length=4, features=SimilarityFeatures(metrics=["jaccard"])).fit(frame)
    out = enc.transform(frame)
    assert isinstance(out, SliceDict) and sorted(out) == ["features", "tokens"]
    assert out["tokens"].shape == (len(frame), 8, 4)
    assert out["features"].dtype == np.float32 and out["features"].shape == (len(frame), 4)
    assert out[[0, 2]]["tokens"].shape[0] == 2  # sklearn-style row slicing works
    assert clone(enc).features is not enc.features


def test_pair_encoder_bad_input(beer):
    frame = beer.to_frame()
    with pytest.raises(TypeError, match="pair frame"):
        PairEncoder().fit(frame.to_numpy())
    with pytest.raises(ValueError, match="left_<a>"):
        PairEncoder().fit(frame.drop(columns=["right_ABV"]))
    with pytest.raises(ValueError, match="max_length"):
        PairEncoder(max_length=0).fit(frame)
    with pytest.raises(ValueError, match="0 pairs"):
        PairEncoder().fit(frame.iloc[:0])
    enc = PairEncoder().fit(frame)
    renamed = frame.rename(columns={"left_ABV": "left_abv", "right_ABV": "right_abv"})
    with pytest.raises(ValueError, match="attributes"):
        enc.transform(renamed)
    with pytest.raises(TypeError, match="features"):
        PairEncoder(features=3).fit(frame)
