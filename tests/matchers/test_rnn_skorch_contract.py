"""The skorch methods RNNMatcher overrides to resolve ``device="auto"`` (see its Notes).

Four of them are private to skorch (``_initialize_module``, ``_initialize_criterion``, the
``_current_init_context`` they run in) or part of its inner workings (``notify``,
``__setstate__``). A skorch release that renames or changes one of them would leave the override
dead and hand ``"auto"`` to torch: these checks fail first, naming the method, on the skorch the
suite is installed with (CI installs the newest the constraints allow).
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")
from skorch.helper import SliceDict  # noqa: E402

from skrisk.matchers import RNNMatcher  # noqa: E402

#: skorch's method -> the parameters RNNMatcher's override takes.
OVERRIDDEN = {
    "_initialize_module": ["self", "reason"],
    "_initialize_criterion": ["self", "reason"],
    "notify": ["self", "method_name", "cb_kwargs"],
    "__setstate__": ["self", "state"],
    "load_params": None,  # RNNMatcher forwards *args, **kwargs
}


@pytest.mark.parametrize("name", sorted(OVERRIDDEN))
def test_skorch_still_has_the_methods_rnnmatcher_overrides(name):
    base = getattr(skorch.NeuralNet, name, None)
    assert base is not None, f"skorch {skorch.__version__} has no NeuralNet.{name}: update RNNMatcher's override"
    expected = OVERRIDDEN[name]
    if expected is not None:
        assert list(inspect.signature(base).parameters) == expected, (
            f"skorch {skorch.__version__} changed NeuralNet.{name}'s signature: update RNNMatcher's override")
    assert name in vars(RNNMatcher), f"RNNMatcher no longer overrides {name}: drop it from this list"


def test_skorch_still_initialises_inside_current_init_context():
    """The overrides run skorch's ``_current_init_context(name)`` around the public initialiser."""
    ctx = getattr(skorch.NeuralNet, "_current_init_context", None)
    assert ctx is not None and list(inspect.signature(ctx).parameters) == ["self", "name"]
    assert "_current_init_context('module')" in inspect.getsource(skorch.NeuralNet._initialize_module)


def test_auto_device_fits_predicts_pickles_and_reloads_on_the_installed_skorch(tmp_path):
    rng = np.random.RandomState(0)
    ids = rng.randint(2, 20, size=(40, 2, 4))
    ids[:20, 1] = ids[:20, 0]
    X, y = SliceDict(tokens=ids), np.r_[np.ones(20, int), np.zeros(20, int)]
    m = RNNMatcher(hidden_size=4, classifier_size=8, embedding_dim=8, max_epochs=2, random_state=0).fit(X, y)
    assert m.device == "auto" and m.device_ in ("cpu", "cuda")
    p = m.predict_proba(X)
    again = pickle.loads(pickle.dumps(m))  # __setstate__ with "auto"
    assert again.device == "auto"
    np.testing.assert_allclose(again.predict_proba(X), p, atol=1e-6)
    m.save_params(f_params=tmp_path / "w.pt")
    m.load_params(f_params=tmp_path / "w.pt")  # load_params with "auto"
    np.testing.assert_allclose(m.predict_proba(X), p, atol=1e-6)
