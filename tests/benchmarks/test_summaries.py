"""``benchmarks/_summaries.py``: the tracked summaries give the pages' tables the whole records give."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _summaries as summaries  # noqa: E402  (beside the scripts)


def _estimate(rng, n_audit):
    if n_audit < 10:
        return None
    out = {"n_audit": n_audit}
    half = 2.0 / np.sqrt(n_audit)
    for m in ("precision", "recall", "f1"):
        v = float(rng.uniform(0.3, 0.9))
        out[m] = v
        out[f"{m}_interval"] = [max(0.0, v - half), min(1.0, v + half)]
    return out


def _round(rng, r, stop_at):
    truth = {m: float(rng.uniform(0.4, 0.9)) for m in ("precision", "recall", "f1")}
    return {"round": r, "n_labels": 10 * r, "n_audit": 5 * r, "truth": truth, "estimate": _estimate(rng, 5 * r),
            "threshold_truth": {"f1": truth["f1"] + float(rng.normal(0, 0.01))}, "stop": r >= stop_at,
            "lines": ["printed"]}


def _session(seed, n_rounds=90, stop_at=60):
    rng = np.random.default_rng(seed)
    return {"dataset": "toy", "seed": seed, "n_candidates": 1000, "candidate_matches": 50, "gold_matches": 55,
            "settings": {"audit": 5, "batch": 10}, "env": "test", "date": "2026-12-01",
            "rounds": [_round(rng, r, stop_at) for r in range(n_rounds)]}


@pytest.fixture(scope="module")
def session(bench_script):
    return bench_script("bench_session")


def test_a_thinned_session_gives_the_same_tables(session):
    runs = [_session(s, stop_at=60 + 7 * s) for s in range(4)] + [_session(9, stop_at=10**6)]  # one never stops
    thin = [summaries.thin_session(r) for r in runs]
    assert all(len(t["rounds"]) < len(r["rounds"]) / 3 for t, r in zip(thin, runs))
    assert not any("lines" in x for t in thin for x in t["rounds"])
    assert session._tables(thin) == session._tables(runs)


def test_a_thinned_replay_keeps_the_rounds_of_every_variant(session):
    rng = np.random.default_rng(3)
    runs = []
    for audit_seed in range(3):
        base = _session(audit_seed)
        rounds = []
        for x in base["rounds"]:
            shared = {k: x[k] for k in ("round", "n_labels", "n_audit", "truth")}
            for v, stop_at in (("after", 40 + audit_seed), ("recalibrated", 70)):
                shared[v] = {"estimate": _estimate(rng, x["n_audit"]), "stop": x["round"] >= stop_at,
                             "threshold_truth": x["threshold_truth"], "stop_text": "printed"}
            rounds.append(shared)
        runs.append({**base, "audit_seed": audit_seed, "load": [1.0, 1.0, 1.0], "rounds": rounds})
    thin = [summaries.thin_session(r) for r in runs]
    for variant in ("after", "recalibrated"):
        full_v = [{**r, "rounds": session._variant_rounds(r, variant)} for r in runs]
        thin_v = [{**r, "rounds": session._variant_rounds(r, variant)} for r in thin]
        assert session._tables(thin_v) == session._tables(full_v), variant
    assert not any("stop_text" in x["after"] for t in thin for x in t["rounds"])


def test_the_folder_summary_adds_replaces_and_filters_by_name(tmp_path):
    a, b = _session(0), _session(1)
    summaries.add_session_records(tmp_path, {"toy_session_seed1.json": b, "toy_replay_audit0.json": a})
    summaries.add_session_records(tmp_path, {"toy_session_seed0.json": a, "toy_session_seed1.json": a})
    got = summaries.read_session_summary(tmp_path, "*_session_seed*.json")
    assert [r["seed"] for r in got] == [0, 0]  # name order; seed1's record replaced by a
    assert len(summaries.read_session_summary(tmp_path, "*.json")) == 3
    data = (tmp_path / summaries.SESSION_SUMMARY).read_bytes()
    summaries.add_session_records(tmp_path, {})
    assert (tmp_path / summaries.SESSION_SUMMARY).read_bytes() == data  # no time stamp: same bytes
    assert gzip.decompress(data).count(b"\n") == 3


def test_al_summaries_compress_the_rounds_and_date_the_runs(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "x_rnn_risk_seed0.jsonl").write_text(
        '{"dataset": "x", "strategy": "risk", "seed": 0, "round": 0, "date": "2026-11-20"}\n'
        '{"dataset": "x", "strategy": "risk", "seed": 0, "round": 1, "date": "2026-11-22"}\n')
    (tmp_path / "x_rnn_compare_rounds.csv").write_text("dataset,strategy,seed,round,n_labelled,f1\nx,risk,0,0,10,0.5\n")
    made = summaries.summarize_al(tmp_path)
    assert [p.name for p in made] == ["x_rnn_compare_rounds.csv.gz", "runs.csv"]
    assert gzip.decompress(made[0].read_bytes()).startswith(b"dataset,strategy")
    assert not (tmp_path / "x_rnn_compare_rounds.csv").exists()
    (row,) = summaries.read_runs(tmp_path)
    assert (row["file"], row["rounds"], row["first_date"], row["last_date"]) == (
        "x_rnn_risk_seed0.jsonl", "2", "2026-11-20", "2026-11-22")
    (raw / "x_rnn_risk_seed0.jsonl").unlink()  # a clone without the raw record keeps its row
    summaries.write_runs(raw, tmp_path)
    assert len(summaries.read_runs(tmp_path)) == 1
