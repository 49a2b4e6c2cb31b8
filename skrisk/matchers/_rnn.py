"""RNNMatcher: the DeepMatcher-style deep matcher as a skorch / scikit-learn classifier.

The estimator; its input contract, default validation split and seeds live in
:mod:`._rnn_data`, its callbacks in :mod:`._rnn_callbacks`, the pool inference path in
:mod:`._rnn_inference` and the network in :mod:`._modules`.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import numpy.typing as npt
import torch
from skorch import NeuralNetClassifier
from skorch.utils import to_tensor
from sklearn.pipeline import Pipeline
from torch import nn

from .._device import resolve_device
from .._params import Interval, Options, validate_call, validate_params
from ..exceptions import NotFittedError
from ._modules import RNNMatcherModule
from . import _io
from ._rnn_callbacks import default_callbacks
from ._rnn_data import (
    FIT_KEYS,
    check_labels,
    check_pool,
    rng_devices,
    seed_devices,
    seed_from,
    validation_from_fit_params,
)
from ._base import expected_gradient_lengths, last_layer_gradients
from ._rnn_inference import pool_passes

__all__ = ["RNNMatcher", "load_matcher", "make_rnn_pipeline", "rnn_from_parts", "rnn_parts", "save_matcher"]


class RNNMatcher(NeuralNetClassifier):
    """DeepMatcher-style deep matcher: attribute RNN summaries, comparisons, highway classifier.

    A :class:`skorch.NeuralNetClassifier` (so a scikit-learn classifier). Its input, the RNN
    family's pool type, is what :class:`~skrisk.data.PairEncoder` returns: a
    :class:`skorch.helper.SliceDict` with

    * ``tokens``: int64 token ids of shape ``(n_pairs, 2 * A, L)`` (the ``A`` left attributes,
      then the ``A`` right ones, padded with 0);
    * ``features`` (only with ``PairEncoder(features=...)``): float32 similarity features of
      shape ``(n_pairs, F)``, read by the hybrid model.

    A SliceDict slices by row, so scikit-learn (cross-validation, grid search), skorch and modAL
    handle it like an array. The network (``module_``) summarises each attribute value of each side
    with a bidirectional GRU (attention or mean pooling), compares the two sides' summaries, and
    classifies the comparisons with dense and highway layers.

    Besides ``fit``/``predict``/``predict_proba`` it offers what active-learning strategies need
    (all batched, in input row order, without gradients): :meth:`represent`,
    :meth:`predict_proba_and_represent` (both from one pass), :meth:`predict_proba_mc`,
    :meth:`gradient_embedding`, :meth:`expected_gradient_length`; and
    :meth:`save` / :meth:`load` (state dict + JSON, no pickle).

    Parameters
    ----------
    embeddings : WordVectors, ndarray of shape (V, d) or None, default=None
        Word vectors whose rows are indexed by the encoder's token ids (give the same
        ``WordVectors`` to ``PairEncoder(vocabulary=...)``). ``None``: random
        trainable embeddings of size ``embedding_dim`` with as many rows as the largest id seen in
        ``fit`` (+1); later, larger ids are read as ``<unk>``.
    embedding_dim : int, default=100
        Size of random embeddings (only with ``embeddings=None``).
    freeze_embeddings : bool, default=True
        Keep given word vectors fixed.
    hidden_size : int, default=64
        GRU size per direction.
    attention : bool, default=True
        Attention pooling of the GRU outputs (else mean pooling).
    classifier_size : int, default=128
        Width of the dense/highway layers = size of the representation.
    n_highway : int, default=1
        Highway layers.
    dropout : float, default=0.2
        Dropout before the output layer.
    rnn_dropout : float, default=0.2
        Dropout on the word vectors entering the GRUs (the paper's MC-dropout site).
    scale_features : bool, default=True
        With features: standardise them with the mean and standard deviation of the training
        features of a fresh ``fit`` (kept by warm starts; stored in the weights).
    use_features : bool or "auto", default="auto"
        Read the ``features`` of a SliceDict input: "auto" when present, True requires them,
        False ignores them.
    class_weight : "balanced", float or None, default="balanced"
        Weight of the positive class in the loss: "balanced" = negatives / positives of the
        training labels (as DeepMatcher), a float, or None (1).
    early_stopping : {"f1", "loss"} or None, default="f1"
        With validation data: :class:`skorch.callbacks.EarlyStopping` on the validation F1 (or
        loss) with ``load_best=True``: stop after ``patience`` epochs without improvement and
        keep the best epoch's weights. None (or no validation data): train ``max_epochs``, keep
        the last.
    patience : int or None, default=3
        Epochs without improvement before stopping (None: never stop early, still restore best).
    random_state : int, RandomState, Generator or None, default=None
        Seeds weight initialisation, shuffling and dropout of ``fit``: a seed is drawn from it
        once per ``fit``; the weights are initialised under it, and a :class:`torch.Generator`
        seeded by it shuffles the batches and seeds each batch's dropout masks (inside
        :func:`torch.random.fork_rng`: the global torch RNG is never touched). Same seed, same
        data -> the same model on CPU.
    lr : float, default=3e-3
        Learning rate (Adam).
    max_epochs : int, default=10
        Epochs per ``fit``.
    batch_size : int, default=32
        Training batch size.
    optimizer : torch optimizer class, default=torch.optim.Adam
    device : str, torch.device or None, default="auto"
        "auto" (or None): CUDA when available, else CPU; or a torch device ("cpu", "cuda:1").
        Resolved once per ``initialize`` by the rule every torch part of skrisk follows into
        ``device_``, where the module, the criterion and every batch go; the parameter keeps
        ``"auto"`` (so it survives ``clone``, pickling and deep copies, and a copy loaded where
        there is no GPU resolves to the CPU).
    warm_start : bool, default=False
        ``fit`` continues training the current weights instead of starting afresh (a new
        validation-best is tracked per ``fit``).
    verbose : int, default=0
        1 prints skorch's epoch table and shows tqdm progress bars in the interface methods.
    train_split : callable or None, default=validation_from_fit_params
        skorch's train/validation split. The default validates on the ``X_valid``/``y_valid``
        pairs given to ``fit`` (none without them: no silent 20 % hold-out). A stratified
        hold-out of the training pairs: ``skorch.dataset.ValidSplit(0.25, stratified=True,
        random_state=0)``; a fixed set: ``skorch.helper.predefined_split(Dataset(X_v, y_v))``.
        None: no validation.
    iterator_train__shuffle : bool, default=True
    iterator_valid__batch_size : int, default=512
        Batch size (pairs) of validation during ``fit``, and of the interface methods, which
        summarise the distinct attribute values of their input in batches of twice this many
        sequences.
    module, criterion : default=RNNMatcherModule, torch.nn.CrossEntropyLoss
        Only for skorch compatibility; not meant to be changed.
    **kwargs
        Other skorch parameters (``callbacks``, ``optimizer__weight_decay``, ...).

    Attributes
    ----------
    module_ : RNNMatcherModule
        The network.
    classes_ : ndarray of shape (2,)
        ``[0, 1]``.
    module_dims_ : dict
        Data-dependent sizes the module was built with (``n_attributes``, ``n_embeddings``,
        ``n_features``).
    pos_weight_ : float
        Positive-class weight used in the last ``fit``.
    best_epoch_ : int
        Epoch whose weights were kept (the last one without validation data or early
        stopping).
    seed_ : int
        The seed drawn from ``random_state`` by the last ``fit``.
    device_ : str
        The device in use (``device`` resolved).
    history_ : skorch.History
        Per-epoch losses (and ``valid_f1``).

    Notes
    -----
    ``fit(X, y, X_valid=None, y_valid=None)``: the validation pairs are encoded like ``X``. In a
    pipeline, pass them as ``pipe.fit(frame, y, rnnmatcher__X_valid=enc.transform(valid_frame),
    rnnmatcher__y_valid=...)`` with an encoder whose vocabulary is fixed (``PairEncoder(vocabulary=
    word_vectors)``), or use ``train_split=ValidSplit(...)``.

    Inference (``predict_proba``, :meth:`represent`, :meth:`predict_proba_mc`, the gradient
    methods) runs each *distinct* attribute value of the input through its GRU once (per MC pass),
    in batches sorted by length, then compares and classifies the pairs: a candidate pool repeats
    values a lot (each record appears in many candidate pairs, and many records share a value),
    so this is several times cheaper than a plain batched forward pass,
    and independent of row order. Pools are processed in chunks of 65,536 pairs.

    Input checks: a SliceDict (a mapping) with ``tokens`` and, optionally, ``features``; ids
    must be non-negative integers, with as many sequences (``2 * A``) and
    features as in ``fit`` (``L`` may differ). An all-padding attribute value is read as empty
    (zero summary, "empty" flag set). Training needs both classes (ValueError otherwise); with
    ``early_stopping="f1"`` the validation set needs a match (ValueError naming the fix).

    ``device="auto"`` (the default) is resolved once, in :meth:`initialize`, to ``device_``; the
    parameter keeps ``"auto"`` (scikit-learn's ``clone`` and ``get_params`` see what was given).
    skorch hands ``self.device`` to torch, which does not know ``"auto"``, in four places: its
    module and criterion initialisation (``_initialize_module``, ``_initialize_criterion``, which
    this class replaces by the public ``initialize_module`` / ``initialize_criterion`` building on
    ``device_``), its callbacks (``notify``) and unpickling (``__setstate__``), which see the
    resolved device. These are skorch's private methods: the test suite checks their signatures
    and the behaviour on the installed skorch, the newest release the project's constraints allow.

    Examples
    --------
    >>> import numpy as np
    >>> from skorch.helper import SliceDict
    >>> from skrisk.matchers import RNNMatcher
    >>> rng = np.random.RandomState(0)
    >>> ids = rng.randint(2, 20, size=(40, 2, 5))   # 40 pairs, 1 attribute, 5 tokens
    >>> ids[:20, 1] = ids[:20, 0]                  # first 20: both sides equal -> matches
    >>> X = SliceDict(tokens=ids)
    >>> y = np.r_[np.ones(20, int), np.zeros(20, int)]
    >>> m = RNNMatcher(hidden_size=8, classifier_size=16, max_epochs=30, lr=0.01,
    ...                random_state=0, device="cpu").fit(X, y)
    >>> m.predict_proba(X).shape, m.represent(X).shape, m.predict_proba_mc(X, n_iter=3).shape
    ((40, 2), (40, 16), (3, 40, 2))
    >>> bool((m.predict(X) == y).mean() > 0.9)
    True
    """

    _parameter_constraints: dict = {
        "use_features": [Options(str, {"auto"}), "boolean"],
        "early_stopping": [None, Options(str, {"f1", "loss"})],
        "class_weight": [None, Options(str, {"balanced"}), Interval(numbers.Real, 0, None, closed="neither")],
        "hidden_size": [Interval(numbers.Integral, 1, None)],
        "classifier_size": [Interval(numbers.Integral, 1, None)],
        "embedding_dim": [Interval(numbers.Integral, 1, None)],
        "max_epochs": [Interval(numbers.Integral, 1, None)],
        "batch_size": [Interval(numbers.Integral, 1, None)],
        "scale_features": ["boolean"],
        "dropout": [Interval(numbers.Real, 0, 1)],
        "rnn_dropout": [Interval(numbers.Real, 0, 1)],
        "embeddings": [None, "array-like"],  # a WordVectors has a length too
        "freeze_embeddings": ["boolean"],
        "attention": ["boolean"],
        "n_highway": [Interval(numbers.Integral, 0, None)],
        "patience": [None, Interval(numbers.Integral, 1, None)],
        "random_state": ["random_state"],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "optimizer": ["callable"],
        "device": [None, str, torch.device],
        "warm_start": ["boolean"],
        "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
        "train_split": [None, "callable"],
        "iterator_train__shuffle": ["boolean"],
        "iterator_valid__batch_size": [Interval(numbers.Integral, 1, None)],
        "module": ["callable"],
        "criterion": ["callable"],
    }

    def __init__(
        self,
        *,
        embeddings: object = None,
        embedding_dim: int = 100,
        freeze_embeddings: bool = True,
        hidden_size: int = 64,
        attention: bool = True,
        classifier_size: int = 128,
        n_highway: int = 1,
        dropout: float = 0.2,
        rnn_dropout: float = 0.2,
        scale_features: bool = True,
        use_features: bool | str = "auto",
        class_weight: str | float | None = "balanced",
        early_stopping: str | None = "f1",
        patience: int | None = 3,
        random_state: object = None,
        lr: float = 3e-3,
        max_epochs: int = 10,
        batch_size: int = 32,
        optimizer: type = torch.optim.Adam,
        device: str | torch.device | None = "auto",
        warm_start: bool = False,
        verbose: int = 0,
        train_split: object = validation_from_fit_params,
        iterator_train__shuffle: bool = True,
        iterator_valid__batch_size: int = 512,
        module: type = RNNMatcherModule,
        criterion: type = nn.CrossEntropyLoss,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            module,
            criterion=criterion,
            optimizer=optimizer,
            lr=lr,
            max_epochs=max_epochs,
            batch_size=batch_size,
            train_split=train_split,
            device=device,
            warm_start=warm_start,
            verbose=verbose,
            iterator_train__shuffle=iterator_train__shuffle,
            iterator_valid__batch_size=iterator_valid__batch_size,
            **kwargs,
        )
        self.embeddings = embeddings
        self.embedding_dim = embedding_dim
        self.freeze_embeddings = freeze_embeddings
        self.hidden_size = hidden_size
        self.attention = attention
        self.classifier_size = classifier_size
        self.n_highway = n_highway
        self.dropout = dropout
        self.rnn_dropout = rnn_dropout
        self.scale_features = scale_features
        self.use_features = use_features
        self.class_weight = class_weight
        self.early_stopping = early_stopping
        self.patience = patience
        self.random_state = random_state

    # ------------------------------------------------------------------ skorch hooks
    @property
    def _default_callbacks(self):
        return default_callbacks(self.early_stopping, self.patience)

    def initialize(self):
        """Resolve the device once (``device_``) and initialise the components (the module is
        rebuilt for the data's sizes at the start of ``fit``)."""
        self.device_ = str(resolve_device(self.device))
        return super().initialize()

    @contextmanager
    def _skorch_device(self) -> Iterator[None]:
        """Inside the block, ``self.device`` is the resolved ``device_`` (skorch's own code,
        e.g. the scoring callbacks' cached validation predictions and ``load_params``, hands
        ``net.device`` to torch, which does not know ``"auto"``); the parameter is restored after."""
        requested = self.device
        resolved = getattr(self, "device_", None)
        if resolved is None or not (requested is None or (isinstance(requested, str) and requested == "auto")):
            yield
            return
        self.device = resolved
        try:
            yield
        finally:
            self.device = requested

    def notify(self, method_name, **cb_kwargs):
        """skorch's callback dispatch, with ``device`` resolved for the callbacks."""
        with self._skorch_device():
            super().notify(method_name, **cb_kwargs)

    def load_params(self, *args, **kwargs):  # noqa: D102 - skorch's, with ``device`` resolved
        with self._skorch_device():
            return super().load_params(*args, **kwargs)

    def __setstate__(self, state):  # noqa: D105
        # skorch maps the pickled tensors onto ``state["device"]`` with torch, which does not
        # know "auto": map them onto the device "auto" resolves to here, keep the parameter.
        requested = state.get("device")
        auto = requested is None or (isinstance(requested, str) and requested == "auto")
        if auto:
            state["device"] = str(resolve_device(requested))
        super().__setstate__(state)
        if auto:
            self.device = requested
        if "device_" in self.__dict__:
            self.device_ = str(resolve_device(self.device))

    def _initialize_module(self, reason=None):
        # skorch's step, without its move to ``device`` (which fails for "auto"):
        # initialize_module builds the module on ``device_``.
        with self._current_init_context("module"):
            self.initialize_module()
        return self

    def _initialize_criterion(self, reason=None):
        # as _initialize_module: initialize_criterion builds the criterion on ``device_``
        with self._current_init_context("criterion"):
            self.initialize_criterion()
        return self

    def _module_kwargs(self, dims: dict) -> dict:
        emb = self.embeddings
        if emb is not None:
            emb = getattr(emb, "vectors", emb)
        return dict(
            n_attributes=dims["n_attributes"],
            n_embeddings=dims["n_embeddings"],
            embedding_dim=self.embedding_dim,
            embeddings=emb,
            freeze_embeddings=self.freeze_embeddings,
            hidden_size=self.hidden_size,
            attention=self.attention,
            n_features=dims["n_features"],
            classifier_size=self.classifier_size,
            n_highway=self.n_highway,
            dropout=self.dropout,
            rnn_dropout=self.rnn_dropout,
        )

    def initialize_module(self):
        """Build ``RNNMatcherModule`` on ``device_`` for the sizes of the data (a
        1-attribute placeholder before the first ``fit``), its weights drawn under ``seed_``."""
        dims = getattr(self, "module_dims_", None) or {
            "n_attributes": 1,
            "n_embeddings": self._n_embeddings(None),
            "n_features": 0,
        }
        kwargs = self._module_kwargs(dims)
        kwargs.update(self.get_params_for("module"))
        with torch.random.fork_rng(devices=[]):  # the caller's global RNG is left untouched
            torch.manual_seed(int(getattr(self, "seed_", 0)))
            module = self.module(**kwargs) if isinstance(self.module, type) else self.module
        self.module_ = module.to(self.device_)
        return self

    def initialize_criterion(self):
        """Cross-entropy on ``device_`` with the positive class weighted by ``pos_weight_``."""
        w = float(getattr(self, "pos_weight_", 1.0))
        kwargs = self.get_params_for("criterion")
        kwargs.setdefault("weight", torch.tensor([1.0, w], dtype=torch.float32))
        self.criterion_ = self.criterion(**kwargs).to(self.device_)
        return self

    def get_iterator(self, dataset, training=False):
        """skorch's iterators; the training one shuffles with the fit's seeded generator."""
        if not training:
            return super().get_iterator(dataset, training=False)
        kwargs = {"batch_size": self.batch_size, **self.get_params_for("iterator_train")}
        if kwargs["batch_size"] == -1:
            kwargs["batch_size"] = len(dataset)
        kwargs.setdefault("generator", self.generator_)
        return self.iterator_train(dataset, **kwargs)

    def train_step_single(self, batch, **fit_params):
        """skorch's training step with this batch's dropout masks seeded from the fit's
        generator (inside ``fork_rng``: the global torch RNG is not touched)."""
        seed = int(torch.randint(2**62, (1,), generator=self.generator_))
        with torch.random.fork_rng(devices=rng_devices(self.device_)):
            seed_devices(seed, self.device_)
            return super().train_step_single(batch, **fit_params)

    def infer(self, x, **fit_params):
        """Forward a batch (a mapping of ``tokens``/``features``) on ``device_``; the
        ``X_valid``/``y_valid`` fit parameters are not the module's."""
        fit_params = {k: v for k, v in fit_params.items() if k not in FIT_KEYS}
        x = to_tensor(x, device=self.device_)
        inputs = {"tokens": x["tokens"]}
        if self.module_dims_["n_features"]:
            inputs["features"] = x["features"]
        return self.module_(**inputs, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """Weighted cross-entropy of the logits (targets cast to int64)."""
        y_true = to_tensor(y_true, device=self.device_).long()
        return self.criterion_(y_pred, y_true)

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        """Check the data, draw the fit's seed, build the module for the data's sizes and set
        the class weights."""
        super().on_train_begin(net, X=X, y=y, **kwargs)
        self._check_params()
        tokens, feats = check_pool(X)
        y_arr = check_labels(y, tokens.shape[0])
        counts = np.bincount(y_arr, minlength=2)
        if (counts == 0).any():
            missing = "match (1)" if counts[1] == 0 else "non-match (0)"
            raise ValueError(
                f"The training labels hold a single class (no {missing}): a matcher needs at least "
                "one match and one non-match. Label more pairs (e.g. seed the pool with both classes)."
            )
        dims = self._data_dims(tokens, feats)
        if self.class_weight == "balanced":
            self.pos_weight_ = float(counts[0] / counts[1])
        elif self.class_weight is None:
            self.pos_weight_ = 1.0
        else:
            self.pos_weight_ = float(self.class_weight)
        self.seed_ = seed_from(self.random_state)
        self.generator_ = torch.Generator().manual_seed(self.seed_)
        keep = self.warm_start and getattr(self, "fitted_", False) and getattr(self, "module_dims_", None) == dims
        if not keep:
            self.module_dims_ = dims
            self._initialize_module()
            if dims["n_features"] and self.scale_features:
                f = np.asarray(feats, dtype=np.float64)
                self.module_.set_feature_scaling(f.mean(axis=0), f.std(axis=0))
            self._initialize_optimizer()
        self._initialize_criterion()
        self.fitted_ = False

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        """Check the validation pairs against the training ones before the epoch trains."""
        super().on_epoch_begin(net, dataset_train=dataset_train, dataset_valid=dataset_valid, **kwargs)
        if dataset_valid is None or not isinstance(getattr(dataset_valid, "X", None), Mapping):
            return
        tokens, feats = check_pool(dataset_valid.X, "X_valid")
        dims = self.module_dims_
        if tokens.shape[1] != 2 * dims["n_attributes"]:
            raise ValueError(
                f"X_valid has {tokens.shape[1]} sequences per pair, X has {2 * dims['n_attributes']}: "
                "encode both with the same PairEncoder."
            )
        if dims["n_features"] and (feats is None or feats.shape[1] != dims["n_features"]):
            raise ValueError("X_valid must carry the same similarity features as X.")
        if self.early_stopping == "f1" and not (np.asarray(dataset_valid.y) == 1).any():
            raise ValueError(
                "The validation set has no match (label 1), so its F1 is undefined and cannot pick "
                "the best epoch: add matches to it, or set early_stopping='loss' (or None)."
            )

    def on_train_end(self, net, X=None, y=None, **kwargs):
        """Mark the matcher fitted and record the epoch whose weights are kept."""
        super().on_train_end(net, X=X, y=y, **kwargs)
        self.fitted_ = True
        self.classes_inferred_ = np.array([0, 1])
        stopper = dict(self.callbacks_).get("early_stopping")
        best = getattr(stopper, "best_epoch_", 0) if stopper is not None else 0
        self.best_epoch_ = int(best) if best else len(self.history)

    # ------------------------------------------------------------------ checks
    def _n_embeddings(self, max_id: int | None) -> int:
        if self.embeddings is not None:
            vec = getattr(self.embeddings, "vectors", self.embeddings)
            shape = np.shape(vec)
            if len(shape) != 2:
                raise ValueError(
                    f"embeddings must be a WordVectors or an array of shape (V, d), got shape {shape}."
                )
            return int(shape[0])
        return max(int(max_id or 1) + 1, 2)

    def _check_params(self) -> None:
        validate_params(self)

    def _data_dims(self, tokens: np.ndarray, feats: np.ndarray | None) -> dict:
        if self.use_features is True and feats is None:
            raise ValueError(
                "use_features=True but X has no features: pass PairEncoder(features="
                "SimilarityFeatures()) output, or set use_features='auto'/False."
            )
        n_feat = 0 if (feats is None or self.use_features is False) else int(feats.shape[1])
        max_id = int(tokens.max()) if tokens.size else 1
        return {"n_attributes": tokens.shape[1] // 2, "n_embeddings": self._n_embeddings(max_id),
                "n_features": n_feat}

    def _check_predict_X(self, X: object) -> tuple[np.ndarray, np.ndarray | None]:
        """Check a pool against the fitted sizes; its ``(tokens, features)``."""
        self._check_fitted()
        tokens, feats = check_pool(X)
        A = self.module_dims_["n_attributes"]
        if tokens.shape[1] != 2 * A:
            raise ValueError(
                f"X has {tokens.shape[1]} sequences per pair, but the matcher was fitted with "
                f"{2 * A} (A = {A} attributes): encode with the same PairEncoder."
            )
        F = self.module_dims_["n_features"]
        if F and (feats is None or feats.shape[1] != F):
            got = None if feats is None else feats.shape[1]
            raise ValueError(
                f"The matcher was fitted with {F} similarity features, X has {got}: pass "
                "SliceDict(tokens=..., features=...) from the same PairEncoder."
            )
        return tokens, feats

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet: call fit(X, y) with labelled pairs first."
            )

    def __sklearn_is_fitted__(self) -> bool:  # noqa: D105
        return bool(getattr(self, "initialized_", False)) and getattr(self, "module_dims_", None) is not None

    def check_is_fitted(self, attributes=None, *args, **kwargs):  # noqa: D102
        self._check_fitted()

    # ------------------------------------------------------------------ prediction & interface
    def predict_proba(self, X: object) -> npt.NDArray[np.float32]:
        """Class probabilities ``(n, 2)`` (columns: non-match, match), in row order.

        Parameters
        ----------
        X : SliceDict
            Encoded pairs (``tokens`` and, for a hybrid matcher, ``features``).

        Returns
        -------
        ndarray of shape (n, 2)
        """
        if isinstance(X, torch.utils.data.Dataset):  # skorch's validation scoring during fit
            return super().predict_proba(X)
        return self._infer(X, hidden=False)[1]

    def _pool_passes(
        self, tokens: np.ndarray, feats: np.ndarray | None, n_iter: int, hidden: bool
    ) -> Iterator[tuple[Any, Any]]:
        return pool_passes(
            self.module_, tokens, feats, device=self.device_, batch_size=self.iterator_valid__batch_size,
            n_iter=n_iter, hidden=hidden, progress=bool(self.verbose),
        )

    def _infer(self, X: object, hidden: bool = True) -> tuple[Any, np.ndarray]:
        """``(H or None, P)`` as numpy arrays, evaluation mode, one pass."""
        tokens, feats = self._check_predict_X(X)
        self.module_.eval()
        hs, ps = [], []
        with torch.inference_mode():
            for h, p in self._pool_passes(tokens, feats, 1, hidden):
                hs.append(h)
                ps.append(p)
        H = torch.cat(hs).numpy() if hidden else None
        return H, torch.cat(ps).numpy()

    def predict(self, X: object) -> npt.NDArray[np.int64]:
        """Match labels: 1 where the match probability is above
        :data:`~skrisk.matchers.MATCH_THRESHOLD` (a tie is a non-match), as every skrisk matcher."""
        from ._base import match_labels

        return match_labels(self.predict_proba(X))

    def predict_proba_and_represent(self, X: object) -> tuple[np.ndarray, np.ndarray]:
        """``(predict_proba(X), represent(X))`` from one pass (what risk sampling scores a pool
        with).

        Returns
        -------
        P : ndarray of shape (n, 2)
        H : ndarray of shape (n, h)
        """
        H, P = self._infer(X, hidden=True)
        return P, H

    def represent(self, X: object, *, return_proba: bool = False) -> Any:
        """Penultimate-layer representation ``(n, h)``: the input of the output layer.

        ``h = classifier_size``.

        Computed in evaluation mode (no dropout), without gradients, in batches of
        ``iterator_valid__batch_size``, in row order.

        Parameters
        ----------
        X : SliceDict
            Encoded pairs.
        return_proba : bool, default=False
            Also return ``predict_proba(X)`` from the same pass (half the cost of two calls).

        Returns
        -------
        H : ndarray of shape (n, h)
        P : ndarray of shape (n, 2)
            Only with ``return_proba=True``.
        """
        H, P = self._infer(X, hidden=True)
        return (H, P) if return_proba else H

    @validate_call({"n_iter": [Interval(numbers.Integral, 1, None)]})
    def predict_proba_mc(
        self, X: object, n_iter: int = 20, random_state: object = None
    ) -> npt.NDArray[np.float32]:
        """MC-dropout class probabilities ``(n_iter, n, 2)``.

        Only the dropout layers are in training mode (the GRUs and everything else in
        evaluation mode), no gradients, row order kept. Each pass draws fresh dropout masks from a
        generator seeded by ``random_state`` (the global torch RNG is left as it was). Within a
        pass, pairs that share an attribute value share its word-vector dropout mask (each
        distinct value is summarised once per pass); every pair's own distribution is the one of
        an independent pass.

        Parameters
        ----------
        X : SliceDict
            Encoded pairs.
        n_iter : int, default=20
            Stochastic passes.
        random_state : int, RandomState, Generator or None, default=None
            Seed of the dropout masks (None: fresh entropy).
        """
        seed = seed_from(random_state)
        tokens, feats = self._check_predict_X(X)
        dropouts = [m for m in self.module_.modules() if isinstance(m, nn.Dropout)]
        out = []
        with torch.random.fork_rng(devices=rng_devices(self.device_)), torch.inference_mode():
            torch.manual_seed(seed)
            self.module_.eval()
            for m in dropouts:
                m.train()
            try:
                chunk: list = []
                for _, p in self._pool_passes(tokens, feats, int(n_iter), hidden=False):
                    chunk.append(p)
                    if len(chunk) == n_iter:
                        out.append(torch.stack(chunk))
                        chunk = []
            finally:
                self.module_.eval()
        return torch.cat(out, dim=1).numpy()

    def gradient_embedding(self, X: object) -> npt.NDArray[np.float32]:
        """BADGE gradient embeddings ``(n, 2 * h)`` (``h``: size of :meth:`represent`).

        The gradient of the (unweighted) cross-entropy loss w.r.t. the output layer's weights at
        the predicted label ``yhat``: ``(p - onehot(yhat)) outer h``, flattened class by class
        (the first ``h`` values belong to class 0). Analytic, no backward pass.
        """
        h, p = self._infer(X, hidden=True)
        return last_layer_gradients(p, h)

    def expected_gradient_length(self, X: object) -> npt.NDArray[np.float32]:
        """Expected gradient length ``(n,)`` (EGL).

        ``sum_y p(y | x) * ||grad_W loss(x, y)||`` over both hypothetical labels, where ``W`` are
        the output layer's weights and ``||grad_W|| = ||p - onehot(y)|| * ||h||``.
        """
        h, p = self._infer(X, hidden=True)
        return expected_gradient_lengths(p, h).astype(np.float32)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str) -> None:
        """Save the fitted matcher to the folder ``path`` (``weights.pt`` + ``config.json``).

        See :func:`skrisk.matchers.save_matcher`.
        """
        save_matcher(self, path)

    @classmethod
    def load(cls, path: str, device: str | None = None) -> "RNNMatcher":
        """Load a matcher saved with :meth:`save` (``torch.load(weights_only=True)``, no pickle)."""
        return _io.read_folder(cls, path, device=device)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.classifier_tags.multi_class = False
        tags.non_deterministic = False
        return tags


def make_rnn_pipeline(
    word_vectors: object = None,
    *,
    max_length: int = 32,
    features: object = None,
    **matcher_params: Any,
) -> Pipeline:
    """``Pipeline(PairEncoder, RNNMatcher)`` sharing one vocabulary / embedding matrix.

    Parameters
    ----------
    word_vectors : WordVectors or None
        Vocabulary of the encoder and embeddings of the matcher (e.g.
        ``train_fasttext(dataset)``). None: the encoder learns a vocabulary and the matcher
        trains random embeddings.
    max_length : int, default=32
        Tokens per attribute.
    features : transformer or None
        E.g. ``SimilarityFeatures()`` for the hybrid model.
    **matcher_params
        Parameters of :class:`RNNMatcher`.

    Returns
    -------
    Pipeline
        Steps ``"encoder"`` and ``"matcher"``; its input is a pair frame
        (:meth:`PairDataset.to_frame`).
    """
    from ..data._tokenize import PairEncoder

    return Pipeline(
        [
            ("encoder", PairEncoder(max_length=max_length, vocabulary=word_vectors, features=features)),
            ("matcher", RNNMatcher(embeddings=word_vectors, **matcher_params)),
        ]
    )


# ---------------------------------------------------------------------- persistence (format: ._io)
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
    return _io.write_folder(rnn_parts(matcher), path)


def load_matcher(path: str | os.PathLike, device: str | None = None) -> object:
    """Load a matcher saved by :func:`save_matcher`.

    Nothing in the files can run code: the weights are read with
    ``torch.load(..., weights_only=True)`` (a pickle carrying code is refused) and the config is
    JSON. Both are validated before the matcher is built: the config's keys, types and format
    version, the classes ``[0, 1]``, and every tensor's name, shape and finiteness against the
    network the config describes.

    Parameters
    ----------
    path : str or path-like
        The folder.
    device : str or None, default=None
        Device of the loaded matcher (None or "auto": CUDA when available, else CPU).

    Returns
    -------
    RNNMatcher or LMMatcher
        Fitted, predicting exactly as the saved one (``embeddings`` is rebuilt from the saved
        matrix and vocabulary). A folder holding ``lm_matcher.json`` is an
        :class:`~skrisk.matchers.LMMatcher`, loaded by :meth:`LMMatcher.load
        <skrisk.matchers.LMMatcher.load>`.

    Raises
    ------
    FileNotFoundError
        The folder lacks ``config.json`` or ``weights.pt``.
    DataError
        A file is malformed (invalid JSON, wrong keys or types, a newer format, classes other
        than ``[0, 1]``, a truncated or corrupt weights file, a pickle carrying objects other
        than tensors, NaN or infinite weights, tensors that do not fit the config). The message
        names the file and the fix.
    """
    if (Path(path) / "lm_matcher.json").is_file():  # a folder of LMMatcher.save
        from ._lm import lm_from_folder

        return lm_from_folder(path, device if device is not None else "auto")
    return _io.read_folder(RNNMatcher, path, device=device)


def rnn_parts(matcher: object) -> tuple[str, bytes]:
    """The two saved parts of a fitted :class:`RNNMatcher`: ``config.json`` text, ``weights.pt`` bytes.

    The one writer of the matcher format, used by :func:`save_matcher` (two files in a folder)
    and by :meth:`skrisk.matching.MatchModel.save` (two entries of the model file).
    """
    if not isinstance(matcher, RNNMatcher):
        raise TypeError(f"save_matcher saves an RNNMatcher, got {type(matcher).__name__}.")
    return _io.encode_rnn(matcher)


def rnn_from_parts(config: bytes, weights: bytes, cfg_path: Path, w_path: Path,
                   device: str | None = None) -> "RNNMatcher":
    """The :class:`RNNMatcher` of the two parts written by :func:`rnn_parts`, checked as by
    :func:`load_matcher` (``cfg_path``/``w_path`` name where the parts came from in messages)."""
    return _io.decode_rnn(RNNMatcher, config, weights, cfg_path, w_path, device)
