"""Smoke run of the match benchmark script (``--quick``: FEBRL1 dedup, Fodors-Zagats linkage)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.needs_data
def test_quick_run_writes_json(bench_script, tmp_path):
    bench = bench_script("bench_match")
    assert bench.main(["--quick", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "bench_match.json").read_text())
    assert "loadavg" in record["meta"] and "command" in record["meta"]
    dedup, link = record["results"]
    assert dedup["task"] == "dedup" and link["task"] == "link"
    for r in (dedup, link):
        assert r["n_candidates"] > 0 and r["peak_rss_mb"] >= r["rss_before_match_mb"] > 0
        assert r["pairs_per_second"]["features"] > 0 and r["pairs_per_second"]["matcher"] > 0
        assert 0.5 < r["pairwise"]["f1"] <= 1 and 0.5 < r["cluster"]["bcubed_f1"] <= 1
