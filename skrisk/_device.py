"""Torch devices and CPU threads: the one place that resolves a ``device`` and limits threads.

Every part of skrisk that runs torch code (the k-medoids kernel, the risk model, the strategies'
distance computations, :class:`~skrisk.matchers.RNNMatcher` and the loading of a saved one) resolves its ``device`` argument with :func:`resolve_device` and limits
torch's intra-op CPU threads with :func:`torch_threads`, so that the rules (``"auto"``, the error
for a missing CUDA) are the same everywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["resolve_device", "torch_threads"]


def resolve_device(device: Any = "auto", like: torch.Tensor | None = None) -> torch.device:
    """The torch device for ``device``; ``"auto"`` (or None) picks one.

    Parameters
    ----------
    device : str, torch.device or None, default="auto"
        ``"auto"`` / None: the device of ``like`` when it is a CUDA tensor, else CUDA when
        available, else the CPU. Anything else is passed to :class:`torch.device`.
    like : torch.Tensor, optional
        Data already on a device, preferred by ``"auto"``.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        ``device`` is not a torch device, or asks for CUDA where CUDA is not available.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        if like is not None and like.is_cuda:
            return like.device
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device={device!r} is not a torch device; use 'auto', 'cpu' or 'cuda'."
        ) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} asks for CUDA, which is not available; use 'cpu'.")
    return dev


_LOCK = threading.Lock()
_ACTIVE = 0  # limiters inside their block, over all threads
_ORIGINAL = 0  # torch's setting before the first of them began


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op CPU threads, restoring the setting afterwards.

    Parameters
    ----------
    n : int or None
        Threads for the block; None leaves torch's setting alone.

    Notes
    -----
    ``torch.set_num_threads`` is process-wide. Nested blocks restore the value they found; when
    blocks of several Python threads overlap, the last one to end restores the value from before
    the first began, so concurrent calls never leave torch's setting changed.
    """
    global _ACTIVE, _ORIGINAL
    if n is None:
        yield
        return
    with _LOCK:
        if _ACTIVE == 0:
            _ORIGINAL = torch.get_num_threads()
        _ACTIVE += 1
        prev = torch.get_num_threads()
        if int(n) != prev:
            torch.set_num_threads(int(n))
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE -= 1
            target = _ORIGINAL if _ACTIVE == 0 else prev
            if torch.get_num_threads() != target:
                torch.set_num_threads(target)
