"""Issue #28, item 5: one public name for one thing."""

from __future__ import annotations

import pytest


def test_loaders_and_generators_have_one_public_home():
    """skrisk.datasets holds the loaders and the generators, as sklearn.datasets does (issue #45)."""
    import skrisk.data
    import skrisk.datasets

    moved = ("load_deepmatcher", "load_febrl", "load_csv_tables", "fetch_deepmatcher")
    assert set(skrisk.datasets.__all__) == {*moved, "make_pairs", "make_person_table"}
    for name in moved:
        assert name not in skrisk.data.__all__
        with pytest.warns(FutureWarning, match=f"skrisk.data.{name} moved to skrisk.datasets.{name}"):
            assert getattr(skrisk.data, name) is getattr(skrisk.datasets, name)
    with pytest.raises(AttributeError, match="no attribute 'load_nothing'"):
        skrisk.data.load_nothing  # noqa: B018


def test_one_atomic_write_text_and_one_curve_summary():
    # internal on purpose: where the one writer and the one curve summary live
    import skrisk._fileio
    import skrisk.experiments._plot
    import skrisk.labelling

    assert not hasattr(skrisk.labelling, "atomic_write_text")
    assert "atomic_write_text" in skrisk._fileio.__all__
    assert not hasattr(skrisk.experiments._plot, "summarize_curves")
    assert "summarise_curves" in skrisk.experiments._plot.__all__


def test_records_carry_the_registry_names_mark(pairs):
    from skrisk.experiments import build_task, run_active_learning
    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.experiments._tasks import make_matcher_factory
    from skrisk.experiments._registry import make_strategy

    task = build_task(pairs)
    recs = run_active_learning(task, make_strategy("random", task), make_matcher_factory("feature"),
                               n_seed=10, n_instances=5, n_rounds=2, seed=0)
    assert [r["names"] for r in recs] == ["registry", "registry"]
