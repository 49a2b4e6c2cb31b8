"""Building simulated active-learning tasks: one path for ``skrisk run``, ``skrisk demo`` and the
benchmarks.

A labelled :class:`~skrisk.data.PairDataset` with ``train``/``valid``/``test`` splits becomes an
``ALTask`` (matcher input for every pair, labels, pool/valid/test
positions); :func:`make_matcher_factory` and :func:`matcher_fit_kwargs` give the matcher of each
round and its fit arguments.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from sklearn.utils import check_random_state

from .._fileio import atomic_write_bytes
from .._sampling import stratified_choice
from ..data import PairDataset, SimilarityFeatures
from ..datasets import load_deepmatcher, load_febrl
from ._loop import ALTask

__all__ = ["MATCHERS", "build_task", "load_dataset", "make_matcher_factory", "matcher_fit_kwargs"]

#: The matcher kinds of an experiment.
MATCHERS = ("feature", "rnn", "lm")


def _check_matcher(matcher: str) -> None:
    if matcher not in MATCHERS:
        raise ValueError(f"matcher must be one of {list(MATCHERS)}, got {matcher!r}.")


def load_dataset(name: str, data_home: str | None = None, random_state: int = 0) -> PairDataset:
    """A named DeepMatcher dataset, a dataset folder, or ``"febrl"`` (embedded, no download).

    Parameters
    ----------
    name : str
        ``"febrl"`` / ``"febrl4"``, a DeepMatcher name under ``data_home`` (``beer``,
        ``dblp_scholar``, ...) or a folder with ``tableA.csv``, ``tableB.csv``, ``train.csv``,
        ``valid.csv`` and ``test.csv``.
    data_home : str, optional
        Where the DeepMatcher datasets are (default: ``$SKRISK_DATA``).
    random_state : int, default=0
        Seeds FEBRL4's split into train, valid and test.

    Returns
    -------
    PairDataset
    """
    if name.strip().lower() in ("febrl", "febrl4"):
        return load_febrl(random_state=random_state)
    return load_deepmatcher(name, data_home)


def _stratified_subset(positions: np.ndarray, y: np.ndarray, n: int | None, rng: np.random.RandomState) -> np.ndarray:
    """At most ``n`` of ``positions``, keeping the class ratio (sorted)."""
    if n is None or n >= len(positions):
        return positions
    total = len(positions)
    picked = stratified_choice(
        y[positions], lambda cls, n_cls: min(n_cls, max(int(round(n * n_cls / total)), 1 if n_cls else 0)), rng
    )
    return np.sort(positions[picked])


def build_task(
    dataset: PairDataset | str,
    *,
    matcher: str = "feature",
    data_home: str | None = None,
    attributes: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    max_pool: int | None = None,
    max_valid: int | None = None,
    max_test: int | None = None,
    encoder_params: dict | None = None,
    cache_dir: str | Path | None = None,
    random_state: Any = 0,
) -> ALTask:
    """An ``ALTask`` over a labelled dataset's ``train`` (the pool), ``valid`` and ``test`` splits.

    Parameters
    ----------
    dataset : PairDataset or str
        Every pair labelled, with ``train``, ``valid`` and ``test`` splits; a name goes through
        ``load_dataset``.
    matcher : {"feature", "rnn", "lm"}, default="feature"
        ``"feature"``: X is the float32 :class:`~skrisk.data.SimilarityFeatures` matrix (fitted on
        the pairs' text, which uses no labels) for :class:`~skrisk.matchers.FeatureMatcher`.
        ``"rnn"``: X is the hybrid encoding ``SliceDict(tokens=..., features=...)`` of
        :class:`~skrisk.data.PairEncoder` for :class:`~skrisk.matchers.RNNMatcher`, with a
        vocabulary from FastText vectors trained on the tables' own text (dimension 100, 5 epochs,
        seed 0) and at most 20 tokens per attribute (``encoder_params`` overrides them).
        ``"lm"``: X is ``serialise_pairs`` output, ``SliceDict(text=...,
        features=...)``, for :class:`~skrisk.matchers.LMMatcher`: the serialised records and the
        similarity features LearnRisk reads (both computed once for the task).
    data_home : str, optional
        Where a named DeepMatcher dataset is (default: ``$SKRISK_DATA``).
    attributes, metrics : sequence of str, optional
        Restrict the similarity features (``None``: all).
    max_pool, max_valid, max_test : int, optional
        Stratified random subsets of the splits, seeded by ``random_state`` (``None``: all pairs).
    encoder_params : dict, optional
        :class:`~skrisk.data.PairEncoder` parameters (``matcher="rnn"``).
    cache_dir : path-like, optional
        Keep the encoded matrix there (one ``.npz`` per dataset, matcher and settings), so that
        parallel or resumed runs skip FastText training and encoding. Not with ``encoder_params``.
    random_state : int, default=0
        Seeds the subsets.

    Returns
    -------
    ALTask

    Raises
    ------
    ValueError
        An unknown matcher, or a dataset without the three splits.
    DataError
        Unlabelled pairs.

    Examples
    --------
    >>> from skrisk.datasets import make_pairs
    >>> from skrisk.experiments import build_task
    >>> task = build_task(make_pairs(120, random_state=0), max_pool=40)
    >>> len(task.pool), len(task.valid) + len(task.test), task.X.dtype
    (40, 48, dtype('float32'))
    """
    _check_matcher(matcher)
    ds = load_dataset(dataset, data_home) if isinstance(dataset, str) else dataset
    missing = [s for s in ("train", "valid", "test") if s not in ds.split_names]
    if missing:
        raise ValueError(
            f"{ds.name} has no {missing} split(s) (its splits: {ds.split_names}): a simulated run needs "
            "labelled train (the pool), valid and test pairs."
        )
    y_all = ds.y
    if max_pool is None and max_valid is None and max_test is None:
        sub = ds
        pool, valid, test = (ds.split_positions(s) for s in ("train", "valid", "test"))
    else:
        rng = check_random_state(random_state)
        parts = [
            _stratified_subset(ds.split_positions(s), y_all, n, rng)
            for s, n in (("train", max_pool), ("valid", max_valid), ("test", max_test))
        ]
        sub = ds.subset(np.concatenate(parts))
        bounds = np.cumsum([0, *(len(p) for p in parts)])
        pool, valid, test = (np.arange(bounds[i], bounds[i + 1]) for i in range(3))
    settings = {"attributes": attributes, "metrics": metrics, "max_pool": max_pool, "max_valid": max_valid,
                "max_test": max_test, "random_state": random_state}
    cache = None
    if cache_dir is not None and not encoder_params:
        # the key holds the dataset's attributes: a cache of another column set (e.g. written
        # before a leaked attribute was dropped) is never read for this one
        digest = hashlib.sha256(json.dumps({**settings, "columns": list(ds.attributes)}, sort_keys=True,
                                           default=list).encode()).hexdigest()
        key = f"{ds.name}_{matcher}_{len(ds)}_{digest[:12]}"
        cache = Path(cache_dir) / f"{key}.npz"
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            if matcher == "lm":
                X: Any = _lm_pool(z["text"], z["features"])
            else:
                X = z["X"] if matcher == "feature" else _slicedict(z["tokens"], z["features"])
    else:
        features = SimilarityFeatures(metrics=list(metrics) if metrics else None,
                                      attributes=list(attributes) if attributes else None)
        X = _encode(sub, matcher, features, encoder_params)
        if cache is not None:
            _write_cache(cache, X, matcher)
    return ALTask(X=X, y=sub.y, pool=pool, valid=valid, test=test, name=ds.name)


def _encode(ds: PairDataset, matcher: str, features: SimilarityFeatures, encoder_params: dict | None) -> Any:
    frame = ds.to_frame()
    if matcher == "feature":
        return features.fit_transform(frame).astype(np.float32)
    if matcher == "lm":
        from ..matchers._lm_data import serialise_pairs

        return serialise_pairs(frame, features=features.fit_transform(frame))
    from ..data import PairEncoder
    from ..data._embeddings import train_fasttext

    params: dict[str, Any] = {"max_length": 20, "features": features, **(encoder_params or {})}
    if params.get("vocabulary") is None:
        params["vocabulary"] = train_fasttext(ds, dim=100, epochs=5, random_state=0)
    return PairEncoder(**params).fit_transform(frame)


def _write_cache(cache: Path, X: Any, matcher: str) -> None:
    """Write the encoded task atomically through a unique temporary file, so that processes
    encoding the same task at once (``bench_al.py --jobs``) never share a temporary name."""
    buf = io.BytesIO()
    if matcher == "feature":
        np.savez(buf, X=X)
    elif matcher == "lm":  # text as a fixed-width unicode array: no pickled objects in the cache
        np.savez(buf, text=X["text"].astype(str), features=X["features"])
    else:
        np.savez(buf, tokens=X["tokens"], features=X["features"])
    cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(cache, buf.getvalue(), on_error=lambda path, exc: OSError(
        exc.errno, f"Cannot write the task cache {path}: {exc.strerror or exc}. Free disk space or make "
        f"{path.parent} writable, or pass another --out folder"))


def _slicedict(tokens: np.ndarray, features: np.ndarray) -> Any:
    from skorch.helper import SliceDict

    return SliceDict(tokens=tokens, features=features)


def _lm_pool(text: np.ndarray, features: np.ndarray) -> Any:
    from skorch.helper import SliceDict

    return SliceDict(text=text.astype(object), features=features)


def make_matcher_factory(kind: str = "feature", **params: Any) -> Callable[[int], Any]:
    """``seed -> fresh unfitted matcher``; the same seed gives every strategy the same initialisation.

    Parameters
    ----------
    kind : {"feature", "rnn", "lm"}, default="feature"
        :class:`~skrisk.matchers.FeatureMatcher`, :class:`~skrisk.matchers.RNNMatcher` or
        :class:`~skrisk.matchers.LMMatcher`. With ``"lm"`` and ``warm_start=True`` (in
        ``params``) the factory hands back the same matcher for a seed every round, so each
        round continues from the last round's weights (``warm_epochs``); the first call per seed
        starts from the pretrained weights, so every strategy starts alike. Make one factory per
        run.
    **params
        Matcher parameters (``random_state`` is the seed).

    Examples
    --------
    >>> from skrisk.experiments._tasks import make_matcher_factory
    >>> make_matcher_factory("feature")(3).random_state
    3
    """
    _check_matcher(kind)
    if kind == "feature":
        from ..matchers import FeatureMatcher

        return lambda seed: FeatureMatcher(random_state=seed, **params)
    if kind == "lm":
        from ..matchers import LMMatcher

        if not params.get("warm_start"):
            return lambda seed: LMMatcher(random_state=seed, **params)
        kept: dict[int, Any] = {}
        return lambda seed: kept.setdefault(seed, LMMatcher(random_state=seed, **params))
    from ..matchers import RNNMatcher

    return lambda seed: RNNMatcher(random_state=seed, **params)


def matcher_fit_kwargs(kind: str) -> Callable[[ALTask], dict] | None:
    """The matcher's fit arguments for a task: the networks keep their best epoch on the validation split.

    Parameters
    ----------
    kind : {"feature", "rnn", "lm"}

    Returns
    -------
    callable or None
        ``task -> {"X_valid": ..., "y_valid": ...}`` for ``"rnn"`` and ``"lm"``; None for ``"feature"``.
    """
    _check_matcher(kind)
    if kind == "feature":
        return None
    return _validation_split


def _validation_split(task: ALTask) -> dict:
    return {"X_valid": task.rows(task.valid), "y_valid": task.y[task.valid]}
