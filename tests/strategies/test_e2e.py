"""End to end: the seven strategies with the RNN matcher on real data (Beer), three rounds each,
in modAL's own ``ActiveLearner`` and in ``skrisk.active.ActiveLearner``.

For plain modAL the test does what the README's table says works there: the initial fit through
``ActiveLearner(..., X_training=..., y_training=...)`` and ``query`` with a skrisk strategy. Its
``teach`` fails on scikit-learn >= 1.8 (asserted, so the table stays true); the labelled set is
then grown by the caller and the learner refitted through the constructor again.

Each round checks: positions valid, distinct, never labelled before, ``n_instances`` respected,
the labelled set grows by exactly the rows queried.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn
import torch
from sklearn.base import clone

# internal on purpose: the shared row helpers
from skrisk._rows import num_rows, stack_rows, take_rows
from skrisk import LearnRisk
from skrisk.active import ActiveLearner
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk._query import unpack_query
from skrisk.data import PairEncoder, SimilarityFeatures
from skrisk.exceptions import EmptyPoolError, NotFittedError
from skrisk.matchers import RNNMatcher
from _paper_strategies import STRATEGIES
from skrisk.strategies import RiskSampler

#: batch size of each of the three rounds (varied, so n_instances is really followed)
ROUNDS = (3, 5, 8)
N_SEED_POS, N_SEED_NEG = 5, 15
SKLEARN_GE_18 = tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 8)


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Tiny GRU batches on a shared 2-core machine: more threads than free cores only slow them."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def task(beer):
    """Beer encoded for the hybrid RNN matcher: SliceDict(tokens, similarity features)."""
    train, valid = beer.split("train"), beer.split("valid")
    enc = PairEncoder(max_length=6, features=SimilarityFeatures()).fit(train.to_frame())
    X, y = enc.transform(train.to_frame()), np.asarray(train.y)
    X_valid, y_valid = enc.transform(valid.to_frame()), np.asarray(valid.y)
    rng = np.random.RandomState(0)
    lab = np.concatenate([
        rng.choice(np.flatnonzero(y == 1), N_SEED_POS, replace=False),
        rng.choice(np.flatnonzero(y == 0), N_SEED_NEG, replace=False),
    ])
    return {"X": X, "y": y, "X_valid": X_valid, "y_valid": y_valid, "lab": lab,
            "pool": np.setdiff1d(np.arange(len(y)), lab)}


def tiny_rnn() -> RNNMatcher:
    """A tiny, seeded, CPU RNN matcher: random 16-d embeddings, 3 epochs, no early stopping."""
    return RNNMatcher(embedding_dim=16, hidden_size=8, classifier_size=16, max_epochs=3, batch_size=16,
                      early_stopping=None, random_state=0, device="cpu")


class Counting:
    """Wraps a strategy and counts its calls (modAL's query may run a strategy twice)."""

    def __init__(self, strategy):
        self.strategy, self.calls = strategy, 0
        self.__name__ = getattr(strategy, "__name__", "strategy")

    def __call__(self, *a, **k):
        self.calls += 1
        return self.strategy(*a, **k)


def make_strategy(name: str, task) -> Counting:
    if name == "risk":
        return Counting(RiskSampler(task["X_valid"], task["y_valid"], risk=LearnRisk(epochs=20), random_state=0))
    return Counting(STRATEGIES[name])


def check_round(pos, n, pool_ids, labelled_ids):
    """Valid, distinct, unlabelled positions, n of them; returns their dataset ids."""
    pos = np.asarray(pos)
    assert pos.dtype.kind == "i" and pos.ndim == 1
    assert len(pos) == n, f"asked for {n}, got {len(pos)}"
    assert len(np.unique(pos)) == n, "a position came back twice"
    assert pos.min() >= 0 and pos.max() < len(pool_ids)
    ids = pool_ids[pos]
    assert not np.isin(ids, labelled_ids).any(), "a labelled pair was queried again"
    return ids


def _modal():
    """modAL's ActiveLearner and the installed modAL version (skips without modAL)."""
    pytest.importorskip("modAL")
    from importlib.metadata import PackageNotFoundError, version

    from modAL.models import ActiveLearner as ModalLearner

    try:
        v = tuple(int(p) for p in version("modAL-python").split(".")[:3] if p.isdigit())
    except PackageNotFoundError:  # pragma: no cover - installed without metadata
        v = (0, 4, 2)
    return ModalLearner, v


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_skrisk_learner_three_rounds(task, name):
    X, y = task["X"], task["y"]
    strategy = make_strategy(name, task)
    learner = ActiveLearner(tiny_rnn(), strategy, X_training=take_rows(X, task["lab"]), y_training=y[task["lab"]])
    labelled, pool_ids = task["lab"].copy(), task["pool"].copy()
    for r, n in enumerate(ROUNDS):
        X_pool = take_rows(X, pool_ids)
        calls = strategy.calls
        pos, rows = learner.query(X_pool, n_instances=n, random_state=r)
        assert strategy.calls == calls + 1, "the strategy must run exactly once per query"
        if name == "risk":  # LearnRisk really ran (no fallback to the expectation risk)
            assert strategy.strategy.last_query_.risk_model is not None and strategy.strategy.last_query_.kmedoids is not None
        ids = check_round(pos, n, pool_ids, labelled)
        np.testing.assert_array_equal(rows["tokens"], X["tokens"][ids])
        learner.teach(rows, y[ids])
        labelled = np.concatenate([labelled, ids])
        pool_ids = np.setdiff1d(pool_ids, ids)
        assert len(learner.y_training) == num_rows(learner.X_training) == len(labelled)
        np.testing.assert_array_equal(learner.X_training["features"][-n:], X["features"][ids])
        np.testing.assert_array_equal(learner.y_training, y[labelled])
    assert len(labelled) == len(task["lab"]) + sum(ROUNDS)
    # the README's last row: the compatible learner clones and prints
    assert "ActiveLearner" in repr(learner) and isinstance(clone(learner), ActiveLearner)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_modal_learner_three_rounds(task, name):
    ModalLearner, version = _modal()
    X, y = task["X"], task["y"]
    strategy = make_strategy(name, task)
    labelled, pool_ids = task["lab"].copy(), task["pool"].copy()
    X_lab, y_lab = take_rows(X, labelled), y[labelled]
    # README: the initial fit through the constructor works
    learner = ModalLearner(estimator=tiny_rnn(), query_strategy=strategy, X_training=X_lab, y_training=y_lab)
    for r, n in enumerate(ROUNDS):
        X_pool = take_rows(X, pool_ids)
        calls = strategy.calls
        if version >= (0, 4, 2):
            # README: 0.4.2.1 unpacks (positions, scores); a strategy that does not raise runs once
            pos, rows, scores = learner.query(X_pool, n_instances=n, random_state=r, return_metrics=True)
            assert len(scores) == n
        else:  # pragma: no cover - modAL 0.4.1 hands the tuple back with a DeprecationWarning
            with pytest.warns(DeprecationWarning):
                result = learner.query(X_pool, n_instances=n, random_state=r)
            pos, _ = unpack_query(result[0] if isinstance(result[0], tuple) else result)
            rows = take_rows(X_pool, pos)
        assert strategy.calls == calls + 1
        ids = check_round(pos, n, pool_ids, labelled)
        np.testing.assert_array_equal(rows["tokens"], X["tokens"][ids])
        if SKLEARN_GE_18:
            # README: teach fails on scikit-learn >= 1.8, before it changes anything
            with pytest.raises(TypeError, match="force_all_finite"):
                learner.teach(rows, y[ids])
            assert len(learner.y_training) == len(labelled)
        # refit the documented way: grow the labelled set ourselves (positions, pd.concat /
        # per-key stacking) and fit through the constructor, which works
        X_lab = stack_rows([learner.X_training, rows])
        y_lab = np.concatenate([np.asarray(learner.y_training), y[ids]])
        labelled = np.concatenate([labelled, ids])
        pool_ids = np.setdiff1d(pool_ids, ids)
        learner = ModalLearner(estimator=learner.estimator, query_strategy=strategy, X_training=X_lab,
                               y_training=y_lab)
        assert len(learner.y_training) == num_rows(learner.X_training) == len(labelled)
        np.testing.assert_array_equal(learner.y_training, y[labelled])
        np.testing.assert_array_equal(learner.X_training["tokens"], X["tokens"][labelled])
    assert len(labelled) == len(task["lab"]) + sum(ROUNDS)


def test_readme_table_modal_failures(task):
    """The README's statements about plain modAL: fit fails on sklearn >= 1.8, repr/clone fail,
    a raising strategy runs twice; skrisk's learner runs it once and passes the error on."""
    ModalLearner, _ = _modal()
    X, y, lab = task["X"], task["y"], task["lab"]
    strategy = Counting(STRATEGIES["entropy"])
    learner = ModalLearner(estimator=tiny_rnn(), query_strategy=strategy, X_training=take_rows(X, lab),
                           y_training=y[lab])
    if SKLEARN_GE_18:
        with pytest.raises(TypeError, match="force_all_finite"):
            learner.fit(take_rows(X, lab), y[lab])
    with pytest.raises(AttributeError):
        repr(learner)
    with pytest.raises(AttributeError):
        clone(learner)
    X_pool = take_rows(X, task["pool"])
    with pytest.raises(EmptyPoolError):
        learner.query(X_pool, n_instances=num_rows(X_pool) + 1)
    assert strategy.calls == 2, "modAL's bare except runs a raising strategy a second time"
    ours = ActiveLearner(learner.estimator, strategy, X_training=take_rows(X, lab), y_training=y[lab])
    strategy.calls = 0
    with pytest.raises(EmptyPoolError):
        ours.query(X_pool, n_instances=num_rows(X_pool) + 1)
    assert strategy.calls == 1


# ----------------------------------------------------------------------------- bad input, RNN
@pytest.fixture(scope="module")
def fitted(task):
    """One tiny RNN matcher fitted on the seed labels, shared by the bad-input tests."""
    X, y, lab = task["X"], task["y"], task["lab"]
    return tiny_rnn().fit(take_rows(X, lab), y[lab])


def _bad_pools(task):
    from skorch.helper import SliceDict

    P = take_rows(task["X"], task["pool"])
    return {
        "tokens only (no features)": P["tokens"],
        "fewer attributes": SliceDict(tokens=P["tokens"][:, :6], features=P["features"]),
        "fewer features": SliceDict(tokens=P["tokens"], features=P["features"][:, :5]),
        "feature matrix": np.asarray(P["features"], dtype=np.float64),
        "missing features key": SliceDict(tokens=P["tokens"]),
    }


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_rnn_pool_encoding_mismatch(task, fitted, name):
    """A pool not encoded like the labelled pairs fails clearly, for every strategy (random too),
    and the strategy runs once."""
    strategy = make_strategy(name, task)
    X, y, lab = task["X"], task["y"], task["lab"]
    learner = ActiveLearner(tiny_rnn(), strategy)
    learner.estimator, learner.X_training, learner.y_training = fitted, take_rows(X, lab), y[lab]
    for what, bad in _bad_pools(task).items():
        strategy.calls = 0
        with pytest.raises(ValueError, match="encode") as info:
            learner.query(bad, n_instances=3)
        assert strategy.calls == 1, what
        assert "labelled pairs" in str(info.value) or "PairEncoder" in str(info.value), what


@pytest.mark.parametrize("name", [n for n in STRATEGIES if n != "random"])
def test_rnn_unfitted_learner(task, name):
    """Strategies that ask the matcher anything refuse an unfitted one (random sampling needs no
    matcher: it serves the cold start)."""
    strategy = make_strategy(name, task)
    learner = ActiveLearner(tiny_rnn(), strategy)
    X_pool = take_rows(task["X"], task["pool"])
    with pytest.raises(NotFittedError):
        learner.query(X_pool, n_instances=3)
    with pytest.raises(NotFittedError):
        strategy(learner, X_pool, n_instances=3)
    assert strategy.calls == 1


def test_random_sampling_cold_start(task):
    X_pool = take_rows(task["X"], task["pool"])
    cold = ActiveLearner(tiny_rnn(), STRATEGIES["random"])  # nothing fitted, nothing labelled
    pos, _ = STRATEGIES["random"](cold, X_pool, n_instances=4, random_state=0)
    assert len(np.unique(pos)) == 4


def test_risk_sampler_validation_not_like_labelled(task, fitted):
    from skorch.helper import SliceDict

    X, y, lab = task["X"], task["y"], task["lab"]
    Xv = task["X_valid"]
    bad = RiskSampler(SliceDict(tokens=Xv["tokens"][:, :6], features=Xv["features"]), task["y_valid"],
                      risk=LearnRisk(epochs=5))
    learner = ActiveLearner(tiny_rnn(), bad)
    learner.estimator, learner.X_training, learner.y_training = fitted, take_rows(X, lab), y[lab]
    with pytest.raises(ValueError, match="X_valid"):
        learner.query(take_rows(X, task["pool"]), n_instances=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = RiskSampler(Xv, task["y_valid"], risk=LearnRisk(epochs=5), random_state=0)
        learner.query_strategy = ok
        pos, _ = learner.query(take_rows(X, task["pool"]), n_instances=3)
    assert len(np.unique(pos)) == 3
    assert set(ok.last_query_.timings) >= {"proba_repr", "labelled_proba", "weights", "kmedoids", "total"}
