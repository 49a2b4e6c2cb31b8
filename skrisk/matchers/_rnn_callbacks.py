"""The RNN matcher's training callbacks: validation F1 and early stopping (skorch's own).

Early stopping is :class:`skorch.callbacks.EarlyStopping` with ``load_best=True`` (the best
epoch's weights are restored in memory at the end of ``fit``); it waits for a validation score,
so a fit without validation pairs trains ``max_epochs`` and keeps the last weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from skorch.callbacks import EarlyStopping, EpochScoring, EpochTimer, PassthroughScoring, PrintLog

__all__ = ["EarlyStoppingOnValidation", "default_callbacks", "valid_f1"]


def valid_f1(net: Any, X: Any, y: Any) -> float:
    """F1 of the match class on the validation pairs (an :class:`EpochScoring` scorer)."""
    from sklearn.metrics import f1_score

    return float(f1_score(np.asarray(y), net.predict(X), zero_division=0.0))


class EarlyStoppingOnValidation(EarlyStopping):
    """:class:`skorch.callbacks.EarlyStopping` that does nothing in a fit without validation data.

    skorch's callback reads the monitored score every epoch; a fit without ``X_valid`` has none.
    """

    def on_epoch_end(self, net: Any, dataset_valid: Any = None, **kwargs: Any) -> None:  # noqa: D102
        if dataset_valid is not None:
            super().on_epoch_end(net, dataset_valid=dataset_valid, **kwargs)


def default_callbacks(early_stopping: str | None, patience: int | None) -> list[tuple[str, Any]]:
    """The matcher's ``(name, callback)`` list for its ``early_stopping`` and ``patience``.

    ``early_stopping="f1"`` monitors ``valid_f1`` (higher is better), ``"loss"`` ``valid_loss``;
    ``None`` adds no early stopping. ``patience=None`` never stops early but still restores the
    best epoch.
    """
    callbacks: list[tuple[str, Any]] = [
        ("epoch_timer", EpochTimer()),
        ("train_loss", PassthroughScoring(name="train_loss", on_train=True)),
        ("valid_loss", PassthroughScoring(name="valid_loss")),
        ("valid_f1", EpochScoring(valid_f1, name="valid_f1", lower_is_better=False)),
    ]
    if early_stopping is not None:
        monitor = "valid_f1" if early_stopping == "f1" else "valid_loss"
        callbacks.append((
            "early_stopping",
            EarlyStoppingOnValidation(
                monitor=monitor, lower_is_better=monitor == "valid_loss", patience=patience,
                threshold=0.0, threshold_mode="abs", load_best=True,
            ),
        ))
    callbacks.append(("print_log", PrintLog()))
    return callbacks
