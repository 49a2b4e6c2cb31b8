"""Tokens for the deep matcher: a tokeniser, a vocabulary and the padded pair encoding.

The RNN matcher reads a pair as ``2 * A`` token-id sequences (the ``A`` attributes of the left
record, then the ``A`` attributes of the right record), padded with id 0 to one length ``L``.
:class:`PairEncoder` turns a pair frame (:meth:`PairDataset.to_frame`) into the RNN family's one
pool type: a :class:`skorch.helper.SliceDict` with ``tokens``, that int64 array of shape
``(n_pairs, 2 * A, L)``, and, with ``features=``, the float32 similarity features beside it. A
SliceDict slices by row, so scikit-learn (cross-validation, pipelines), skorch and modAL all
handle it like an array.
"""

from __future__ import annotations

import numbers
import re
from collections import Counter
from typing import Any, Iterable, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._params import HasMethods, Interval, validate_params
from ._pairs import PairDataset
from ._text import normalise_text

__all__ = ["PAD", "UNK", "PAD_ID", "UNK_ID", "tokenize", "Vocabulary", "PairEncoder"]

#: Padding token and its id.
PAD, PAD_ID = "<pad>", 0
#: Unknown-token token and its id.
UNK, UNK_ID = "<unk>", 1

_TOKEN_RE = re.compile(r"[^\W_]+(?:[.'\-/][^\W_]+)*")


def tokenize(text: object) -> list[str]:
    """Split a value into lower-cased word tokens.

    A token is a run of letters and digits, kept whole across inner ``.``, ``'``, ``-`` and ``/``
    (so ``1996.0``, ``dsc-w120`` and ``o'reilly`` stay one token). Missing values (``None``,
    NaN, ``''``) give no tokens.

    Parameters
    ----------
    text : object
        A cell value; converted with the same rule as :meth:`PairDataset.texts`.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from skrisk.data._tokenize import tokenize
    >>> tokenize("Sony DSC-W120 Cyber-shot, 8.1MP!")
    ['sony', 'dsc-w120', 'cyber-shot', '8.1mp']
    >>> tokenize(None)
    []
    """
    return _TOKEN_RE.findall(normalise_text(text))


class Vocabulary:
    """A token <-> id mapping with the padding token at id 0 and the unknown token at id 1.

    Parameters
    ----------
    tokens : iterable of str
        The tokens, in id order, *without* ``<pad>`` and ``<unk>`` (they are prepended).
        Duplicates are dropped, keeping the first.

    Attributes
    ----------
    itos : list of str
        id -> token (``itos[0] == "<pad>"``, ``itos[1] == "<unk>"``).
    stoi : dict of str to int
        token -> id.

    Examples
    --------
    >>> from skrisk.data._tokenize import Vocabulary
    >>> vocab = Vocabulary.from_texts(["acme corp", "acme inc"])
    >>> vocab.itos
    ['<pad>', '<unk>', 'acme', 'corp', 'inc']
    >>> vocab.ids(["acme", "globex"]).tolist()
    [2, 1]
    """

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        itos = [PAD, UNK]
        seen = {PAD, UNK}
        for tok in tokens:
            if not isinstance(tok, str):
                raise TypeError(f"Vocabulary tokens must be str, got {type(tok).__name__} ({tok!r}).")
            if tok not in seen:
                seen.add(tok)
                itos.append(tok)
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(itos)}

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[object],
        *,
        weights: Sequence[int] | None = None,
        min_freq: int = 1,
        max_size: int | None = None,
    ) -> "Vocabulary":
        """Build a vocabulary from raw values, most frequent tokens first (ties alphabetical).

        Parameters
        ----------
        texts : iterable
            Cell values, tokenised with :func:`tokenize`.
        min_freq : int, default=1
            Drop tokens seen fewer times.
        weights : sequence of int, default=None
            How often each value occurs (counts its tokens that many times); default 1 each.
        max_size : int, default=None
            Keep at most this many tokens (besides ``<pad>``/``<unk>``).
        """
        if not isinstance(min_freq, (int, np.integer)) or min_freq < 1:
            raise ValueError(f"min_freq must be an int >= 1, got {min_freq!r}.")
        if max_size is not None and (not isinstance(max_size, (int, np.integer)) or max_size < 0):
            raise ValueError(f"max_size must be None or an int >= 0, got {max_size!r}.")
        counts: Counter[str] = Counter()
        if weights is None:
            for text in texts:
                counts.update(tokenize(text))
        else:
            for text, w in zip(texts, weights):
                for tok in tokenize(text):
                    counts[tok] += int(w)
        items = sorted((t for t in counts.items() if t[1] >= min_freq), key=lambda kv: (-kv[1], kv[0]))
        if max_size is not None:
            items = items[:max_size]
        return cls(t for t, _ in items)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.itos == other.itos

    def __repr__(self) -> str:
        head = ", ".join(self.itos[2:7])
        return f"Vocabulary(size={len(self)}, tokens=[{head}{', ...' if len(self) > 7 else ''}])"

    def ids(self, tokens: Sequence[str]) -> npt.NDArray[np.int64]:
        """Ids of ``tokens`` (``UNK_ID`` for unknown ones)."""
        get = self.stoi.get
        return np.fromiter((get(t, UNK_ID) for t in tokens), dtype=np.int64, count=len(tokens))

    def to_list(self) -> list[str]:
        """The JSON-able form: the tokens after ``<pad>`` and ``<unk>``, in id order."""
        return self.itos[2:]


