"""Saving and loading a fitted RNNMatcher without pickle.

A saved matcher is a folder with

* ``weights.pt``: the module's state dict (tensors only: the network, the embedding matrix, the
  feature standardisation), read back with
  ``torch.load(..., weights_only=True)``, so a file from someone else cannot run code;
* ``config.json``: the matcher's JSON-able parameters, the data-dependent sizes, the vocabulary
  (when the embeddings were a ``WordVectors``), the classes, the positive-class
  weight and the best epoch.

The embedding matrix is part of the state dict, so the loaded matcher predicts exactly as the
saved one without the original word vectors.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
from pathlib import Path

from typing import Any

import numpy as np
import torch

from .._fileio import RepeatedKeyError, atomic_write_bytes, atomic_write_text, json_loads_unique
from ..exceptions import DataError

__all__ = ["decode_rnn", "encode_rnn", "read_folder", "write_folder"]

FORMAT_VERSION = 1
_JSON_PARAMS = (
    "embedding_dim", "freeze_embeddings", "hidden_size", "attention", "classifier_size", "n_highway",
    "dropout", "rnn_dropout", "scale_features", "use_features",
    "class_weight", "early_stopping", "patience",
    "lr", "max_epochs", "batch_size", "warm_start", "verbose",
    "iterator_train__shuffle", "iterator_valid__batch_size",
)


def _jsonable(value: object) -> object:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value


def write_folder(parts: tuple[str, bytes], path: str | os.PathLike) -> Path:
    """Write the two parts of :func:`encode_rnn` to the folder ``path`` (created if needed):
    ``config.json`` and ``weights.pt``, each replaced atomically; the folder."""
    config_text, weights = parts
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    # each file is replaced atomically: a crash leaves the old file or the new one, never a torn one
    atomic_write_bytes(folder / "weights.pt", weights)
    atomic_write_text(folder / "config.json", config_text)
    return folder


def encode_rnn(matcher: Any) -> tuple[str, bytes]:
    """The two saved parts of a fitted RNNMatcher (checked by the caller, :func:`skrisk.matchers._rnn.rnn_parts`):
    ``config.json`` text, ``weights.pt`` bytes. The one writer of the matcher format."""
    from ..data._embeddings import WordVectors

    matcher._check_fitted()
    if matcher.optimizer is not torch.optim.Adam and getattr(torch.optim, matcher.optimizer.__name__, None) is not matcher.optimizer:
        raise ValueError("Only torch.optim optimizers can be saved in the JSON config.")
    params = {k: _jsonable(getattr(matcher, k)) for k in _JSON_PARAMS}
    rs = matcher.random_state
    params["random_state"] = int(rs) if isinstance(rs, (int, np.integer)) else None
    params["device"] = matcher.device if isinstance(matcher.device, str) or matcher.device is None else str(matcher.device)
    params["optimizer"] = matcher.optimizer.__name__
    emb = matcher.embeddings
    vocab = None
    emb_kind = "none"
    if isinstance(emb, WordVectors):
        vocab, emb_kind = emb.vocabulary.to_list(), "word_vectors"
    elif emb is not None:
        emb_kind = "array"
    config = {
        "format": "skrisk.RNNMatcher",
        "format_version": FORMAT_VERSION,
        "params": params,
        "module_dims": {k: int(v) for k, v in matcher.module_dims_.items()},
        "embeddings": emb_kind,
        "embeddings_source": getattr(emb, "source", None),
        "vocabulary": vocab,
        "classes": [int(c) for c in matcher.classes_],
        "pos_weight": float(matcher.pos_weight_),
        "best_epoch": int(getattr(matcher, "best_epoch_", 0)),
    }
    state = {k: v.detach().cpu().contiguous() for k, v in matcher.module_.state_dict().items()}
    buf = io.BytesIO()
    torch.save(state, buf)
    return json.dumps(config, indent=1), buf.getvalue()


#: keys of earlier versions, still read (removed options must be off; see load_matcher)
_LEGACY_KEYS = {"feature_skip", "stack_forest", "validation_fraction"}
_PARAM_KEYS = frozenset(_JSON_PARAMS) | {"random_state", "device", "optimizer"} | _LEGACY_KEYS
_EMBEDDING_KINDS = ("none", "word_vectors", "array")
#: config.json larger than this is refused before it is parsed (a vocabulary of a million
#: words takes about 20 MB).
MAX_CONFIG_BYTES = 256 * 2**20
#: Largest magnitude of a saved weight: trained weights stay many orders of magnitude below it.
MAX_WEIGHT = 1e6
_REFIT = "re-save the matcher with RNNMatcher.save (or save_matcher), or restore the file from a trusted copy"


def _bad(path: Path, what: str) -> DataError:
    return DataError(f"{path}: {what}. It is not a matcher saved by skrisk: {_REFIT}.")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_config(config: object, path: Path) -> dict:
    """Validate the shape of config.json (keys, types, format version); return it."""
    if not isinstance(config, dict):
        raise _bad(path, f"the top level is a JSON {type(config).__name__}, not an object")
    if config.get("format") != "skrisk.RNNMatcher":
        raise _bad(path, f"format is {config.get('format')!r}, not 'skrisk.RNNMatcher' (not an RNNMatcher config)")
    version = config.get("format_version")
    if not _is_int(version) or version < 1:
        raise _bad(path, f"format_version is {version!r}, not an integer >= 1")
    if version > FORMAT_VERSION:
        raise DataError(
            f"{path} was written by a newer skrisk (format {version}, this one reads up to "
            f"{FORMAT_VERSION}): upgrade skrisk."
        )
    required = {"params": dict, "module_dims": dict, "embeddings": str, "classes": list, "pos_weight": (int, float)}
    for key, typ in required.items():
        if key not in config:
            raise _bad(path, f"the key {key!r} is missing")
        if not isinstance(config[key], typ) or isinstance(config[key], bool):
            raise _bad(path, f"{key!r} is a JSON {type(config[key]).__name__}, expected "
                             f"{'a number' if key == 'pos_weight' else 'an ' + ('object' if typ is dict else 'array' if typ is list else 'string')}")
    params = config["params"]
    unknown = sorted(set(params) - _PARAM_KEYS)
    if unknown:
        raise _bad(path, f"params holds unknown keys {unknown[:5]}")
    for k, v in params.items():
        if not (v is None or isinstance(v, (bool, int, float, str))):
            raise _bad(path, f"params[{k!r}] is a JSON {type(v).__name__}; parameters are numbers, strings, booleans or null")
        if isinstance(v, float) and not math.isfinite(v):
            raise _bad(path, f"params[{k!r}] is {v}; parameters must be finite")
    opt = params.get("optimizer", "Adam")
    optimizer = getattr(torch.optim, opt, None) if isinstance(opt, str) else None
    if not (isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer)):
        raise _bad(path, f"params['optimizer'] is {opt!r}, not the name of a torch.optim optimizer")
    dims = config["module_dims"]
    for k in ("n_attributes", "n_embeddings", "n_features"):
        if not _is_int(dims.get(k)) or dims[k] < (0 if k == "n_features" else 1):
            raise _bad(path, f"module_dims[{k!r}] is {dims.get(k)!r}, not a "
                             f"{'non-negative' if k == 'n_features' else 'positive'} integer")
    if sorted(dims) != ["n_attributes", "n_embeddings", "n_features"]:
        raise _bad(path, f"module_dims has keys {sorted(dims)}, expected n_attributes, n_embeddings, n_features")
    if config["embeddings"] not in _EMBEDDING_KINDS:
        raise _bad(path, f"embeddings is {config['embeddings']!r}, not one of {_EMBEDDING_KINDS}")
    if config["embeddings"] == "word_vectors":
        vocab = config.get("vocabulary")
        if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
            raise _bad(path, "embeddings is 'word_vectors' but vocabulary is not an array of strings")
    source = config.get("embeddings_source")
    if source is not None and not isinstance(source, str):
        raise _bad(path, f"embeddings_source is a JSON {type(source).__name__}, not a string or null")
    if config["classes"] != [0, 1]:
        raise _bad(path, f"classes is {config['classes']!r}; a matcher's classes are [0, 1] (non-match, match)")
    pw = config["pos_weight"]
    if not math.isfinite(pw) or pw <= 0:
        raise _bad(path, f"pos_weight is {pw!r}, not a finite positive number")
    best = config.get("best_epoch", 0)
    if not _is_int(best) or best < 0:
        raise _bad(path, f"best_epoch is {best!r}, not a non-negative integer")
    return config


def _read_config(path: Path) -> dict:
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise _bad(path, f"it holds {size} bytes, more than the {MAX_CONFIG_BYTES} a config may hold")
    return _parse_config(path.read_bytes(), path)


def _parse_config(data: bytes, path: Path) -> dict:
    """``config.json`` bytes (``path`` names where they came from in messages), validated."""
    if len(data) > MAX_CONFIG_BYTES:
        raise _bad(path, f"it holds {len(data)} bytes, more than the {MAX_CONFIG_BYTES} a config may hold")
    try:
        config = json_loads_unique(data.decode("utf-8"))
    except RepeatedKeyError as exc:
        raise _bad(path, f"it repeats the key {exc.args[0]!r} (JSON readers disagree on which value wins)") from None
    except UnicodeDecodeError as exc:
        raise _bad(path, f"it is not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise _bad(path, f"it is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError as exc:
        raise _bad(path, "its JSON is nested too deeply") from exc
    return _check_config(config, path)


def _read_weights(path: Path, data: bytes | None = None) -> dict[str, torch.Tensor]:
    """Tensors of weights.pt (the file, or its ``data``), read without unpickling code; names are
    strings, floats finite."""
    try:
        state = torch.load(path if data is None else io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise DataError(
            f"{path} holds objects other than tensors (a pickle that could run code): it was refused "
            f"and nothing in it ran. skrisk never unpickles matcher files; {_REFIT}."
        ) from exc
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise DataError(
            f"{path} cannot be read as a torch weights file ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else 'no detail'}): it is truncated or "
            f"corrupt; {_REFIT}."
        ) from exc
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise _bad(path, f"it holds a {type(state).__name__}, not a dictionary of named tensors")
    for name, t in state.items():
        if not isinstance(t, torch.Tensor):
            raise _bad(path, f"entry {name!r} is a {type(t).__name__}, not a tensor")
        if (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()):
            n_bad = int((~torch.isfinite(t)).sum())
            raise DataError(
                f"{path}: tensor {name!r} holds {n_bad} NaN or infinite value(s), so the matcher would "
                f"predict NaN. The training diverged or the file was altered: retrain the matcher "
                f"(e.g. with a lower lr) and save it again, or restore the file from a trusted copy."
            )
    return state


def _check_state(state: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], path: Path, cfg_path: Path) -> None:
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise DataError(
            f"{path} does not fit the network described by {cfg_path}: "
            f"{'missing tensors ' + str(missing[:5]) if missing else ''}"
            f"{'; ' if missing and unexpected else ''}"
            f"{'unexpected tensors ' + str(unexpected[:5]) if unexpected else ''}. The two files "
            f"come from different matchers: {_REFIT}."
        )
    for name, ref in expected.items():
        if tuple(state[name].shape) != tuple(ref.shape):
            raise DataError(
                f"{path}: tensor {name!r} has shape {tuple(state[name].shape)} but {cfg_path} describes "
                f"{tuple(ref.shape)}. The two files come from different matchers: {_REFIT}."
            )
        if state[name].dtype != ref.dtype:  # loading would cast it silently (float16 rounds, ints truncate)
            raise DataError(
                f"{path}: tensor {name!r} is {state[name].dtype}, not {ref.dtype} as the network (and every "
                f"file RNNMatcher.save writes) holds it. The file was altered: {_REFIT}."
            )
    big = {n: float(t.abs().max()) for n, t in state.items() if t.is_floating_point() and t.numel()
           and float(t.abs().max()) > MAX_WEIGHT}
    if big:
        name = next(iter(big))
        raise DataError(
            f"{path}: tensor {name!r} holds values up to {big[name]:.3g}, beyond the {MAX_WEIGHT:.0e} no training "
            f"reaches; in float32 the network's sums overflow to NaN. The file was altered: {_REFIT}."
        )
    scale = state.get("feature_scale")
    if scale is not None and bool((scale <= 0).any()):
        raise DataError(
            f"{path}: tensor 'feature_scale' holds {int((scale <= 0).sum())} value(s) <= 0; it divides the "
            f"similarity features by their standard deviations, which are positive (zero divides by 0, a "
            f"negative value turns a feature around). The file was altered: {_REFIT}."
        )


def _check_params(matcher: Any, params: dict, dims: dict, state: dict, cfg_path: Path, w_path: Path) -> None:
    """The saved parameters held to ``fit``'s constraints, and the network's size to the tensors the
    weights hold (before the network is described: a million attributes would take hours to lay out)."""
    from .._params import validate_params
    from ..exceptions import InvalidParameterError

    table = type(matcher)._parameter_constraints
    for name in params:
        if name in table:
            try:
                validate_params(matcher, [name])
            except InvalidParameterError as exc:
                raise DataError(
                    f"{cfg_path}: params[{name!r}] is {params[name]!r}, so its parameters do not build a network "
                    f"that RNNMatcher fits ({exc}) The file was altered: {_REFIT}."
                ) from None
    # each attribute's summariser holds 8 tensors (a bidirectional GRU), each highway layer 4
    n_attr, n_highway = dims["n_attributes"], params.get("n_highway", 1)
    if 8 * n_attr + 4 * n_highway > len(state):
        raise DataError(
            f"{cfg_path}: module_dims['n_attributes'] is {n_attr} and params['n_highway'] is {n_highway}: it "
            f"describes a network of at least {8 * n_attr + 4 * n_highway} tensors, but {w_path} holds "
            f"{len(state)}. The two files come from different matchers: {_REFIT}."
        )


def read_folder(cls: type, path: str | os.PathLike, device: str | None = None) -> Any:
    """The ``cls`` matcher saved in the folder ``path`` by :func:`write_folder`, validated
    (see :func:`skrisk.matchers.load_matcher`)."""
    folder = Path(path)
    cfg_path, w_path = folder / "config.json", folder / "weights.pt"
    if not cfg_path.is_file() or not w_path.is_file():
        raise FileNotFoundError(
            f"{folder} does not hold a saved matcher (config.json and weights.pt): pass the folder "
            "given to RNNMatcher.save."
        )
    return _build_rnn(cls, _read_config(cfg_path), _read_weights(w_path), cfg_path, w_path, device)


def decode_rnn(cls: type, config: bytes, weights: bytes, cfg_path: Path, w_path: Path,
               device: str | None = None) -> Any:
    """The ``cls`` matcher of the two parts written by :func:`encode_rnn`, checked as by
    :func:`read_folder` (``cfg_path``/``w_path`` name where the parts came from in messages)."""
    return _build_rnn(cls, _parse_config(config, cfg_path), _read_weights(w_path, weights), cfg_path, w_path, device)


def _build_rnn(cls: type, config: dict, state: dict, cfg_path: Path, w_path: Path, device: str | None) -> Any:
    from .._device import resolve_device
    from ..data._embeddings import WordVectors
    from ..data._tokenize import Vocabulary

    dev = resolve_device(device)
    params = dict(config["params"])
    optimizer = getattr(torch.optim, params.pop("optimizer", "Adam"))
    params["device"] = device
    # options of earlier versions, since removed: loadable only when left off
    for key, off in (("feature_skip", False), ("stack_forest", False)):
        if params.pop(key, off) != off:
            raise DataError(
                f"{cfg_path} was saved with {key}={config['params'][key]!r}, an option this skrisk no "
                "longer has: retrain the matcher."
            )
    fraction = params.pop("validation_fraction", None)
    if fraction is not None:  # saved before train_split took its place: the same hold-out
        from skorch.dataset import ValidSplit

        params["train_split"] = ValidSplit(float(fraction), stratified=True, random_state=params.get("random_state"))
    weight = state.get("embedding.weight")
    embeddings = None
    if config["embeddings"] != "none":
        if weight is None or weight.ndim != 2 or not weight.is_floating_point():
            raise DataError(
                f"{w_path} lacks a 2-D float tensor 'embedding.weight' although {cfg_path} says the "
                f"embeddings are {config['embeddings']!r}: {_REFIT}."
            )
        if config["embeddings"] == "word_vectors":
            vocab_list = config["vocabulary"]
            try:
                vocab = Vocabulary(vocab_list)
                embeddings = WordVectors(vocab, weight.numpy(), source=config.get("embeddings_source") or "loaded")
            except (ValueError, TypeError) as exc:
                raise DataError(
                    f"{cfg_path}: its vocabulary ({len(vocab_list)} tokens) does not fit the embedding "
                    f"matrix {tuple(weight.shape)} of {w_path} ({exc}): {_REFIT}."
                ) from exc
        else:
            embeddings = weight.numpy()
    def not_a_network(exc: Exception) -> DataError:
        return _bad(cfg_path, f"its parameters do not build a network ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0][:200] if str(exc) else 'no detail'})")

    try:
        matcher = cls(embeddings=embeddings, optimizer=optimizer, **params)
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        raise not_a_network(exc) from exc
    _check_params(matcher, params, config["module_dims"], state, cfg_path, w_path)
    try:
        matcher.module_dims_ = dict(config["module_dims"])
        matcher.pos_weight_ = float(config["pos_weight"])
        # The network the config describes, on the meta device: shapes only, nothing allocated,
        # so a config asking for a huge network is refused below (its shapes do not match the
        # file) before any memory is spent on it.
        with torch.device("meta"):
            probe = matcher.module(**{**matcher._module_kwargs(matcher.module_dims_),
                                      **matcher.get_params_for("module")})
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        raise not_a_network(exc) from exc
    n_features = int(matcher.module_dims_["n_features"])
    if n_features:  # saved before features were standardised: identity
        state.setdefault("feature_center", torch.zeros(n_features))
        state.setdefault("feature_scale", torch.ones(n_features))
    _check_state(state, probe.state_dict(), w_path, cfg_path)
    try:
        matcher.initialize()
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        raise not_a_network(exc) from exc
    matcher.module_.load_state_dict(state)
    matcher.module_.to(dev)
    matcher.module_.eval()
    matcher.classes_inferred_ = np.asarray(config["classes"])
    matcher.best_epoch_ = int(config.get("best_epoch", 0))
    matcher.fitted_ = True
    return matcher
