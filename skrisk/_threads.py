"""Threads over independent blocks of work.

The bulk work of blocking, features and scoring runs in native code that releases the GIL
(numpy, scipy.sparse, rapidfuzz, scikit-learn's trees, torch), so blocks of rows scored in
threads use every core without copying the tables into other processes. Results come back in
the blocks' order, so the output never depends on the number of threads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

import numpy as np

# Items between two releases of the allocator's free pages (a few milliseconds each)
_TRIM_EVERY = 16
T = TypeVar("T")
R = TypeVar("R")


def n_threads(n_jobs: object) -> int:
    """Threads for ``n_jobs`` as scikit-learn reads it: None means 1, -1 every CPU of the
    process, -2 all but one, and so on; never fewer than 1 nor more than the CPUs (each thread
    holds a block of work in memory, and more threads than cores only wait for each other).

    Examples
    --------
    >>> n_threads(None), n_threads(1)
    (1, 1)
    >>> 1 <= n_threads(-1) == n_threads(10_000) <= (os.cpu_count() or 1)
    True
    """
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int or None, got {n_jobs!r}.")
    cpus = process_cpus()
    n_jobs = int(n_jobs)
    return max(1, min(cpus, n_jobs if n_jobs > 0 else cpus + 1 + n_jobs))


def process_cpus() -> int:
    """The CPUs this process may run on (its affinity on Linux, else every CPU; at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def map_in_order(fn: Callable[[T], R], items: Iterable[T], threads: int) -> Iterator[R]:
    """``fn(item)`` of every item, in the items' order, on ``threads`` threads.

    At most ``threads`` items are in flight beyond the one the caller waits for, so memory is
    that of a few blocks whatever the number of items. One thread: a plain loop, no pool. An
    exception of ``fn`` is raised here, at its item; items not yet started are dropped.

    Examples
    --------
    >>> list(map_in_order(lambda x: x * x, range(5), threads=2))
    [0, 1, 4, 9, 16]
    """
    if threads <= 1:
        for item in items:
            yield fn(item)
        return
    release_free_memory()  # what the main thread freed before, the workers' arenas cannot reuse
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="skrisk")
    pending: deque[Future[R]] = deque()
    try:
        for i, item in enumerate(items, 1):
            pending.append(pool.submit(fn, item))
            if len(pending) > threads:
                yield pending.popleft().result()
            if i % _TRIM_EVERY == 0:  # the workers' arenas would otherwise grow with fragments
                release_free_memory()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        release_free_memory()


def release_free_memory() -> bool:
    """Give the free pages of the C allocator's heaps back to the system (glibc's ``malloc_trim``).

    Each worker thread allocates from its own glibc arena; what it frees stays in that arena,
    where the main thread's later work (entities after scoring) cannot reuse it, and what the
    main thread freed before (encoding's temporaries) the workers cannot reuse either: without
    it the process grows by both. :func:`map_in_order` calls it before, during (every
    ``_TRIM_EVERY`` items) and after its threads.
    Elsewhere than glibc: nothing.

    Returns
    -------
    bool
        Whether memory was given back.

    Examples
    --------
    >>> release_free_memory() in (True, False)
    True
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return False
