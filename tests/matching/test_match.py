"""skrisk.matching.match: new records of a FEBRL dedup task, and a linkage model."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.matching._entities import cluster_scores, pairwise_scores
from skrisk.matching import load_model, match
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._febrl import febrl_entity

from _match_fixtures import dedup_model, febrl_split, write_zip, zip_entries  # noqa: F401 - fixtures


def test_dedup_match_finds_the_duplicates_of_new_records(dedup_model, febrl_split, tmp_path):
    _, new, truth = febrl_split
    model = load_model(dedup_model.save(tmp_path / "m.skrisk"))
    res = match(model, new, chunk_size=97, progress=False)
    m = res.matches
    assert list(m.columns) == ["left_id", "right_id", "probability", "risk"]
    assert (m["left_id"] < m["right_id"]).all() and (m["probability"] > model.threshold).all()
    assert m["risk"].between(0, 1).all() and m["probability"].is_monotonic_decreasing
    assert res.n_candidates > len(m) > 0
    scores = pairwise_scores(m[["left_id", "right_id"]], truth, task="dedup")
    assert scores["precision"] > 0.9 and scores["recall"] > 0.8, scores
    clusters = res.entities.clusters
    assert set(clusters["record_id"]) == set(new.index)  # every new record is in one entity
    true_clusters = pd.DataFrame({"record_id": new.index, "entity_id": new.index.map(febrl_entity)})
    cs = cluster_scores(clusters[["record_id", "entity_id"]], true_clusters)
    assert cs["f1"] > 0.8, cs
    assert set(res.timings) >= {"blocking", "scoring", "entities", "total"}


def test_the_result_keeps_the_blocking_figures_not_its_candidates(dedup_model, febrl_split):
    """Every candidate is scored, then released (a million records' candidates take 0.12 GB
    through the entities stage): the blocking's figures stay, the count in n_candidates."""
    from skrisk.data import block

    _, new, _ = febrl_split
    res = match(dedup_model, new, chunk_size=97, progress=False)
    full = block(new.loc[:, list(dedup_model.attributes)], None, dedup_model.blocking, identical=True)
    assert len(res.blocking.pairs) == 0 and list(res.blocking.pairs.columns) == list(full.pairs.columns)
    assert res.blocking.n_candidates == len(res.blocking) == res.n_candidates == len(full.pairs) > 0
    assert res.blocking.report() == full.report()
    assert res.blocking.summary()["n_candidates"] == full.summary()["n_candidates"]


def test_chunk_size_does_not_change_the_result(dedup_model, febrl_split):
    _, new, _ = febrl_split
    a = match(dedup_model, new, chunk_size=50, progress=False).matches
    b = match(dedup_model, new, chunk_size=100_000, progress=False).matches
    pd.testing.assert_frame_equal(a, b)


def test_threads_do_not_change_the_result(dedup_model, febrl_split, monkeypatch):
    """Chunks scored side by side on threads give the matches and entities of one thread."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)  # threads are capped at the CPUs: test 2 and 3
    _, new, _ = febrl_split
    one = match(dedup_model, new, chunk_size=17, progress=False, n_jobs=1)
    for n_jobs in (2, 3):
        many = match(dedup_model, new, chunk_size=17, progress=False, n_jobs=n_jobs)
        pd.testing.assert_frame_equal(many.matches, one.matches)
        pd.testing.assert_frame_equal(many.entities.to_frame(), one.entities.to_frame())
    assert one.n_candidates > 5 * 17


def test_reasons_name_features(dedup_model, febrl_split):
    _, new, _ = febrl_split
    m = match(dedup_model, new.iloc[:120], reasons=True, progress=False).matches
    assert "reasons" in m.columns and m["reasons"].str.len().gt(0).all()
    assert not m["reasons"].str.contains(r"\bx\d+\b").any()  # feature names, not x<j>


def test_linkage_one_to_one(dedup_model, febrl_split):
    """A dedup model's parts, used as a linkage model of two halves: one-to-one entities."""
    from dataclasses import replace

    _, new, _ = febrl_split
    model = replace(dedup_model, task="link")
    org = new[new.index.str.endswith("-org")]
    dup = new[~new.index.str.endswith("-org")]
    res = match(model, org, dup, progress=False, one_to_one=True)
    sizes = res.entities.clusters.groupby(["entity_id", "side"]).size()
    assert sizes.max() == 1  # at most one record of each side per entity
    assert set(res.entities.clusters["side"]) == {"left", "right"}


