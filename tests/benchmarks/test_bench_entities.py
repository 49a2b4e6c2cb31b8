"""Smoke run of the entities benchmark script (FEBRL1, ``--quick``)."""

from __future__ import annotations

import json


def test_quick_run_writes_json_and_table(bench_script, tmp_path):
    bench = bench_script("bench_entities")
    assert bench.main(["--tasks", "febrl1", "--quick", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "entities.json").read_text())
    assert record["meta"]["seeds"] == 1 and "loadavg_before" in record["meta"]
    (row,) = record["mean"]
    assert row["task"] == "febrl1" and row["kind"] == "dedup" and row["candidates"] > 500
    for k in ("pairs_f1", "entity_pairs_f1", "cluster_f1", "bcubed_f1"):
        assert 0.5 < row[k] <= 1.0
    table = (tmp_path / "entities.md").read_text()
    assert "| febrl1 | dedup | no |" in table and "_command_" in table
