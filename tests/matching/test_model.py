"""MatchModel.save / load_model: round trips of every matcher kind, and the files it refuses."""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from skrisk.data import PairEncoder, SimilarityFeatures
from skrisk.datasets import make_pairs
from skrisk.exceptions import DataError
from skrisk.matchers import RNNMatcher
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matchers._rnn import make_rnn_pipeline
from skrisk.matching._model import FORMAT_VERSION
from skrisk.matching import MatchModel, load_model

from _match_fixtures import feature_match_model

MARKER = Path(__file__).with_name("_unpickled_code_ran.txt")


@pytest.fixture(scope="module")
def data():
    ds = make_pairs(240, random_state=0)
    tr, te = ds.split("train"), ds.split("test")
    return tr, te


@pytest.fixture(scope="module")
def feature_model(data):
    tr, _ = data
    return feature_match_model(tr, tr.attributes, threshold=0.4,
                               blocking=[("standard", "city"), ("tokens", ["name"], {"top_k": 3})])


def test_feature_model_round_trip(feature_model, data, tmp_path):
    _, te = data
    path = feature_model.save(tmp_path / "m.skrisk")
    loaded = load_model(path)
    before = feature_model.scorer(te.left, te.right).score(te.pairs)
    after = loaded.scorer(te.left, te.right).score(te.pairs)
    np.testing.assert_array_equal(after.proba, before.proba)
    np.testing.assert_allclose(after.risk, before.risk)
    assert loaded.risk_model.risk_model_ is not None
    assert loaded.threshold == 0.4 and loaded.task == "link" and loaded.attributes == te.attributes
    assert loaded.blocking == [("standard", ["city"], {}), ("tokens", ["name"], {"top_k": 3})]
    assert loaded.risk_model.estimator_ is loaded.matcher
    assert loaded.versions["skrisk"]


def test_pipeline_round_trip(data, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    tr, te = data
    sf = SimilarityFeatures().fit(tr.to_frame())
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(sf.transform(tr.to_frame()), tr.y)
    model = MatchModel(tr.attributes, sf, pipe)
    loaded = load_model(model.save(tmp_path / "p.skrisk"))
    before = model.scorer(te.left, te.right).score(te.pairs)
    after = loaded.scorer(te.left, te.right).score(te.pairs)
    np.testing.assert_array_equal(after.proba, before.proba)
    assert after.risk is None


def test_rnn_pipeline_round_trip(data, tmp_path, one_torch_thread):
    tr, te = data
    sf = SimilarityFeatures().fit(tr.to_frame())
    matcher = make_rnn_pipeline(max_length=6, features=SimilarityFeatures(), hidden_size=4, classifier_size=8,
                                embedding_dim=8, max_epochs=1, batch_size=64, device="cpu",
                                random_state=0).fit(tr.to_frame(), tr.y)
    model = MatchModel(tr.attributes, sf, matcher)
    path = model.save(tmp_path / "r.skrisk")
    assert {"rnn/config.json", "rnn/weights.pt"} <= set(zipfile.ZipFile(path).namelist())
    loaded = load_model(path, device="cpu")
    before = model.scorer(te.left, te.right).score(te.pairs)
    after = loaded.scorer(te.left, te.right).score(te.pairs)
    np.testing.assert_allclose(after.proba, before.proba, rtol=0, atol=1e-6)
    assert isinstance(matcher.steps[-1][1], RNNMatcher)  # the in-memory pipeline is untouched by saving


def test_bare_rnn_matcher_is_refused_with_the_fix(data):
    tr, _ = data
    enc = PairEncoder(max_length=4).fit(tr.to_frame())
    m = RNNMatcher(hidden_size=4, classifier_size=8, embedding_dim=8, max_epochs=1, device="cpu",
                   random_state=0).fit(enc.transform(tr.to_frame()), tr.y)
    with pytest.raises(DataError, match="Pipeline on pair frames"):
        MatchModel(tr.attributes, SimilarityFeatures().fit(tr.to_frame()), m).check()


class _RunsCode:
    def __reduce__(self):
        import os

        return (os.system, (f"touch {MARKER}",))


def test_pickle_file_is_refused(tmp_path):
    MARKER.unlink(missing_ok=True)
    path = tmp_path / "model.skrisk"
    path.write_bytes(pickle.dumps(_RunsCode()))
    with pytest.raises(DataError, match="pickle.*refused, nothing in it was run"):
        load_model(path)
    assert not MARKER.exists()


def test_pickle_inside_the_weights_is_refused(data, tmp_path):
    """A model file whose RNN weights entry is a pickle carrying code."""
    tr, _ = data
    sf = SimilarityFeatures().fit(tr.to_frame())
    m = make_rnn_pipeline(max_length=4, hidden_size=4, classifier_size=8, embedding_dim=8, max_epochs=1,
                          device="cpu", random_state=0).fit(tr.to_frame(), tr.y)
    good = MatchModel(tr.attributes, sf, m).save(tmp_path / "good.skrisk")
    bad = tmp_path / "bad.skrisk"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, pickle.dumps(_RunsCode()) if name == "rnn/weights.pt" else src.read(name))
    MARKER.unlink(missing_ok=True)
    with pytest.raises(DataError, match="refused"):
        load_model(bad, device="cpu")
    assert not MARKER.exists()


