"""Hostile run records and run folders (issue #15 items 7, 11, 16, 17): every bad input gets a clear
error naming the file (and line) and the fix, or is read correctly; no recorded round is lost."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk._fileio import FolderInUseError, FolderLock
from skrisk.data import SimilarityFeatures
from skrisk.exceptions import DataError
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.experiments._loop import ALTask, read_results
from skrisk.experiments import run_active_learning
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.experiments._demo import run_experiment
from skrisk.matchers import FeatureMatcher
from skrisk.strategies import random_sampling

TINY = dict(matcher="feature", rounds=2, n_instances=5, n_seed=6, seeds=1, epochs=20, max_pool=60, max_valid=40,
            max_test=60, progress=False, plot=False)


def _run(beer, out, **kw):
    import io

    return run_experiment(beer, ["random"], out, **{**TINY, **kw}, stream=io.StringIO())


@pytest.fixture(scope="module")
def task(beer):
    X = SimilarityFeatures(metrics=["jaccard"]).fit_transform(beer.to_frame()).astype(np.float32)
    return ALTask(X=X, y=beer.y, pool=beer.split_positions("train"), valid=beer.split_positions("valid"),
                  test=beer.split_positions("test"), name="beer")


def _loop(task, path, n_rounds=3, n_seed=6):
    return run_active_learning(task, random_sampling, lambda s: FeatureMatcher(random_state=s),
                               n_seed=n_seed, n_instances=5, n_rounds=n_rounds, seed=1, strategy_name="random",
                               results_file=path)


def _old_format(task, path, rounds=3, *, dataset="beer", big=None):
    """Records in the format before issue #20 (full labelled lists), which are still read."""
    lab = list(range(6))
    lines = []
    for r in range(rounds):
        nxt = None if r == rounds - 1 else lab + [100 + 5 * r + i for i in range(5)]
        if big is not None and r == big:
            nxt = lab + [10**6]
        lines.append(json.dumps({"dataset": dataset, "strategy": "random", "seed": 1, "round": r,
                                 "n_labelled": len(lab), "f1": 0.5, "labelled": lab, "next_labelled": nxt}))
        lab = nxt
    path.write_text("\n".join(lines) + "\n")


# --- item 7: one run per output folder ------------------------------------------------------------

def test_second_run_on_the_same_output_folder_is_refused_naming_the_pid(beer, tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from skrisk._fileio import FolderLock
            lock = FolderLock({str(out)!r}, what="run output").acquire()
            print("locked", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FolderInUseError, match=rf"run output .* in use by pid {holder.pid}.*another --out"):
            _run(beer, out)
        assert not (out / "results.jsonl").exists()  # nothing written by the refused run
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    _run(beer, out)  # the lock dies with its holder
    assert len(read_results(out / "results.jsonl")) == 2


# --- item 11: torn tails, damaged lines, positions out of range -------------------------------------

def test_a_torn_last_line_is_cut_off_and_the_run_resumes_once(beer, tmp_path):
    out = tmp_path / "run"
    _run(beer, out, rounds=3)
    results = out / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    # a run killed while appending its last round: half a line, no newline
    results.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    _run(beer, out, rounds=3)
    again = results.read_text().splitlines()
    assert all(json.loads(line) for line in again)  # every line readable: the torn tail is gone
    assert [r["round"] for r in read_results(results)] == [0, 1, 2]
    _run(beer, out, rounds=3)  # nothing left to do: no line added
    assert results.read_text().splitlines() == again


def test_a_damaged_line_before_the_end_is_named_with_its_line(task, tmp_path):
    path = tmp_path / "results.jsonl"
    _loop(task, path)
    lines = path.read_text().splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]
    path.write_text("\n".join(lines) + "\n")
    before = path.read_bytes()
    with pytest.raises(DataError, match=r"results\.jsonl, line 2, is not a valid results file line.*delete that line"):
        _loop(task, path, n_rounds=4)
    assert path.read_bytes() == before  # nothing appended after the damage, nothing cut


def test_a_position_outside_the_pool_is_a_clear_error(task, tmp_path):
    path = tmp_path / "results.jsonl"
    _old_format(task, path, big=1)
    with pytest.raises(DataError, match=rf"results\.jsonl, line 2: .*outside the pool of {len(task.pool)} pairs"):
        _loop(task, path, n_rounds=4)


# --- item 16: run.json, --out, full disk -------------------------------------------------------------

