"""Torch devices and CPU threads: the one place that resolves a ``device`` and limits threads.

Every part of skrisk that runs torch code (the k-medoids kernel, the risk model, the strategies'
distance computations) resolves its ``device`` argument with :func:`resolve_device` and limits
torch's intra-op CPU threads with :func:`torch_threads`, so that the rules (``"auto"``, the error
for a missing CUDA) are the same everywhere.
"""

from __future__ import annotations

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


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op CPU threads, restoring the previous number after.

    Parameters
    ----------
    n : int or None
        Threads for the block; None leaves torch's setting alone.

    Notes
    -----
    ``torch.set_num_threads`` is process-wide: two threads of one process that limit torch's
    threads at the same time see each other's setting. The previous value is restored on exit.
    """
    prev = torch.get_num_threads()
    if n is not None and n != prev:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        if torch.get_num_threads() != prev:
            torch.set_num_threads(prev)
