"""Hostile model files built only from trusted types (issue #29, "Model files that crash or hang").

Each file is crafted here from a real saved model: its ``estimators.skops`` is loaded, one array
or rule is altered, and the parts are written back. Nothing crafted is ever used for prediction
in this process: before the fix, a child index of 2**40 or a feature index of 10**9 crashed
``skrisk match`` with SIGSEGV and a child index pointing back made it loop forever.
"""

from __future__ import annotations

import io
import os
import threading
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import skops.io as sio
from sklearn.ensemble import ExtraTreesClassifier, GradientBoostingClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from skrisk.cli import main
from skrisk.data import SimilarityFeatures
from skrisk.datasets import make_pairs
from skrisk.exceptions import DataError
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matching._model import TRUSTED_TYPES
from skrisk.matching import MatchModel, load_model

from _match_fixtures import feature_match_model, write_zip, zip_entries


@pytest.fixture(scope="module")
def data():
    ds = make_pairs(240, random_state=0)
    return ds.split("train"), ds.split("test")


@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    """A real model file: similarity features, a FeatureMatcher (a small random forest) and LearnRisk."""
    tr, _ = data
    model = feature_match_model(tr, tr.attributes, classifier=RandomForestClassifier(n_estimators=4, random_state=0))
    return model.save(tmp_path_factory.mktemp("model") / "m.skrisk")


_entries, _write = zip_entries, write_zip


def _craft(src: Path, dst: Path, edit) -> Path:
    """``src`` with its parts edited by ``edit(parts)`` (the parts are never used to predict)."""
    entries = _entries(src)
    parts = sio.loads(entries["estimators.skops"], trusted=list(TRUSTED_TYPES))
    edit(parts)
    entries["estimators.skops"] = sio.dumps(parts)
    return _write(dst, entries)


def _trees(obj) -> list:
    """The fitted decision trees inside ``obj`` (estimators with a ``tree_``), in order."""
    out, stack, seen = [], [obj], set()
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if hasattr(o, "tree_") and not isinstance(o, type):
            out.append(o)
        if isinstance(o, dict):
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, np.ndarray) and o.dtype == object:
            stack.extend(o.ravel())
        elif hasattr(o, "__dict__") and not isinstance(o, type):
            stack.extend(vars(o).values())
    return out


def _edit_nodes(field: str, value, node: int | None = None):
    """An edit of the first tree's node array: ``field`` of an internal node set to ``value``."""

    def edit(parts):
        tree = _trees(parts["matcher"])[0].tree_
        state = tree.__getstate__()
        nodes = state["nodes"].copy()
        i = node if node is not None else int(np.flatnonzero(nodes["left_child"] != -1)[-1])
        nodes[field][i] = value
        state["nodes"] = nodes
        tree.__setstate__(state)

    return edit


def _last_inner(parts) -> int:
    left = _trees(parts["matcher"])[0].tree_.children_left
    return int(np.flatnonzero(left != -1)[-1])


@pytest.mark.parametrize(
    "field, value, node, match",
    [
        ("left_child", 2**40, None, r"children .* after their parent"),  # SIGSEGV before
        ("right_child", 2**40, None, r"children .* after their parent"),
        ("left_child", 0, 0, r"node 0 has the children 0 and"),  # a cycle: hung before
        ("right_child", 0, None, r"children .* after their parent"),  # points back to the root
        ("left_child", -7, None, r"children .* after their parent|one child"),
        ("feature", 10**9, None, r"splits on feature 1000000000, outside \[0, "),  # SIGSEGV before
        ("feature", -3, None, r"splits on feature -3"),
        ("threshold", np.nan, None, r"threshold nan, not a finite number"),
        ("threshold", np.inf, None, r"threshold inf, not a finite number"),
    ],
)
def test_tree_arrays_that_crash_or_hang_are_refused(saved, tmp_path, field, value, node, match):
    path = _craft(saved, tmp_path / "bad.skrisk", _edit_nodes(field, value, node))
    with pytest.raises(DataError, match=match) as info:
        load_model(path)
    msg = str(info.value)
    assert str(path) in msg and "estimators.skops" in msg and "save the model again" in msg


