"""``benchmarks/make_results.py``: the committed result pages are what the records give.

Fast (a few seconds, nothing trained): the pages are rebuilt in memory from the committed
records and compared with the committed pages.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _summaries as summaries  # noqa: E402  (beside the scripts)


@pytest.fixture(scope="module")
def mr(bench_script):
    return bench_script("make_results")


def test_committed_pages_regenerate_identically(mr, capsys):
    assert mr.main(["--check"]) == 0, capsys.readouterr().err


def _copy_pages(mr, tmp_path, monkeypatch):
    for rel in mr.OUTPUTS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    monkeypatch.setattr(mr, "ROOT", tmp_path)


def test_check_lists_the_pages_that_differ(mr, tmp_path, monkeypatch, capsys):
    _copy_pages(mr, tmp_path, monkeypatch)
    page = tmp_path / "benchmarks/results/learnrisk.md"
    assert page.read_text().count("0.9832") == 1
    page.write_text(page.read_text().replace("0.9832", "0.9999"))  # a hand-edited number in a block
    (tmp_path / "benchmarks/results/query.md").unlink()
    data = tmp_path / "benchmarks/results/data.md"
    data.write_text(data.read_text() + "\nA sentence of prose added by hand.\n")  # prose is the page's own
    assert mr.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "benchmarks/results/learnrisk.md" in err and "benchmarks/results/query.md" in err
    assert "benchmarks/RESULTS.md" not in err and "data.md" not in err
    assert page.read_text().count("0.9999") == 1  # --check writes nothing


def test_a_run_rewrites_the_blocks_and_keeps_the_prose(mr, tmp_path, monkeypatch):
    _copy_pages(mr, tmp_path, monkeypatch)
    page = tmp_path / "benchmarks/results/learnrisk.md"
    committed = page.read_text()
    edited = committed.replace("0.9832", "0.9999") + "\nA sentence of prose added by hand.\n"
    page.write_text(edited)
    assert mr.main([]) == 0
    assert page.read_text() == committed + "\nA sentence of prose added by hand.\n"
    assert mr.main(["--check"]) == 0


def test_every_page_is_one_copy_with_its_blocks_marked(mr):
    """No template folder: each page's prose is in the page, its blocks between their comments."""
    assert not (ROOT / "benchmarks/results/_pages").exists()
    for rel in mr.OUTPUTS:
        text = (ROOT / rel).read_text()
        assert text.startswith(mr.HEADER), rel
        opened = re.findall(r"<!-- \{\{(\w+)(?::[^}]*)?\}\} -->", text)
        closed = re.findall(r"<!-- \{\{/(\w+)\}\} -->", text)
        assert opened == closed, rel
        assert mr.template_of(text).count("{{") == len(opened), rel  # every block collapses to its placeholder


def test_summary_aulc_equals_bench_al_tables(mr):
    """The per-run areas of the summary average to the AULC that bench_al prints (3 decimals)."""
    for stems in mr.SETTINGS.values():
        stem = stems[-1]
        s = mr.setting_summary([stem])
        table = mr.stem_file(stem, ".md").read_text().split("Share of the batch")[0]
        printed = {m.group(1): float(m.group(2)) for m in re.finditer(r"^\| (\w+) \|.*\| ([\d.]+) \|$", table, re.M)}
        for strat, value in printed.items():
            assert s["aulc"][strat] == pytest.approx(value, abs=5e-4), (stem, strat)


def test_paired_comparison_on_a_hand_computed_case(mr, tmp_path):
    rows = []
    # two strategies, three runs, budgets 0/10/20: per-run AULC = mean of the trapezoids
    for seed, (a, b) in enumerate([((0.5, 0.7, 0.9), (0.5, 0.6, 0.8)), ((0.5, 0.6, 0.7), (0.5, 0.7, 0.9)),
                                   ((0.4, 0.6, 0.8), (0.4, 0.6, 0.7))]):
        for strat, f1 in (("risk", a), ("entropy", b)):
            for r, v in enumerate(f1):
                rows.append({"dataset": "x", "strategy": strat, "seed": seed, "round": r, "n_labelled": 10 * r, "f1": v})
    for strat in ("risk_paper",):  # the paper's method, equal to entropy here
        rows += [dict(r, strategy=strat) for r in rows if r["strategy"] == "entropy"]
    pd.DataFrame(rows).to_csv(tmp_path / "toy_rounds.csv.gz", index=False)
    s = mr.setting_summary(["toy"], tmp_path)
    da = [np.trapezoid(a, [0, 10, 20]) / 20 - np.trapezoid(b, [0, 10, 20]) / 20 for a, b in
          [((0.5, 0.7, 0.9), (0.5, 0.6, 0.8)), ((0.5, 0.6, 0.7), (0.5, 0.7, 0.9)), ((0.4, 0.6, 0.8), (0.4, 0.6, 0.7))]]
    p = s["vs_base"]
    assert p["other"] == "entropy" and p["n"] == 3
    assert p["mean"] == pytest.approx(np.mean(da))
    assert p["sd"] == pytest.approx(np.std(da, ddof=1))
    half = 2.919986 * np.std(da, ddof=1) / np.sqrt(3)  # t(0.95, 2 degrees of freedom)
    assert (p["lo"], p["hi"]) == pytest.approx((np.mean(da) - half, np.mean(da) + half), abs=1e-6)
    assert (p["wins"], p["ties"], p["losses"]) == (2, 0, 1)


