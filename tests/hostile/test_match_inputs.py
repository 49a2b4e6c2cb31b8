"""Bad input to skrisk match: each error names the file, the column or row and the fix, and comes
before any output is written."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from skrisk.cli import main
from skrisk.exceptions import DataError
from skrisk.matching import match

from _match_fixtures import dedup_model, febrl_split  # noqa: F401 - fixtures


@pytest.fixture
def saved(dedup_model, tmp_path):
    return dedup_model.save(tmp_path / "model.skrisk")


def _csv(path: Path, frame: pd.DataFrame) -> Path:
    frame.rename_axis("id").reset_index().to_csv(path, index=False)
    return path


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(["match", "--no-progress", *map(str, args)])
    return code, capsys.readouterr().err


def test_table_missing_an_attribute(saved, febrl_split, tmp_path, capsys):
    _, new, _ = febrl_split
    left = _csv(tmp_path / "new.csv", new.drop(columns=["surname"]))
    out = tmp_path / "out"
    code, err = _run(capsys, "--model", saved, "--left", left, "--out", out)
    assert code == 2
    assert "new.csv has no column 'surname'" in err and "Rename" in err
    assert not out.exists()


def test_model_from_another_task(saved, tmp_path, capsys):
    left = _csv(tmp_path / "products.csv", pd.DataFrame({"title": ["a", "b"], "price": ["1", "2"]}, index=["p1", "p2"]))
    code, err = _run(capsys, "--model", saved, "--left", left, "--out", tmp_path / "out")
    assert code == 2 and "products.csv has no column 'given_name'" in err and "trained on a task" in err
    assert not (tmp_path / "out").exists()


def test_left_with_duplicate_ids(saved, febrl_split, tmp_path, capsys):
    _, new, _ = febrl_split
    dup = pd.concat([new.iloc[:5], new.iloc[[2]]])
    left = _csv(tmp_path / "dups.csv", dup)
    code, err = _run(capsys, "--model", saved, "--left", left, "--out", tmp_path / "out")
    assert code == 2 and "dups.csv" in err and new.index[2] in err and "unique" in err
    assert not (tmp_path / "out").exists()


def test_ids_repeated_across_the_two_tables(saved, febrl_split, tmp_path, capsys):
    _, new, _ = febrl_split
    a = _csv(tmp_path / "a.csv", new.iloc[:50])
    b = _csv(tmp_path / "b.csv", new.iloc[45:100])
    code, err = _run(capsys, "--model", saved, "--left", a, "--right", b, "--out", tmp_path / "out")
    assert code == 2
    assert f"{new.index[45]!r} is in both" in err and "a.csv" in err and "b.csv" in err and "prefix" in err
    assert not (tmp_path / "out").exists()


def test_linkage_model_with_one_table(dedup_model, febrl_split):
    from dataclasses import replace

    _, new, _ = febrl_split
    with pytest.raises(DataError, match="links two tables.*--right"):
        match(replace(dedup_model, task="link"), new, progress=False, names=("new.csv", ""))


def test_a_killed_run_leaves_the_old_matches(saved, febrl_split, tmp_path, capsys, monkeypatch):
    """matches.csv is replaced atomically: a failure while writing keeps the previous file whole."""
    _, new, _ = febrl_split
    left = _csv(tmp_path / "new.csv", new.iloc[:200])
    out = tmp_path / "out"
    assert _run(capsys, "--model", saved, "--left", left, "--out", out)[0] == 0
    before = (out / "matches.csv").read_bytes()
    real_replace = os.replace

    def dies(src, dst):
        raise KeyboardInterrupt  # the process is killed between writing the temporary file and the rename

    monkeypatch.setattr(os, "replace", dies)
    code = main(["match", "--no-progress", "--model", str(saved), "--left", str(left), "--out", str(out),
                 "--reasons"])
    assert code == 130
    monkeypatch.setattr(os, "replace", real_replace)
    assert (out / "matches.csv").read_bytes() == before
    # the folder's lock stays (as in a session folder); no staging folder or temporary file is left
    assert sorted(p.name for p in out.iterdir()) == [".skrisk.lock", "entities.csv", "index.json", "index_records.npz",
                                                   "matches.csv"]  # a dedup run writes its index too


def test_blocking_flags(saved, febrl_split, tmp_path, capsys):
    _, new, _ = febrl_split
    left = _csv(tmp_path / "new.csv", new.iloc[:300])
    code, err = _run(capsys, "--model", saved, "--left", left, "--out", tmp_path / "o1", "--block-on", "phone")
    assert code == 2 and "--block-on names ['phone']" in err and "given_name" in err
    code, err = _run(capsys, "--model", saved, "--left", left, "--out", tmp_path / "o2", "--blocking", "standard")
    assert code == 2 and "needs --block-on" in err
    code, err = _run(capsys, "--model", saved, "--left", left, "--out", tmp_path / "o3", "--blocking", "standard",
                     "--block-on", "surname", "--block-top-k", "3")
    assert code == 2 and "apply to --blocking tokens" in err
    assert not any((tmp_path / o).exists() for o in ("o1", "o2", "o3"))
    code = main(["match", "--no-progress", "--model", str(saved), "--left", str(left), "--out", str(tmp_path / "o4"),
                 "--blocking", "standard", "--block-on", "surname"])
    printed = capsys.readouterr().out
    assert code == 0 and "cannot be known without labels" in printed and "candidate pairs" in printed
    m = pd.read_csv(tmp_path / "o4" / "matches.csv", dtype=str)
    sur = new["surname"]
    assert (sur.loc[m["left_id"]].to_numpy() == sur.loc[m["right_id"]].to_numpy()).all()  # standard on surname


def test_missing_model(tmp_path, capsys):
    (tmp_path / "a.csv").write_text("id,name\n1,x\n")
    code, err = _run(capsys, "--model", tmp_path / "nope", "--left", tmp_path / "a.csv", "--out", tmp_path / "o")
    assert code == 2 and "nope" in err
    (tmp_path / "sess").mkdir()
    code, err = _run(capsys, "--model", tmp_path / "sess", "--left", tmp_path / "a.csv", "--out", tmp_path / "o")
    assert code == 2 and "holds no model.skrisk" in err and "after at least one training round" in err


def test_a_value_holding_a_nul_is_refused_naming_record_and_column(dedup_model, febrl_split):
    """pandas' hashing merges "a" and "a\\x00b": a NUL in a value (only the Python API can give
    one) is refused before any work, naming the record, the column and the fix."""
    _, new, _ = febrl_split
    bad = new.copy()
    bad.loc[bad.index[3], "surname"] = "smi\x00th"
    with pytest.raises(DataError, match=rf"new\.csv: the 'surname' value of the record '{bad.index[3]}' holds a NUL"):
        match(dedup_model, bad, progress=False, names=("new.csv", ""))
