"""Issue #28, item 7: the device and the threads never make a step slower (the rules of skrisk._device)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

# internal on purpose: the device and thread rules
import skrisk._device as device_mod
from skrisk._device import CELLS_PER_THREAD, GPU_MIN_WORK, cpu_threads, idle_cpus, resolve_device


def test_auto_keeps_small_steps_on_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto", work=GPU_MIN_WORK - 1).type == "cpu"
    assert resolve_device("auto", work=GPU_MIN_WORK).type == "cuda"
    assert resolve_device("auto").type == "cuda"  # no size given: any step
    assert resolve_device("cpu", work=10**9).type == "cpu"  # an explicit device is obeyed


def test_cpu_threads_follow_the_work_and_the_idle_cpus(monkeypatch):
    monkeypatch.setattr(device_mod, "idle_cpus", lambda: 8)
    assert cpu_threads(CELLS_PER_THREAD - 1, limit=8) == 1
    assert cpu_threads(3 * CELLS_PER_THREAD, limit=8) == 3
    assert cpu_threads(100 * CELLS_PER_THREAD, limit=4) == 4
    monkeypatch.setattr(device_mod, "idle_cpus", lambda: 1)  # another process holds the other cores
    assert cpu_threads(100 * CELLS_PER_THREAD, limit=8) == 1


def test_idle_cpus_counts_this_process_as_idle():
    import os

    n = idle_cpus()
    assert 1 <= n <= len(os.sched_getaffinity(0))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # one pass is enough here
def test_kernel_runs_on_the_idle_cpus_only_and_restores_threads(monkeypatch):
    """On a machine where another process holds the second core, the kernel runs on one thread
    (two contended threads were 24x slower there), gives the same medoids, and restores torch."""
    from skrisk.kmedoids import _fastpam, weighted_fastpam

    rng = np.random.default_rng(0)
    X = rng.normal(size=(9000, 4)).astype(np.float32)  # blocks of 9000 x 64 cells: two threads' work
    seen = []
    block = _fastpam._Kernel.block

    def spy(self, *a, **kw):
        seen.append(torch.get_num_threads())
        return block(self, *a, **kw)

    monkeypatch.setattr(_fastpam._Kernel, "block", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        quiet_cpus = 2
        monkeypatch.setattr(device_mod, "idle_cpus", lambda: quiet_cpus)
        quiet = weighted_fastpam(X, 5, device="cpu", max_iter=1, random_state=0)
        assert set(seen) == {2} and torch.get_num_threads() == 2
        seen.clear()
        quiet_cpus = 1
        busy = weighted_fastpam(X, 5, device="cpu", max_iter=1, random_state=0)
        assert set(seen) == {1} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(busy.selected, quiet.selected)
