"""Torch devices and CPU threads: the one place that resolves a ``device`` and limits threads.

Every part of skrisk that runs torch code (the k-medoids kernel, the risk model, the strategies'
distance computations, :class:`~skrisk.matchers.RNNMatcher` and the loading of a saved one)
resolves its ``device`` argument with :func:`resolve_device` and limits torch's intra-op CPU
threads with :func:`torch_threads`, so that the rules (``"auto"``, the error for a missing CUDA)
are the same everywhere.

The rules, so that neither the device nor the threads make a step slower:

- **Device.** ``"auto"`` picks CUDA for a step only when each of its launches has enough work
  (``work`` elements, at least :data:`GPU_MIN_WORK`); a step of many small launches (LearnRisk's
  training batches, a small k-medoids problem) stays on the CPU, where a launch costs nothing.
  An explicit ``"cuda"`` or ``"cpu"`` is always obeyed.
- **Threads.** A CPU step gets one intra-op thread per :data:`CELLS_PER_THREAD` elements of its
  parallel regions, and no more threads than there are CPUs idle at the start of the step
  (:func:`idle_cpus`): an OpenMP thread whose core is taken by another process makes every
  parallel region wait for it.
  Set ``OMP_WAIT_POLICY=PASSIVE`` before
  torch is imported where the load changes during long steps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from ._threads import process_cpus

__all__ = ["CELLS_PER_THREAD", "GPU_MIN_WORK", "cpu_threads", "idle_cpus", "resolve_device", "torch_threads"]

#: Smallest work per launch (elements, e.g. distance cells of one block) for which ``"auto"``
#: picks CUDA: below it a launch costs more than its arithmetic.
GPU_MIN_WORK = 1 << 22
#: Elements of a parallel region per intra-op CPU thread: below it a thread's start and
#: synchronisation cost more than its share of the work.
CELLS_PER_THREAD = 1 << 18


def resolve_device(device: Any = "auto", like: torch.Tensor | None = None, *, work: int | None = None) -> torch.device:
    """The torch device for ``device``; ``"auto"`` (or None) picks one.

    Parameters
    ----------
    device : str, torch.device or None, default="auto"
        ``"auto"`` / None: the device of ``like`` when it is a CUDA tensor, else CUDA when
        available and the step's ``work`` is large enough, else the CPU. Anything else is passed
        to :class:`torch.device`.
    like : torch.Tensor, optional
        Data already on a device, preferred by ``"auto"``.
    work : int, optional
        Elements each launch of the step works on; ``"auto"`` keeps a step below
        :data:`GPU_MIN_WORK` on the CPU. None: any size (CUDA whenever it is there).

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
    >>> resolve_device("auto", work=1000)  # a small step stays on the CPU, GPU or not
    device(type='cpu')
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        if like is not None and like.is_cuda:
            return like.device
        big = work is None or work >= GPU_MIN_WORK
        return torch.device("cuda" if big and torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device={device!r} is not a torch device; use 'auto', 'cpu' or 'cuda'."
        ) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} asks for CUDA, which is not available; use 'cpu'.")
    return dev


def _running_threads(stat_files: list[str]) -> int:
    running = 0
    for f in stat_files:
        try:
            with open(f, "rb") as fh:
                stat = fh.read()
        except OSError:  # the thread ended meanwhile
            continue
        # "pid (comm) S ...": the state follows the last ")" (comm may hold one)
        running += stat[stat.rfind(b")") + 2: stat.rfind(b")") + 3] == b"R"
    return running


def idle_cpus() -> int:
    """CPUs of this process that no other process is running on at this moment (at least 1).

    The CPUs the process may run on, less the tasks of other processes running now (Linux:
    ``/proc/loadavg`` counts the running tasks of the machine, ``/proc/self/task`` this
    process's own). Elsewhere, or where ``/proc`` cannot be read: all the process's CPUs.

    Returns
    -------
    int

    Examples
    --------
    >>> 1 <= idle_cpus() <= (os.cpu_count() or 1)
    True
    """
    cpus = process_cpus()
    try:
        with open("/proc/loadavg", "rb") as fh:
            running = int(fh.read().split()[3].split(b"/")[0])
        own = _running_threads([f"/proc/self/task/{t}/stat" for t in os.listdir("/proc/self/task")])
    except (OSError, ValueError, IndexError):
        return cpus
    return max(1, min(cpus, cpus - (running - own)))


def cpu_threads(work: int, limit: int | None = None) -> int:
    """Intra-op CPU threads for a step whose parallel regions each work on ``work`` elements.

    One thread per :data:`CELLS_PER_THREAD` elements, at most ``limit`` (default: torch's
    setting) and at most :func:`idle_cpus`: a thread that has to wait for a core makes every
    parallel region wait for it.

    Parameters
    ----------
    work : int
        Elements of one parallel region (e.g. the distance cells of one block).
    limit : int, optional
        Most threads; default ``torch.get_num_threads()``.

    Returns
    -------
    int

    Examples
    --------
    >>> cpu_threads(1000)
    1
    """
    n = min(limit or torch.get_num_threads(), max(1, int(work) // CELLS_PER_THREAD))
    return max(1, min(n, idle_cpus())) if n > 1 else 1


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
