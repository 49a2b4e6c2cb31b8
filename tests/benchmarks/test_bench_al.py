"""Smoke run of the active-learning benchmark script (issue #7's ``--quick`` mode, tiny settings)."""

from __future__ import annotations

import csv
import gzip

import pytest


@pytest.mark.usefixtures("beer")
def test_quick_benchmark_writes_csv_png_and_table_and_resumes(bench_script, tmp_path):
    bench = bench_script("bench_al")
    argv = ["--quick", "--strategies", "risk", "random", "--no-progress", "--threads", "1",
            "--out", str(tmp_path)]
    assert bench.main(argv) == 0
    raw = sorted((tmp_path / "raw").glob("*.jsonl"))
    assert len(raw) == 4  # 2 strategies x 2 seeds, one file each
    rows = [r for f in raw for r in f.read_text().splitlines()]
    assert len(rows) == 4 * 3  # three rounds each (the initial one included)
    table = next(tmp_path.glob("*.md")).read_text()
    assert "risk" in table and "random" in table and "_command_" in table
    assert "scikit-learn" in table and "torch" in table  # the environment behind the numbers
    # the tracked summaries: each run's rounds (gzip, no time stamp) and the folder's runs with their dates
    assert not list(tmp_path.glob("*_rounds.csv"))
    with gzip.open(next(tmp_path.glob("*_rounds.csv.gz")), "rt") as fh:
        recs = list(csv.DictReader(fh))
    assert len(recs) == 4 * 3 and all(0.0 <= float(r["f1"]) <= 1.0 for r in recs)
    with open(tmp_path / "runs.csv") as fh:
        runs = list(csv.DictReader(fh))
    assert sorted(r["file"] for r in runs) == [f.name for f in raw]
    assert all(r["rounds"] == "3" and r["first_date"] == r["last_date"] != "" for r in runs)
    assert list(tmp_path.glob("*.png"))
    # a rerun resumes: nothing is recomputed, nothing duplicated
    assert bench.main(argv) == 0
    assert sum(len(f.read_text().splitlines()) for f in raw) == 4 * 3
    # --first-seed runs the later seeds only, and its table still holds the earlier ones
    assert bench.main([*argv, "--first-seed", "1"]) == 0
    assert sum(len(f.read_text().splitlines()) for f in raw) == 4 * 3
    table = next(tmp_path.glob("*.md")).read_text()
    assert "2 runs" in table and "| risk | 2 |" in table
    # --report-only runs nothing; on unchanged records it rewrites the table byte for byte (the
    # command, machine and date of the run that made it are kept in raw/tables.json, not re-dated)
    made = next(tmp_path.glob("*.md")).read_text()
    assert bench.main([*argv, "--report-only"]) == 0
    assert sum(len(f.read_text().splitlines()) for f in raw) == 4 * 3
    assert next(tmp_path.glob("*.md")).read_text() == made
    # a new table from the records: the machine and date recorded with the runs
    assert bench.main([*argv, "--report-only", "--strategies", "risk"]) == 0
    table = next(tmp_path.glob("*.md")).read_text()
    assert "rounds recorded so far" in table and "| risk | 2 |" in table and "| random |" not in table
    assert "scikit-learn" in table and "--report-only" in table
    assert bench.main([*argv, "--report-only", "--strategies", "entropy"]) == 1  # nothing recorded


