"""Shared fixtures: real data from ../shared/data (or $SKRISK_DATA), fixed seeds."""

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


def pytest_collection_modifyitems(config, items):
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


@pytest.fixture(scope="session")
def data_home() -> Path:
    home = os.environ.get("SKRISK_DATA")
    if not home or not Path(home).is_dir():
        pytest.fail("SKRISK_DATA is not set and ../shared/data was not found: point it at the data.")
    return Path(home)


@pytest.fixture(scope="session")
def beer(data_home):
    from skrisk.datasets import load_deepmatcher

    return load_deepmatcher("beer", data_home)


@pytest.fixture(scope="session")
def fodors(data_home):
    from skrisk.datasets import load_deepmatcher

    return load_deepmatcher("fodors_zagats", data_home)