def test_a_corrupt_run_json_names_the_file_and_the_fix(beer, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text('{"dataset": "beer", ')
    with pytest.raises(DataError, match=r"run\.json is not readable JSON.*delete that folder to start over"):
        _run(beer, out)


def test_run_json_of_the_wrong_type_is_refused(beer, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text("[1, 2]\n")
    with pytest.raises(DataError, match=r"run\.json does not hold the run's settings"):
        _run(beer, out)


def test_out_naming_an_existing_file_is_a_clear_error(beer, tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("keep me\n")
    with pytest.raises(DataError, match=r"results\.txt is an existing file, not a folder.*--out"):
        _run(beer, target)
    assert target.read_text() == "keep me\n"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to tell the results file's fd")
def test_a_full_disk_names_the_file_and_the_fix_and_loses_no_round(beer, tmp_path, monkeypatch):
    out = tmp_path / "run"
    _run(beer, out)
    results = out / "results.jsonl"
    kept = results.read_bytes()
    real_fsync = os.fsync

    def full_disk(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith("results.jsonl"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    results.write_bytes(kept.split(b"\n", 1)[0] + b"\n")  # round 1 to redo
    kept = results.read_bytes()
    with pytest.raises(OSError, match=r"Cannot write .*results\.jsonl: No space left on device\. Free disk space"):
        _run(beer, out)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert results.read_bytes() == kept  # no partial line, the recorded round intact
    _run(beer, out)
    assert [r["round"] for r in read_results(results)] == [0, 1]


# --- item 17: parallel processes writing the same task cache ----------------------------------------

def test_two_writers_of_the_same_task_cache_do_not_collide(beer, tmp_path, monkeypatch):
    from skrisk.experiments import build_task

    barrier = threading.Barrier(2, timeout=60)
    real_savez = np.savez

    def savez_together(file, *args, **kw):  # both writers finish their temporary file, then rename
        real_savez(file, *args, **kw)
        barrier.wait()

    monkeypatch.setattr(np, "savez", savez_together)
    errors, tasks = [], []

    def work():
        try:
            tasks.append(build_task(beer, matcher="feature", cache_dir=tmp_path))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    names = [p.name for p in tmp_path.iterdir()]  # one cache file, no temporary file left
    assert len(names) == 1 and names[0].startswith(f"{beer.name}_feature_{len(beer)}_") and names[0].endswith(".npz")
    monkeypatch.setattr(np, "savez", real_savez)
    again = build_task(beer, matcher="feature", cache_dir=tmp_path)
    np.testing.assert_array_equal(again.X, tasks[0].X)


# --- further hostile records (see /work/notes/security-runs.md) -------------------------------------

def test_records_of_another_dataset_are_refused(task, tmp_path):
    path = tmp_path / "results.jsonl"
    _old_format(task, path, dataset="abt_buy")
    with pytest.raises(DataError, match=r"line 1: a round of dataset 'abt_buy', not 'beer'.*another output folder"):
        _loop(task, path, n_rounds=4)


def test_a_round_gap_is_named(task, tmp_path):
    path = tmp_path / "results.jsonl"
    _loop(task, path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")  # round 1 deleted
    with pytest.raises(DataError, match=r"line 2: round 2 of random, seed 1 follows round 0 \(round 1 is missing\)"):
        _loop(task, path, n_rounds=4)


def test_records_of_another_seed_size_are_refused(task, tmp_path):
    path = tmp_path / "results.jsonl"
    _loop(task, path, n_rounds=2)
    with pytest.raises(DataError, match=r"line 1: the run started from 6 labelled pairs, not the 8 asked for"):
        _loop(task, path, n_rounds=3, n_seed=8)


def test_compact_records_rebuild_the_labelled_sets_exactly(task, tmp_path):
    """The batches and the seed set give back every round's labelled set; a line is about 1 KB."""
    path = tmp_path / "results.jsonl"
    straight = _loop(task, None, n_rounds=4)
    _loop(task, path, n_rounds=2)
    resumed = _loop(task, path, n_rounds=4)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a["labelled"], b["labelled"])
        assert a["f1"] == b["f1"] and a["batch"] == b["batch"]
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    assert raw[1]["batch_gaps"] is None and len(raw[2]["batch_gaps"]) == 5  # round 1 rerun to query
    assert "labelled" not in raw[2] and "next_labelled" not in raw[2]
    assert "env" in raw[0] and "scikit-learn" in raw[0]["env"] and "date" in raw[0]
    assert max(len(line) for line in path.read_text().splitlines()) < 1024


@pytest.mark.needs_data
def test_skrisk_run_on_a_locked_folder_says_so_without_a_traceback(tmp_path, capsys):
    from skrisk.cli import main

    out = tmp_path / "run"
    with FolderLock(out, what="run output"):
        rc = main(["run", "--dataset", "beer", "--strategy", "random", "--rounds", "2", "--batch", "5",
                   "--out", str(out)])
    err = capsys.readouterr().err
    assert rc != 0 and "in use by pid" in err and "Traceback" not in err
