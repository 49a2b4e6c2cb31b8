"""The simulated active-learning loop: shared starts, durable rounds, resuming and extending runs."""

from __future__ import annotations

import numpy as np
import pytest

from skrisk.data import SimilarityFeatures
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.experiments._loop import ALTask, read_results
from skrisk.experiments import run_active_learning
from skrisk.matchers import FeatureMatcher
from skrisk.strategies import entropy_sampling


def _task(ds):
    X = SimilarityFeatures().fit_transform(ds.to_frame()).astype(np.float32)
    return ALTask(X=X, y=ds.y, pool=ds.split_positions("train"), valid=ds.split_positions("valid"),
                  test=ds.split_positions("test"), name=ds.name)


def _run(task, n_rounds, path=None):
    return run_active_learning(task, entropy_sampling, lambda s: FeatureMatcher(random_state=s), n_seed=20,
                               n_instances=10, n_rounds=n_rounds, seed=3, results_file=path)


def test_longer_run_extends_a_finished_shorter_one(pairs, tmp_path):
    task = _task(pairs)
    path = tmp_path / "r.jsonl"
    short = _run(task, 2, path)
    assert [r["round"] for r in short] == [0, 1] and short[-1]["batch"] is None
    # same file, more rounds: the last round is rerun to query from it, earlier ones are kept
    longer = _run(task, 4, path)
    straight = _run(task, 4)
    assert [r["round"] for r in longer] == [0, 1, 2, 3]
    for a, b in zip(longer, straight):
        assert np.array_equal(a["labelled"], b["labelled"]) and a["f1"] == b["f1"]
        assert a["batch"] == b["batch"]
    # the file holds round 1 twice (its first run had no query); reading keeps each round once
    recs = read_results(path)
    assert len(recs) == 5
    again = _run(task, 4, path)
    assert [r["round"] for r in again] == [0, 1, 2, 3] and len(read_results(path)) == 5
    # a shorter rerun of a longer run returns its first rounds without new work
    assert [r["round"] for r in _run(task, 3, path)] == [0, 1, 2]


def test_registry_names_risk_is_the_default_and_risk_paper_the_paper(pairs):
    import skrisk.experiments
    from skrisk.experiments import STRATEGIES
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.experiments._registry import make_strategy
    from skrisk.strategies import KMedoidsSelector, RiskSampler

    task = _task(pairs)
    default = make_strategy("risk", task, valid_ratio=0.5, random_state=4)
    # "risk" is RiskSampler's default (every parameter at its default), "risk_paper" the paper's method
    reference = RiskSampler(valid_ratio=0.5, random_state=4).get_params()
    got = default.get_params()
    assert isinstance(default, RiskSampler) and got.pop("X_valid") is not None and got.pop("y_valid") is not None
    assert got == {k: v for k, v in reference.items() if k not in ("X_valid", "y_valid")}
    paper = make_strategy("risk_paper", task).selector
    assert isinstance(paper, KMedoidsSelector) and paper.preselect is None and paper.weighting == "lipschitz"
    for name, factory in STRATEGIES.items():
        s = make_strategy(name, task)
        if factory.function is not None:
            assert s is factory.function
        else:  # each sampler has a copy of the registered selector
            assert repr(s.selector) == repr(factory.selector)
            assert isinstance(s.selector, str) or s.selector is not factory.selector
    assert make_strategy("entropy", task) is entropy_sampling
    # one registry: skrisk.strategies exports the functions, not a second name table
    import skrisk.strategies

    assert not hasattr(skrisk.strategies, "STRATEGIES")
    assert STRATEGIES["risk"].standalone() is skrisk.strategies.risk_sampling
    assert repr(STRATEGIES["risk_paper"].standalone().keywords) == "{'selector': KMedoidsSelector(preselect=None)}"
    with pytest.raises(ValueError, match="Unknown strategy 'nope'"):
        make_strategy("nope", task)
    # one name, one thing: the records use these names too, and no alias table maps old ones
    with pytest.raises(ValueError, match="Unknown strategy 'risk_pre2w'"):
        make_strategy("risk_pre2w", task)
    assert not hasattr(skrisk.experiments, "RECORD_ALIASES") and not hasattr(skrisk.experiments, "registry_name")


def test_build_task_rnn_encoding_is_cached(pairs, tmp_path):
    from skrisk.experiments import build_task

    task = build_task(pairs, matcher="rnn", cache_dir=tmp_path)
    assert set(task.X.keys()) == {"tokens", "features"} and len(task.X["tokens"]) == len(pairs)
    cached = list(tmp_path.glob("*.npz"))
    assert len(cached) == 1
    again = build_task(pairs, matcher="rnn", cache_dir=tmp_path)
    np.testing.assert_array_equal(again.X["tokens"], task.X["tokens"])
    np.testing.assert_array_equal(again.X["features"], task.X["features"])
    with pytest.raises(ValueError, match="matcher must be"):
        build_task(pairs, matcher="svm")


def test_build_task_subsets_are_stratified_seeded_and_cached_apart(pairs, tmp_path):
    from skrisk.experiments import build_task

    full = build_task(pairs, cache_dir=tmp_path)
    assert len(full.pool) == pairs.split_sizes["train"] and full.X.dtype == np.float32
    np.testing.assert_array_equal(full.y[full.pool], pairs.split("train").y)
    small = build_task(pairs, max_pool=60, max_valid=20, max_test=20, cache_dir=tmp_path, random_state=1)
    assert (len(small.pool), len(small.valid), len(small.test)) == (60, 20, 20)
    assert small.y[small.pool].mean() == pytest.approx(pairs.split("train").y.mean(), abs=0.02)
    again = build_task(pairs, max_pool=60, max_valid=20, max_test=20, cache_dir=tmp_path, random_state=1)
    np.testing.assert_array_equal(again.X, small.X)
    np.testing.assert_array_equal(again.y, small.y)
    assert len(list(tmp_path.glob("*.npz"))) == 2  # the subset's matrix is not the full task's
    with pytest.raises(ValueError, match="no \\['valid', 'test'\\] split"):
        build_task(pairs.split("train"))


def test_build_task_cache_is_keyed_by_the_columns(data_home, tmp_path):
    """A cache written for another column set (Fodors-Zagats with its leaked ``class``) is not read."""
    from skrisk.datasets import load_deepmatcher
    from skrisk.experiments import build_task

    leaky = build_task(load_deepmatcher("fodors_zagats", data_home, drop_leaked=False), cache_dir=tmp_path)
    clean = build_task(load_deepmatcher("fodors_zagats", data_home), cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 2
    assert leaky.X.shape[1] > clean.X.shape[1]