def test_risk_of_matches_only_is_the_risk_of_every_pair_where_it_is_computed(dedup_model, febrl_split):
    """match() asks the scorer for the risk of the pairs above the threshold only (issue #26: the
    risk model's per-pair temporaries were most of the peak memory); those risks are unchanged."""
    from skrisk.data import block

    _, new, _ = febrl_split
    scorer = dedup_model.scorer(new, None)
    pairs = block(new, None, dedup_model.blocking).pairs.iloc[:400]
    full = scorer.score(pairs)
    part = scorer.score(pairs, risk_of="matches")
    above = full.proba > dedup_model.threshold
    assert 0 < above.sum() < len(pairs)
    np.testing.assert_array_equal(part.proba, full.proba)
    np.testing.assert_allclose(part.risk[above], full.risk[above], rtol=0, atol=1e-12)
    assert np.isnan(part.risk[~above]).all()
    with pytest.raises(ValueError, match="risk_of"):
        scorer.score(pairs, risk_of="some")


def test_match_risks_are_the_scorer_risks(dedup_model, febrl_split):
    _, new, _ = febrl_split
    res = match(dedup_model, new, chunk_size=61, progress=False)
    m = res.matches
    direct = dedup_model.scorer(new, None).score(m[["left_id", "right_id"]])
    np.testing.assert_allclose(m["risk"].to_numpy(), direct.risk, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(m["probability"].to_numpy(), direct.proba)


def test_a_progress_bar_per_stage_and_none_without_progress(dedup_model, febrl_split, capsys):
    _, new, _ = febrl_split
    match(dedup_model, new.iloc[:300], chunk_size=200, progress=True)
    err = capsys.readouterr().err
    for stage in ("Blocking", "Encoding", "Scoring", "Entities"):
        assert stage in err, err
    match(dedup_model, new.iloc[:300], chunk_size=200, progress=False)
    assert capsys.readouterr().err == ""


def test_match_of_a_forest_model_never_imports_torch(dedup_model, febrl_split, tmp_path):
    """``skrisk match`` with a FeatureMatcher + LearnRisk model runs without torch (a fresh process)."""
    import subprocess
    import sys

    _, new, _ = febrl_split
    path = dedup_model.save(tmp_path / "m.skrisk")
    new.rename_axis("id").to_csv(tmp_path / "new.csv")
    code = ("import sys; from skrisk.cli import main; "
            f"rc = main(['match', '--model', {str(path)!r}, '--left', {str(tmp_path / 'new.csv')!r}, "
            f"'--out', {str(tmp_path / 'out')!r}, '--no-progress']); "
            "assert rc == 0, rc; assert 'torch' not in sys.modules, 'torch was imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "out" / "matches.csv").is_file()


def test_skrisk_match_blocks_before_it_imports_scikit_learn(dedup_model, febrl_split, tmp_path):
    """A model file with blocking rules: ``skrisk match`` reads and blocks the table before the
    estimators (and scikit-learn, SciPy) are loaded, then scores with them (a fresh process)."""
    import subprocess
    import sys

    _, new, _ = febrl_split
    path = dedup_model.save(tmp_path / "m.skrisk")
    new.rename_axis("id").to_csv(tmp_path / "new.csv")
    code = ("import sys, skrisk.data as d; seen = []; block = d.block\n"
            "def spy(*a, **k):\n"
            "    seen.append(sorted(m for m in ('sklearn', 'scipy', 'skops', 'torch') if m in sys.modules))\n"
            "    return block(*a, **k)\n"
            "d.block = spy\n"
            "from skrisk.cli import main\n"
            f"rc = main(['match', '--model', {str(path)!r}, '--left', {str(tmp_path / 'new.csv')!r}, "
            f"'--out', {str(tmp_path / 'out')!r}, '--no-progress'])\n"
            "assert rc == 0, rc; assert seen == [[]], seen; assert 'sklearn' in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Blocking began" in proc.stdout or not os.path.exists("/proc/self/stat"), proc.stdout
    matches = pd.read_csv(tmp_path / "out" / "matches.csv", dtype=str)
    expected = match(load_model(path), new, progress=False).matches
    assert list(matches["left_id"]) == list(expected["left_id"])
    assert list(matches["right_id"]) == list(expected["right_id"])


class _Untrusted:
    def predict_proba(self, X):  # pragma: no cover - never loaded
        return None


def test_a_model_refused_once_the_table_is_blocked_leaves_the_earlier_output(dedup_model, febrl_split, tmp_path,
                                                                             capsys):
    """The estimators of a model file load after blocking: a part skrisk does not trust is still
    refused (exit 2, naming the file and the type), and the output of an earlier run stays."""
    import skops.io as sio
    from skrisk.cli import main

    _, new, _ = febrl_split
    good = dedup_model.save(tmp_path / "m.skrisk")
    new.rename_axis("id").to_csv(tmp_path / "new.csv")
    out = tmp_path / "out"
    args = ["match", "--left", str(tmp_path / "new.csv"), "--out", str(out), "--no-progress"]
    assert main([*args, "--model", str(good)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    entries = zip_entries(good)
    entries["estimators.skops"] = sio.dumps({"features": None, "matcher": _Untrusted(), "risk_model": None})
    bad = write_zip(tmp_path / "bad.skrisk", entries)
    capsys.readouterr()
    assert main([*args, "--model", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.skrisk" in err and "does not trust" in err and "_Untrusted" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