def test_untrusted_type_is_refused(feature_model, tmp_path):
    """An estimators.skops part holding a type outside the trusted list is not loaded."""
    import skops.io as sio

    path = feature_model.save(tmp_path / "m.skrisk")
    bad = tmp_path / "bad.skrisk"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "estimators.skops":
                data = sio.dumps({"features": None, "matcher": _Evil(), "risk_model": None})
            dst.writestr(name, data)
    with pytest.raises(DataError, match=r"does not trust.*_Evil.*trusted="):
        load_model(bad)


class _Evil:
    def predict_proba(self, X):  # pragma: no cover - never loaded
        return None


def _rewrite_meta(src: Path, dst: Path, edit) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "model.json":
                meta = json.loads(data)
                edit(meta)
                data = json.dumps(meta).encode()
            zout.writestr(name, data)


def test_newer_format_version_is_refused_clearly(feature_model, tmp_path):
    path = feature_model.save(tmp_path / "m.skrisk")
    newer = tmp_path / "newer.skrisk"
    _rewrite_meta(path, newer, lambda m: m.update(format_version=FORMAT_VERSION + 1,
                                                  versions={"skrisk": "9.0.0"}))
    with pytest.raises(DataError, match=r"written by skrisk 9\.0\.0 in model format 2.*Upgrade skrisk"):
        load_model(newer)


@pytest.mark.parametrize("blocking", ["tokens", [["standard", ["city"], {}]], [{"method": 3}],
                                      [{"method": "tokens", "columns": "name"}]])
def test_damaged_blocking_rules_are_refused(feature_model, tmp_path, blocking):
    """model.json's blocking rules are read in their one JSON form, or refused naming the file."""
    path = feature_model.save(tmp_path / "m.skrisk")
    bad = tmp_path / "bad.skrisk"
    _rewrite_meta(path, bad, lambda m: m.update(blocking=blocking))
    with pytest.raises(DataError, match=r"bad\.skrisk: the blocking rules in model\.json are damaged"):
        load_model(bad)


def test_parts_from_another_task_are_refused(feature_model, tmp_path):
    """model.json names attributes other than those the features were fitted on."""
    path = feature_model.save(tmp_path / "m.skrisk")
    other = tmp_path / "other.skrisk"
    _rewrite_meta(path, other, lambda m: m.update(attributes=["title", "price"]))
    with pytest.raises(DataError, match="different tasks"):
        load_model(other)


def test_other_files_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DataError, match="not a zip archive"):
        load_model(tmp_path / "notes.txt")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("model.json", "{}")
        zf.writestr("payload.pkl", b"x")
    (tmp_path / "z.skrisk").write_bytes(buf.getvalue())
    with pytest.raises(DataError, match="unexpected entries"):
        load_model(tmp_path / "z.skrisk")
    with pytest.raises(DataError, match="holds no model.skrisk"):
        load_model(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.skrisk")


def test_model_from_another_task_names_the_missing_column(feature_model):
    import pandas as pd

    table = pd.DataFrame({"title": ["a"], "price": [1]}, index=["x"])
    with pytest.raises(DataError, match=r"new\.csv has no column 'name'.*Rename"):
        feature_model.check_table(table, "new.csv")


def test_skops_imported_without_torch_trusts_the_same_types():
    """``_skops_io`` keeps torch out of skops' estimator walk, and skops' default trusted types
    are still every scikit-learn estimator (a fresh process)."""
    import subprocess
    import sys

    code = (
        "import sys; from skrisk.matching._model import _skops_io; _skops_io(); "
        "assert 'torch' not in sys.modules; "
        "from skops.io._trusted_types import SKLEARN_ESTIMATOR_TYPE_NAMES as got; "
        "from skops.io._utils import get_type_name; from sklearn.utils import all_estimators; "
        "want = [get_type_name(c) for _, c in all_estimators() if get_type_name(c).startswith('sklearn.')]; "
        "assert got == want, sorted(set(want) ^ set(got)); "
        "import sklearn.externals.array_api_compat.torch"  # importable again afterwards
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
