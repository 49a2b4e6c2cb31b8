"""The RNN matcher's input contract, its default validation split and seeds.

One input type for the RNN family: a mapping (a :class:`skorch.helper.SliceDict`, as
:class:`~skrisk.data.PairEncoder` returns) with

* ``tokens``: int token ids of shape ``(n_pairs, 2 * A, L)`` (the ``A`` left attributes, then the
  ``A`` right ones, padded with 0);
* ``features`` (optional): float similarity features of shape ``(n_pairs, F)``.

:func:`check_pool` checks it once at the boundary and returns the two arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from skorch.dataset import Dataset

__all__ = ["FIT_KEYS", "POOL_KEYS", "check_labels", "check_pool", "rng_devices",
           "seed_devices", "seed_from", "validation_from_fit_params"]

#: The fit parameters that carry the validation pairs (never passed to the module).
FIT_KEYS = ("X_valid", "y_valid")
#: The keys of an RNN pool.
POOL_KEYS = ("tokens", "features")

_POOL_FIX = (
    "pass SliceDict(tokens=..., features=...) as PairEncoder(...).transform(pair_frame) returns "
    "(token ids alone: SliceDict(tokens=ids))"
)


def check_pool(X: object, what: str = "X") -> tuple[np.ndarray, np.ndarray | None]:
    """Check an RNN pool and return its ``(tokens, features or None)`` arrays.

    Parameters
    ----------
    X : SliceDict or mapping
        ``tokens`` int ``(n, 2 * A, L)`` and optional ``features`` float ``(n, F)``.
    what : str, default="X"
        The argument's name, for the messages.

    Returns
    -------
    tokens : ndarray of int of shape (n, 2 * A, L)
    features : ndarray of shape (n, F) or None
    """
    from pandas import DataFrame

    if isinstance(X, DataFrame):
        raise TypeError(
            f"{what} is a DataFrame: RNNMatcher reads token ids. Encode the pair frame first, e.g. "
            "make_rnn_pipeline(word_vectors) or make_pipeline(PairEncoder(...), RNNMatcher(...))."
        )
    if not isinstance(X, Mapping):
        raise TypeError(f"{what} is a {type(X).__name__}, RNNMatcher reads a SliceDict: {_POOL_FIX}.")
    if "tokens" not in X:
        raise ValueError(f"{what} is a mapping without 'tokens': {_POOL_FIX}.")
    extra = sorted(set(X) - set(POOL_KEYS))
    if extra:
        raise ValueError(f"{what} has unknown keys {extra}: only 'tokens' and 'features'.")
    tokens, feats = X["tokens"], X.get("features")
    if isinstance(tokens, torch.Tensor):
        tokens = tokens.detach().cpu().numpy()
    tokens = np.asarray(tokens)
    if tokens.ndim != 3:
        raise ValueError(
            f"{what}['tokens'] must be token ids of shape (n_pairs, 2 * n_attributes, max_length), "
            f"got shape {tokens.shape}: encode pairs with PairEncoder."
        )
    if not np.issubdtype(tokens.dtype, np.integer):
        raise TypeError(f"{what}['tokens'] must be integers (PairEncoder gives int64), got {tokens.dtype}.")
    if tokens.shape[0] == 0:
        raise ValueError(f"{what} has 0 pairs: pass at least one.")
    if tokens.shape[1] == 0 or tokens.shape[1] % 2:
        raise ValueError(
            f"{what} has {tokens.shape[1]} sequences per pair; a pair needs an even number > 0 "
            "(the left attributes, then the right ones)."
        )
    if tokens.size and tokens.min() < 0:
        raise ValueError(f"{what} has negative token ids: ids are >= 0 (0 = padding).")
    if feats is not None:
        if isinstance(feats, torch.Tensor):
            feats = feats.detach().cpu().numpy()
        feats = np.asarray(feats)
        if feats.ndim != 2 or feats.shape[0] != tokens.shape[0]:
            raise ValueError(
                f"{what} features must have shape (n_pairs, n_features) = ({tokens.shape[0]}, F), "
                f"got {feats.shape}."
            )
        if not np.issubdtype(feats.dtype, np.number) or not np.isfinite(feats).all():
            raise ValueError(f"{what} features must be finite numbers.")
    return tokens, feats


def check_labels(y: object, n: int, what: str = "y") -> np.ndarray:
    """Labels as an int64 array of 0 (non-match) and 1 (match), one per pair."""
    if y is None:
        raise ValueError(f"{what} is required: RNNMatcher is a supervised classifier.")
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"{what} must be 1-D with one label per pair ({n}), got shape {y.shape}.")
    if y.dtype == bool:
        y = y.astype(np.int64)
    if not np.issubdtype(y.dtype, np.number) or not np.isin(y, (0, 1)).all():
        raise ValueError(
            f"{what} must hold 0 (non-match) and 1 (match) only, got values {np.unique(y)[:5].tolist()}."
        )
    return y.astype(np.int64)


def validation_from_fit_params(
    dataset: Any, y: object = None, X_valid: object = None, y_valid: object = None
) -> tuple[Any, Any]:
    """RNNMatcher's default ``train_split``: the validation pairs given to ``fit``, if any.

    skorch passes the fit parameters to ``train_split``: ``fit(X, y, X_valid=..., y_valid=...)``
    validates on those pairs (what :func:`skorch.helper.predefined_split` does with a fixed
    dataset); without them there is no validation set. Nothing is ever held out silently.

    Parameters
    ----------
    dataset : skorch.dataset.Dataset
        The training pairs.
    y : ignored
    X_valid : SliceDict or None
        Validation pairs, encoded like ``X``.
    y_valid : array-like of shape (n_valid,) or None
        Their labels.

    Returns
    -------
    (dataset, Dataset or None)
    """
    if X_valid is None and y_valid is None:
        return dataset, None
    if X_valid is None or y_valid is None:
        raise ValueError("Pass both X_valid and y_valid (or neither).")
    tokens, _ = check_pool(X_valid, "X_valid")
    return dataset, Dataset(X_valid, check_labels(y_valid, tokens.shape[0], "y_valid"))


def seed_from(random_state: object) -> int:
    """A 31-bit seed from ``random_state`` (None: fresh entropy)."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0] & 0x7FFFFFFF)
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state) & 0x7FFFFFFF
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    raise TypeError(f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}.")


def rng_devices(device: str) -> list[int]:
    """The CUDA device indices whose RNG state ``torch.random.fork_rng`` must fork."""
    dev = torch.device(device)
    return [dev.index or 0] if dev.type == "cuda" else []


def seed_devices(seed: int, device: str) -> None:
    """Seed the CPU generator, and ``device``'s when it is a CUDA device, with ``seed``.

    The cheap form of :func:`torch.manual_seed` (which also seeds every other backend), for a
    call per training batch; meant to run inside :func:`torch.random.fork_rng` with
    :func:`rng_devices`.
    """
    torch.default_generator.manual_seed(seed)
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.default_generators[dev.index or 0].manual_seed(seed)
