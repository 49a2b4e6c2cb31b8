"""Issue #28, item 5: the records' old strategy names renamed once to the registry's (the tool)."""

from __future__ import annotations

import json
import re

import pytest

OLD = {"risk_paper": "risk", "risk": "risk_pre2w"}  # registry name -> the name the old records used


def _age(out):
    """Turn a bench_al output folder written with the registry's names into one of the old names."""
    raw = out / "raw"
    aged = {}
    for path in sorted(raw.glob("*.jsonl")):
        lines = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            del rec["names"]
            rec["strategy"] = OLD.get(rec["strategy"], rec["strategy"])
            lines.append(json.dumps(rec, separators=(",", ":")) + "\n")
        path.unlink()
        m = re.fullmatch(r"(.+)_(risk_paper|risk)_(seed\d+\.jsonl)", path.name)
        aged[f"{m.group(1)}_{OLD[m.group(2)]}_{m.group(3)}" if m else path.name] = "".join(lines)
    for name, text in aged.items():
        (raw / name).write_text(text)
    for md in out.glob("*.md"):
        text = md.read_text()
        text = text.replace("| risk |", "| risk_pre2w |").replace("| risk_paper |", "| risk |")
        text = text.replace("--strategies risk_paper risk ", "--strategies risk risk_pre2w ")
        md.write_text(text)
    known = json.loads((raw / "tables.json").read_text())
    for entry in known.values():
        del entry["names"]
    (raw / "tables.json").write_text(json.dumps(known))


@pytest.mark.usefixtures("beer")
def test_rename_records_regenerates_tables_byte_for_byte_and_is_idempotent(bench_script, tmp_path):
    bench = bench_script("bench_al")
    out = tmp_path / "results" / "al"
    argv = ["--dataset", "beer", "--seeds", "1", "--seed-size", "40", "--batch", "20", "--rounds", "2",
            "--risk-epochs", "50", "--strategies", "risk_paper", "risk", "--no-progress", "--threads", "1",
            "--out", str(out)]
    assert bench.main(argv) == 0
    records = {p.name: [json.loads(x) for x in p.read_text().splitlines()] for p in (out / "raw").glob("*.jsonl")}
    assert all(r["names"] == "registry" for recs in records.values() for r in recs)
    assert "beer_feature_risk_paper_seed0.jsonl" in records and "beer_feature_risk_seed0.jsonl" in records
    made = {p.name: p.read_bytes() for p in out.glob("*") if p.suffix in (".md", ".csv", ".gz")}
    _age(out)
    assert "beer_feature_risk_pre2w_seed0.jsonl" in {p.name for p in (out / "raw").glob("*.jsonl")}
    assert "| risk_pre2w |" in next(out.glob("*.md")).read_text()

    tool = bench_script("tools/rename_records")
    assert tool.main(["--results", str(tmp_path / "results"), "--check"]) == 1  # lists, writes nothing
    assert "| risk_pre2w |" in next(out.glob("*.md")).read_text()
    assert tool.main(["--results", str(tmp_path / "results")]) == 0
    # the records hold the registry's names again, under the registry's file names
    again = {p.name: [json.loads(x) for x in p.read_text().splitlines()] for p in (out / "raw").glob("*.jsonl")}
    assert again == records
    # every table, CSV, command and title as bench_al wrote it with the registry's names
    assert {p.name: p.read_bytes() for p in out.glob("*") if p.suffix in (".md", ".csv", ".gz")} == made
    # and bench_al --report-only rewrites the table byte for byte (its provenance renamed too)
    table = next(out.glob("*.md"))
    assert bench.main([*argv, "--report-only"]) == 0
    assert {p.name: p.read_bytes() for p in out.glob("*") if p.suffix in (".md", ".csv", ".gz")} == made
    # idempotent: a second run renames nothing (a renamed "risk" is not the paper's "risk")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert tool.main(["--results", str(tmp_path / "results"), "--check"]) == 0
    assert tool.main(["--results", str(tmp_path / "results")]) == 0
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert table.read_bytes() == made[table.name]
    # a tables.json whose marks were lost (a merge that kept another branch's entries) does not
    # rename an already renamed table twice (its risk_paper says so)
    prov = out / "raw" / "tables.json"
    known = json.loads(prov.read_text())
    for entry in known.values():
        del entry["names"]
    prov.write_text(json.dumps(known))
    assert tool.main(["--results", str(tmp_path / "results")]) == 0
    assert {p.name: p.read_bytes() for p in out.glob("*") if p.suffix in (".md", ".csv", ".gz")} == made


def test_rename_records_refuses_a_file_of_both_namings(bench_script, tmp_path, capsys):
    raw = tmp_path / "x" / "raw"
    raw.mkdir(parents=True)
    line = {"dataset": "d", "strategy": "risk", "seed": 0, "round": 0, "n_labelled": 2, "seed_set_gaps": [0, 1],
            "batch_gaps": None}
    path = raw / "d_feature_risk_seed0.jsonl"
    text = json.dumps({**line, "names": "registry"}) + "\n" + json.dumps({**line, "round": 1}) + "\n"
    path.write_text(text)
    tool = bench_script("tools/rename_records")
    assert tool.main(["--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "d_feature_risk_seed0.jsonl" in err and "1 lines carry the registry's names and 1 do not" in err
    assert path.read_text() == text  # nothing half-renamed


def test_rename_records_swaps_file_names_without_losing_a_run(bench_script, tmp_path):
    """Old ``risk`` (the paper's) becomes ``risk_paper`` while old ``risk_pre2w`` becomes ``risk``."""
    raw = tmp_path / "x" / "raw"
    raw.mkdir(parents=True)
    for name, f1 in (("risk", 0.1), ("risk_pre2w", 0.2), ("risk_v0.5", 0.3), ("entropy", 0.4)):
        rec = {"dataset": "d", "strategy": name, "seed": 0, "round": 0, "n_labelled": 2, "f1": f1,
               "seed_set_gaps": [0, 1], "batch_gaps": None}
        (raw / f"d_feature_{name}_seed0.jsonl").write_text(json.dumps(rec) + "\n")
    tool = bench_script("tools/rename_records")
    assert tool.main(["--results", str(tmp_path)]) == 0
    got = {p.name: json.loads(p.read_text()) for p in raw.glob("*.jsonl")}
    assert {k: (v["strategy"], v["f1"]) for k, v in got.items()} == {
        "d_feature_risk_paper_seed0.jsonl": ("risk_paper", 0.1),
        "d_feature_risk_seed0.jsonl": ("risk", 0.2),
        "d_feature_risk_paper_v0.5_seed0.jsonl": ("risk_paper_v0.5", 0.3),
        "d_feature_entropy_seed0.jsonl": ("entropy", 0.4),
    }


def test_rename_records_renames_a_template_once(bench_script, tmp_path, capsys):
    page = tmp_path / "lm.md"
    page.write_text("The default (`risk_pre2w`) and the paper's `risk`: `--strategies risk_pre2w risk entropy`.\n")
    (tmp_path / "results").mkdir()
    tool = bench_script("tools/rename_records")
    assert tool.main(["--results", str(tmp_path / "results"), "--prose", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("The default (`risk`) and the paper's `risk_paper`: `--strategies risk risk_paper entropy`.")
    # a second run would make the default the paper's method: refused, the file kept
    assert tool.main(["--results", str(tmp_path / "results"), "--prose", str(page)]) == 2
    assert "already" in capsys.readouterr().err and page.read_text() == text