def test_a_leaf_with_one_child_is_refused(saved, tmp_path):
    def edit(parts):
        tree = _trees(parts["matcher"])[0].tree_
        state = tree.__getstate__()
        nodes = state["nodes"].copy()
        leaf = int(np.flatnonzero(nodes["left_child"] == -1)[0])
        nodes["left_child"][leaf] = tree.node_count - 1 if leaf < tree.node_count - 1 else 0
        state["nodes"] = nodes
        tree.__setstate__(state)

    with pytest.raises(DataError, match="has one child|children"):
        load_model(_craft(saved, tmp_path / "bad.skrisk", edit))


def test_nan_leaf_values_are_refused(saved, tmp_path):
    def edit(parts):
        tree = _trees(parts["matcher"])[0].tree_
        state = tree.__getstate__()
        state["values"] = state["values"].copy()
        state["values"][0, 0, 0] = np.nan
        tree.__setstate__(state)

    with pytest.raises(DataError, match="leaf values that are not finite"):
        load_model(_craft(saved, tmp_path / "bad.skrisk", edit))


def test_a_tree_of_an_ensemble_reading_more_features_is_refused(saved, tmp_path):
    """A forest checks X against its own width and calls its trees unchecked: a tree that claims
    more features than the forest takes would read past the rows."""

    def edit(parts):
        est = _trees(parts["matcher"])[0]
        est.n_features_in_ = est.n_features_in_ + 50

    with pytest.raises(DataError, match=r"takes \d+ features inside an ensemble that takes \d+"):
        load_model(_craft(saved, tmp_path / "bad.skrisk", edit))


def test_tree_larger_than_the_limit_is_refused(saved, tmp_path, monkeypatch):
    """Sizes are bounded (the real limit, 2**24 nodes a tree, cannot be crafted in a fast test)."""
    # internal on purpose: the tree-size limits, made small
    import skrisk.matching._validate as v

    path = _craft(saved, tmp_path / "ok.skrisk", lambda parts: None)
    monkeypatch.setattr(v, "MAX_TREE_NODES", 3)
    with pytest.raises(DataError, match=r"has \d+ nodes, outside \[1, 3\]"):
        load_model(path)
    monkeypatch.setattr(v, "MAX_TREE_NODES", 2**24)
    monkeypatch.setattr(v, "MAX_TOTAL_TREE_NODES", 10)
    with pytest.raises(DataError, match="tree nodes to .* more than the 10 "):
        load_model(path)


def test_a_huge_n_estimators_parameter_is_harmless(saved, data, tmp_path):
    """Prediction reads the fitted trees, not the parameter: the file loads and scores as before."""
    _, te = data

    def edit(parts):
        parts["matcher"].classifier_.n_estimators = 10**12

    loaded = load_model(_craft(saved, tmp_path / "big.skrisk", edit))
    before = load_model(saved).scorer(te.left, te.right).score(te.pairs).proba
    np.testing.assert_array_equal(loaded.scorer(te.left, te.right).score(te.pairs).proba, before)


@pytest.mark.parametrize("make", [
    lambda: GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0),
    lambda: ExtraTreesClassifier(n_estimators=5, random_state=0),
    lambda: DecisionTreeClassifier(random_state=0),
], ids=["gradient_boosting", "extra_trees", "decision_tree"])
def test_other_tree_estimators_are_checked_too(data, tmp_path, make):
    tr, te = data
    sf = SimilarityFeatures().fit(tr.to_frame())
    clf = make().fit(sf.transform(tr.to_frame()), tr.y)
    path = MatchModel(tr.attributes, sf, clf).save(tmp_path / "ok.skrisk")
    good = load_model(path)  # the real file still loads and scores
    assert good.scorer(te.left, te.right).score(te.pairs).proba.shape == (len(te.pairs),)
    for field, value in (("left_child", 2**40), ("feature", 10**9), ("right_child", 0)):
        bad = _craft(path, tmp_path / f"bad_{field}.skrisk", _edit_nodes(field, value))
        with pytest.raises(DataError, match="estimators.skops"):
            load_model(bad)


# ---------------------------------------------------------------------------- LearnRisk rules
def _risk_core(parts):
    return parts["risk_model"].risk_model_


def _edit_condition(attr: str, value):
    def edit(parts):
        cond = _risk_core(parts).rules_[0].conditions[0]
        object.__setattr__(cond, attr, value)

    return edit


