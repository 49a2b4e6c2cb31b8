"""Threads over independent blocks of work.

The bulk work of blocking, features and scoring runs in native code that releases the GIL
(numpy, scipy.sparse, rapidfuzz, scikit-learn's trees, torch), so blocks of rows scored in
threads use every core without copying the tables into other processes. Results come back in
the blocks' order, so the output never depends on the number of threads.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")


def n_threads(n_jobs: object) -> int:
    """Threads for ``n_jobs`` as scikit-learn reads it: None means 1, -1 every CPU of the
    process, -2 all but one, and so on (at least 1).

    Examples
    --------
    >>> n_threads(None), n_threads(3)
    (1, 3)
    >>> n_threads(-1) >= 1
    True
    """
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int or None, got {n_jobs!r}.")
    n_jobs = int(n_jobs)
    if n_jobs > 0:
        return n_jobs
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus + 1 + n_jobs)


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
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="skrisk")
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) > threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
