"""The input of :class:`~skrisk.matchers.LMMatcher`: pairs serialised attribute by attribute.

One conversion at the boundary (:func:`pair_texts`) turns every accepted input into two lists of
strings (left, right); :func:`serialise_pairs` makes the LM family's pool type, a ``SliceDict``
whose ``text`` holds those strings and, optionally, ``features`` the similarity features that
LearnRisk reads (so an active-learning task computes both once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..data import PairDataset

__all__ = ["pair_texts", "serialise_pairs", "serialise_record"]


def _value(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return ""
    return " ".join(str(v).split())


def serialise_record(values: Mapping[str, Any] | pd.Series, attributes: Sequence[str]) -> str:
    """``COL a VAL x COL b VAL y`` for one record (missing values as empty strings).

    Examples
    --------
    >>> serialise_record({"name": "sony tv", "price": None}, ["name", "price"])
    'COL name VAL sony tv COL price VAL '
    """
    return " ".join(f"COL {a} VAL {_value(values.get(a))}" for a in attributes)


def _frame_attributes(frame: pd.DataFrame, attributes: Sequence[str] | None) -> list[str]:
    cols = [str(c) for c in frame.columns]
    found = [c[len("left_"):] for c in cols if c.startswith("left_")]
    if attributes is not None:
        found = list(attributes)
    missing = [s + a for a in found for s in ("left_", "right_") if s + a not in cols]
    if not found or missing:
        raise ValueError(
            f"A pair frame needs left_<attribute> and right_<attribute> columns (PairDataset.to_frame()); "
            f"{'missing ' + str(missing[:6]) if missing else 'found none'} among {cols[:8]}."
        )
    return found


def serialise_pairs(
    X: pd.DataFrame | PairDataset, attributes: Sequence[str] | None = None, *, features: Any = None
) -> Any:
    """The LM matcher's pool type: ``SliceDict(text=(n, 2) str array[, features=(n, F) float32])``.

    Parameters
    ----------
    X : DataFrame or PairDataset
        A pair frame (:meth:`PairDataset.to_frame`: ``left_<attr>`` / ``right_<attr>`` columns) or
        a :class:`PairDataset`.
    attributes : sequence of str, optional
        Attributes to serialise, in order (default: all of the frame's, in column order).
    features : array-like of shape (n, F), optional
        Similarity features of the same pairs (for LearnRisk), stored under ``features``.

    Returns
    -------
    skorch.helper.SliceDict
        Slices by row like an array (scikit-learn, modAL and skrisk's strategies take rows of it).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"left_name": ["a b"], "left_price": [1.5], "right_name": ["a"], "right_price": [None]})
    >>> serialise_pairs(f)["text"].tolist()
    [['COL name VAL a b COL price VAL 1.5', 'COL name VAL a COL price VAL ']]
    """
    from skorch.helper import SliceDict

    left, right = pair_texts(X, attributes)
    text = np.empty((len(left), 2), dtype=object)
    text[:, 0], text[:, 1] = left, right
    if features is None:
        return SliceDict(text=text)
    feats = np.asarray(features, dtype=np.float32)
    if feats.ndim != 2 or len(feats) != len(text):
        raise ValueError(f"features must have shape ({len(text)}, F), got {feats.shape}.")
    return SliceDict(text=text, features=feats)


def pair_texts(X: Any, attributes: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """``(left, right)`` serialised records of the pairs, whatever the accepted input.

    ``X``: a pair frame or :class:`PairDataset` (serialised here, ``attributes`` apply), or a
    mapping / ``SliceDict`` whose ``text`` is an ``(n, 2)`` array of already serialised strings
    (:func:`serialise_pairs`; other keys such as ``features`` are ignored).
    """
    if isinstance(X, PairDataset):
        X = X.to_frame()
    if isinstance(X, pd.DataFrame):
        attrs = _frame_attributes(X, attributes)
        cols = {s: [X[f"{s}_{a}"].to_numpy(dtype=object) for a in attrs] for s in ("left", "right")}
        out = []
        for s in ("left", "right"):
            out.append([
                " ".join(f"COL {a} VAL {_value(v)}" for a, v in zip(attrs, row))
                for row in zip(*cols[s])
            ])
        return out[0], out[1]
    if isinstance(X, Mapping):
        if "text" not in X:
            raise TypeError(
                f"LMMatcher got a mapping with keys {sorted(map(str, X))} but no 'text': pass a pair frame "
                "(PairDataset.to_frame())."
            )
        text = np.asarray(X["text"], dtype=object)
        if text.ndim != 2 or text.shape[1] != 2:
            raise ValueError(f"X['text'] must have shape (n_pairs, 2) (left, right), got {text.shape}.")
        bad = [i for i, v in enumerate(text.ravel()) if not isinstance(v, str)]
        if bad:
            i = bad[0] // 2
            raise TypeError(f"X['text'] row {i} holds {type(text.ravel()[bad[0]]).__name__}, not a string: "
                            "build it with serialise_pairs(frame).")
        return list(text[:, 0]), list(text[:, 1])
    raise TypeError(
        f"LMMatcher takes a pair frame (PairDataset.to_frame()), a PairDataset or "
        f"serialise_pairs(...) output, got {type(X).__name__}."
    )
