"""Fixtures of the match tests (tests/matching, tests/hostile): a small FEBRL dedup task split by entity
into training records and new records, and a model trained on the training records."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skrisk import LearnRisk
from skrisk.data import PairDataset, SimilarityFeatures, block
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._febrl import febrl_entity
from skrisk.datasets import load_febrl
from skrisk.matchers import FeatureMatcher
from skrisk.matching import MatchModel

ATTRS = ["given_name", "surname", "suburb", "postcode", "date_of_birth"]
RULES = [("standard", "postcode"), ("standard", "date_of_birth"), ("standard", ["given_name", "surname"])]


@pytest.fixture(scope="session")
def febrl_split():
    """(train table, new table, true pairs of the new table): FEBRL1 records split by entity."""
    ds = load_febrl(0, dataset="febrl1")
    table = ds.left[ATTRS]
    ent = table.index.map(febrl_entity)
    uniq = np.sort(ent.unique())
    rng = np.random.default_rng(0)
    new_ents = set(rng.choice(uniq, size=len(uniq) // 3, replace=False))
    is_new = ent.isin(new_ents)
    train, new = table[~is_new], table[is_new]
    ids = new.index.to_numpy()
    e = new.index.map(febrl_entity).to_numpy()
    truth = [(min(a, b), max(a, b)) for i, a in enumerate(ids) for b in ids[i + 1:][e[i + 1:] == e[i]]]
    return train, new, pd.DataFrame(truth, columns=["left_id", "right_id"])


def _labelled(table: pd.DataFrame) -> PairDataset:
    pairs = block(table, None, RULES).pairs
    pairs["label"] = (pairs["left_id"].map(febrl_entity) == pairs["right_id"].map(febrl_entity)).astype(int)
    return PairDataset.from_table(table, pairs, split="train", name="febrl1-train")


def feature_match_model(ds: PairDataset, attributes: list[str], *, classifier: object = None, **params) -> MatchModel:
    """A MatchModel of similarity features, a FeatureMatcher (around ``classifier``) and LearnRisk
    trained on ``ds`` (small, seeded)."""
    sf = SimilarityFeatures().fit(ds.to_frame())
    F = sf.transform(ds.to_frame())
    m = FeatureMatcher(classifier, random_state=0).fit(F, ds.y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        risk = LearnRisk(m, cv=3, epochs=10, random_state=0)
        risk.fit_around(F, ds.y)
    return MatchModel(attributes, sf, m, risk_model=risk, **params)


@pytest.fixture(scope="session")
def dedup_model(febrl_split):
    train, _, _ = febrl_split
    return feature_match_model(_labelled(train), ATTRS, task="dedup", blocking=RULES)


@pytest.fixture(scope="session")
def small_pairs():
    """(train, test) of ``make_pairs(240, random_state=0)``: a link task of three attributes."""
    from skrisk.datasets import make_pairs

    ds = make_pairs(240, random_state=0)
    return ds.split("train"), ds.split("test")


def zip_entries(path: Path) -> dict[str, bytes]:
    """The entries of a model file (a zip archive), by name."""
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def write_zip(path: Path, entries: dict[str, bytes]) -> Path:
    """``entries`` written as the zip archive ``path``."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in entries.items():
            zf.writestr(name, blob)
    return path