def _as_vocabulary(vocabulary: object) -> Vocabulary | None:
    """Vocabulary / WordVectors / token list -> Vocabulary (None stays None)."""
    if vocabulary is None:
        return None
    if isinstance(vocabulary, Vocabulary):
        return vocabulary
    vocab = getattr(vocabulary, "vocabulary", None)  # WordVectors
    if isinstance(vocab, Vocabulary):
        return vocab
    if isinstance(vocabulary, (str, bytes)):
        raise TypeError(
            "vocabulary must be a Vocabulary, a WordVectors or a list of tokens, got a string; "
            "wrap it in a list if it is one token."
        )
    if isinstance(vocabulary, Iterable):
        return Vocabulary(list(vocabulary))
    raise TypeError(
        f"vocabulary must be None, a Vocabulary, a WordVectors or a list of tokens, got "
        f"{type(vocabulary).__name__}."
    )


def _pair_columns(X: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """Attribute names and the left/right column names of a pair frame."""
    names = [str(c) for c in X.columns]
    lefts = [c for c in names if c.startswith("left_")]
    attrs = [c[len("left_"):] for c in lefts]
    rights = [f"right_{a}" for a in attrs]
    missing = [c for c in rights if c not in names]
    extra = [c for c in names if not c.startswith(("left_", "right_"))]
    extra += [c for c in names if c.startswith("right_") and c not in rights]
    if not attrs or missing or extra:
        raise ValueError(
            "X must be a pair frame with one 'left_<a>' and one 'right_<a>' column per attribute "
            f"(as PairDataset.to_frame() builds); got columns {names[:8]}"
            f"{' ...' if len(names) > 8 else ''} (unpaired: {missing + extra}). Build it with "
            "PairDataset.to_frame()."
        )
    return attrs, lefts, rights


def _as_pair_frame(X: object) -> pd.DataFrame:
    if isinstance(X, PairDataset):
        return X.to_frame()
    if isinstance(X, pd.DataFrame):
        return X
    raise TypeError(
        f"PairEncoder takes a pair frame (PairDataset.to_frame()) or a PairDataset, got "
        f"{type(X).__name__}. Token ids cannot be rebuilt from a plain array: keep the pair frame "
        "as the pipeline input."
    )


class PairEncoder(TransformerMixin, BaseEstimator):
    """Encode record pairs as padded token-id sequences, one per attribute and side.

    Parameters
    ----------
    max_length : int, default=32
        Tokens kept per attribute value (longer values are truncated, shorter ones padded with
        id 0). This is ``L`` of the output.
    vocabulary : Vocabulary, WordVectors, list of str or None, default=None
        A fixed vocabulary (e.g. the one of the word vectors the matcher embeds with, so that ids
        agree across cross-validation folds). ``None`` learns one from the frame passed to
        ``fit`` (both sides, all attributes).
    min_freq : int, default=1
        With ``vocabulary=None``: drop tokens seen fewer times in ``fit``.
    max_vocab : int, default=None
        With ``vocabulary=None``: keep at most this many tokens.
    features : transformer or None, default=None
        A pair-frame transformer producing float features (e.g.
        :class:`~skrisk.data.SimilarityFeatures`). When given, the output also holds them under
        ``features`` (float32): the input of a hybrid :class:`~skrisk.matchers.RNNMatcher`.

    Attributes
    ----------
    vocabulary_ : Vocabulary
        The vocabulary used.
    attributes_ : list of str
        The attribute names (``A`` of them), in input order.
    features_ : transformer or None
        The fitted clone of ``features``.
    n_features_in_ : int
        ``2 * A`` (columns of the pair frame).
    feature_names_in_ : ndarray of str
        The pair frame's column names.

    Notes
    -----
    The output, the pool type of the RNN matcher family, is always a
    :class:`skorch.helper.SliceDict` with

    * ``tokens``: int64 array of shape ``(n_pairs, 2 * A, max_length)``, the ``A`` left
      attributes then the ``A`` right ones, padded with 0;
    * ``features``: float32 array of shape ``(n_pairs, n_features)``, only with ``features=``.

    Tokens not in the vocabulary become ``UNK_ID`` (1); empty or missing values become a row of
    padding (all 0): the matcher treats such an attribute as empty. Each distinct value is
    tokenised once per call, so encoding is linear in the number of distinct values.

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.data import PairEncoder
    >>> X = pd.DataFrame({"left_name": ["acme corp", "globex"],
    ...                   "right_name": ["acme corporation", None]})
    >>> enc = PairEncoder(max_length=3).fit(X)
    >>> enc.vocabulary_.itos
    ['<pad>', '<unk>', 'acme', 'corp', 'corporation', 'globex']
    >>> enc.transform(X)["tokens"].tolist()
    [[[2, 3, 0], [2, 4, 0]], [[5, 0, 0], [0, 0, 0]]]
    """

    _parameter_constraints: dict = {
        "max_length": [Interval(numbers.Integral, 1, None)],
        "vocabulary": [None, Vocabulary, "array-like"],  # a WordVectors has a length too
        "min_freq": [Interval(numbers.Integral, 1, None)],
        "max_vocab": [None, Interval(numbers.Integral, 1, None)],
        "features": [None, HasMethods(("transform",))],
    }

    def __init__(
        self,
        max_length: int = 32,
        vocabulary: object = None,
        min_freq: int = 1,
        max_vocab: int | None = None,
        features: object = None,
    ) -> None:
        self.max_length = max_length
        self.vocabulary = vocabulary
        self.min_freq = min_freq
        self.max_vocab = max_vocab
        self.features = features

    def _check_params(self) -> None:
        validate_params(self)

    def fit(self, X: object, y: object = None) -> "PairEncoder":
        """Learn the attribute layout (and the vocabulary, if none was given).

        Parameters
        ----------
        X : pandas.DataFrame or PairDataset
            Pair frame with ``left_<a>``/``right_<a>`` columns (:meth:`PairDataset.to_frame`).
        y : ignored

        Returns
        -------
        self : PairEncoder
        """
        self._check_params()
        frame = _as_pair_frame(X)
        if len(frame) == 0:
            raise ValueError("PairEncoder.fit got 0 pairs: pass at least one pair.")
        attrs, lefts, rights = _pair_columns(frame)
        vocab = _as_vocabulary(self.vocabulary)
        if vocab is None:
            counts = pd.Series(frame[lefts + rights].to_numpy().ravel()).value_counts(dropna=True)
            vocab = Vocabulary.from_texts(
                counts.index, weights=counts.to_numpy(), min_freq=self.min_freq, max_size=self.max_vocab
            )
        self.vocabulary_ = vocab
        self.attributes_ = attrs
        self.n_features_in_ = len(frame.columns)
        self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        self.features_ = clone(self.features).fit(frame) if self.features is not None else None
        return self

    def encode_values(self, values: Sequence[object] | np.ndarray) -> npt.NDArray[np.int64]:
        """Encode one column of values as an ``(n, max_length)`` int64 array (vectorised over
        distinct values).
        """
        check_is_fitted(self, "vocabulary_")
        L = int(self.max_length)
        codes, uniq = pd.factorize(pd.Series(np.asarray(values, dtype=object)), use_na_sentinel=False)
        table = np.zeros((len(uniq), L), dtype=np.int64)
        stoi_get = self.vocabulary_.stoi.get
        for i, val in enumerate(uniq):
            toks = tokenize(val)[:L]
            if toks:
                table[i, : len(toks)] = [stoi_get(t, UNK_ID) for t in toks]
        return table[codes]

    def transform(self, X: object) -> Any:
        """Encode pairs.

        Parameters
        ----------
        X : pandas.DataFrame or PairDataset
            Pair frame with the columns seen in ``fit``.

        Returns
        -------
        SliceDict
            ``tokens``: int64 of shape (n_pairs, 2 * A, max_length), the left attributes then
            the right ones, padded with 0; with ``features``, also ``features``: float32 of
            shape (n_pairs, n_features).
        """
        check_is_fitted(self, "vocabulary_")
        frame = _as_pair_frame(X)
        attrs, lefts, rights = _pair_columns(frame)
        if attrs != self.attributes_:
            raise ValueError(
                f"X has attributes {attrs}, but PairEncoder was fitted on {self.attributes_}: "
                "pass a pair frame with the same columns in the same order."
            )
        n, A, L = len(frame), len(attrs), int(self.max_length)
        out = np.zeros((n, 2 * A, L), dtype=np.int64)
        for j, col in enumerate(lefts + rights):
            out[:, j, :] = self.encode_values(frame[col].to_numpy(dtype=object))
        from skorch.helper import SliceDict

        if self.features_ is None:
            return SliceDict(tokens=out)
        feats = np.asarray(self.features_.transform(frame), dtype=np.float32)
        return SliceDict(tokens=out, features=feats)

    def get_feature_names_out(self, input_features: object = None) -> npt.NDArray[np.object_]:
        """Names of the ``2 * A`` sequences: ``left_<a>`` ... then ``right_<a>`` ...."""
        check_is_fitted(self, "vocabulary_")
        return np.asarray([f"left_{a}" for a in self.attributes_] + [f"right_{a}" for a in self.attributes_], dtype=object)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.requires_fit = True
        return tags
