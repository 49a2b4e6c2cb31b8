"""RNNMatcher: the DeepMatcher-style deep matcher as a skorch / scikit-learn classifier."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, Iterator

import numpy as np
import numpy.typing as npt
import torch
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback, EpochScoring, EpochTimer, PassthroughScoring, PrintLog
from skorch.utils import to_tensor
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from torch import nn
from torch.utils.data import Subset

from ..exceptions import NotFittedError
from ._modules import RNNMatcherModule

__all__ = ["RNNMatcher", "make_rnn_pipeline"]

_FIT_KEYS = ("X_valid", "y_valid")
# Pairs per chunk of the inference path (distinct values are found per chunk).
_POOL_CHUNK = 65_536
# Global torch RNG states saved while a seeded fit runs (restored at its end), per matcher.
_SAVED_RNG: "weakref.WeakKeyDictionary[Any, tuple]" = weakref.WeakKeyDictionary()
# The user's ``device`` parameter (e.g. "auto") while skorch sees the resolved one during a fit.
_SAVED_DEVICE: "weakref.WeakKeyDictionary[Any, object]" = weakref.WeakKeyDictionary()


def _resolve_device(device: object) -> str:
    if device is None:
        return "cpu"
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


def _seed_from(random_state: object) -> int:
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0] & 0x7FFFFFFF)
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state) & 0x7FFFFFFF
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    raise TypeError(f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}.")


class _BestEpoch(Callback):
    """Early stopping on the validation set with the best epoch's weights restored at the end.

    Reads ``net.early_stopping`` ('f1' -> ``valid_f1`` higher is better, 'loss' -> ``valid_loss``)
    and ``net.patience``. Does nothing when there is no validation data.
    """

    def on_train_begin(self, net, **kwargs):  # noqa: D102
        self.best_score_ = None
        self.best_epoch_ = None
        self.best_state_ = None
        self.wait_ = 0

    def on_epoch_end(self, net, **kwargs):  # noqa: D102
        if net.early_stopping is None:
            return
        key = "valid_f1" if net.early_stopping == "f1" else "valid_loss"
        row = net.history[-1]
        if key not in row:
            return
        score = row[key] if key == "valid_f1" else -row[key]
        if self.best_score_ is None or score > self.best_score_:
            self.best_score_, self.best_epoch_, self.wait_ = score, row["epoch"], 0
            self.best_state_ = {k: v.detach().clone() for k, v in net.module_.state_dict().items()}
        else:
            self.wait_ += 1
            if net.patience is not None and self.wait_ >= net.patience:
                raise KeyboardInterrupt  # skorch's way to stop training (caught in partial_fit)

    def on_train_end(self, net, **kwargs):  # noqa: D102
        if self.best_state_ is not None:
            net.module_.load_state_dict(self.best_state_)
            net.best_epoch_ = int(self.best_epoch_)
            self.best_state_ = None
        else:
            net.best_epoch_ = len(net.history)


def _f1(net, X, y):
    from sklearn.metrics import f1_score

    return f1_score(np.asarray(y), net.predict(X), zero_division=0.0)


class RNNMatcher(NeuralNetClassifier):
    """DeepMatcher-style deep matcher: attribute RNN summaries, comparisons, highway classifier.

    A :class:`skorch.NeuralNetClassifier` (so a scikit-learn classifier) over the padded pair
    encoding of :class:`~skrisk.data.PairEncoder`: an int64 array ``(n_pairs, 2 * A, L)``, or a
    :class:`skorch.helper.SliceDict` with ``tokens`` and float ``features`` for the hybrid model
    that also reads similarity features. See :mod:`skrisk.matchers._modules` for the network.

    Besides ``fit``/``predict``/``predict_proba`` it offers what active-learning strategies need
    (all batched, in input row order, without gradients): :meth:`represent`,
    :meth:`predict_proba_and_represent` (both from one pass), :meth:`predict_proba_mc`,
    :meth:`gradient_embedding`, :meth:`expected_gradient_length`; and
    :meth:`save` / :meth:`load` (state dict + JSON, no pickle).

    Parameters
    ----------
    embeddings : WordVectors, ndarray of shape (V, d) or None, default=None
        Word vectors whose rows are indexed by the encoder's token ids (give the same
        :class:`~skrisk.data.WordVectors` to ``PairEncoder(vocabulary=...)``). ``None``: random
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
        With validation data: keep the epoch with the best validation F1 (or loss) and stop after
        ``patience`` epochs without improvement. None: train ``max_epochs``, keep the last.
    patience : int or None, default=3
        Epochs without improvement before stopping (None: never stop early, still restore best).
    validation_fraction : float or None, default=None
        When ``fit`` gets no ``X_valid``: hold out this stratified share of the training pairs
        for early stopping (seeded by ``random_state``). None: no validation unless given.
    random_state : int, RandomState, Generator or None, default=None
        Seeds weight initialisation, shuffling and dropout of ``fit`` (the global torch RNG is
        restored afterwards). Same seed, same data -> the same model on CPU.
    lr : float, default=3e-3
        Learning rate (Adam).
    max_epochs : int, default=10
        Epochs per ``fit``.
    batch_size : int, default=32
        Training batch size.
    optimizer : torch optimizer class, default=torch.optim.Adam
    device : str, default="auto"
        "auto" uses CUDA when available, else CPU; or any torch device string.
    warm_start : bool, default=False
        ``fit`` continues training the current weights instead of starting afresh (a new
        validation-best is tracked per ``fit``).
    verbose : int, default=0
        1 prints skorch's epoch table and shows tqdm progress bars in the interface methods.
    train_split : default=None
        Kept for skorch compatibility; ``None`` (no silent 20 % hold-out). Use ``X_valid``/
        ``validation_fraction`` instead.
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
        Epoch whose weights were kept (the last one without validation data).
    device_ : str
        The device in use.
    history_ : skorch.History
        Per-epoch losses (and ``valid_f1``).

    Notes
    -----
    ``fit(X, y, X_valid=None, y_valid=None)``: the validation pairs are encoded like ``X``. In a
    pipeline, pass them as ``pipe.fit(frame, y, rnnmatcher__X_valid=enc.transform(valid_frame),
    rnnmatcher__y_valid=...)`` with an encoder whose vocabulary is fixed (``PairEncoder(vocabulary=
    word_vectors)``), or use ``validation_fraction``.

    Inference (``predict_proba``, :meth:`represent`, :meth:`predict_proba_mc`, the gradient
    methods) runs each *distinct* attribute value of the input through its GRU once (per MC pass),
    in batches sorted by length, then compares and classifies the pairs: a candidate pool repeats
    values a lot (DBLP-Scholar's 17,223 training pairs hold about 20,000 distinct values in
    137,784 attribute slots), so this is several times cheaper than a plain batched forward pass,
    and independent of row order. Pools are processed in chunks of 65,536 pairs.

    Input checks: ids must be non-negative integers, with as many sequences (``2 * A``) and
    features as in ``fit`` (``L`` may differ). An all-padding attribute value is read as empty
    (zero summary, "empty" flag set). Training needs both classes (ValueError otherwise); with
    ``early_stopping="f1"`` the validation set needs a match (ValueError naming the fix).

    Examples
    --------
    >>> import numpy as np
    >>> from skrisk.matchers import RNNMatcher
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randint(2, 20, size=(40, 2, 5))   # 40 pairs, 1 attribute, 5 tokens
    >>> X[:20, 1] = X[:20, 0]                    # first 20: both sides equal -> matches
    >>> y = np.r_[np.ones(20, int), np.zeros(20, int)]
    >>> m = RNNMatcher(hidden_size=8, classifier_size=16, max_epochs=30, lr=0.01,
    ...                random_state=0, device="cpu").fit(X, y)
    >>> m.predict_proba(X).shape, m.represent(X).shape, m.predict_proba_mc(X, n_iter=3).shape
    ((40, 2), (40, 16), (3, 40, 2))
    >>> bool((m.predict(X) == y).mean() > 0.9)
    True
    """

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
        validation_fraction: float | None = None,
        random_state: object = None,
        lr: float = 3e-3,
        max_epochs: int = 10,
        batch_size: int = 32,
        optimizer: type = torch.optim.Adam,
        device: str | None = "auto",
        warm_start: bool = False,
        verbose: int = 0,
        train_split: object = None,
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
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    # ------------------------------------------------------------------ skorch plumbing
    @property
    def _default_callbacks(self):
        return [
            ("epoch_timer", EpochTimer()),
            ("train_loss", PassthroughScoring(name="train_loss", on_train=True)),
            ("valid_loss", PassthroughScoring(name="valid_loss")),
            ("valid_f1", EpochScoring(_f1, name="valid_f1", lower_is_better=False)),
            ("best_epoch", _BestEpoch()),
            ("print_log", PrintLog()),
        ]

    class _DeviceForSkorch:
        """Let skorch's own code see the resolved device while it initialises components."""

        def __init__(self, net: "RNNMatcher") -> None:
            self.net = net

        def __enter__(self) -> None:
            self.saved = self.net.__dict__["device"]
            self.net.__dict__["device"] = self.net.device_

        def __exit__(self, *exc: object) -> None:
            self.net.__dict__["device"] = self.saved

        def enter_until_train_end(self) -> None:
            """Keep the resolved device visible for the whole fit (undone in on_train_end)."""
            self.__enter__()
            _SAVED_DEVICE[self.net] = self.saved

    def initialize(self):
        """Resolve the device and initialise the components (the module is rebuilt for the data's
        sizes at the start of ``fit``)."""
        self.device_ = _resolve_device(self.device)
        with self._DeviceForSkorch(self):
            return super().initialize()

    def set_params(self, **kwargs):  # noqa: D102
        if "device" in kwargs or not hasattr(self, "device_"):
            return super().set_params(**kwargs)
        with self._DeviceForSkorch(self):
            return super().set_params(**kwargs)

    def __setstate__(self, state):  # noqa: D105
        device = state.get("device")
        state["device"] = state.get("device_", _resolve_device(device))
        super().__setstate__(state)
        self.__dict__["device"] = device

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
        """Build :class:`RNNMatcherModule` for the sizes of the data (a 1-attribute placeholder
        before the first ``fit``)."""
        dims = getattr(self, "module_dims_", None) or {
            "n_attributes": 1,
            "n_embeddings": self._n_embeddings(None),
            "n_features": 0,
        }
        kwargs = self._module_kwargs(dims)
        kwargs.update(self.get_params_for("module"))
        # initial weights come from the fit's seed; the caller's global RNG is left untouched
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(getattr(self, "seed_", 0)))
            self.module_ = self.module(**kwargs) if isinstance(self.module, type) else self.module
        return self

    def initialize_criterion(self):
        """Cross-entropy with the positive class weighted by ``pos_weight_``."""
        w = float(getattr(self, "pos_weight_", 1.0))
        weight = torch.tensor([1.0, w], dtype=torch.float32, device=self.device_)
        kwargs = self.get_params_for("criterion")
        kwargs.setdefault("weight", weight)
        self.criterion_ = self.criterion(**kwargs)
        return self

    def infer(self, x, **fit_params):
        """Forward a batch on ``device_`` (drops the ``X_valid``/``y_valid`` fit parameters)."""
        fit_params = {k: v for k, v in fit_params.items() if k not in _FIT_KEYS}
        x = to_tensor(x, device=self.device_)
        if isinstance(x, Mapping):
            x = self._select_inputs(x)
            return self.module_(**x, **fit_params)
        return self.module_(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """Weighted cross-entropy of the logits (targets cast to int64)."""
        y_true = to_tensor(y_true, device=self.device_).long()
        return self.criterion_(y_pred, y_true)

    def _select_inputs(self, x: Mapping) -> dict:
        out = {"tokens": x["tokens"]}
        if self.module_dims_["n_features"] and "features" in x:
            out["features"] = x["features"]
        return out

    # ------------------------------------------------------------------ validation
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

    def _check_X(self, X: object, what: str = "X") -> tuple[np.ndarray, np.ndarray | None]:
        """Return (tokens, features) views of X after checking types and shapes."""
        from pandas import DataFrame

        if isinstance(X, DataFrame):
            raise TypeError(
                f"{what} is a DataFrame: RNNMatcher reads token ids. Encode the pair frame first, "
                "e.g. make_rnn_pipeline(word_vectors) or make_pipeline(PairEncoder(...), RNNMatcher(...))."
            )
        feats = None
        if isinstance(X, Mapping):
            if "tokens" not in X:
                raise ValueError(
                    f"{what} is a mapping without 'tokens': pass SliceDict(tokens=..., features=...) "
                    "as PairEncoder(features=...) returns."
                )
            extra = sorted(set(X) - {"tokens", "features"})
            if extra:
                raise ValueError(f"{what} has unknown keys {extra}: only 'tokens' and 'features'.")
            tokens = X["tokens"]
            feats = X.get("features")
        else:
            tokens = X
        if isinstance(tokens, torch.Tensor):
            tokens = tokens.detach().cpu().numpy()
        tokens = np.asarray(tokens)
        if tokens.ndim != 3:
            raise ValueError(
                f"{what} must be token ids of shape (n_pairs, 2 * n_attributes, max_length), got "
                f"shape {tokens.shape}: encode pairs with PairEncoder."
            )
        if not np.issubdtype(tokens.dtype, np.integer):
            raise TypeError(
                f"{what} token ids must be integers (PairEncoder gives int64), got {tokens.dtype}."
            )
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

    def _check_y(self, y: object, n: int, what: str = "y") -> np.ndarray:
        if y is None:
            raise ValueError(f"{what} is required: RNNMatcher is a supervised classifier.")
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != n:
            raise ValueError(f"{what} must be 1-D with one label per pair ({n}), got shape {y.shape}.")
        if y.dtype == bool:
            y = y.astype(np.int64)
        if not np.issubdtype(y.dtype, np.number) or not np.isin(y, (0, 1)).all():
            raise ValueError(
                f"{what} must hold 0 (non-match) and 1 (match) only, got values "
                f"{np.unique(y)[:5].tolist()}."
            )
        return y.astype(np.int64)

    def _check_params(self) -> None:
        if self.use_features not in ("auto", True, False):
            raise ValueError(f"use_features must be 'auto', True or False, got {self.use_features!r}.")
        if self.early_stopping not in ("f1", "loss", None):
            raise ValueError(f"early_stopping must be 'f1', 'loss' or None, got {self.early_stopping!r}.")
        cw = self.class_weight
        if not (cw is None or cw == "balanced" or (isinstance(cw, (int, float)) and not isinstance(cw, bool) and cw > 0)):
            raise ValueError(f"class_weight must be 'balanced', a positive number or None, got {cw!r}.")
        vf = self.validation_fraction
        if vf is not None and not (isinstance(vf, float) and 0.0 < vf < 1.0):
            raise ValueError(f"validation_fraction must be None or a float in (0, 1), got {vf!r}.")
        for name in ("hidden_size", "classifier_size", "embedding_dim", "max_epochs", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}.")
        if not isinstance(self.scale_features, (bool, np.bool_)):
            raise ValueError(f"scale_features must be True or False, got {self.scale_features!r}.")
        for name in ("dropout", "rnn_dropout"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v < 1.0):
                raise ValueError(f"{name} must be a float in [0, 1), got {v!r}.")

    def _data_dims(self, tokens: np.ndarray, feats: np.ndarray | None) -> dict:
        if self.use_features is True and feats is None:
            raise ValueError(
                "use_features=True but X has no features: pass PairEncoder(features="
                "SimilarityFeatures()) output, or set use_features='auto'/False."
            )
        n_feat = 0 if (feats is None or self.use_features is False) else int(feats.shape[1])
        max_id = int(tokens.max()) if tokens.size else 1
        n_emb = self._n_embeddings(max_id)
        return {"n_attributes": tokens.shape[1] // 2, "n_embeddings": n_emb, "n_features": n_feat}

    def _check_predict_X(self, X: object) -> None:
        self._check_fitted()
        if isinstance(X, torch.utils.data.Dataset):  # skorch's own calls (validation scoring)
            return
        tokens, feats = self._check_X(X)
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

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet: call fit(X, y) with labelled pairs first."
            )

    def __sklearn_is_fitted__(self) -> bool:  # noqa: D105
        return bool(getattr(self, "initialized_", False)) and getattr(self, "module_dims_", None) is not None

    def check_is_fitted(self, attributes=None, *args, **kwargs):  # noqa: D102
        self._check_fitted()

    # ------------------------------------------------------------------ fit hooks
    def on_train_begin(self, net, X=None, y=None, **kwargs):
        """Check the data, build the module for its sizes, set class weights and seed the RNG."""
        super().on_train_begin(net, X=X, y=y, **kwargs)
        self._check_params()
        tokens, feats = self._check_X(X)
        y_arr = self._check_y(y, tokens.shape[0])
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
        # seeded torch RNG for the whole fit; the caller's global state comes back in on_train_end
        seed = _seed_from(self.random_state)
        self.seed_ = seed
        states = (torch.get_rng_state(), torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
        _SAVED_RNG[self] = states
        torch.manual_seed(seed)
        keep = (
            self.warm_start
            and getattr(self, "fitted_", False)
            and getattr(self, "module_dims_", None) == dims
        )
        self._DeviceForSkorch(self).enter_until_train_end()
        if not keep:
            self.module_dims_ = dims
            self._initialize_module()
            if dims["n_features"] and self.scale_features:
                f = np.asarray(feats, dtype=np.float64)
                self.module_.set_feature_scaling(f.mean(axis=0), f.std(axis=0))
            self._initialize_optimizer()
        self._initialize_criterion()
        self.fitted_ = False

    def on_train_end(self, net, X=None, y=None, **kwargs):
        """Mark the matcher fitted and restore the caller's torch RNG state."""
        super().on_train_end(net, X=X, y=y, **kwargs)
        if self in _SAVED_DEVICE:
            self.__dict__["device"] = _SAVED_DEVICE.pop(self)
        self.fitted_ = True
        self.classes_inferred_ = np.array([0, 1])
        states = _SAVED_RNG.pop(self, None)
        if states is not None:
            torch.set_rng_state(states[0])
            if states[1] is not None:
                torch.cuda.set_rng_state_all(states[1])

    def get_split_datasets(self, X, y=None, X_valid=None, y_valid=None, **fit_params):
        """Training set and the explicit validation set (``X_valid``/``y_valid`` fit parameters,
        or a stratified ``validation_fraction`` hold-out; never a silent split)."""
        if X_valid is not None or y_valid is not None:
            if X_valid is None or y_valid is None:
                raise ValueError("Pass both X_valid and y_valid (or neither).")
            tokens, feats = self._check_X(X_valid, "X_valid")
            yv = self._check_y(y_valid, tokens.shape[0], "y_valid")
            self._check_valid_compatible(tokens, feats)
            self._check_valid_labels(yv)
            return self.get_dataset(X, y), self.get_dataset(X_valid, yv)
        if self.validation_fraction is not None:
            y_arr = np.asarray(y)
            idx = np.arange(len(y_arr))
            try:
                tr, va = train_test_split(
                    idx, test_size=self.validation_fraction, stratify=y_arr,
                    random_state=self.seed_,
                )
            except ValueError as exc:
                raise ValueError(
                    f"validation_fraction={self.validation_fraction} cannot hold out a stratified "
                    f"validation set from {len(y_arr)} pairs ({exc}). Pass X_valid/y_valid, label more "
                    "pairs, or set validation_fraction=None."
                ) from exc
            self._check_valid_labels(y_arr[va])
            ds = self.get_dataset(X, y)
            return Subset(ds, tr), Subset(ds, va)
        return super().get_split_datasets(X, y, **fit_params)

    def _check_valid_compatible(self, tokens: np.ndarray, feats: np.ndarray | None) -> None:
        dims = self.module_dims_
        if tokens.shape[1] != 2 * dims["n_attributes"]:
            raise ValueError(
                f"X_valid has {tokens.shape[1]} sequences per pair, X has {2 * dims['n_attributes']}: "
                "encode both with the same PairEncoder."
            )
        if dims["n_features"] and (feats is None or feats.shape[1] != dims["n_features"]):
            raise ValueError("X_valid must carry the same similarity features as X.")

    def _check_valid_labels(self, yv: np.ndarray) -> None:
        if self.early_stopping == "f1" and not (yv == 1).any():
            raise ValueError(
                "The validation set has no match (label 1), so its F1 is undefined and cannot pick "
                "the best epoch: add matches to it, or set early_stopping='loss' (or None)."
            )

    # ------------------------------------------------------------------ prediction & interface
    def predict_proba(self, X: object) -> npt.NDArray[np.float32]:
        """Class probabilities ``(n, 2)`` (columns: non-match, match), in row order.

        Parameters
        ----------
        X : ndarray of int of shape (n, 2 * A, L) or SliceDict
            Encoded pairs.

        Returns
        -------
        ndarray of shape (n, 2)
        """
        self._check_predict_X(X)
        if self in _SAVED_DEVICE:  # called during fit (validation scoring)
            return super().predict_proba(X)
        if isinstance(X, torch.utils.data.Dataset):  # skorch's own datasets: its batched path
            with self._DeviceForSkorch(self):
                return super().predict_proba(X)
        return self._infer(X, hidden=False)[1]

    def _pool_passes(self, X: object, n_iter: int, hidden: bool) -> Iterator[tuple[Any, Any]]:
        """Yield ``(H, P)`` torch tensors per pass over the whole input, chunk by chunk.

        Each distinct attribute value of a chunk is summarised once per pass (its GRU runs on
        the distinct values sorted by length, in batches of ``2 * iterator_valid__batch_size``),
        then the pairs are compared and classified in batches of ``iterator_valid__batch_size``.
        The caller sets the module's modes and the RNG; no gradients.
        """
        self._check_predict_X(X)
        tokens, feats = self._check_X(X)
        mod = self.module_
        dev = self.device_
        A = mod.n_attributes
        n_emb = mod.embedding.num_embeddings
        use_feats = bool(self.module_dims_["n_features"])
        pbs = max(1, int(self.iterator_valid__batch_size))
        sbs = 2 * pbs
        n = tokens.shape[0]
        chunks = range(0, n, _POOL_CHUNK)
        if self.verbose:
            from tqdm.auto import tqdm

            chunks = tqdm(chunks, desc=type(self).__name__, unit="chunk", leave=False)
        for c0 in chunks:
            tok = np.asarray(tokens[c0 : c0 + _POOL_CHUNK], dtype=np.int64)
            tok = np.where(tok >= n_emb, 1, tok)
            m = tok.shape[0]
            lengths = (tok != 0).sum(-1)  # (m, 2A)
            lengths_t = torch.as_tensor(lengths, device=dev)
            ft = None
            if use_feats:
                ft = torch.as_tensor(np.asarray(feats[c0 : c0 + _POOL_CHUNK], dtype=np.float32), device=dev)
            # distinct values per attribute (both sides), sorted by length
            plan = []
            for k in range(A):
                L = max(1, int(lengths[:, [k, A + k]].max()))
                vals = np.concatenate([tok[:, k, :L], tok[:, A + k, :L]])
                uniq, inv = np.unique(vals, axis=0, return_inverse=True)
                inv = torch.as_tensor(inv.reshape(-1), device=dev)
                ulen = (uniq != 0).sum(1)
                order = np.argsort(ulen, kind="stable")
                batches = []
                for b0 in range(0, len(uniq), sbs):
                    idx = order[b0 : b0 + sbs]
                    width = max(1, int(ulen[idx].max()))
                    batches.append((
                        torch.as_tensor(idx, device=dev),
                        torch.as_tensor(uniq[idx, :width], device=dev),
                        torch.as_tensor(ulen[idx], device=dev),
                    ))
                plan.append((len(uniq), batches, inv[:m], inv[m:]))
            for _ in range(n_iter):
                summaries = []
                for k, (n_uniq, batches, inv_l, inv_r) in enumerate(plan):
                    out = torch.empty((n_uniq, mod.summarizers[k].out_size), device=dev)
                    for idx, ids, lens in batches:
                        out[idx] = mod.summarize(k, ids, lens)
                    summaries.append((out, inv_l, inv_r))
                hs, ps = [], []
                for b0 in range(0, m, pbs):
                    sl = slice(b0, b0 + pbs)
                    pairs = [(S[il[sl]], S[ir[sl]]) for S, il, ir in summaries]
                    h = mod.combine(pairs, lengths_t[sl], ft[sl] if ft is not None else None)
                    ps.append(torch.softmax(mod.output(h), dim=1).cpu())
                    if hidden:
                        hs.append(h.cpu())
                yield (torch.cat(hs) if hidden else None), torch.cat(ps)

    def _infer(self, X: object, hidden: bool = True) -> tuple[Any, np.ndarray]:
        """``(H or None, P)`` as numpy arrays, evaluation mode, one pass."""
        self.module_.eval()
        hs, ps = [], []
        with torch.inference_mode():
            for h, p in self._pool_passes(X, 1, hidden):
                hs.append(h)
                ps.append(p)
        H = torch.cat(hs).numpy() if hidden else None
        return H, torch.cat(ps).numpy()

    def _hidden_and_proba(self, X: object) -> tuple[np.ndarray, np.ndarray]:
        return self._infer(X, hidden=True)

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
        X : ndarray or SliceDict
            Encoded pairs.
        return_proba : bool, default=False
            Also return ``predict_proba(X)`` from the same pass (half the cost of two calls).

        Returns
        -------
        H : ndarray of shape (n, h)
        P : ndarray of shape (n, 2)
            Only with ``return_proba=True``.
        """
        H, P = self._hidden_and_proba(X)
        return (H, P) if return_proba else H

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
        X : ndarray or SliceDict
            Encoded pairs.
        n_iter : int, default=20
            Stochastic passes.
        random_state : int, RandomState, Generator or None, default=None
            Seed of the dropout masks (None: fresh entropy).
        """
        if not isinstance(n_iter, (int, np.integer)) or isinstance(n_iter, bool) or n_iter < 1:
            raise ValueError(f"n_iter must be an int >= 1, got {n_iter!r}.")
        seed = _seed_from(random_state)
        self._check_predict_X(X)
        dropouts = [m for m in self.module_.modules() if isinstance(m, nn.Dropout)]
        out = []
        devices = [torch.device(self.device_).index or 0] if torch.device(self.device_).type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(seed)
            self.module_.eval()
            for m in dropouts:
                m.train()
            try:
                chunk: list = []
                for _, p in self._pool_passes(X, int(n_iter), hidden=False):
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
        h, p = self._hidden_and_proba(X)
        onehot = np.eye(2, dtype=p.dtype)[p.argmax(axis=1)]
        return ((p - onehot)[:, :, None] * h[:, None, :]).reshape(len(h), -1)

    def expected_gradient_length(self, X: object) -> npt.NDArray[np.float32]:
        """Expected gradient length ``(n,)`` (EGL).

        ``sum_y p(y | x) * ||grad_W loss(x, y)||`` over both hypothetical labels, where ``W`` are
        the output layer's weights and ``||grad_W|| = ||p - onehot(y)|| * ||h||``.
        """
        h, p = self._hidden_and_proba(X)
        hn = np.linalg.norm(h, axis=1)
        eye = np.eye(2, dtype=p.dtype)
        norms = np.linalg.norm(p[:, None, :] - eye[None, :, :], axis=2)  # (n, 2): label y
        return ((p * norms).sum(axis=1) * hn).astype(np.float32)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str) -> None:
        """Save the fitted matcher to the folder ``path`` (``weights.pt`` + ``config.json``).

        See :func:`skrisk.matchers.save_matcher`.
        """
        from ._io import save_matcher

        save_matcher(self, path)

    @classmethod
    def load(cls, path: str, device: str | None = "auto") -> "RNNMatcher":
        """Load a matcher saved with :meth:`save` (``torch.load(weights_only=True)``, no pickle)."""
        from ._io import load_matcher

        return load_matcher(path, device=device)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
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
