"""Saving and loading a fitted RNNMatcher without pickle.

A saved matcher is a folder with

* ``weights.pt``: the module's state dict (tensors only: the network, the embedding matrix, the
  feature standardisation), read back with
  ``torch.load(..., weights_only=True)``, so a file from someone else cannot run code;
* ``config.json``: the matcher's JSON-able parameters, the data-dependent sizes, the vocabulary
  (when the embeddings were a :class:`~skrisk.data.WordVectors`), the classes, the positive-class
  weight and the best epoch.

The embedding matrix is part of the state dict, so the loaded matcher predicts exactly as the
saved one without the original word vectors.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

__all__ = ["save_matcher", "load_matcher"]

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


def save_matcher(matcher: object, path: str | os.PathLike) -> Path:
    """Save a fitted :class:`RNNMatcher` to the folder ``path`` (created if needed).

    Parameters
    ----------
    matcher : RNNMatcher
        A fitted matcher.
    path : str or path-like
        Folder to write ``weights.pt`` and ``config.json`` into (existing files are replaced).

    Returns
    -------
    pathlib.Path
        The folder.
    """
    from ..data._embeddings import WordVectors
    from ._rnn import RNNMatcher

    if not isinstance(matcher, RNNMatcher):
        raise TypeError(f"save_matcher saves an RNNMatcher, got {type(matcher).__name__}.")
    matcher._check_fitted()
    if matcher.optimizer is not torch.optim.Adam and getattr(torch.optim, matcher.optimizer.__name__, None) is not matcher.optimizer:
        raise ValueError("Only torch.optim optimizers can be saved in the JSON config.")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
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
    torch.save(state, folder / "weights.pt")
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    return folder


def load_matcher(path: str | os.PathLike, device: str | None = None) -> object:
    """Load a matcher saved by :func:`save_matcher`.

    Parameters
    ----------
    path : str or path-like
        The folder.
    device : str or None, default=None
        Device of the loaded matcher (None: CUDA when available, else CPU).

    Returns
    -------
    RNNMatcher
        Fitted, predicting exactly as the saved one (``embeddings`` is rebuilt from the saved
        matrix and vocabulary).
    """
    from ..data._embeddings import WordVectors
    from ..data._tokenize import Vocabulary
    from ._rnn import RNNMatcher
    from ._rnn_data import resolve_device

    folder = Path(path)
    cfg_path, w_path = folder / "config.json", folder / "weights.pt"
    if not cfg_path.is_file() or not w_path.is_file():
        raise FileNotFoundError(
            f"{folder} does not hold a saved matcher (config.json and weights.pt): pass the folder "
            "given to RNNMatcher.save."
        )
    config = json.loads(cfg_path.read_text())
    if config.get("format") != "skrisk.RNNMatcher":
        raise ValueError(f"{cfg_path} is not an RNNMatcher config (format={config.get('format')!r}).")
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"{cfg_path} was written by a newer skrisk (format {config['format_version']}): upgrade skrisk."
        )
    dev = resolve_device(device)
    state = torch.load(w_path, map_location=dev, weights_only=True)
    params = dict(config["params"])
    opt_name = params.pop("optimizer", "Adam")
    optimizer = getattr(torch.optim, opt_name, None)
    if optimizer is None:
        raise ValueError(f"Unknown optimizer {opt_name!r} in {cfg_path}.")
    params["device"] = device
    # options of earlier versions, removed (measured useless): loadable only when left off
    for key, off in (("feature_skip", False), ("stack_forest", False)):
        if params.pop(key, off) != off:
            raise ValueError(
                f"{cfg_path} was saved with {key}={config['params'][key]!r}, an option this skrisk no "
                "longer has: retrain the matcher."
            )
    fraction = params.pop("validation_fraction", None)
    if fraction is not None:  # saved before train_split took its place: the same hold-out
        from skorch.dataset import ValidSplit

        params["train_split"] = ValidSplit(float(fraction), stratified=True, random_state=params.get("random_state"))
    weight = state.get("embedding.weight")
    embeddings = None
    if config.get("embeddings") == "word_vectors":
        vocab = Vocabulary(config["vocabulary"])
        embeddings = WordVectors(vocab, weight.cpu().numpy(), source=config.get("embeddings_source") or "loaded")
    elif config.get("embeddings") == "array":
        embeddings = weight.cpu().numpy()
    matcher = RNNMatcher(embeddings=embeddings, optimizer=optimizer, **params)
    matcher.module_dims_ = dict(config["module_dims"])
    matcher.pos_weight_ = float(config["pos_weight"])
    matcher.initialize()
    if matcher.module_dims_.get("n_features"):  # saved before features were standardised: identity
        state.setdefault("feature_center", torch.zeros(matcher.module_dims_["n_features"]))
        state.setdefault("feature_scale", torch.ones(matcher.module_dims_["n_features"]))
    matcher.module_.load_state_dict(state)
    matcher.module_.eval()
    matcher.classes_inferred_ = np.asarray(config["classes"])
    matcher.best_epoch_ = int(config.get("best_epoch", 0))
    matcher.fitted_ = True
    return matcher