@pytest.mark.parametrize(
    "edit, match",
    [
        (_edit_condition("threshold", "abc"), r"threshold 'abc', not a finite number"),  # numpy traceback before
        (_edit_condition("threshold", float("nan")), r"threshold nan"),
        (_edit_condition("threshold", True), r"threshold True"),
        (_edit_condition("op", "<<"), r"operator '<<', not '<=' or '>'"),
        (_edit_condition("op", "__import__"), r"operator '__import__'"),
        (_edit_condition("feature", 10**6), r"reads feature 1000000, not an index in \[0, \d+\)"),
        (_edit_condition("feature", -1), r"reads feature -1"),
        (_edit_condition("feature", "0"), r"reads feature '0'"),
        (lambda p: object.__setattr__(_risk_core(p).rules_[0], "label", 7), r"label 7, not 0 or 1"),
        (lambda p: object.__setattr__(_risk_core(p).rules_[0], "conditions", ()), r"not a tuple of 1 to"),
        (lambda p: object.__setattr__(_risk_core(p).rules_[0], "conditions", ("x <= 1",)), r"is a str, not a Condition"),
        (lambda p: _risk_core(p).rules_.append("rm -rf"), r"is a str, not a Rule"),
        (lambda p: setattr(_risk_core(p), "rule_weights_", _risk_core(p).rule_weights_[:-1]), r"rule_weights_ is not a numeric vector of length"),
        (lambda p: _risk_core(p).rule_rsd_.__setitem__(0, np.inf), r"rule_rsd_ holds values that are not finite"),
        (lambda p: setattr(_risk_core(p), "bin_rsd_", np.array(["a"] * len(_risk_core(p).bin_rsd_))), r"bin_rsd_ is not a numeric vector"),
    ],
)
def test_rules_that_crash_or_mislead_are_refused(saved, tmp_path, edit, match):
    path = _craft(saved, tmp_path / "bad.skrisk", edit)
    with pytest.raises(DataError, match=match) as info:
        load_model(path)
    assert str(path) in str(info.value) and "rules_" in str(info.value) or "rule" in str(info.value)


# ---------------------------------------------------------------------------- sizes and file kinds
def _bomb_entry(zf: zipfile.ZipFile, name: str, size: int) -> None:
    block = b" " * 2**20
    with zf.open(name, "w", force_zip64=True) as fh:
        for _ in range(size // len(block)):
            fh.write(block)


def test_json_bomb_is_refused_before_it_is_read(saved, tmp_path):
    """Before: a 1.1 MB model.json that unpacks to 1 GiB loaded (2.5 GB of memory)."""
    entries = _entries(saved)
    path = tmp_path / "bomb.skrisk"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        _bomb_entry(zf, "model.json", 64 * 2**20)  # 64 MiB of JSON whitespace, ~64 KB packed
        zf.writestr("estimators.skops", entries["estimators.skops"])
    assert path.stat().st_size < 2 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=r"model.json unpacks to 67108864 bytes, more than the \d+ it may hold"):
            load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20  # refused from the zip directory: the entry was never unpacked


def test_json_bomb_inside_the_skops_archive_is_refused(saved, tmp_path):
    entries = _entries(saved)
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(entries["estimators.skops"])) as inner, \
            zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for i in inner.infolist():
            if i.filename == "schema.json":
                _bomb_entry(out, "schema.json", 600 * 2**20)
            else:
                out.writestr(i, inner.read(i))
    entries["estimators.skops"] = buf.getvalue()
    with pytest.raises(DataError, match=r"estimators.skops entry schema.json unpacks to \d+ bytes"):
        load_model(_write(tmp_path / "bomb.skrisk", entries))


@pytest.mark.parametrize("name", ["model.json", "estimators.skops"])
def test_duplicated_entries_are_refused(saved, tmp_path, name):
    entries = _entries(saved)
    path = tmp_path / "dup.skrisk"
    with pytest.warns(UserWarning, match="Duplicate name"):
        with zipfile.ZipFile(path, "w") as zf:
            for n, d in entries.items():
                zf.writestr(n, d)
            zf.writestr(name, entries[name])
    with pytest.raises(DataError, match="repeated names"):
        load_model(path)


