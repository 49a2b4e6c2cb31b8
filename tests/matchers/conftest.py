"""Fixtures for the matcher tests: small real data (Fodors-Zagats, Beer), tiny fitted matchers.

torch runs on one thread here: on a shared 2-core machine, more threads than free cores make
small GRU batches many times slower (thread oversubscription).
"""

from __future__ import annotations

import pytest
import torch

from skrisk.data import PairEncoder
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._embeddings import train_fasttext
from skrisk.matchers import RNNMatcher

torch.set_num_threads(1)

#: Tiny network sizes that still learn Fodors-Zagats in a few epochs.
TINY = dict(hidden_size=16, classifier_size=32, batch_size=32, lr=3e-3, device="cpu")


@pytest.fixture
def tiny():
    """Keyword arguments of a tiny, fast RNNMatcher."""
    return dict(TINY)


@pytest.fixture(scope="session")
def fodors_split(fodors):
    """(train, valid, test) pair frames and labels of Fodors-Zagats."""
    out = {}
    for name in ("train", "valid", "test"):
        part = fodors.split(name)
        out[name] = (part.to_frame(), part.y)
    return out


@pytest.fixture(scope="session")
def fodors_vectors(fodors):
    return train_fasttext(fodors, dim=24, epochs=2, random_state=0)


@pytest.fixture(scope="session")
def fodors_encoded(fodors_split, fodors_vectors):
    enc = PairEncoder(max_length=8, vocabulary=fodors_vectors).fit(fodors_split["train"][0])
    return {k: (enc.transform(f), y) for k, (f, y) in fodors_split.items()}


@pytest.fixture(scope="session")
def fitted_rnn(fodors_encoded, fodors_vectors):
    (Xtr, ytr), (Xva, yva) = fodors_encoded["train"], fodors_encoded["valid"]
    m = RNNMatcher(embeddings=fodors_vectors, max_epochs=8, patience=3, random_state=0, **TINY)
    return m.fit(Xtr, ytr, X_valid=Xva, y_valid=yva)


@pytest.fixture(scope="session")
def beer_encoded(beer):
    tr = beer.split("train")
    enc = PairEncoder(max_length=6).fit(tr.to_frame())
    return enc.transform(tr.to_frame()), tr.y

