"""Hostile matcher files: config.json of the wrong shape, NaN weights, truncated or pickled weights."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from skrisk.data import PairEncoder
from skrisk.exceptions import DataError
from skrisk.matchers import RNNMatcher, load_matcher

MARKER = Path(__file__).with_name("_unpickled_code_ran.txt")


@pytest.fixture(scope="module")
def saved(beer, tmp_path_factory):
    """A tiny fitted RNNMatcher saved once, and pool rows to predict."""
    tr = beer.split("train")
    X = PairEncoder(max_length=6).fit(tr.to_frame()).transform(tr.to_frame())
    torch.set_num_threads(1)
    m = RNNMatcher(hidden_size=4, classifier_size=8, embedding_dim=8, max_epochs=1, batch_size=64,
                   device="cpu", random_state=0).fit(X, tr.y)
    folder = tmp_path_factory.mktemp("matcher") / "m"
    m.save(folder)
    return folder, X[:20], m.predict_proba(X[:20])


@pytest.fixture
def copy(saved, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(saved[0], folder)
    return folder


def _edit_config(folder: Path, edit) -> None:
    path = folder / "config.json"
    cfg = json.loads(path.read_text())
    out = edit(cfg)
    path.write_text(json.dumps(cfg if out is None else out))


def test_roundtrip_still_exact(saved):
    folder, X, P = saved
    np.testing.assert_array_equal(load_matcher(folder, device="cpu").predict_proba(X), P)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda c: [c], "top level is a JSON list"),
        (lambda c: c.update(params=[1, 2]), "'params' is a JSON list"),
        (lambda c: c.pop("module_dims") and None, "'module_dims' is missing"),
        (lambda c: c["module_dims"].update(n_attributes="two"), "n_attributes"),
        (lambda c: c["module_dims"].update(n_embeddings=-5), "n_embeddings"),
        (lambda c: c.update(classes=[0, 2]), r"classes is \[0, 2\]"),
        (lambda c: c.update(classes=["no", "yes"]), "classes is"),
        (lambda c: c.update(pos_weight=float("nan")), "pos_weight"),
        (lambda c: c.update(pos_weight="1"), "'pos_weight' is a JSON str"),
        (lambda c: c.update(format_version="1"), "format_version"),
        (lambda c: c.update(format_version=99), "newer skrisk"),
        (lambda c: c["params"].update(optimizer="lr_scheduler"), "torch.optim optimizer"),
        (lambda c: c["params"].update(optimizer="__class__"), "torch.optim optimizer"),
        (lambda c: c["params"].update(evil_param=1), "unknown keys"),
        (lambda c: c["params"].update(hidden_size={"a": 1}), r"params\['hidden_size'\] is a JSON dict"),
        (lambda c: c["params"].update(hidden_size=-3), "do not build a network"),
        # a network of ~10**11 weights: refused from its shapes, nothing allocated
        (lambda c: c["params"].update(hidden_size=100_000), r"has shape \(\d+, \d+\) but .*config.json describes"),
        (lambda c: c["module_dims"].update(n_attributes=7), "missing tensors|describes"),
        (lambda c: c.update(embeddings="glove"), "embeddings is 'glove'"),
        (lambda c: c.update(best_epoch=-1), "best_epoch"),
        (lambda c: {"format": "sklearn.ensemble.RandomForestClassifier", "format_version": 1}, "not an RNNMatcher"),
    ],
)
def test_config_of_the_wrong_shape(copy, edit, match):
    """Before: most of these loaded, or failed with a bare AttributeError / KeyError / TypeError."""
    _edit_config(copy, edit)
    with pytest.raises(DataError, match=match) as info:
        load_matcher(copy, device="cpu")
    assert str(copy / "config.json") in str(info.value) or "newer skrisk" in str(info.value)


def test_config_not_json(copy):
    (copy / "config.json").write_bytes(b"\x00\xff not json")
    with pytest.raises(DataError, match="not UTF-8|not valid JSON"):
        load_matcher(copy, device="cpu")
    (copy / "config.json").write_text('{"format": "skrisk.RNNMatcher", ')
    with pytest.raises(DataError, match=r"config.json: it is not valid JSON .*line 1.*re-save"):
        load_matcher(copy, device="cpu")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_weights_refused_naming_the_tensor(copy, bad):
    """Before: loaded, and predict_proba returned NaN."""
    state = torch.load(copy / "weights.pt", weights_only=True)
    name = next(k for k, v in state.items() if v.is_floating_point() and v.ndim == 2)
    state[name][0, 0] = bad
    torch.save(state, copy / "weights.pt")
    with pytest.raises(DataError, match=rf"weights.pt: tensor '{name}' holds 1 NaN or infinite value.*retrain"):
        load_matcher(copy, device="cpu")


def test_weights_that_do_not_fit_the_config(copy):
    state = torch.load(copy / "weights.pt", weights_only=True)
    name = next(k for k, v in state.items() if v.ndim == 2 and k != "embedding.weight")
    bigger = dict(state)
    bigger[name] = torch.zeros(state[name].shape[0] + 1, state[name].shape[1])
    torch.save(bigger, copy / "weights.pt")
    with pytest.raises(DataError, match=rf"tensor '{name}' has shape .* describes"):
        load_matcher(copy, device="cpu")
    fewer = {k: v for k, v in state.items() if k != name}
    torch.save(fewer, copy / "weights.pt")
    with pytest.raises(DataError, match=rf"missing tensors \['{name}'\]"):
        load_matcher(copy, device="cpu")
    torch.save([1, 2, 3], copy / "weights.pt")
    with pytest.raises(DataError, match="holds a list, not a dictionary of named tensors"):
        load_matcher(copy, device="cpu")
    torch.save({"x": 3}, copy / "weights.pt")
    with pytest.raises(DataError, match="entry 'x' is a int, not a tensor"):
        load_matcher(copy, device="cpu")


@pytest.mark.parametrize("keep", [0, 100, 0.5, -10])
def test_truncated_weights(copy, keep):
    """Before: a bare RuntimeError from torch's zip reader (or EOFError for an empty file)."""
    data = (copy / "weights.pt").read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else (keep if keep >= 0 else len(data) + keep)
    (copy / "weights.pt").write_bytes(data[:n])
    with pytest.raises(DataError, match="weights.pt cannot be read as a torch weights file.*truncated or corrupt"):
        load_matcher(copy, device="cpu")