def test_duplicated_entries_inside_the_skops_archive_are_refused(saved, tmp_path):
    entries = _entries(saved)
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(entries["estimators.skops"])) as inner, zipfile.ZipFile(buf, "w") as out:
        for i in inner.infolist():
            out.writestr(i, inner.read(i))
        with pytest.warns(UserWarning, match="Duplicate name"):
            out.writestr("schema.json", b"{}")
    entries["estimators.skops"] = buf.getvalue()
    with pytest.raises(DataError, match="estimators.skops holds the unexpected entries repeated names"):
        load_model(_write(tmp_path / "dup.skrisk", entries))


def _finishes(fn, seconds: float = 20.0):
    """``fn()`` run in a thread: ``(result, exception)``, failing the test if it hangs."""
    box: list = []

    def run():
        try:
            box.append((fn(), None))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append((None, exc))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert box, f"still running after {seconds} s: it hangs"
    return box[0]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_is_refused_without_reading(tmp_path, capsys):
    """Before: ``--model /dev/zero`` hung."""
    _, exc = _finishes(lambda: load_model("/dev/zero"))
    assert isinstance(exc, DataError) and "/dev/zero is a device, not a regular file" in str(exc)
    table = tmp_path / "t.csv"
    table.write_text("id,name\n1,a\n")
    rc, exc = _finishes(lambda: main(["match", "--model", "/dev/zero", "--left", str(table),
                                      "--out", str(tmp_path / "out")]))
    assert exc is None and rc == 2
    assert "/dev/zero is a device" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_blocking(tmp_path):
    """Before: a FIFO nobody writes to hung the load."""
    fifo = tmp_path / "model.skrisk"
    os.mkfifo(fifo)
    _, exc = _finishes(lambda: load_model(fifo))
    assert isinstance(exc, DataError) and "is a FIFO (named pipe), not a regular file" in str(exc)
    _, exc = _finishes(lambda: load_model(tmp_path))  # a session folder whose model.skrisk is a FIFO
    assert isinstance(exc, DataError)


def _replace_node_arrays(src: Path, dst: Path, make) -> Path:
    """``src`` with every tree's node array inside the skops archive replaced by ``make(nodes)``
    (written as .npy, as skops stores arrays: the crafted types never pass through sklearn here)."""
    entries = _entries(src)
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(entries["estimators.skops"])) as inner, zipfile.ZipFile(buf, "w") as out:
        for i in inner.infolist():
            data = inner.read(i)
            if i.filename.endswith(".npy"):
                arr = np.load(io.BytesIO(data), allow_pickle=False)
                if arr.dtype.names and "left_child" in arr.dtype.names:
                    npy = io.BytesIO()
                    np.save(npy, make(arr), allow_pickle=False)
                    data = npy.getvalue()
            out.writestr(i, data)
    entries["estimators.skops"] = buf.getvalue()
    return _write(dst, entries)


@pytest.mark.parametrize("make", [
    lambda a: np.zeros(a.shape, dtype=np.float64),  # plain floats instead of the node records
    lambda a: a[:-1],  # fewer nodes than node_count
    lambda a: np.concatenate([a, a]),  # more nodes than node_count
], ids=["floats", "short", "long"])
def test_node_arrays_of_the_wrong_dtype_or_length_are_refused(saved, tmp_path, make):
    path = _replace_node_arrays(saved, tmp_path / "bad.skrisk", make)
    with pytest.raises(DataError, match="estimators.skops") as info:
        load_model(path)
    assert str(path) in str(info.value)


def test_node_records_with_32_bit_integers_load_as_the_same_model(saved, data, tmp_path):
    """scikit-learn converts node records of another integer width (a 32-bit platform's) to its
    own; the values are then checked like any others, and the model scores as before."""
    _, te = data
    path = _replace_node_arrays(saved, tmp_path / "i4.skrisk", lambda a: a.astype(
        [(n, "<i4" if a.dtype[n].kind == "i" else a.dtype[n].str) for n in a.dtype.names]))
    before = load_model(saved).scorer(te.left, te.right).score(te.pairs).proba
    np.testing.assert_array_equal(load_model(path).scorer(te.left, te.right).score(te.pairs).proba, before)
    bad = _replace_node_arrays(saved, tmp_path / "i4_bad.skrisk", lambda a: _cyclic(a.astype(
        [(n, "<i4" if a.dtype[n].kind == "i" else a.dtype[n].str) for n in a.dtype.names])))
    with pytest.raises(DataError, match="children"):
        load_model(bad)


def _cyclic(nodes):
    nodes = nodes.copy()
    nodes["left_child"][0] = 0
    return nodes
