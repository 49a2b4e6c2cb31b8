"""Smoke run of the match benchmark script (``--quick``: FEBRL1 dedup, Fodors-Zagats linkage)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_script():
    spec = importlib.util.spec_from_file_location("bench_match", ROOT / "benchmarks" / "bench_match.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.needs_data
def test_quick_run_writes_json(tmp_path):
    bench = _load_script()
    assert bench.main(["--quick", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "bench_match.json").read_text())
    assert "loadavg" in record["meta"] and "command" in record["meta"]
    dedup, link = record["results"]
    assert dedup["task"] == "dedup" and link["task"] == "link"
    for r in (dedup, link):
        assert r["n_candidates"] > 0 and r["peak_rss_mb"] >= r["rss_before_match_mb"] > 0
        assert r["pairs_per_second"]["features"] > 0 and r["pairs_per_second"]["matcher"] > 0
        assert 0.5 < r["pairwise"]["f1"] <= 1 and 0.5 < r["cluster"]["bcubed_f1"] <= 1