@pytest.mark.usefixtures("beer")
def test_risk_quality_replays_recorded_runs(bench_script, tmp_path):
    """bench_risk_quality refits the model a recorded run saw and scores risk against uncertainty."""
    bench = bench_script("bench_al")
    assert bench.main(["--quick", "--strategies", "risk_paper", "--no-progress", "--threads", "1",
                       "--out", str(tmp_path)]) == 0
    rq = bench_script("bench_risk_quality")  # replays the paper's method's runs by default
    argv = ["--dataset", "beer", "--matcher", "feature", "--seeds", "2", "--rounds", "0", "1", "7",
            "--batch", "20", "--risk-epochs", "50", "--out", str(tmp_path)]
    assert rq.main(argv) == 0
    with open(tmp_path / "beer_feature_risk_quality.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4  # 2 seeds x rounds 0 and 1; round 7 was never recorded
    for r in rows:
        # the refit is the very model the run recorded (same labelled set, same seed)
        assert float(r["test_f1"]) == pytest.approx(float(r["recorded_f1"]), abs=1e-12)
        for col in ("auc_uncertainty", "auc_risk", "top_b_uncertainty", "top_b_risk"):
            assert 0.0 <= float(r[col]) <= 1.0
    table = (tmp_path / "beer_feature_risk_quality.md").read_text()
    assert "| 40 | 2 |" in table and "_command_" in table and "numpy" in table
    # nothing recorded for another strategy: a clear failure, not an empty table
    assert rq.main([*argv, "--strategy", "entropy"]) == 1


def test_strategies_are_the_registry_names(bench_script, capsys):
    """``--strategies`` takes the registry's names: ``risk`` is skrisk's default and ``risk_paper``
    the paper's method, in the records and tables as everywhere (issue #28, item 5)."""
    from skrisk.experiments import STRATEGIES

    bench = bench_script("bench_al")
    assert not hasattr(bench, "_RECORD_ONLY")
    assert all(n in bench.REGISTRY for n in [*bench.STRATEGY_NAMES, *bench.ABLATIONS, *bench.VARIANTS])
    assert all(n in STRATEGIES for n in bench.STRATEGY_NAMES)
    assert "risk_paper" in bench.STRATEGY_NAMES and "risk" in bench.VARIANTS
    for bad in ("risk_pre2w", "riskk"):
        with pytest.raises(SystemExit) as exc:
            bench.main(["--quick", "--strategies", bad, "--report-only"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert f"unknown strategy {bad}" in err
        assert ("is now 'risk'" in err) == (bad == "risk_pre2w")


@pytest.mark.usefixtures("beer")
def test_rnn_benchmark_with_parallel_jobs(bench_script, tmp_path):
    """Issue #29: ``bench_al.py --matcher rnn`` (the paper's setting) could not run with the
    matcher's default device; seeds in two processes (the matcher crosses process boundaries)."""
    bench = bench_script("bench_al")
    argv = ["--quick", "--matcher", "rnn", "--jobs", "2", "--strategies", "risk", "--no-progress",
            "--threads", "1", "--out", str(tmp_path)]
    assert bench.main(argv) == 0
    rows = [r for f in sorted((tmp_path / "raw").glob("*.jsonl")) for r in f.read_text().splitlines()]
    assert len(rows) == 2 * 3  # two seeds, three rounds each
    assert "| risk | 2 |" in next(tmp_path.glob("*.md")).read_text()


def test_the_benchmarks_variants_name_their_selector(bench_script, pairs):
    """The variants live beside the benchmarks (benchmarks/_variants.py), each with its own selector
    (so it reruns as recorded with every matcher), and extend skrisk's registry without changing it."""
    from skrisk.experiments import STRATEGIES, build_task
    from skrisk.matchers import LMMatcher
    from skrisk.strategies import KMedoidsSelector, RiskSampler

    variants = bench_script("_variants")
    assert set(variants.REGISTRY) == set(STRATEGIES) | set(variants.VARIANTS)
    assert not set(STRATEGIES) & set(variants.VARIANTS)
    for name in ("risk_cap2k", "risk_pre3w", "risk_pre5w", "risk_pre2w_nodist", "risk_pre2", "risk_pre10",
                 "risk_kmedoids"):
        sampler = RiskSampler(selector=variants.VARIANTS[name].selector)
        assert isinstance(sampler.resolve_selector(LMMatcher()), KMedoidsSelector), name
    task = build_task(pairs)
    expected = {"risk_pre2": {"preselect": 2, "preselect_after": 0}, "risk_pre3w": {"preselect": 3},
                "risk_nodist": {"weighting": "risk", "preselect": None},
                "risk_pre2w_nodist": {"weighting": "risk", "preselect": 2}}
    for name, params in expected.items():
        s = variants.make_strategy(name, task)
        assert all(getattr(s.selector, k) == v for k, v in params.items()), name
    with pytest.raises(ValueError, match="Unknown strategy 'risk_cold'"):
        variants.make_strategy("risk_cold", task)