def test_runs_recorded_before_a_date_are_named(mr, tmp_path):
    """The RNN rows name the runs recorded before the RNN's rewrite (a record without a date
    counts as before); complete runs only, other matchers never."""
    rows = [{"dataset": "x", "strategy": st, "seed": seed, "round": r, "n_labelled": 10 * r, "f1": 0.5}
            for st in ("risk", "entropy") for seed in (0, 1) for r in range(2)]
    for stem in ("toy_rnn_compare", "toy_feature_compare"):
        pd.DataFrame(rows).to_csv(tmp_path / f"{stem}_rounds.csv.gz", index=False)
    (tmp_path / "raw").mkdir()
    for name, date in (("risk_seed0", "2026-11-23"), ("risk_seed1", "2026-11-28"), ("entropy_seed0", None),
                       ("entropy_seed1", "2026-11-25")):
        for matcher in ("rnn", "feature"):
            recs = [{"dataset": "x", "strategy": name.split("_")[0], "seed": int(name[-1]), "round": r,
                     **({"date": date} if date else {})} for r in range(2)]
            (tmp_path / "raw" / f"x_{matcher}_{name}.jsonl").write_text("".join(f"{json.dumps(x)}\n" for x in recs))
    summaries.write_runs(tmp_path / "raw", tmp_path)  # the dates are read from runs.csv, not raw/
    shutil.rmtree(tmp_path / "raw")
    per_run = mr.run_aulc(pd.DataFrame(rows))
    assert mr.runs_before("toy_rnn_compare", per_run, "2026-11-25", tmp_path) == {"risk": [0], "entropy": [0]}
    assert mr.runs_before("toy_feature_compare", per_run, "2026-11-25", tmp_path) == {}
    # a run a later table holds (read first) shadows the earlier table's record of it
    seen = {("risk", 0)}
    assert mr.runs_before("toy_rnn_compare", per_run, "2026-11-25", tmp_path, seen) == {"entropy": [0]}
    assert seen == {("risk", 0), ("risk", 1), ("entropy", 0), ("entropy", 1)}
    runs = tmp_path / "runs.csv"
    runs.write_text("".join(x for x in runs.read_text().splitlines(keepends=True) if "x_rnn_entropy_seed1" not in x))
    with pytest.raises(mr.ResultsError, match=r"runs\.csv has no row for x_rnn_entropy_seed1\.jsonl"):
        mr.runs_before("toy_rnn_compare", per_run, "2026-11-25", tmp_path)
    runs.unlink()
    with pytest.raises(mr.ResultsError, match=r"runs\.csv is missing"):
        mr.runs_before("toy_rnn_compare", per_run, "2026-11-25", tmp_path)


def test_incomplete_runs_are_left_out_of_the_areas(mr):
    df = pd.DataFrame([{"strategy": "a", "seed": s, "round": r, "n_labelled": 10 * r, "f1": 0.5}
                       for s in (0, 1) for r in range(3 if s == 0 else 2)])
    per = mr.run_aulc(df)
    assert per["seed"].tolist() == [0]


def test_a_missing_record_names_the_file_and_the_fix(mr, tmp_path):
    with pytest.raises(mr.ResultsError, match=r"abt_buy_rnn_compare_rounds\.csv\.gz is missing: run the benchmark"):
        mr.setting_summary(["abt_buy_rnn_compare"], tmp_path)


def test_a_torn_jsonl_record_names_the_file_and_line(mr, tmp_path, monkeypatch):
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"a": 1}\n{"a": \n')
    monkeypatch.setattr(mr, "ROOT", tmp_path)
    with pytest.raises(mr.ResultsError, match=r"q\.jsonl, line 2: not JSON"):
        mr._read_jsonl(bad)


def test_an_unknown_block_on_a_page_names_the_page(mr, tmp_path, monkeypatch):
    (tmp_path / "page.md").write_text("# x\n\n<!-- {{no_such_block}} -->\nold\n<!-- {{/no_such_block}} -->\n")
    monkeypatch.setattr(mr, "ROOT", tmp_path)
    with pytest.raises(mr.ResultsError, match=r"page\.md: unknown block \{\{no_such_block\}\}"):
        mr.render("page.md", {})


def test_a_linked_table_must_still_be_shown_elsewhere(mr):
    """A table linked instead of repeated must have every row in the table it points to."""
    ctx = {"al_dir": mr.AL}
    text = mr.block_al_link("dblp_scholar_feature_variants_warm|dblp_scholar_feature_compare_all|6.2", ctx)
    assert "_command_" in text and "_machine_" in text and "_date_" in text
    with pytest.raises(mr.ResultsError, match=r"no longer holds every row of dblp_scholar_feature_compare_all\.md"):
        mr.block_al_link("dblp_scholar_feature_compare_all|dblp_scholar_feature_variants_warm|6.1", ctx)
