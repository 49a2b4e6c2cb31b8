"""Smaller things a new user met (issue #29): ``--one-to-one`` in both output files, round numbers
that never skip, short reasons that do not repeat one attribute, a huge id on screen, control
characters in a printed ``--out`` path, and tables in different encodings. Every test failed on
the code before issue #29 unless marked "(kept)".
"""

from __future__ import annotations

import io
import re
from dataclasses import replace

import pandas as pd
import pytest

from skrisk.cli import main
from skrisk.matching import match
from skrisk.utils import read_csv_export

from _match_fixtures import dedup_model, febrl_split  # noqa: F401 - fixtures

from ._session_util import label, write_tables


def _halves(febrl_split):
    _, new, _ = febrl_split
    return new[new.index.str.endswith("-org")], new[~new.index.str.endswith("-org")]


def test_one_to_one_means_the_same_for_matches_and_entities(dedup_model, febrl_split):
    org, dup = _halves(febrl_split)
    model = replace(dedup_model, task="link", threshold=0.25)  # low: records in several matches
    res = match(model, org, dup, progress=False, one_to_one=True)
    m = res.matches
    assert m["left_id"].is_unique and m["right_id"].is_unique  # each record in at most one match
    ent = res.entities.clusters
    pairs = ent.pivot_table(index="entity_id", columns="side", values="record_id", aggfunc="first").dropna()
    assert set(zip(m["left_id"], m["right_id"])) == set(zip(pairs["left"], pairs["right"]))
    every = match(model, org, dup, progress=False).matches  # without the flag: all matches
    assert not (every["left_id"].is_unique and every["right_id"].is_unique)  # the case that matters
    assert len(every) > len(m) and set(zip(m["left_id"], m["right_id"])) <= set(zip(every["left_id"], every["right_id"]))


def test_match_prints_a_hostile_out_path_escaped_and_its_csvs_round_trip(dedup_model, febrl_split, tmp_path, capsys):
    _, new, _ = febrl_split
    table = new.iloc[:60].copy()
    table.iloc[0, 0] = "\r=HYPERLINK(\"http://evil\",\"x\")"
    left = tmp_path / "new.csv"
    table.rename_axis("id").reset_index().to_csv(left, index=False)
    model = dedup_model.save(tmp_path / "model.skrisk")
    out = tmp_path / "o\x1b]0;pwned\x07ut"
    code = main(["match", "--no-progress", "--model", str(model), "--left", str(left), "--out", str(out)])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert "\x1b" not in cap.out and "\x07" not in cap.out and "\\x1b]0;pwned\\x07" in cap.out
    ents = read_csv_export(out / "entities.csv")
    assert set(ents["record_id"]) == set(table.index)
    matches = pd.read_csv(out / "matches.csv", dtype=str, keep_default_na=False)
    assert len(matches) == len(read_csv_export(out / "matches.csv"))


def _titles(text: str) -> list[str]:
    return re.findall(r"(Starting pairs \(round \d+\)|Risk sampling round \d+|Audit after round \d+)", text)


def test_round_numbers_never_skip(tmp_path, monkeypatch, capsys):
    args = write_tables(tmp_path / "t")
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2", "--batch", "2",
                                          "--audit", "2"], ["y", "n", "n", "y", "n", "n", "q"])
    assert rc == 0, cap.err
    seen = list(dict.fromkeys(_titles(cap.out)))
    assert any(t.startswith("Audit") for t in seen) and len([t for t in seen if t.startswith("Risk")]) >= 2, seen
    numbers = []
    for t in seen:
        n = int(re.search(r"\d+", t).group())
        if t.startswith("Audit"):
            assert numbers and n == numbers[-1], seen  # the audit of the round just asked
        else:
            assert n == len(numbers) + 1, seen  # rounds count 1, 2, 3, ... whatever audits came between
            numbers.append(n)


def _session(tmp_path, left, right, pairs):
    from skrisk.labelling import LabellingSession

    args = write_tables(tmp_path / "t", left, right, pairs)
    paths = dict(zip(("left", "right", "pairs"), args[1::2]))
    out = io.StringIO()
    s = LabellingSession.open(tmp_path / "s", **paths, out=out, input_fn=lambda p: "q")
    return s, out


