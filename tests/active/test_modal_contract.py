"""modAL's own contract tests for ``ActiveLearner``, run against ``skrisk.active.ActiveLearner``.

The tests are modAL's ``TestActiveLearner`` (``tests/core_tests.py`` with its ``tests/mock.py``,
github:modAL-python/modAL at bba6f6f, MIT), read in place from the shared compatibility folder
(``$SKRISK_DATA/../compat/modal`` or ``../shared/compat/modal`` beside the checkout): they are never
copied into this repository. skrisk's learner is substituted for ``modAL.models.ActiveLearner`` and
``modAL.models.learners.ActiveLearner`` and each of the 13 tests runs unchanged through unittest.

Two facts about running modAL's file today (its folder's README): importing it needs numpy's removed
alias ``np.float`` (modAL's ``expected_error.py`` uses it at import time; the alias is set for the
import only and removed again), and its ``import mock`` means the ``mock.py`` beside it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import unittest
from pathlib import Path

import numpy as np
import pytest

from skrisk.active import ActiveLearner

#: modAL's TestActiveLearner, all 13 of its tests
MODAL_TESTS = (
    "test_add_training_data", "test_predict", "test_predict_proba", "test_query", "test_score",
    "test_teach", "test_nan", "test_keras", "test_sklearn", "test_sparse_matrices",
    "test_on_transformed", "test_on_transformed_with_variable_transformation",
    "test_old_query_strategy_interface",
)


def _compat_dir() -> Path | None:
    here = Path(__file__).resolve()
    candidates = []
    if os.environ.get("SKRISK_DATA"):
        candidates.append(Path(os.environ["SKRISK_DATA"]).parent / "compat" / "modal")
    candidates += [here.parents[2].parent / "shared" / "compat" / "modal",
                   here.parents[2] / "shared" / "compat" / "modal"]
    for cand in candidates:
        if (cand / "core_tests.py").is_file() and (cand / "mock.py").is_file():
            return cand
    return None


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def core_tests():
    """modAL's core_tests module, imported in place (skips without modAL or the files)."""
    pytest.importorskip("modAL", reason="modAL is not installed (pip install --no-deps modAL-python==0.4.2.1)")
    pytest.importorskip("skorch")
    folder = _compat_dir()
    if folder is None:
        pytest.skip("modAL's core_tests.py/mock.py not found in $SKRISK_DATA/../compat/modal or "
                    "../shared/compat/modal beside the checkout")
    saved_mock = sys.modules.get("mock")
    had_float = hasattr(np, "float")
    if not had_float:
        np.float = float  # modAL.expected_error uses the alias numpy 1.24 removed, at import time
    try:
        sys.modules["mock"] = _load("mock", folder / "mock.py")  # core_tests' "import mock"
        module = _load("_modal_core_tests", folder / "core_tests.py")
    finally:
        if not had_float:
            del np.float
    yield module
    if saved_mock is None:
        sys.modules.pop("mock", None)
    else:
        sys.modules["mock"] = saved_mock


@pytest.mark.parametrize("name", MODAL_TESTS)
def test_modal_active_learner_contract(core_tests, name, monkeypatch):
    import modAL.models
    import modAL.models.learners

    assert len([n for n in dir(core_tests.TestActiveLearner) if n.startswith("test_")]) == len(MODAL_TESTS)
    monkeypatch.setattr(modAL.models.learners, "ActiveLearner", ActiveLearner)
    monkeypatch.setattr(modAL.models, "ActiveLearner", ActiveLearner)
    result = unittest.TestResult()
    core_tests.TestActiveLearner(name).run(result)
    problems = [text for _, text in result.errors + result.failures]
    assert not problems, "\n".join(problems)
    assert result.testsRun == 1 and not result.skipped
