"""Smoke run of the scripted-session benchmark (a real LabellingSession on Fodors-Zagats)."""

from __future__ import annotations

import pytest


@pytest.mark.needs_data
def test_session_records_the_printed_estimate_beside_the_truth(bench_script, tmp_path, monkeypatch):
    bench = bench_script("bench_session")
    paths = tmp_path / "paths"
    assert bench.main(["--dataset", "fodors_zagats", "--seeds", "0", "1", "--labels", "40", "--out", str(tmp_path),
                       "--save-paths", str(paths)]) == 0
    first, second = bench.read_raw_records(tmp_path, "*_session_seed*.json")
    assert first["candidate_matches"] > 0 and first["n_candidates"] > first["candidate_matches"]
    rounds = first["rounds"]
    assert rounds and rounds[-1]["n_labels"] >= 40
    assert [r["n_audit"] for r in rounds] == sorted(r["n_audit"] for r in rounds)  # audits accumulate
    # an audit that holds no match yet leaves F1 undefined and its interval the whole range
    for r in rounds:
        if r["estimate"] is not None and r["estimate"]["f1"] is None:
            assert r["estimate"]["f1_interval"] == [0.0, 1.0]
    est = next(r for r in rounds if r["estimate"] is not None and r["estimate"]["f1"] is not None)["estimate"]
    lo, hi = est["f1_interval"]
    assert 0 <= lo <= est["f1"] <= hi <= 1
    for r in rounds:
        assert 0 <= r["truth"]["f1"] <= 1 and r["threshold_truth"]["f1"] is not None
    assert any(r["lines"] for r in rounds) and not any("lines" in r for r in second["rounds"])  # first seed only
    assert "Coverage of the printed 90 % intervals" in bench.report(tmp_path)
    # the tracked summary keeps fewer rounds, and every table reads the same ones from it
    summary = bench.read_records(tmp_path, "*_session_seed*.json")
    assert len(summary[0]["rounds"]) <= len(rounds) and not any("lines" in x for x in summary[0]["rounds"])
    assert bench._tables(summary) == bench._tables([first, second])

    # the saved paths replay the audit and the advice of each variant with other audit draws
    out = tmp_path / "replay"
    assert bench.main(["--replay", str(paths), "--audit-seeds", "3", "--out", str(out)]) == 0
    runs = bench.read_raw_records(out, "*_replay_audit3.json")
    assert len(runs) == 2 and runs[0]["n_candidates"] == first["n_candidates"]
    for run in runs:
        assert [x["n_audit"] for x in run["rounds"]] == [5 * i for i in range(len(run["rounds"]))]
        for x in run["rounds"]:
            assert set(bench.VARIANTS) <= set(x) and 0 <= x["truth"]["f1"] <= 1
            assert not x["after"]["stop"] or x["after"]["stop_text"].endswith("recommends stopping.")
        # the session's rule: the check of the last 10 rounds, passing 3 rounds in a row (round 12 at the earliest)
        assert not any(x["held"]["stop"] for x in run["rounds"][:12])
    assert [x["truth"] for x in runs[0]["rounds"]] == [x["truth"] for x in first["rounds"]]  # the same matchers
    text = bench.report_replay(out)
    assert "2 sessions = the saved paths of session seeds [0, 1] x audit seeds [3]" in text
    assert all(f"**Variant `{v}`**" in text for v in bench.VARIANTS)
    with monkeypatch.context() as m:  # the report of the summary is that of the whole records
        m.setattr(bench, "read_records", lambda folder, pattern: runs)
        assert bench.report_replay(out) == text

    # where the F1 estimate's error comes from, on the same saved paths
    rows = bench.diagnose_path(sorted(paths.glob("*.npz"))[0], [0, 10, 10**6], [0, 1], 5)
    assert [x["K"] for x in rows] == [10]  # none before any draw, no round with a million answers
    sd = rows[0]["sd"]
    assert all(v >= 0 for pair in sd.values() for v in pair) and rows[0]["replays"] == 2
    assert rows[0]["miss_low"] + rows[0]["miss_high"] <= 2
    assert "| fodors_zagats_kNone_seed0 | 10 |" in bench.report_diagnosis(rows)


@pytest.mark.needs_data
def test_dedup_session_stacks_the_two_tables(bench_script, tmp_path):
    bench = bench_script("bench_session")
    paths = tmp_path / "paths"
    assert bench.main(["--dataset", "fodors_zagats", "--dedup", "--seeds", "0", "--labels", "20", "--out",
                       str(tmp_path), "--save-paths", str(paths)]) == 0
    (run,) = bench.read_raw_records(tmp_path, "fodors_zagats_dedup_session_seed0.json")
    assert run["task"] == "dedup" and run["settings"]["dedup"] is True
    # every gold match is a cross-table pair of the stacked table, and blocking keeps most of them
    assert 0 < run["candidate_matches"] <= run["gold_matches"] == 110
    assert "its two tables stacked as one to deduplicate" in bench.report(tmp_path)
    (npz,) = paths.glob("*.npz")
    assert npz.name == "fodors_zagats_kNone_dedup_seed0.npz"
    out = tmp_path / "replay"
    assert bench.main(["--replay", str(paths), "--audit-seeds", "1", "--variants", "recalibrated", "--out", str(out)]) == 0
    (rep,) = bench.read_raw_records(out, "*_replay_audit1.json")
    assert rep["task"] == "dedup" and rep["dataset"] == "fodors_zagats"
    assert [x["truth"] for x in rep["rounds"]] == [x["truth"] for x in run["rounds"]]
    # where the first match is for the starting pairs, on the same candidates
    ranks = bench.first_match_ranks(bench.get_data_home() / "fodors_zagats", bench.argparse.Namespace(
        dedup=True, block_top_k=None))
    assert ranks["n_candidates"] == run["n_candidates"] and ranks["candidate_matches"] == run["candidate_matches"]
    assert 1 <= ranks["questions"] <= ranks["questions_by_average"] and 0 <= ranks["features_led_by_a_match"] <= ranks["features"]


@pytest.mark.needs_data
def test_sessions_leave_out_the_attributes_that_leak_the_label(bench_script, tmp_path):
    import pandas as pd

    # internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
    from skrisk.data._loaders import get_data_home

    bench = bench_script("bench_session")
    folder = get_data_home() / "fodors_zagats"
    tables, gold = bench.session_tables(folder, tmp_path)
    for side in ("left", "right"):  # class is an entity id, equal in every match
        assert "class" not in pd.read_csv(tables[side], dtype=str).columns
    assert len(gold) == 110
    stacked, gold_d = bench.session_tables(folder, tmp_path, dedup=True)
    table = pd.read_csv(stacked["table"], dtype=str)
    assert "class" not in table.columns and table["id"].is_unique
    assert all(a.startswith("a:") and b.startswith("b:") for a, b in gold_d) and len(gold_d) == 110