def test_the_three_short_reasons_do_not_repeat_one_attribute(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    s, _ = _session(tmp_path, "id,name,city,zip\n1,a,b,c\n", "id,name,city,zip\n10,a,b,c\n", "left_id,right_id\n1,10\n")
    try:
        reasons = [{"text": f"names differ in way {i}", "direction": "non-match", "weight": 0.5 - i / 100,
                    "feature": f"name_f{i}", "attribute": "name", "rule": ""} for i in range(3)]
        reasons += [{"text": "cities agree", "direction": "match", "weight": 0.2, "feature": "city_f",
                     "attribute": "city", "rule": ""},
                    {"text": "zips agree", "direction": "match", "weight": 0.1, "feature": "zip_f",
                     "attribute": "zip", "rule": ""}]
        s.state.items[("1", "10")] = {"left_id": "1", "right_id": "10", "probability": 0.6, "prediction": 1,
                                      "risk": 0.4, "reasons": reasons}
        text = "\n".join(s.render(("1", "10"), (1, 1, "Risk sampling round 1")))
        shown = [line for line in text.splitlines() if line.startswith("  - ")]
        assert len(shown) == 3 and sum("names differ" in line for line in shown) == 1, text
        assert "[r] shows all 5" in text
    finally:
        s.close()


def test_a_huge_id_does_not_fill_the_screen_and_is_stored_whole(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "40")
    huge = "7" * 100_000
    left = f"id,name\n{huge},blue cafe\n2,red bar\n3,green inn\n"
    right = "id,name\n10,blue cafe\n20,red pub\n30,green inn\n"
    pairs = f"left_id,right_id,label\n{huge},10,\n2,20,\n3,30,\n"
    args = write_tables(tmp_path / "t", left, right, pairs)
    session = tmp_path / "s"
    rc, cap = label(monkeypatch, capsys, [*args, "--session", str(session), "--initial", "2"], ["y", "z", "q"])
    assert rc == 0, cap.err
    longest = max(cap.out.split("Same entity?"), key=len)
    assert len(longest.splitlines()) < 45 and "more characters]" in cap.out, len(longest.splitlines())
    assert max(len(line) for line in cap.out.splitlines()) < 400
    cand = read_csv_export(session / "candidates.csv")
    assert huge in set(cand["left_id"])  # the stored id is whole


# ------------------------------------------------------------------ encodings
def test_utf8_table_read_as_latin1_is_refused_with_the_fix(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "A.csv").write_bytes("id,name\n1,caf\u00e9 noir\n2,bar\n".encode("utf-8"))
    (folder / "B.csv").write_bytes("id,name\n10,caf\u00e9 noir\n20,bar\n".encode("latin-1"))
    (folder / "P.csv").write_text("left_id,right_id\n1,10\n2,20\n")
    base = ["--left", str(folder / "A.csv"), "--right", str(folder / "B.csv"), "--pairs", str(folder / "P.csv")]
    rc, cap = label(monkeypatch, capsys, [*base, "--session", str(tmp_path / "s1"), "--encoding", "latin-1"], ["q"])
    assert rc == 2 and "A.csv" in cap.err and "UTF-8" in cap.err and "caf\u00c3\u00a9" in cap.err
    assert "--encoding utf-8,latin-1" in cap.err
    # one encoding per table
    rc, cap = label(monkeypatch, capsys, [*base, "--session", str(tmp_path / "s2"), "--encoding", "utf-8,latin-1"],
                    ["y", "y", "q"])
    assert rc == 0, cap.err
    labels = read_csv_export(tmp_path / "s2" / "labels.csv").set_index("left_id")
    assert labels.loc["1", "left_name"] == labels.loc["1", "right_name"] == "caf\u00e9 noir"
    rc, cap = label(monkeypatch, capsys, ["--session", str(tmp_path / "s2")], ["q"])  # resumes with both
    assert rc == 0, cap.err


def test_a_latin1_table_that_is_not_utf8_reads_as_latin1(tmp_path):  # (kept)
    from skrisk.data import read_table

    p = tmp_path / "a.csv"
    p.write_bytes("id,name\n1,caf\u00e9\n".encode("latin-1"))
    assert read_table(p, encoding="latin-1")["name"].tolist() == ["caf\u00e9"]


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "iso-8859-15"])
def test_mojibake_is_detected_for_every_single_byte_encoding(tmp_path, encoding):
    from skrisk.data import read_table
    from skrisk.exceptions import DataError

    p = tmp_path / "a.csv"
    p.write_bytes("id,name\n1,Stra\u00dfe \u6771\u4eac\n".encode("utf-8"))
    with pytest.raises(DataError, match="valid UTF-8"):
        read_table(p, encoding=encoding)