class _Evil:
    """Unpickling this creates MARKER: proof that code ran."""

    def __reduce__(self):
        return (open, (str(MARKER), "w"))


@pytest.mark.parametrize("how", ["torch.save", "raw pickle"])
def test_pickle_payload_is_refused_without_running(copy, how):
    MARKER.unlink(missing_ok=True)
    if how == "torch.save":
        torch.save({"embedding.weight": _Evil()}, copy / "weights.pt")
    else:
        (copy / "weights.pt").write_bytes(pickle.dumps({"x": _Evil()}, protocol=2))
    try:
        with pytest.raises(DataError, match="refused|cannot be read"):
            load_matcher(copy, device="cpu")
        assert not MARKER.exists()
    finally:
        MARKER.unlink(missing_ok=True)


def test_save_is_atomic_and_leaves_no_temporary_files(saved, tmp_path):
    folder, X, P = saved
    m = load_matcher(folder, device="cpu")
    m.save(tmp_path / "again")
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == ["config.json", "weights.pt"]
    np.testing.assert_array_equal(load_matcher(tmp_path / "again", device="cpu").predict_proba(X), P)


@pytest.mark.parametrize("key", ["stack_forest", "feature_skip"])
def test_a_removed_option_left_on_is_refused_naming_the_file(saved, tmp_path, key):
    """A matcher saved by an earlier skrisk with an option that is gone (measured useless) cannot
    predict as it did: refused with the file and the fix, not loaded differently."""
    folder = tmp_path / "m"
    shutil.copytree(saved[0], folder)
    config = json.loads((folder / "config.json").read_text())
    config["params"][key] = True
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(DataError, match=rf"config\.json was saved with {key}=True.*retrain"):
        load_matcher(folder, device="cpu")
    config["params"][key] = False  # left off: loads as before
    (folder / "config.json").write_text(json.dumps(config))
    np.testing.assert_array_equal(load_matcher(folder, device="cpu").predict_proba(saved[1]), saved[2])
