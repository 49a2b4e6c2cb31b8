"""Smoke run of benchmarks/bench_pools.py's streaming mode on the small beer tables."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.usefixtures("beer")
def test_stream_mode_writes_a_record(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_pools", ROOT / "benchmarks" / "bench_pools.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench.jsonl"
    assert bench.main(["--dataset", "beer", "--stream-pairs", "3000", "--chunk-size", "1000",
                       "--n-instances", "5", "--out", str(out)]) == 0
    rec = json.loads(out.read_text().splitlines()[0])
    assert rec["mode"] == "stream" and rec["n_pairs"] == 3000 and rec["n_candidates"] == 10
    assert rec["peak_rss_mb"] > 0 and rec["pairs_per_s"] > 0 and "loadavg_before" in rec
    assert {"score", "kmedoids", "total"} <= set(rec["timings"])
