"""Shared fixtures: fixed seeds, a small synthetic pair dataset, and the real data of ../shared/data
(or $SKRISK_DATA).

Tests that need the real data take the ``data_home`` fixture (or ``beer``/``fodors``, which take
it) or the ``needs_data`` marker: without the data they are skipped with the reason, not failed.
Unit tests that need only some pairs take ``pairs`` (:func:`skrisk.datasets.make_pairs`).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

_HERE = Path(__file__).resolve().parent
if not os.environ.get("SKRISK_DATA"):
    for cand in (_HERE.parent.parent / "shared" / "data", _HERE.parent / "shared" / "data"):
        if cand.is_dir():
            os.environ["SKRISK_DATA"] = str(cand)
            break


_DATA_REASON = (
    "needs the DeepMatcher data: set SKRISK_DATA to the folder holding beer/, fodors_zagats/, ... "
    "(or place it at ../shared/data)"
)


def _data_home() -> Path | None:
    home = os.environ.get("SKRISK_DATA")
    if home and (Path(home) / "beer").is_dir():
        return Path(home)
    return None


def pytest_collection_modifyitems(config, items):
    if _data_home() is None:
        skip_data = pytest.mark.skip(reason=_DATA_REASON)
        for item in items:
            if "needs_data" in item.keywords:
                item.add_marker(skip_data)
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in items:
            if "cuda" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _seeds_fixed():
    random.seed(0)
    np.random.seed(0)
    try:
        import torch

        torch.manual_seed(0)
    except ImportError:  # pragma: no cover
        pass
    yield


@pytest.fixture
def two_torch_threads():
    """torch on two threads for the test, restored after: a test that a thread limit is set and
    undone must start from more than one thread, whatever the runner set (``make test`` runs its
    workers with ``OMP_NUM_THREADS=1``)."""
    yield from _torch_threads(2)


@pytest.fixture
def one_torch_thread():
    """torch on one thread for the test, restored after (the setting is process-wide)."""
    yield from _torch_threads(1)


def _torch_threads(n: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def data_home() -> Path:
    home = _data_home()
    if home is None:
        pytest.skip(_DATA_REASON)
    return home


@pytest.fixture(scope="session")
def pairs():
    """A small synthetic labelled pair dataset (300 pairs, train/valid/test), no data folder needed."""
    from skrisk.datasets import make_pairs

    return make_pairs(300, random_state=0)


@pytest.fixture(scope="session")
def beer(data_home):
    from skrisk.datasets import load_deepmatcher

    return load_deepmatcher("beer", data_home)


@pytest.fixture(scope="session")
def fodors(data_home):
    from skrisk.datasets import load_deepmatcher

    return load_deepmatcher("fodors_zagats", data_home)
