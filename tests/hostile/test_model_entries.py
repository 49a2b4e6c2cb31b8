"""Issue #48, the next cases of a saved model's entries: the RNN's ``rnn/config.json`` and
``rnn/weights.pt``, the pipeline's encoder, the forest and its scaler, LearnRisk's fitted numbers,
the blocking entries and the format entries of ``model.json``, the ``trusted`` names; and values
beyond float32 in ``RiskSampler``'s ``X_valid``.

Every crafted file is built here from a small model saved by the real code (a FeatureMatcher
forest with LearnRisk, and an RNN pipeline), one entry edited; each must be refused by
:func:`skrisk.matching.load_model` with a DataError naming the file, the entry and the fix, before
anything is scored.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.preprocessing import StandardScaler

from skrisk import RiskSampler
from skrisk.active import ActiveLearner
from skrisk.cli import main
from skrisk.data import SimilarityFeatures
from skrisk.exceptions import DataError
from skrisk.matchers import FeatureMatcher
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matchers._rnn import make_rnn_pipeline
from skrisk.matching._model import TRUSTED_TYPES
from skrisk.matching import MatchModel, load_model
from skrisk.strategies import entropy_sampling

from _match_fixtures import feature_match_model, small_pairs, write_zip, zip_entries  # noqa: F401 - a fixture


@pytest.fixture(scope="module")
def data(small_pairs):  # noqa: F811
    return small_pairs


@pytest.fixture(scope="module")
def models(data, tmp_path_factory):
    """Two real model files: a forest with LearnRisk (``forest``) and an RNN pipeline (``rnn``)."""
    tr, _ = data
    folder = tmp_path_factory.mktemp("models")
    forest = feature_match_model(tr, tr.attributes, classifier=RandomForestClassifier(n_estimators=4, random_state=0),
                                 blocking=[("tokens", None, {"top_k": 5})])
    torch.set_num_threads(1)
    rnn = make_rnn_pipeline(max_length=6, features=SimilarityFeatures(), hidden_size=4, classifier_size=8,
                            embedding_dim=8, max_epochs=1, batch_size=64, device="cpu",
                            random_state=0).fit(tr.to_frame(), tr.y)
    sf = SimilarityFeatures().fit(tr.to_frame())
    return {"forest": forest.save(folder / "forest.skrisk"),
            "rnn": MatchModel(tr.attributes, sf, rnn).save(folder / "rnn.skrisk")}


# ---------------------------------------------------------------------------- crafting
_entries, _write = zip_entries, write_zip


def _json_edit(entry: str, edit: Callable[[Any], Any]) -> Callable[[dict], None]:
    """An edit of the JSON entry ``entry``: ``edit(value)`` changes it in place or returns raw text."""
    def run(entries):
        value = json.loads(entries[entry])
        out = edit(value)
        entries[entry] = (out if isinstance(out, str) else json.dumps(value)).encode()
    return run


def _config(edit):
    return _json_edit("rnn/config.json", edit)


def _meta(edit):
    return _json_edit("model.json", edit)


def _weights(edit):
    """An edit of the state dict in ``rnn/weights.pt``."""
    def run(entries):
        state = torch.load(io.BytesIO(entries["rnn/weights.pt"]), weights_only=True)
        edit(state)
        buf = io.BytesIO()
        torch.save(state, buf)
        entries["rnn/weights.pt"] = buf.getvalue()
    return run


def _parts(edit):
    """An edit of the objects in ``estimators.skops`` (loaded, edited, written back; never used to predict here)."""
    def run(entries):
        parts = sio.loads(entries["estimators.skops"], trusted=list(TRUSTED_TYPES))
        edit(parts)
        entries["estimators.skops"] = sio.dumps(parts)
    return run


def _encoder(parts):
    return parts["matcher"].steps[0][1]


def _forest(parts):
    return parts["matcher"].classifier_


def _core(parts):
    return parts["risk_model"].risk_model_


def _set(get, name, value):
    """An edit of ``estimators.skops``: the attribute ``name`` of ``get(parts)`` set to ``value``."""
    return _parts(lambda parts: setattr(get(parts), name, value))


def _set_item(get, name, index, value):
    """An edit of ``estimators.skops``: one item of the array ``name`` of ``get(parts)``."""
    def edit(parts):
        arr = np.array(getattr(get(parts), name), copy=True)
        arr[index] = value
        setattr(get(parts), name, arr)
    return _parts(edit)


def _one_tensor(name, make):
    return _weights(lambda s: s.__setitem__(name, make(s[name])))


def _dup_key(text: str, key: str, value: str) -> str:
    """JSON text with ``"key": value`` added again at the top (JSON keeps the last of a repeated key)."""
    return "{" + f'"{key}": {value}, ' + text.strip()[1:]


def _duplicate_rule(parts):
    """Rule 0 of the risk model twice, every per-rule array extended to match (consistent, but counted twice)."""
    core = _core(parts)
    J = len(core.rules_)
    core.rules_.append(core.rules_[0])
    if parts["risk_model"].rules_ is not core.rules_:
        parts["risk_model"].rules_.append(core.rules_[0])
    for name in ("rule_weights_", "rule_rsd_", "rule_expectations_", "rule_coverage_"):
        arr = getattr(core, name)
        setattr(core, name, np.concatenate([arr, arr[:1]]))
    core.rsd_base_ = np.concatenate([core.rsd_base_[:J], core.rsd_base_[:1], core.rsd_base_[J:]])


def _no_rules(parts):
    core = _core(parts)
    J = len(core.rules_)
    core.rules_.clear()
    if parts["risk_model"].rules_ is not core.rules_:
        parts["risk_model"].rules_.clear()
    for name in ("rule_weights_", "rule_rsd_", "rule_expectations_", "rule_coverage_"):
        setattr(core, name, getattr(core, name)[:0])
    core.rsd_base_ = core.rsd_base_[J:]


def _misnamed_condition(parts):
    cond = _core(parts).rules_[0].conditions[0]
    other = [n for n in _core(parts).feature_names_ if n != cond.name][0]
    object.__setattr__(cond, "name", str(other))


@dataclass
class Case:
    id: str
    model: str  # "forest" or "rnn"
    edit: Callable[[dict], None]
    entry: str  # named in the message
    fragment: str  # in the message


def _c(id, model, edit, entry, fragment):
    return pytest.param(Case(id, model, edit, entry, fragment), id=id)


_RNN_PARAMS = "rnn/config.json"
_SK = "estimators.skops"
CASES = [
    # ---- rnn/config.json: the matcher's parameters, held to fit's constraints
    _c("rnn-hidden_size-string", "rnn", _config(lambda c: c["params"].update(hidden_size="4")), _RNN_PARAMS,
       "params['hidden_size'] is '4'"),
    _c("rnn-attention-string", "rnn", _config(lambda c: c["params"].update(attention="yes")), _RNN_PARAMS,
       "params['attention'] is 'yes'"),
    _c("rnn-dropout-5", "rnn", _config(lambda c: c["params"].update(dropout=5)), _RNN_PARAMS,
       "params['dropout'] is 5"),
    _c("rnn-rnn_dropout-negative", "rnn", _config(lambda c: c["params"].update(rnn_dropout=-0.5)), _RNN_PARAMS,
       "params['rnn_dropout'] is -0.5"),
    _c("rnn-eval-batch-0", "rnn", _config(lambda c: c["params"].update(iterator_valid__batch_size=0)), _RNN_PARAMS,
       "params['iterator_valid__batch_size'] is 0"),
    _c("rnn-eval-batch-true", "rnn", _config(lambda c: c["params"].update(iterator_valid__batch_size=True)),
       _RNN_PARAMS, "params['iterator_valid__batch_size'] is True"),
    _c("rnn-max_epochs-negative", "rnn", _config(lambda c: c["params"].update(max_epochs=-1)), _RNN_PARAMS,
       "params['max_epochs'] is -1"),
    _c("rnn-lr-negative", "rnn", _config(lambda c: c["params"].update(lr=-1.0)), _RNN_PARAMS, "params['lr'] is -1.0"),
    _c("rnn-use_features-unknown", "rnn", _config(lambda c: c["params"].update(use_features="evil")), _RNN_PARAMS,
       "params['use_features'] is 'evil'"),
    _c("rnn-class_weight-negative", "rnn", _config(lambda c: c["params"].update(class_weight=-3)), _RNN_PARAMS,
       "params['class_weight'] is -3"),
    # ---- rnn/config.json: sizes that would build a huge network before the shapes are compared
    _c("rnn-n_attributes-1e6", "rnn", _config(lambda c: c["module_dims"].update(n_attributes=10**6)), _RNN_PARAMS,
       "module_dims['n_attributes'] is 1000000"),
    _c("rnn-n_highway-1e6", "rnn", _config(lambda c: c["params"].update(n_highway=10**6)), _RNN_PARAMS,
       "params['n_highway'] is 1000000"),
    _c("rnn-config-duplicate-key", "rnn", _config(lambda c: _dup_key(json.dumps(c), "pos_weight", "1.0")),
       _RNN_PARAMS, "repeats the key 'pos_weight'"),
    # ---- rnn/weights.pt: dtypes and values the network would misread
    _c("rnn-weight-float16", "rnn", _one_tensor("output.weight", lambda t: t.half()), "rnn/weights.pt",
       "'output.weight' is torch.float16, not torch.float32"),
    _c("rnn-weight-int64", "rnn", _one_tensor("output.weight", lambda t: t.round().long()), "rnn/weights.pt",
       "'output.weight' is torch.int64, not torch.float32"),
    _c("rnn-weight-float64", "rnn", _one_tensor("classifier.0.bias", lambda t: t.double()), "rnn/weights.pt",
       "'classifier.0.bias' is torch.float64, not torch.float32"),
    _c("rnn-weight-bool", "rnn", _one_tensor("output.bias", lambda t: t > 0), "rnn/weights.pt",
       "'output.bias' is torch.bool, not torch.float32"),
    _c("rnn-weight-huge", "rnn", _one_tensor("output.weight", lambda t: torch.full_like(t, 3e38)), "rnn/weights.pt",
       "'output.weight' holds values up to 3e+38"),
    _c("rnn-feature-scale-0", "rnn", _one_tensor("feature_scale", lambda t: torch.zeros_like(t)), "rnn/weights.pt",
       "'feature_scale' holds 24 value(s) <= 0"),
    _c("rnn-feature-scale-negative", "rnn", _one_tensor("feature_scale", lambda t: -t), "rnn/weights.pt",
       "'feature_scale' holds 24 value(s) <= 0"),
    # ---- the pipeline's encoder (estimators.skops): lengths, ids, layout
    _c("encoder-max_length-1e9", "rnn", _set(_encoder, "max_length", 10**9), _SK,
       "max_length is 1000000000, not an int in [1, 10000]"),
    _c("encoder-max_length-0", "rnn", _set(_encoder, "max_length", 0), _SK, "max_length is 0"),
    _c("encoder-max_length-negative", "rnn", _set(_encoder, "max_length", -3), _SK, "max_length is -3"),
    _c("encoder-max_length-string", "rnn", _set(_encoder, "max_length", "6"), _SK, "max_length is '6'"),
    _c("encoder-token-id-negative", "rnn", _parts(lambda p: _encoder(p).vocabulary_.stoi.update(
        {next(iter(_encoder(p).vocabulary_.itos[2:])): -5})), _SK, "maps 1 token(s) to ids outside [0, "),
    _c("encoder-token-id-string", "rnn", _parts(lambda p: _encoder(p).vocabulary_.stoi.update(
        {next(iter(_encoder(p).vocabulary_.itos[2:])): "7"})), _SK, "maps 1 token(s) to ids outside [0, "),
    _c("encoder-one-attribute-less", "rnn", _set(_encoder, "attributes_", ["name", "city"]), _SK,
       "encodes the attributes ['name', 'city']"),
    _c("encoder-no-features", "rnn", _set(_encoder, "features_", None), _SK,
       "gives no similarity features, but the RNN reads 24"),
    # ---- the forest (FeatureMatcher) and its scaler
    _c("forest-classes-swapped", "forest", _set(lambda p: p["matcher"], "classes_", np.array([1, 0])), _SK,
       "classes_ is [1, 0], not [0, 1]"),
    _c("forest-inner-classes-swapped", "forest", _set(_forest, "classes_", np.array([1, 0])), _SK,
       "classes_ is [1, 0], not [0, 1]"),
    _c("forest-three-classes", "forest", _parts(lambda p: (setattr(_forest(p), "classes_", np.arange(3)),
                                                                     setattr(_forest(p), "n_classes_", 3))),
       _SK, "classes_ is [0, 1, 2], not [0, 1]"),
    _c("forest-no-estimators", "forest", _set(_forest, "estimators_", []), _SK,
       "estimators_ holds 0 estimators"),
    _c("forest-n_features-5", "forest", _set(lambda p: p["matcher"], "n_features_in_", 5), _SK,
       "reads 5 features, but the similarity features give 24"),
    _c("forest-scaler-mean-nan", "forest", _set_item(lambda p: p["matcher"].scaler_, "mean_", 3, np.nan), _SK,
       "scaler_.mean_"),
    _c("forest-scaler-scale-0", "forest", _set_item(lambda p: p["matcher"].scaler_, "scale_", 3, 0.0), _SK,
       "scaler_.scale_"),
    _c("forest-scaler-short", "forest", _parts(lambda p: setattr(
        p["matcher"].scaler_, "mean_", p["matcher"].scaler_.mean_[:5])), _SK, "scaler_.mean_"),
    _c("forest-classifier-not-a-classifier", "forest", _set(lambda p: p["matcher"], "classifier_", StandardScaler()),
       _SK, "classifier_ is a StandardScaler, which has no predict_proba"),
    # ---- LearnRisk's fitted numbers beyond the rules' shapes
    _c("learnrisk-duplicate-rule", "forest", _parts(_duplicate_rule), _SK, "repeats rule 0"),
    _c("learnrisk-negative-weight", "forest", _set_item(_core, "rule_weights_", 0, -2.0), _SK,
       "rule_weights_ holds values outside [0, inf)"),
    _c("learnrisk-rsd-negative", "forest", _set_item(_core, "rule_rsd_", 0, -0.5), _SK,
       "rule_rsd_ holds values outside [0, 1]"),
    _c("learnrisk-bin-rsd-5", "forest", _set_item(_core, "bin_rsd_", 0, 5.0), _SK,
       "bin_rsd_ holds values outside [0, 1]"),
    _c("learnrisk-expectation-7", "forest", _set_item(_core, "rule_expectations_", 0, 7.0), _SK,
       "rule_expectations_ holds values outside [0, 1]"),
    _c("learnrisk-bin-expectation--3", "forest", _set_item(_core, "bin_expectations_", 0, -3.0), _SK,
       "bin_expectations_ holds values outside [0, 1] (or -1"),
    _c("learnrisk-rsd-base-0", "forest", _set_item(_core, "rsd_base_", 0, 0.0), _SK,
       "rsd_base_ holds values outside (0, 1]"),
    _c("learnrisk-weight-function-negative", "forest", _set(_core, "weight_function_", (-5.0, 0.5)), _SK,
       "weight_function_ is (-5.0, 0.5), not two numbers >= 0"),
    _c("learnrisk-theta-0.2", "forest", _set(_core, "theta", 0.2), _SK, "theta is 0.2, not a number in (0.5, 1)"),
    _c("learnrisk-device-unknown", "forest", _set(_core, "device", "evil"), _SK, "device is 'evil'"),
    _c("learnrisk-misnamed-condition", "forest", _parts(_misnamed_condition), _SK, "is named"),
    # ---- model.json: blocking entries
    _c("blocking-unknown-key", "forest", _meta(lambda m: m["blocking"][0].update(evil=1)), "model.json",
       "unknown keys ['evil']"),
    _c("blocking-empty-list", "forest", _meta(lambda m: m.update(blocking=[])), "model.json", "holds no rule"),
    _c("blocking-a-string", "forest", _meta(lambda m: m.update(blocking="tokens")), "model.json", "not a list"),
    _c("blocking-rule-a-list", "forest", _meta(lambda m: m.update(blocking=[["tokens", None, {}]])), "model.json",
       "bad rule"),
    _c("blocking-top_k-true", "forest", _meta(lambda m: m["blocking"][0]["params"].update(top_k=True)), "model.json",
       "top_k must be a positive int"),
    _c("blocking-top_k-string", "forest", _meta(lambda m: m["blocking"][0]["params"].update(top_k="10")),
       "model.json", "top_k must be a positive int"),
    _c("blocking-budget-1e300", "forest", _meta(lambda m: m["blocking"][0]["params"].update(budget=1e300)),
       "model.json", "budget must be a positive number at most 10000"),
    _c("blocking-rescore-1e18", "forest", _meta(lambda m: m["blocking"][0]["params"].update(rescore=10**18)),
       "model.json", "rescore must be a positive int at most 1000"),
    _c("blocking-max_pairs-1e30", "forest", _meta(lambda m: m.update(blocking=[
        {"method": "standard", "columns": ["city"], "params": {"max_pairs": 10**30}}])), "model.json",
       "max_pairs must be None or a positive int at most"),
    # ---- model.json: format and types
    _c("meta-unknown-key", "forest", _meta(lambda m: m.update(evil=1)), "model.json", "unknown keys ['evil']"),
    _c("meta-duplicate-key", "forest", _meta(lambda m: _dup_key(json.dumps(m), "threshold", "0.01")), "model.json",
       "repeats the key 'threshold'"),
    _c("meta-versions-a-list", "forest", _meta(lambda m: m.update(versions=["x"])), "model.json",
       "versions is a JSON list"),
    _c("meta-sklearn-kind-with-rnn-entries", "rnn", _meta(lambda m: m.update(matcher_kind="sklearn")), "model.json",
       "matcher_kind is 'sklearn' but the file holds ['rnn/config.json', 'rnn/weights.pt']"),
]


def _craft(models, case, tmp_path) -> Path:
    entries = _entries(models[case.model])
    case.edit(entries)
    return _write(tmp_path / f"{case.id}.skrisk", entries)


def outcome(path: Path, original: Path, data) -> str:
    """What loading, then scoring, the file does, against the original file (the record of "before")."""
    _, te = data
    try:
        t0 = time.perf_counter()
        model = load_model(path, device="cpu")
        took = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - recorded
        return f"load: {type(exc).__name__}: {str(exc)[:160]}"
    try:
        s = model.scorer(te.left, te.right).score(te.pairs)
    except Exception as exc:  # noqa: BLE001 - recorded
        return f"loaded ({took:.1f} s); scoring: {type(exc).__name__}: {str(exc)[:160]}"
    ref = load_model(original, device="cpu").scorer(te.left, te.right).score(te.pairs)
    dp = float(np.max(np.abs(np.asarray(s.proba) - ref.proba)))
    dr = None if ref.risk is None else float(np.max(np.abs(np.asarray(s.risk) - ref.risk)))
    return f"loaded ({took:.1f} s) and scored: max change of probability {dp:.3g}, of risk {dr if dr is None else f'{dr:.3g}'}"


@pytest.mark.parametrize("case", CASES)
def test_a_crafted_entry_is_refused_at_load_naming_file_and_entry(models, tmp_path, case):
    path = _craft(models, case, tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(DataError) as info:
        load_model(path, device="cpu")
    msg = str(info.value)
    assert time.perf_counter() - t0 < 30, "refused, but only after building what the entry asked for"
    assert str(path) in msg and case.entry in msg and case.fragment in msg, msg
    assert any(fix in msg for fix in ("save the model again", "save it again", "re-save", "retrain", "Fix that entry",
                                      "restore the file")), msg


@pytest.mark.parametrize("id", ["forest", "rnn"])
def test_the_real_files_still_load_and_score(models, data, id):
    _, te = data
    model = load_model(models[id], device="cpu")
    proba = model.scorer(te.left, te.right).score(te.pairs).proba
    assert np.isfinite(proba).all() and ((proba >= 0) & (proba <= 1)).all()


def test_a_learnrisk_without_rules_still_loads(models, data, tmp_path):
    """No rule fired in training is a valid LearnRisk (the risk comes from the bins alone)."""
    _, te = data
    path = _craft(models, Case("no-rules", "forest", _parts(_no_rules), "", ""), tmp_path)
    risk = load_model(path).scorer(te.left, te.right).score(te.pairs).risk
    assert np.isfinite(risk).all()


def test_a_tree_listed_many_times_counts_each_time(models, tmp_path, monkeypatch):
    """The forest's ``estimators_`` listing one tree many times (one object in the file, so the
    node limit counts it once): prediction runs it every time. Refused beyond MAX_ESTIMATORS
    (10,000: a list of 20,000 made scoring 48 pairs take minutes; made small here)."""
    # internal on purpose: the estimator limit, made small
    import skrisk.matching._validate as v

    path = _craft(models, Case("many", "forest", _parts(lambda p: setattr(
        _forest(p), "estimators_", _forest(p).estimators_[:1] * 30)), "", ""), tmp_path)
    monkeypatch.setattr(v, "MAX_ESTIMATORS", 10)
    with pytest.raises(DataError, match=r"estimators_ holds 30 estimators, not 1 to 10\b"):
        load_model(path)


def test_a_risk_model_saved_on_a_gpu_scores_here(models, data, tmp_path):
    """A LearnRisk saved with device="cuda:7" scores on a machine without that GPU: on the CPU
    (float64 either way), the risks of the original."""
    _, te = data
    path = _craft(models, Case("gpu", "forest", _set(_core, "device", "cuda:7"), "", ""), tmp_path)
    risk = load_model(path).scorer(te.left, te.right).score(te.pairs).risk
    np.testing.assert_allclose(risk, load_model(models["forest"]).scorer(te.left, te.right).score(te.pairs).risk)


def test_skrisk_match_refuses_a_crafted_entry_before_any_work(models, data, tmp_path, capsys):
    """Through the command line: exit 2 naming the file and the entry, no output folder."""
    _, te = data
    path = _craft(models, Case("x", "rnn", _set(_encoder, "max_length", 10**9), "", ""), tmp_path)
    left, right = tmp_path / "l.csv", tmp_path / "r.csv"
    te.left.rename_axis("id").reset_index().to_csv(left, index=False)
    te.right.rename_axis("id").reset_index().to_csv(right, index=False)
    code = main(["match", "--no-progress", "--model", str(path), "--left", str(left), "--right", str(right),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "x.skrisk" in err and "max_length" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("trusted, fragment", [
    (True, "trusted must be a list of type names"),
    ("skrisk.data._tokenize.Vocabulary", "trusted must be a list of type names"),
    (["not a type name"], "'not a type name' is not a type name"),
])
def test_trusted_names_that_are_not_a_list_of_type_names_are_refused(models, trusted, fragment):
    with pytest.raises(TypeError, match=fragment):
        load_model(models["forest"], trusted=trusted)


def test_a_newer_format_version_says_to_upgrade(models, tmp_path):
    """Handled before (kept): a file of a future format names the version and the fix."""
    entries = _entries(models["forest"])
    _meta(lambda m: m.update(format_version=10**100))(entries)
    with pytest.raises(DataError, match=r"in model format 1000+; this skrisk .* Upgrade skrisk"):
        load_model(_write(tmp_path / "new.skrisk", entries))


# ---------------------------------------------------------------------------- X_valid beyond float32
@pytest.mark.parametrize("value", [1e39, -3.5e38])
def test_x_valid_values_beyond_float32_name_the_row_and_column(value):
    """Item 14's rest: scikit-learn's "too large for dtype('float32')", with no row or column."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(100, 4))
    y = (X[:, 0] > 0.5).astype(int)
    Xv = X[60:].copy()
    Xv[5, 2] = value
    learner = ActiveLearner(FeatureMatcher(RandomForestClassifier(n_estimators=5, random_state=0), random_state=0),
                            entropy_sampling, X_training=X[:40], y_training=y[:40])
    sampler = RiskSampler(X_valid=Xv, y_valid=y[60:], random_state=0)
    with pytest.raises(DataError, match=r"X_valid holds values beyond float32's range .* first at row 5 \(column 2: "):
        sampler(learner, X[40:60], n_instances=3)
    frame = pd.DataFrame(Xv, columns=["f0", "f1", "f2", "f3"])
    learner = ActiveLearner(FeatureMatcher(RandomForestClassifier(n_estimators=5, random_state=0), random_state=0),
                            entropy_sampling, X_training=pd.DataFrame(X[:40], columns=frame.columns),
                            y_training=y[:40])
    with pytest.raises(DataError, match=r"first at row 5 \(column 'f2': .*rescale"):
        RiskSampler(X_valid=frame, y_valid=y[60:], random_state=0)(
            learner, pd.DataFrame(X[40:60], columns=frame.columns), n_instances=3)
